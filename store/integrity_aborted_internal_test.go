package store

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// fillAborted writes a database at path with one execution, "stopped",
// ended by ExecutionAborted (engine.Executor.Stop).
func fillAborted(t *testing.T, path string) {
	t.Helper()
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	in := tamperDoc(t, `{"n":1}`)
	if err := b.Create(ctx, &engine.Execution{ID: "stopped", Input: in, StartedAt: ts}); err != nil {
		t.Fatal(err)
	}
	commits := []*engine.Commit{
		{Status: engine.StatusWaiting, LastEvent: 2, Scopes: map[string]*engine.Scope{"": {Next: "Review", Doc: in}}, Events: []engine.Event{
			{ID: 1, Type: engine.EventExecutionStarted, Timestamp: ts, Input: in, Document: in},
			{ID: 2, Type: "ApprovalStateEntered", State: "Review", Timestamp: ts, Input: in, Document: in},
		}},
		{Status: engine.StatusAborted, Error: "Operator.Stopped", Cause: "not needed any more", StoppedAt: ts, LastEvent: 3, DropScopes: []string{""},
			Events: []engine.Event{{ID: 3, Type: engine.EventExecutionAborted, Timestamp: ts, Error: "Operator.Stopped", Cause: "not needed any more", Document: in}}},
	}
	for i, c := range commits {
		c.Execution, c.Seq = "stopped", int64(i+1)
		if err := b.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBoltTamperAborted: the head of an execution ended by ExecutionAborted
// must agree with that event, even when its seal is recomputed.
func TestBoltTamperAborted(t *testing.T) {
	template := filepath.Join(t.TempDir(), "template.db")
	fillAborted(t, template)
	reseal := func(t *bbolt.Tx) error {
		heads := t.Bucket(bucketHeads)
		v := bytes.Clone(heads.Get([]byte("stopped")))
		sum := headSeal("stopped", v[headSealLen:])
		copy(v[headSealAt:], sum[:])
		return heads.Put([]byte("stopped"), v)
	}
	for _, tc := range []struct {
		name  string
		edit  func(t *bbolt.Tx) error
		field string
	}{
		{"status", editHead("stopped", set("status", `"SUCCEEDED"`)), "status"},
		{"error", editHead("stopped", set("error", `"Fine"`)), "error"},
		{"cause", editHead("stopped", set("cause", `"it finished"`)), "cause"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, template)
			editBolt(t, path, tc.edit)
			editBolt(t, path, reseal)
			b, err := OpenBolt(path, BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			checkIntegrityError(t, "VerifyHistory", b.VerifyHistory(t.Context(), "stopped"), "stopped", "", tc.field)
			_, err = b.Load(t.Context(), "stopped")
			checkIntegrityError(t, "Load", err, "stopped", "", tc.field)
		})
	}
	t.Run("untouched", func(t *testing.T) {
		b, err := OpenBolt(copyFile(t, template), BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := b.VerifyHistory(t.Context(), "stopped"); err != nil {
			t.Errorf("VerifyHistory = %v", err)
		}
		e, err := b.Load(t.Context(), "stopped")
		if err != nil || e.Status != engine.StatusAborted || e.Error != "Operator.Stopped" {
			t.Errorf("Load = %+v, %v, want ABORTED with its error", e, err)
		}
	})
}
