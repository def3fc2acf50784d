package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"

	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

// TestStore runs the store acceptance suite on PostgreSQL, each test in a
// fresh schema.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{}) })
}

// TestFencedCommitWritesNothing: once another process took the lease
// over, a commit fenced by the old lease is refused and changes nothing.
func TestFencedCommitWritesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if err := db.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	l, err := db.Acquire(ctx, "e1", "server-a", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	db.Fence(l)
	if err := db.Commit(ctx, benchStoreCommit("e1", 1)); err != nil {
		t.Fatalf("commit under the lease: %v", err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := db.Acquire(ctx, "e1", "server-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	err = db.Commit(ctx, benchStoreCommit("e1", 2))
	var fe *FencedError
	if !errors.As(err, &fe) || fe.Current.Owner != "server-b" {
		t.Fatalf("commit after the takeover = %v, want a *FencedError naming server-b", err)
	}
	h, err := db.History(ctx, "e1")
	if err != nil || len(h) != 3 {
		t.Fatalf("history after the fenced commit: %d events, %v; want the first commit's 3", len(h), err)
	}
	if e, err := db.Load(ctx, "e1"); err != nil || e.Seq != 1 {
		t.Fatalf("Load: seq %v, %v; want 1", e.Seq, err)
	}
	db.Unfence("e1")
	if err := db.Commit(ctx, benchStoreCommit("e1", 2)); err != nil {
		t.Fatalf("unfenced commit: %v", err)
	}
}
