package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// saveCheckpoint commits a checkpoint of execution id.
func saveCheckpoint(t *testing.T, s store.Store, id string, seq int64, cp *engine.Checkpoint) {
	t.Helper()
	commit(t, s, &engine.Commit{Execution: id, Seq: seq, Status: engine.StatusRunning, Checkpoint: cp})
}

// checkpoint returns a checkpoint named name of document d, created at
// created and expiring at expires.
func checkpoint(t *testing.T, name, d string, created, expires time.Time) *engine.Checkpoint {
	return &engine.Checkpoint{Name: name, State: "Save", Next: "After", Document: Doc(t, d), CreatedAt: created, ExpiresAt: expires}
}

// names lists checkpoints' names.
func names(cps []*engine.Checkpoint) []string {
	var out []string
	for _, cp := range cps {
		out = append(out, cp.Name)
	}
	return out
}

// listCheckpoints lists an execution's checkpoint names.
func listCheckpoints(t *testing.T, s store.Store, id string) []string {
	t.Helper()
	cps, err := s.ListCheckpoints(t.Context(), id)
	if err != nil {
		t.Fatalf("ListCheckpoints(%s) = %v", id, err)
	}
	return names(cps)
}

// gc runs GC and checks its report.
func gc(t *testing.T, s store.Store, now time.Time, want store.GCReport) {
	t.Helper()
	got, err := s.GC(t.Context(), now)
	if err != nil || got != want {
		t.Errorf("GC(%v) = %+v, %v, want %+v", now, got, err, want)
	}
}

func testCheckpoints(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	want := &engine.Checkpoint{
		Execution: "e1", Name: "cp1", State: "Save", Next: "Review",
		Document:  Doc(t, exactDoc),
		Variables: map[string]any{"x": Doc(t, "1.0"), "list": Doc(t, `[0.10]`)},
		Context:   Doc(t, `{"Execution":{"Id":"e1"},"State":{"Name":"Save"}}`),
		Budget:    Doc(t, `{"tokens":10,"cost":0.0100}`),
		Visits:    map[string]int{"Save": 1}, Invocations: map[string]int{"Agent": 3},
		LastEvent: 5, LastOwnEvent: 1, CreatedAt: t0, ExpiresAt: at(24 * time.Hour),
	}
	saveCheckpoint(t, s, "e1", 1, want)
	saveCheckpoint(t, s, "e1", 2, checkpoint(t, "cp2", `{"b":2}`, at(time.Minute), time.Time{}))

	got, err := s.Checkpoint(t.Context(), "e1", "cp1")
	if err != nil {
		t.Fatalf("Checkpoint(e1, cp1) = %v", err)
	}
	for _, f := range []struct{ name, got, want string }{
		{"Execution", got.Execution, want.Execution}, {"Name", got.Name, want.Name}, {"State", got.State, want.State}, {"Next", got.Next, want.Next},
		{"Document", text(got.Document), text(want.Document)}, {"Variables", text(got.Variables), text(want.Variables)},
		{"Context", text(got.Context), text(want.Context)}, {"Memory", text(got.Memory), text(want.Memory)}, {"Budget", text(got.Budget), text(want.Budget)},
		{"counters", fmt.Sprint(got.Visits, got.Invocations, got.LastEvent, got.LastOwnEvent), fmt.Sprint(want.Visits, want.Invocations, want.LastEvent, want.LastOwnEvent)},
	} {
		if f.got != f.want {
			t.Errorf("Checkpoint(e1, cp1): %s = %s, want %s", f.name, f.got, f.want)
		}
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("Checkpoint(e1, cp1): CreatedAt, ExpiresAt = %v, %v, want %v, %v", got.CreatedAt, got.ExpiresAt, want.CreatedAt, want.ExpiresAt)
	}

	cps, err := s.ListCheckpoints(t.Context(), "e1")
	if err != nil {
		t.Fatalf("ListCheckpoints(e1) = %v", err)
	}
	if got := names(cps); !slices.Equal(got, []string{"cp1", "cp2"}) {
		t.Fatalf("ListCheckpoints(e1) = %q, want [cp1 cp2]", got)
	}
	if c := cps[0]; c.Execution != "e1" || c.State != "Save" || c.Next != "Review" || c.Document != nil || c.LastEvent != 5 ||
		!maps.Equal(c.Invocations, want.Invocations) || !c.CreatedAt.Equal(t0) || !c.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("ListCheckpoints(e1)[0] = %+v, want cp1's metadata without its document", *c)
	}

	// Replaced by name: the new document, and the new creation time orders it.
	saveCheckpoint(t, s, "e1", 3, checkpoint(t, "cp1", `{"replaced":true}`, at(2*time.Minute), time.Time{}))
	if got, err := s.Checkpoint(t.Context(), "e1", "cp1"); err != nil || text(got.Document) != `{"replaced":true}` || got.Variables != nil || !got.ExpiresAt.IsZero() {
		t.Errorf("Checkpoint(e1, cp1) after replacing it = %+v, %v, want the new one", got, err)
	}
	if got := listCheckpoints(t, s, "e1"); !slices.Equal(got, []string{"cp2", "cp1"}) {
		t.Errorf("ListCheckpoints(e1) after replacing cp1 = %q, want [cp2 cp1]", got)
	}

	// A checkpoint of another execution, and one without a name.
	create(t, s, newExecution(t, "e2"))
	for _, cp := range []*engine.Checkpoint{{Execution: "e2", Name: "x"}, {Name: ""}} {
		if err := s.Commit(t.Context(), &engine.Commit{Execution: "e1", Seq: 4, Status: engine.StatusRunning, Checkpoint: cp}); err == nil {
			t.Errorf("Commit(e1) with checkpoint %+v = nil, want an error", cp)
		}
	}
	if got := listCheckpoints(t, s, "e2"); got != nil {
		t.Errorf("ListCheckpoints(e2) = %q, want none", got)
	}
}

func testCheckpointGC(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"), newExecution(t, "e2"))
	hour := at(time.Hour)
	saveCheckpoint(t, s, "e1", 1, checkpoint(t, "a", exactDoc, t0, hour))
	saveCheckpoint(t, s, "e1", 2, checkpoint(t, "b", exactDoc, at(time.Minute), hour))
	saveCheckpoint(t, s, "e2", 1, checkpoint(t, "c", exactDoc, t0, hour))
	saveCheckpoint(t, s, "e2", 2, checkpoint(t, "d", `{"other":1}`, at(time.Minute), time.Time{}))
	for _, id := range []string{"e1", "e2"} {
		commit(t, s, &engine.Commit{Execution: id, Seq: 3, Status: engine.StatusSucceeded})
	}

	gc(t, s, hour.Add(-time.Nanosecond), store.GCReport{})
	// a, b and c share one blob: it is stored once, so it is removed once.
	gc(t, s, hour, store.GCReport{Checkpoints: 3, Blobs: 1})
	gc(t, s, hour.Add(time.Hour), store.GCReport{})
	if _, err := s.Checkpoint(t.Context(), "e1", "a"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Checkpoint(e1, a) after GC = %v, want ErrNotFound", err)
	}
	if got := listCheckpoints(t, s, "e1"); got != nil {
		t.Errorf("ListCheckpoints(e1) after GC = %q, want none", got)
	}
	if got, err := s.Checkpoint(t.Context(), "e2", "d"); err != nil || text(got.Document) != `{"other":1}` {
		t.Errorf("Checkpoint(e2, d) after GC = %v, want it kept", err)
	}
}

func testGCKeepsNewest(t *testing.T, s store.Store) {
	hour := at(time.Hour)
	for _, x := range []struct {
		id     string
		status engine.Status
		cps    []*engine.Checkpoint
	}{
		{"running", engine.StatusRunning, []*engine.Checkpoint{
			checkpoint(t, "newest", `{"r":3}`, at(2*time.Minute), hour),
			checkpoint(t, "old", `{"r":1}`, t0, hour),
			checkpoint(t, "mid", `{"r":2}`, at(time.Minute), hour),
		}},
		{"waiting", engine.StatusWaiting, []*engine.Checkpoint{checkpoint(t, "only", `{"w":1}`, t0, hour)}},
		{"failed", engine.StatusFailed, []*engine.Checkpoint{checkpoint(t, "only", `{"f":1}`, t0, hour)}},
		{"unexpired", engine.StatusRunning, []*engine.Checkpoint{
			checkpoint(t, "expired", `{"u":1}`, t0, hour),
			checkpoint(t, "forever", `{"u":2}`, at(time.Minute), time.Time{}),
		}},
	} {
		create(t, s, newExecution(t, x.id))
		for i, cp := range x.cps {
			saveCheckpoint(t, s, x.id, int64(i+1), cp)
		}
		commit(t, s, &engine.Commit{Execution: x.id, Seq: int64(len(x.cps) + 1), Status: x.status})
	}
	gc(t, s, at(2*time.Hour), store.GCReport{Checkpoints: 4, Blobs: 4})
	for _, tt := range []struct {
		id   string
		want []string
	}{{"running", []string{"newest"}}, {"waiting", []string{"only"}}, {"failed", nil}, {"unexpired", []string{"forever"}}} {
		if got := listCheckpoints(t, s, tt.id); !slices.Equal(got, tt.want) {
			t.Errorf("ListCheckpoints(%s) after GC = %q, want %q", tt.id, got, tt.want)
		}
	}
	if got, err := s.Checkpoint(t.Context(), "running", "newest"); err != nil || text(got.Document) != `{"r":3}` {
		t.Errorf("Checkpoint(running, newest) after GC = %v, want it loadable", err)
	}
	// Once the execution has ended, its last checkpoint may go too.
	commit(t, s, &engine.Commit{Execution: "running", Seq: 5, Status: engine.StatusSucceeded})
	gc(t, s, at(2*time.Hour), store.GCReport{Checkpoints: 1, Blobs: 1})
}

func testGCOrphan(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	saves := []*engine.Checkpoint{
		checkpoint(t, "a", `{"x":1}`, t0, time.Time{}),
		checkpoint(t, "a", `{"y":1}`, at(time.Second), time.Time{}), // orphans {"x":1}
		checkpoint(t, "b", `{"z":1}`, at(2*time.Second), time.Time{}),
		checkpoint(t, "b", `{"w":1}`, at(3*time.Second), time.Time{}), // orphans {"z":1}…
		checkpoint(t, "c", `{"z":1}`, at(4*time.Second), time.Time{}), // …until c takes it again
		checkpoint(t, "d", `{"v":1}`, at(5*time.Second), time.Time{}),
		checkpoint(t, "d", `{"v":1}`, at(6*time.Second), time.Time{}), // the same document: nothing orphaned
	}
	for i, cp := range saves {
		saveCheckpoint(t, s, "e1", int64(i+1), cp)
	}
	gc(t, s, at(time.Hour), store.GCReport{Blobs: 1})
	for _, tt := range []struct{ name, doc string }{{"a", `{"y":1}`}, {"b", `{"w":1}`}, {"c", `{"z":1}`}, {"d", `{"v":1}`}} {
		got, err := s.Checkpoint(t.Context(), "e1", tt.name)
		if err != nil || text(got.Document) != tt.doc {
			t.Errorf("Checkpoint(e1, %s) after GC = %v, want %s", tt.name, err, tt.doc)
		}
	}
	gc(t, s, at(time.Hour), store.GCReport{})
}
