package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// rowsOf counts an execution's history records and checkpoints, and reads
// its history_dropped column.
func rowsOf(t *testing.T, db *DB, id string) (records, checkpoints int64, dropped bool) {
	t.Helper()
	err := db.pool.QueryRow(context.Background(), `SELECT
  (SELECT count(*) FROM history_records WHERE execution = $1),
  (SELECT count(*) FROM checkpoints WHERE execution = $1),
  history_dropped FROM executions WHERE id = $1`, id).Scan(&records, &checkpoints, &dropped)
	if err != nil {
		t.Fatalf("reading the rows of execution %s: %v", id, err)
	}
	return records, checkpoints, dropped
}

// TestDropHistoryRows: a commit with DropHistory deletes the execution's
// history records and checkpoints in its transaction and sets
// history_dropped; another execution's rows stay.
func TestDropHistoryRows(t *testing.T) {
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	db := openTest(t, Options{})
	checkpointedRun(t, db, "child", ts)
	checkpointedRun(t, db, "other", ts)
	recs, cps, dropped := rowsOf(t, db, "child")
	if recs == 0 || cps == 0 || dropped {
		t.Fatalf("child before the drop: %d records, %d checkpoints, dropped %t; want some, some, false", recs, cps, dropped)
	}
	e, err := db.Load(t.Context(), "child")
	if err != nil {
		t.Fatal(err)
	}
	err = db.Commit(t.Context(), &engine.Commit{Execution: "child", Seq: e.Seq + 1, Status: engine.StatusSucceeded, StoppedAt: ts.Add(time.Minute),
		LastEvent: e.Progress.LastEvent + 1, DropHistory: true,
		Events: []engine.Event{{ID: e.Progress.LastEvent + 1, Type: engine.EventExecutionSucceeded, Timestamp: ts.Add(time.Minute)}}})
	if err != nil {
		t.Fatalf("commit with DropHistory: %v", err)
	}
	if recs, cps, dropped := rowsOf(t, db, "child"); recs != 0 || cps != 0 || !dropped {
		t.Errorf("child after the drop: %d records, %d checkpoints, dropped %t; want 0, 0, true", recs, cps, dropped)
	}
	if recs2, cps2, dropped := rowsOf(t, db, "other"); recs2 != recs || cps2 != cps || dropped {
		t.Errorf("other after child's drop: %d records, %d checkpoints, dropped %t; want %d, %d, false", recs2, cps2, dropped, recs, cps)
	}
	if err := db.VerifyHistory(t.Context(), "child"); err != nil {
		t.Errorf("VerifyHistory(child) after the drop = %v, want nil", err)
	}
}

// TestFencedDropWritesNothing: a commit with DropHistory fenced by a lease
// another process took over is refused and drops nothing.
func TestFencedDropWritesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if err := db.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	l, err := db.Acquire(ctx, "e1", "server-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	db.Fence(l)
	if err := db.Commit(ctx, benchStoreCommit("e1", 1)); err != nil {
		t.Fatalf("commit under the lease: %v", err)
	}
	// server-a gives the lease up and server-b takes it, while this
	// process's commits stay fenced by server-a's epoch.
	if err := db.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	db.Fence(l)
	if _, err := db.Acquire(ctx, "e1", "server-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	c := benchStoreCommit("e1", 2)
	c.DropHistory = true
	var fe *FencedError
	if err := db.Commit(ctx, c); !errors.As(err, &fe) {
		t.Fatalf("fenced commit with DropHistory = %v, want a *FencedError", err)
	}
	if recs, _, dropped := rowsOf(t, db, "e1"); recs != 1 || dropped {
		t.Errorf("e1 after the fenced drop: %d records, dropped %t; want 1, false", recs, dropped)
	}
	if e, err := db.Load(ctx, "e1"); err != nil {
		t.Errorf("Load(e1) after the fenced drop = %v", err)
	} else if e.HistoryDropped || e.Seq != 1 {
		t.Errorf("Load(e1) after the fenced drop: HistoryDropped %t, Seq %d; want false, 1", e.HistoryDropped, e.Seq)
	}
}
