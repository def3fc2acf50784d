package postgres

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
)

// BenchmarkLease measures the round trips leases add: taking and giving
// one up, a renewal, and a commit (a transaction updating one row) without
// a fence, with CheckFence, and with QueueFence; then fenced commits of 16
// executions at once. Each runs durably (fsync: each transaction waits for
// its WAL flush) and without waiting for the flush (nosync:
// synchronous_commit off), which leaves the round trips and the server's
// work, apart from the disk's.
func BenchmarkLease(b *testing.B) {
	for _, mode := range []struct{ name, param string }{{"fsync", ""}, {"nosync", "&synchronous_commit=off"}} {
		b.Run(mode.name, func(b *testing.B) {
			db, err := Open(context.Background(), testServer.Schema(b)+mode.param, Options{Migrate: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			benchLease(b, db)
		})
	}
}

func benchLease(b *testing.B, db *DB) {
	ctx := context.Background()
	if _, err := db.pool.Exec(ctx, `CREATE TABLE bench_heads (id text PRIMARY KEY, seq bigint NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO bench_heads VALUES ('e1', 0)`); err != nil {
		b.Fatal(err)
	}
	b.Run("AcquireRelease", func(b *testing.B) {
		for b.Loop() {
			l, err := db.Acquire(ctx, "acq", "server-a", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	l, err := db.Acquire(ctx, "e1", "server-a", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Renew", func(b *testing.B) {
		for b.Loop() {
			if l, err = db.Renew(ctx, l, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	const update = `UPDATE bench_heads SET seq = seq + 1 WHERE id = $1`
	commits := []struct {
		name string
		f    func(tx pgx.Tx) error
	}{
		{"Commit", func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, update, "e1")
			return err
		}},
		{"CommitCheckFence", func(tx pgx.Tx) error {
			if err := CheckFence(ctx, tx, "e1", l.Epoch); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, update, "e1")
			return err
		}},
		{"CommitQueueFence", func(tx pgx.Tx) error {
			batch := &pgx.Batch{}
			QueueFence(batch, "e1", l.Epoch)
			batch.Queue(update, "e1")
			return tx.SendBatch(ctx, batch).Close()
		}},
	}
	for _, c := range commits {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := inTx(b, db, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Many executions, each committing under its own lease, at once.
	b.Run("CommitQueueFenceParallel", func(b *testing.B) {
		var n atomic.Int64
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			id := "p" + strconv.FormatInt(n.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			if _, err := db.pool.Exec(ctx, `INSERT INTO bench_heads VALUES ($1, 0)`, id); err != nil {
				b.Error(err)
				return
			}
			pl, err := db.Acquire(ctx, id, "server-a", time.Minute)
			if err != nil {
				b.Error(err)
				return
			}
			for pb.Next() {
				err := inTx(b, db, func(tx pgx.Tx) error {
					batch := &pgx.Batch{}
					QueueFence(batch, id, pl.Epoch)
					batch.Queue(update, id)
					return tx.SendBatch(ctx, batch).Close()
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// benchStoreCommit is a step of an execution: three events and its
// top-level scope, as a Task state's commit writes them.
func benchStoreCommit(id string, seq int64) *engine.Commit {
	at := time.Unix(1_700_000_000, seq)
	doc := map[string]any{"ticket": map[string]any{"id": "T-1", "body": "the printer is on fire"}, "step": float64(seq)}
	return &engine.Commit{
		Execution: id, Seq: seq, LastEvent: 3 * seq,
		Events: []engine.Event{
			{ID: 3*seq - 2, Type: "TaskStateEntered", Timestamp: at, State: "T", Document: doc, Input: doc},
			{ID: 3*seq - 1, Type: "TaskSucceeded", Timestamp: at, State: "T", Document: doc, Output: doc},
			{ID: 3 * seq, Type: "TaskStateExited", Timestamp: at, State: "T", Document: doc, Output: doc},
		},
		Scopes: map[string]*engine.Scope{"": {Next: "T", Doc: doc}},
	}
}

// BenchmarkCommit measures a commit of one execution's step, one at a
// time (One) and from 16 executions at once (Parallel16), durably.
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, Options{})
	create := func(id string) {
		if err := db.Create(ctx, &engine.Execution{ID: id, MachineName: "bench", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("One", func(b *testing.B) {
		create("one")
		b.ReportAllocs()
		seq := int64(0)
		for b.Loop() {
			seq++
			if err := db.Commit(ctx, benchStoreCommit("one", seq)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel16", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8) // 16 goroutines on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			id := "par-" + strconv.FormatInt(n.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			create(id)
			seq := int64(0)
			for pb.Next() {
				seq++
				if err := db.Commit(ctx, benchStoreCommit(id, seq)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkCommitConcurrent measures commits of a Task step by 1, 16 and
// 64 executions committing at once from one process, each fenced by its
// lease as the engine's are, durably: ns/op is the time per commit
// overall (commits/s is 1e9 over it).
//
// Grouped is the store as it is (group commit); Alone sends every commit
// in a transaction of its own, as the store did before group commit.
func BenchmarkCommitConcurrent(b *testing.B) {
	for _, mode := range []string{"Alone", "Grouped"} {
		for _, n := range []int{1, 16, 64} {
			b.Run(mode+"/"+strconv.Itoa(n), func(b *testing.B) { benchCommitConcurrent(b, n, mode == "Alone") })
		}
	}
}

func benchCommitConcurrent(b *testing.B, n int, alone bool) {
	ctx := context.Background()
	db := openTest(b, Options{})
	db.group.off = alone
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "c" + strconv.Itoa(i)
		if _, err := db.Acquire(ctx, ids[i], db.Owner(), time.Hour); err != nil {
			b.Fatal(err)
		}
		l, err := db.currentLease(ctx, db.pool, ids[i])
		if err != nil {
			b.Fatal(err)
		}
		db.Fence(l)
		if err := db.Create(ctx, &engine.Execution{ID: ids[i], MachineName: "bench", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
			b.Fatal(err)
		}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for seq := int64(1); left.Add(-1) >= 0; seq++ {
				if err := db.Commit(ctx, benchStoreCommit(id, seq)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
