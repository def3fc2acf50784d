package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// leased creates execution id and takes its lease for db, fencing its
// commits.
func leased(t *testing.T, db *DB, id string) {
	t.Helper()
	ctx := context.Background()
	if err := db.Create(ctx, &engine.Execution{ID: id, MachineName: "m", Status: engine.StatusRunning, StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	l, err := db.Acquire(ctx, id, db.Owner(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	db.Fence(l)
}

// queuedCommits holds the transactions under way on two executions' rows
// (locked by the test), so that the commits that come next queue for a
// group; it returns the two held commits' errors, and a func that lets
// them go.
func queuedCommits(t *testing.T, db *DB) (<-chan error, func()) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"hold1", "hold2"} {
		leased(t, db, id)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM executions WHERE id IN ('hold1', 'hold2') FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 2)
	for _, id := range []string{"hold1", "hold2"} {
		go func() { held <- db.Commit(ctx, benchStoreCommit(id, 1)) }()
	}
	deadline := time.Now().Add(notifyTimeout)
	for {
		db.group.mu.Lock()
		n := db.group.inflight
		db.group.mu.Unlock()
		if n == groupInflight {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commit transactions under way, want %d", n, groupInflight)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return held, func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitQueued waits until n commits wait for a group.
func awaitQueued(t *testing.T, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(notifyTimeout)
	for {
		db.group.mu.Lock()
		q := len(db.group.queue)
		db.group.mu.Unlock()
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commits queued, want %d", q, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGroupCommit: commits that come while the transactions under way
// are busy go together, in one transaction, and each is written as if
// alone.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	held, letGo := queuedCommits(t, db)
	const n = 10
	errs := make(chan error, n)
	for i := range n {
		id := fmt.Sprintf("g%d", i)
		leased(t, db, id)
		go func() { errs <- db.Commit(ctx, benchStoreCommit(id, 1)) }()
	}
	awaitQueued(t, db, n)
	letGo()
	for range 2 + n {
		var err error
		select {
		case err = <-held:
		case err = <-errs:
		}
		if err != nil {
			t.Error(err)
		}
	}
	if db.group.groups != 1 || db.group.refused != 0 {
		t.Errorf("%d groups, %d refused; want the %d queued commits in one group", db.group.groups, db.group.refused, n)
	}
	for i := range n {
		id := fmt.Sprintf("g%d", i)
		if e, err := db.Load(ctx, id); err != nil || e.Seq != 1 {
			t.Errorf("%s: seq %v, %v; want 1", id, e, err)
		}
		if err := db.VerifyHistory(ctx, id); err != nil {
			t.Error(err)
		}
	}
}

// TestGroupCommitFenced: a commit refused in a group (its lease taken
// over) does not fail the others: the group is sent again a commit at a
// time, the fenced one refused, writing nothing, the others written.
func TestGroupCommitFenced(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	other := openOther(t, db, "other")
	held, letGo := queuedCommits(t, db)
	ids := []string{"ok1", "fenced", "ok2"}
	for _, id := range ids {
		leased(t, db, id)
	}
	expire(t, db, "fenced")
	if _, err := other.Acquire(ctx, "fenced", "other", time.Hour); err != nil {
		t.Fatal(err)
	}
	errs := map[string]chan error{}
	for _, id := range ids {
		errs[id] = make(chan error, 1)
		go func() { errs[id] <- db.Commit(ctx, benchStoreCommit(id, 1)) }()
		awaitQueued(t, db, len(errs))
	}
	letGo()
	for range 2 {
		if err := <-held; err != nil {
			t.Error(err)
		}
	}
	for _, id := range ids {
		err := <-errs[id]
		e, lerr := db.Load(ctx, id)
		if lerr != nil {
			t.Fatal(lerr)
		}
		switch {
		case id == "fenced" && (!errors.Is(err, ErrFenced) || e.Seq != 0):
			t.Errorf("fenced: %v, seq %d; want ErrFenced and nothing written", err, e.Seq)
		case id != "fenced" && (err != nil || e.Seq != 1):
			t.Errorf("%s: %v, seq %d; want written", id, err, e.Seq)
		}
	}
	if db.group.groups != 1 || db.group.refused != 1 {
		t.Errorf("%d groups, %d refused; want one group, refused and sent again", db.group.groups, db.group.refused)
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM history_records WHERE execution = 'fenced'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("fenced: %d history records, %v; want none", n, err)
	}
}
