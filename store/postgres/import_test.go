package postgres

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestImportDroppedHistory copies from Bolt an execution whose history was
// dropped, one whose history was dropped and then grew again, and one
// that kept its history: each loads, lists its history and verifies as on
// Bolt, and history_dropped is set on the two dropped ones.
func TestImportDroppedHistory(t *testing.T) {
	ctx := t.Context()
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "x.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ts := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	ev := func(id int64) []engine.Event {
		return []engine.Event{{ID: id, Type: "PassStateEntered", State: "S", Timestamp: ts.Add(time.Duration(id))}}
	}
	runs := []struct {
		id      string
		commits []*engine.Commit
		dropped bool
		events  int
	}{
		{"dropped", []*engine.Commit{
			{Status: engine.StatusRunning, Events: ev(1), LastEvent: 1},
			{Status: engine.StatusSucceeded, StoppedAt: ts.Add(time.Minute), Events: ev(2), LastEvent: 2, DropHistory: true},
		}, true, 0},
		{"again", []*engine.Commit{
			{Status: engine.StatusRunning, Events: ev(1), LastEvent: 1, DropHistory: true},
			{Status: engine.StatusRunning, Events: ev(2), LastEvent: 2},
		}, true, 1},
		{"kept", []*engine.Commit{
			{Status: engine.StatusRunning, Events: ev(1), LastEvent: 1},
			{Status: engine.StatusRunning, Events: ev(2), LastEvent: 2},
		}, false, 2},
	}
	for _, r := range runs {
		if err := b.Create(ctx, &engine.Execution{ID: r.id, MachineName: "m", StartedAt: ts, Status: engine.StatusRunning, Input: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		for i, c := range r.commits {
			c.Execution, c.Seq = r.id, int64(i+1)
			if err := b.Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	db := openTest(t, Options{})
	if err := b.Export(ctx, func(it store.ExportItem) error { return db.Import(ctx, it) }); err != nil {
		t.Fatalf("copying Bolt into PostgreSQL: %v", err)
	}
	for _, r := range runs {
		want, err := b.History(ctx, r.id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.History(ctx, r.id)
		if err != nil || len(got) != r.events || !reflect.DeepEqual(got, want) {
			t.Errorf("History(%s) copied = %d events, %v; want Bolt's %d", r.id, len(got), err, r.events)
		}
		if err := db.VerifyHistory(ctx, r.id); err != nil {
			t.Errorf("VerifyHistory(%s) copied = %v", r.id, err)
		}
		if e, err := db.Load(ctx, r.id); err != nil {
			t.Errorf("Load(%s) copied = %v", r.id, err)
		} else if e.HistoryDropped != r.dropped {
			t.Errorf("Load(%s) copied: HistoryDropped %t, want %t", r.id, e.HistoryDropped, r.dropped)
		}
		if _, _, dropped := rowsOf(t, db, r.id); dropped != r.dropped {
			t.Errorf("history_dropped of %s copied = %t, want %t", r.id, dropped, r.dropped)
		}
	}
}
