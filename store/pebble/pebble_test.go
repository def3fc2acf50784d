//go:build pebble

package pebble_test

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/pebble"
	"github.com/aslrun/aslrun/store/storetest"
)

// openTest opens a Store in folder path, closed at the end of the test.
func openTest(t testing.TB, path string) *pebble.Store {
	t.Helper()
	s, err := pebble.Open(path, pebble.Options{})
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore runs the store acceptance suite on Pebble, each test in a
// fresh folder.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, filepath.Join(t.TempDir(), "db")) })
}

// TestLocked: a second Open of a folder held by a Store fails with
// store.ErrLocked, and succeeds once the first is closed.
func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	first := openTest(t, path)
	if s, err := pebble.Open(path, pebble.Options{LockTimeout: 60_000_000}); !errors.Is(err, store.ErrLocked) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openTest(t, path)
}

// TestReopen: what was committed is there after Close and Open.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openTest(t, path)
	ctx := t.Context()
	if err := s.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning,
		Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: map[string]any{"a": "b"}}},
		Events: []engine.Event{{ID: 1, Type: "E", Document: map[string]any{"a": "b"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path)
	e, err := s.Load(ctx, "e1")
	if err != nil || e.Seq != 1 {
		t.Fatalf("Load after reopening: seq %v, %v; want 1", e, err)
	}
	if err := s.VerifyHistory(ctx, "e1"); err != nil {
		t.Errorf("VerifyHistory after reopening = %v", err)
	}
	ids, err := s.Unfinished(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "e1" {
		t.Errorf("Unfinished after reopening = %v, %v; want [e1]", ids, err)
	}
}

// TestSyncs: a strict execution's commit syncs the WAL before it returns;
// a batched execution's commit does not, but the one that parks it
// (WAITING) and the one that ends it do.
func TestSyncs(t *testing.T) {
	var syncs atomic.Int64
	s, err := pebble.OpenCounting(filepath.Join(t.TempDir(), "db"), pebble.Options{}, &syncs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	for _, d := range []engine.Durability{"", engine.DurabilityStrict, engine.DurabilityBatched} {
		if err := s.Create(ctx, &engine.Execution{ID: "e-" + string(d), Durability: d}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id     string
		seq    int64
		status engine.Status
		synced bool
	}{
		{"e-", 1, engine.StatusRunning, true},
		{"e-strict", 1, engine.StatusRunning, true},
		{"e-batched", 1, engine.StatusRunning, false},
		{"e-batched", 2, engine.StatusRunning, false},
		{"e-batched", 3, engine.StatusWaiting, true},
		{"e-batched", 4, engine.StatusRunning, false},
		{"e-batched", 5, engine.StatusSucceeded, true},
	} {
		before := syncs.Load()
		c := &engine.Commit{Execution: tc.id, Seq: tc.seq, Status: tc.status,
			Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: map[string]any{"seq": tc.seq}}}}
		if tc.status == engine.StatusWaiting {
			c.WakeAt, c.WaitingFor = time.Unix(1_900_000_000, 0), "Wait"
		}
		if tc.status == engine.StatusSucceeded {
			c.Output = map[string]any{}
		}
		if err := s.Commit(ctx, c); err != nil {
			t.Fatalf("commit %d of %s: %v", tc.seq, tc.id, err)
		}
		if got := syncs.Load() > before; got != tc.synced {
			t.Errorf("commit %d of %s (%s): synced %v, want %v", tc.seq, tc.id, tc.status, got, tc.synced)
		}
	}
}
