package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		m := store.NewMemory()
		t.Cleanup(func() { m.Close() })
		return store.TamperMemory{Memory: m}
	})
}

// TestMemoryCheckpointsVerify changes checkpoint "first" of an execution
// the executor ran, one way at a time, and checks that VerifyHistory,
// Checkpoint, ListCheckpoints and a rollback from it each fail with an
// *IntegrityError naming it and the field, as Bolt's do, while
// checkpoint "second", left alone, still loads and rolls back.
func TestMemoryCheckpointsVerify(t *testing.T) {
	m, err := states.Parse([]byte(storetest.TwoCheckpoints))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(cp, other *store.CheckpointWrite)
		field  string
	}{
		{"event", func(cp, _ *store.CheckpointWrite) { cp.Event = 1 }, "event"},
		{"no event", func(cp, _ *store.CheckpointWrite) { cp.Event = 0 }, "event"},
		{"record edited", func(cp, _ *store.CheckpointWrite) { cp.Record = append(slices.Clone(cp.Record), ' ') }, "record"},
		{"another checkpoint's record", func(cp, other *store.CheckpointWrite) {
			cp.Record, cp.DocHash, cp.Blob, cp.CreatedAt, cp.ExpiresAt = other.Record, other.DocHash, other.Blob, other.CreatedAt, other.ExpiresAt
		}, "docHash"},
		{"document hash", func(cp, other *store.CheckpointWrite) { cp.DocHash = other.DocHash }, "docHash"},
		{"created at", func(cp, _ *store.CheckpointWrite) { cp.CreatedAt = cp.CreatedAt.Add(time.Nanosecond) }, "createdAt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			st := store.TamperMemory{Memory: store.NewMemory()}
			t.Cleanup(func() { st.Close() })
			x := engine.New(engine.Config{Store: st.Memory})
			if res, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "run"}); err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			if err := st.VerifyHistory(ctx, "run"); err != nil {
				t.Fatalf("VerifyHistory before the change = %v", err)
			}
			var other store.CheckpointWrite
			if err := st.TamperCheckpoint("run", "second", func(cp *store.CheckpointWrite) { other = *cp }); err != nil {
				t.Fatal(err)
			}
			if err := st.TamperCheckpoint("run", "first", func(cp *store.CheckpointWrite) { tt.change(cp, &other) }); err != nil {
				t.Fatal(err)
			}

			storetest.WantIntegrityError(t, "VerifyHistory", st.VerifyHistory(ctx, "run"), "run", "first", tt.field)
			cp, err := st.Checkpoint(ctx, "run", "first")
			if cp != nil {
				t.Errorf("Checkpoint(first) returned %+v once changed", cp)
			}
			storetest.WantIntegrityError(t, "Checkpoint(first)", err, "run", "first", tt.field)
			list, err := st.ListCheckpoints(ctx, "run")
			if list != nil {
				t.Errorf("ListCheckpoints returned %d checkpoints with one changed", len(list))
			}
			storetest.WantIntegrityError(t, "ListCheckpoints", err, "run", "first", tt.field)
			res, err := x.Rollback(ctx, "run", "first", engine.ResumeOptions{})
			if res != nil {
				t.Errorf("Rollback(first) = %+v, want no result", res)
			}
			storetest.WantIntegrityError(t, "Rollback(first)", err, "run", "first", tt.field)

			if cp, err := st.Checkpoint(ctx, "run", "second"); err != nil || cp.Name != "second" {
				t.Errorf("Checkpoint(second), left alone = %+v, %v", cp, err)
			}
			if res, err := x.Rollback(ctx, "run", "second", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
				t.Errorf("Rollback(second), left alone = %+v, %v", res, err)
			}
		})
	}
}
