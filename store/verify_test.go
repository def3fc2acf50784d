package store_test

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

// recordsBackend keeps an execution's records as a backend other than
// Bolt does, through the functions backend.go exports.
type recordsBackend struct {
	rec         *store.Records
	id          string
	head        []byte
	history     [][]byte
	checkpoints map[string]store.CheckpointWrite
}

// newRecordsBackend creates execution id.
func newRecordsBackend(t *testing.T, id string, started time.Time) *recordsBackend {
	t.Helper()
	rec, err := store.NewRecords(store.CodecNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := store.PrepareCreate(&engine.Execution{ID: id, MachineName: "m", StartedAt: started, Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return &recordsBackend{rec: rec, id: id, head: n.Head, checkpoints: make(map[string]store.CheckpointWrite)}
}

// commit applies c as a backend's commit writes it.
func (b *recordsBackend) commit(t *testing.T, c *engine.Commit) {
	t.Helper()
	c.Execution = b.id
	p, err := b.rec.PrepareCommit(c)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Apply(b.head, b.history, func(string, string) ([]byte, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	b.head = a.Head
	if a.History != nil {
		b.history = append(b.history, a.History)
	}
	if cp := a.Checkpoint; cp != nil {
		b.checkpoints[cp.Name] = *cp
	}
	b.rec.Committed(p)
}

// rows returns the checkpoints as the backend keeps them, by name.
func (b *recordsBackend) rows() []store.CheckpointWrite {
	var out []store.CheckpointWrite
	for _, name := range slices.Sorted(maps.Keys(b.checkpoints)) {
		out = append(out, b.checkpoints[name])
	}
	return out
}

// checkpointedRun writes execution id, started at ts: checkpoint "a"
// saved (event 3), "b" saved (event 5), "a" saved again (event 7), then
// the execution succeeds (event 8) with checkpoint "z", which no
// CheckpointSaved event names, bound to its last event.
func checkpointedRun(t *testing.T, id string, ts time.Time) *recordsBackend {
	t.Helper()
	b := newRecordsBackend(t, id, ts)
	_, commits := storetest.CheckpointedRun(t, id, ts)
	// The last commit also saves "z", bound to its event.
	last := commits[len(commits)-1]
	last.Checkpoint = &engine.Checkpoint{Name: "z", State: "Done", Document: last.Output, CreatedAt: ts.Add(3 * time.Minute)}
	for _, c := range commits {
		b.commit(t, c)
	}
	return b
}

func TestVerifyCheckpoints(t *testing.T) {
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	e := checkpointedRun(t, "e", ts)
	// The same steps a day later: the same documents, other records.
	other := checkpointedRun(t, "other", ts.Add(24*time.Hour))
	// The bindings the run gave: "a" to event 7, "b" to 5, "z" to 8.
	for name, want := range map[string]int64{"a": 7, "b": 5, "z": 8} {
		if got := e.checkpoints[name].Event; got != want {
			t.Fatalf("checkpoint %s is bound to event %d, want %d", name, got, want)
		}
	}
	if err := store.VerifyHistory("e", e.head, e.history); err != nil {
		t.Fatalf("VerifyHistory(e) = %v", err)
	}
	if err := store.VerifyCheckpoints("e", e.history, e.rows()); err != nil {
		t.Fatalf("VerifyCheckpoints(e) = %v, want nil", err)
	}

	tests := []struct {
		name   string
		cp     string
		change func(cp *store.CheckpointWrite)
		field  string
	}{
		{"no event", "a", func(cp *store.CheckpointWrite) { cp.Event = 0 }, "event"},
		{"the event of its earlier save", "a", func(cp *store.CheckpointWrite) { cp.Event = 3 }, "event"},
		{"an event that binds nothing", "a", func(cp *store.CheckpointWrite) { cp.Event = 1 }, "event"},
		{"another checkpoint's event", "a", func(cp *store.CheckpointWrite) { cp.Event = 5 }, "event"},
		{"beyond the history", "a", func(cp *store.CheckpointWrite) { cp.Event = 9 }, "event"},
		{"negative event", "b", func(cp *store.CheckpointWrite) { cp.Event = -1 }, "event"},
		{"bound to the last event, none named", "z", func(cp *store.CheckpointWrite) { cp.Event = 0 }, "event"},
		{"document hash beside it", "a", func(cp *store.CheckpointWrite) { cp.DocHash = e.checkpoints["b"].DocHash }, "docHash"},
		{"document hash not hex", "a", func(cp *store.CheckpointWrite) { cp.DocHash = "zz" }, "docHash"},
		{"blob beside it", "a", func(cp *store.CheckpointWrite) { cp.Blob = e.checkpoints["b"].Blob }, "blob"},
		{"created at", "b", func(cp *store.CheckpointWrite) { cp.CreatedAt = cp.CreatedAt.Add(time.Nanosecond) }, "createdAt"},
		{"expiry dropped", "a", func(cp *store.CheckpointWrite) { cp.ExpiresAt = time.Time{} }, "expiresAt"},
		{"expiry added", "b", func(cp *store.CheckpointWrite) { cp.ExpiresAt = cp.CreatedAt }, "expiresAt"},
		{"record edited", "a", func(cp *store.CheckpointWrite) { cp.Record = append(slices.Clone(cp.Record), ' ') }, "record"},
		{"record not JSON", "b", func(cp *store.CheckpointWrite) { cp.Record = []byte("{") }, "record"},
		{"another checkpoint's record", "a", func(cp *store.CheckpointWrite) {
			b := e.checkpoints["b"]
			cp.Record, cp.DocHash, cp.Blob, cp.CreatedAt, cp.ExpiresAt = b.Record, b.DocHash, b.Blob, b.CreatedAt, b.ExpiresAt
		}, "docHash"},
		{"record of another execution", "a", func(cp *store.CheckpointWrite) { *cp = other.checkpoints["a"] }, "record"},
		{"record of another name", "b", func(cp *store.CheckpointWrite) {
			*cp = e.checkpoints["z"]
			cp.Name, cp.Event = "b", 8
		}, "record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := e.rows()
			i := slices.IndexFunc(rows, func(cp store.CheckpointWrite) bool { return cp.Name == tt.cp })
			tt.change(&rows[i])
			storetest.WantIntegrityError(t, "VerifyCheckpoints", store.VerifyCheckpoints("e", e.history, rows), "e", tt.cp, tt.field)
		})
	}

	t.Run("a row no event binds", func(t *testing.T) {
		// A commit without events: nothing in the history binds its
		// checkpoint, and only its fields are checked.
		b := newRecordsBackend(t, "free", time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
		at := time.Date(2025, 3, 14, 9, 1, 0, 0, time.UTC)
		b.commit(t, &engine.Commit{Seq: 1, Status: engine.StatusRunning, Checkpoint: &engine.Checkpoint{Name: "free", Document: storetest.Doc(t, `{}`), CreatedAt: at}})
		rows := b.rows()
		if len(rows) != 1 || rows[0].Event != 0 {
			t.Fatalf("checkpoints = %+v, want one bound to no event", rows)
		}
		if err := store.VerifyCheckpoints("free", b.history, rows); err != nil {
			t.Errorf("VerifyCheckpoints(free) = %v, want nil", err)
		}
		rows[0].DocHash = e.checkpoints["a"].DocHash
		storetest.WantIntegrityError(t, "VerifyCheckpoints", store.VerifyCheckpoints("free", b.history, rows), "free", "free", "docHash")
	})
	t.Run("no checkpoints", func(t *testing.T) {
		if err := store.VerifyCheckpoints("e", [][]byte{[]byte("not a record")}, nil); err != nil {
			t.Errorf("VerifyCheckpoints without checkpoints = %v, want nil", err)
		}
	})
	t.Run("a malformed history", func(t *testing.T) {
		err := store.VerifyCheckpoints("e", [][]byte{[]byte("not a record")}, e.rows())
		if !errors.Is(err, store.ErrTampered) {
			t.Errorf("VerifyCheckpoints of a malformed history = %v, want ErrTampered", err)
		}
	})
}

// TestVerifyCheckpointsOne: a backend's checkpoint load checks the one
// checkpoint it returns, and gets what VerifyHistory gets for it.
func TestVerifyCheckpointsOne(t *testing.T) {
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	e := checkpointedRun(t, "e", ts)
	for _, cp := range e.rows() {
		if err := store.VerifyCheckpoints("e", e.history, []store.CheckpointWrite{cp}); err != nil {
			t.Errorf("VerifyCheckpoints(e, %s alone) = %v, want nil", cp.Name, err)
		}
	}
	tests := []struct {
		name, cp string
		change   func(cp *store.CheckpointWrite)
		field    string
	}{
		{"the event of its earlier save", "a", func(cp *store.CheckpointWrite) { cp.Event = 3 }, "event"},
		{"no event", "z", func(cp *store.CheckpointWrite) { cp.Event = 0 }, "event"},
		{"record edited", "b", func(cp *store.CheckpointWrite) { cp.Record = append(slices.Clone(cp.Record), ' ') }, "record"},
		{"expiry dropped", "a", func(cp *store.CheckpointWrite) { cp.ExpiresAt = time.Time{} }, "expiresAt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := e.checkpoints[tt.cp]
			tt.change(&cp)
			storetest.WantIntegrityError(t, "VerifyCheckpoints(alone)", store.VerifyCheckpoints("e", e.history, []store.CheckpointWrite{cp}), "e", tt.cp, tt.field)
		})
	}
}
