package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// TestGCWaitsForCommitsNamingASnapshot: a commit that names a snapshot
// blob already stored (two checkpoints of one document share it) and GC,
// which deletes the blobs no checkpoint names, must not interleave: GC
// could otherwise delete the blob the commit found there and names. A
// transaction holding the commits' shared lock stands for a commit in
// flight: GC waits for it, then keeps the blob its checkpoint names.
func TestGCWaitsForCommitsNamingASnapshot(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	t0 := time.Unix(1_700_000_000, 0).UTC()
	for _, id := range []string{"old", "new"} {
		if err := db.Create(ctx, &engine.Execution{ID: id, MachineName: "m", StartedAt: t0, Input: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := jsonvalue.Decode([]byte(`{"report":"quarterly","rows":[1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := benchStoreCommit("old", 1)
	c.Checkpoint = &engine.Checkpoint{Name: "a", State: "Save", Next: "After", Document: doc, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	if err := db.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(ctx, &engine.Commit{Execution: "old", Seq: 2, Status: engine.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}

	// A commit of "new" naming the same blob is under way.
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, snapshotLock); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := db.GC(ctx, t0.Add(time.Hour))
		done <- result{rep.Blobs, err}
	}()
	// GC waits for the lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("GC ended (%d blobs, %v) while a commit naming a snapshot was under way", r.n, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("GC is not waiting for the commit under way after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The commit names the blob of "old"'s checkpoint, then ends.
	if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (execution, name, blob, doc_hash, event_seq, created_ns, expires_ns, body)
SELECT 'new', 'b', blob, doc_hash, event_seq, created_ns, NULL, body FROM checkpoints WHERE execution = 'old' AND name = 'a'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 0 {
		t.Fatalf("GC = %d blobs, %v; want the shared blob kept", r.n, r.err)
	}
	if _, err := db.Checkpoint(ctx, "old", "a"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the expired checkpoint after GC: %v, want ErrNotFound", err)
	}
	var blobs int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM snapshot_blobs`).Scan(&blobs); err != nil || blobs != 1 {
		t.Fatalf("%d snapshot blobs after GC (%v), want the one the new checkpoint names", blobs, err)
	}
}
