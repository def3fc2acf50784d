package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Group commit. A commit is one batch of statements, which PostgreSQL runs
// as one implicit transaction. While groupInflight of them are under way,
// the commits that come (of other executions: the engine writes one
// execution's commits one at a time) queue, and the next one to go takes
// the queue with it: up to maxGroup commits in one batch, one transaction,
// one round trip and one WAL flush. A lone commit goes at once, as before:
// grouping adds no wait.
//
// Every commit's checks (its lease's fence, its head unchanged) raise an
// error inside the transaction, which rolls the whole group back: a group
// whose transaction is refused is sent again one commit at a time, in
// order, so that each gets its own answer and a fenced execution never
// fails the others. Refusals are rare (a lease taken over, another process
// committed): they cost the group one more round trip. A commit that
// checks agent memory others may write (its refusals are not rare under
// contention) is never grouped.

// Bounds of group commit.
const (
	// groupInflight is how many commit transactions run at once; the
	// commits that come meanwhile wait and go together.
	groupInflight = 2
	// maxGroup bounds the commits of one transaction.
	maxGroup = 64
	// groupTimeout bounds the transaction of a group, whose commits come
	// from callers with contexts of their own.
	groupTimeout = time.Minute
)

// committer groups concurrent commits.
type committer struct {
	// off sends every commit alone (benchmarks compare).
	off bool

	mu       sync.Mutex
	inflight int
	queue    []*groupItem
	// groups counts the transactions of more than one commit, refused
	// the ones of them that were refused and sent again a commit at a time.
	groups, refused int
}

// groupItem is a commit waiting for its group.
type groupItem struct {
	queue func(*pgx.Batch)
	done  chan error
}

// sendCommit sends the statements queue queues as one transaction, alone
// or with other commits (see above), and returns the error of the commit:
// one of the database (a refusal: nothing of it was written), or of the
// connection (its outcome unknown).
func (db *DB) sendCommit(ctx context.Context, alone bool, queue func(*pgx.Batch)) error {
	g := &db.group
	if alone || g.off {
		return db.sendAlone(ctx, queue)
	}
	g.mu.Lock()
	if g.inflight < groupInflight {
		g.inflight++
		g.mu.Unlock()
		err := db.sendAlone(ctx, queue)
		db.groupDone()
		return err
	}
	it := &groupItem{queue: queue, done: make(chan error, 1)}
	g.queue = append(g.queue, it)
	g.mu.Unlock()
	return <-it.done
}

// sendAlone sends one commit's statements.
func (db *DB) sendAlone(ctx context.Context, queue func(*pgx.Batch)) error {
	b := &pgx.Batch{}
	queue(b)
	return db.pool.SendBatch(ctx, b).Close()
}

// groupDone ends a commit transaction: the commits queued meanwhile go,
// in a goroutine that keeps its place among the transactions under way.
func (db *DB) groupDone() {
	g := &db.group
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.inflight--
		return
	}
	go db.sendGroups()
}

// sendGroups sends the queued commits, a group at a time, until none is
// left.
func (db *DB) sendGroups() {
	g := &db.group
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxGroup)
		if n == 0 {
			g.inflight--
			g.mu.Unlock()
			return
		}
		group := make([]*groupItem, n)
		copy(group, g.queue)
		g.queue = g.queue[n:]
		if len(g.queue) == 0 {
			g.queue = nil
		}
		g.mu.Unlock()
		db.sendGroup(group)
	}
}

// sendGroup sends group's commits in one transaction and tells each its
// outcome; a refused transaction is sent again a commit at a time.
func (db *DB) sendGroup(group []*groupItem) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	b := &pgx.Batch{}
	for _, it := range group {
		it.queue(b)
	}
	err := db.pool.SendBatch(ctx, b).Close()
	refused := len(group) > 1 && err != nil && sqlState(err) != ""
	db.group.mu.Lock()
	if len(group) > 1 {
		db.group.groups++
	}
	if refused {
		db.group.refused++
	}
	db.group.mu.Unlock()
	if !refused {
		// Written, or its outcome unknown: the same for every commit of
		// the transaction (each learns which on its own).
		for _, it := range group {
			it.done <- err
		}
		return
	}
	for _, it := range group {
		it.done <- db.sendAlone(ctx, it.queue)
	}
}
