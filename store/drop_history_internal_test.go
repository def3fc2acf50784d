package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// childDoc is a document of about n bytes.
func childDoc(tag string, n int) any {
	return map[string]any{"tag": tag, "pad": strings.Repeat("x", n)}
}

// runChild commits to a new Bolt execution id what a Distributed Map
// child that succeeds commits: 7 events, its input and output of 5 KB,
// the ending commit dropping the history when drop is set.
func runChild(t *testing.T, b *Bolt, id string, drop bool) {
	t.Helper()
	ctx := t.Context()
	ts := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	in, out := childDoc("in", 5000), childDoc("out", 5000)
	if err := b.Create(ctx, &engine.Execution{ID: id, Input: in, StartedAt: ts, Status: engine.StatusRunning,
		Progress: engine.Progress{Scopes: map[string]*engine.Scope{"": {Next: "Work", Doc: in}}}}); err != nil {
		t.Fatal(err)
	}
	commits := []*engine.Commit{
		{Status: engine.StatusRunning, LastEvent: 4, Scopes: map[string]*engine.Scope{"": {Next: "Work", Doc: in}}, Events: []engine.Event{
			{ID: 1, Type: engine.EventExecutionStarted, Timestamp: ts, Input: in, Document: in},
			{ID: 2, Type: "TaskStateEntered", State: "Work", Timestamp: ts, Input: in, Document: in},
			{ID: 3, Type: "TaskScheduled", State: "Work", Timestamp: ts, Input: in, Document: in},
			{ID: 4, Type: "TaskStarted", State: "Work", Timestamp: ts, Document: in},
		}},
		{Status: engine.StatusSucceeded, Output: out, StoppedAt: ts, LastEvent: 7, DropHistory: drop,
			Scopes: map[string]*engine.Scope{"": {Doc: out}}, Events: []engine.Event{
				{ID: 5, Type: "TaskSucceeded", State: "Work", Timestamp: ts, Output: out, Document: out},
				{ID: 6, Type: "TaskStateExited", State: "Work", Timestamp: ts, Output: out, Document: out},
				{ID: 7, Type: engine.EventExecutionSucceeded, Timestamp: ts, Output: out, Document: out},
			}},
	}
	for i, c := range commits {
		c.Execution, c.Seq = id, int64(i+1)
		if err := b.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// storedBytes is the size of the keys and values of b's database, in
// all and by bucket.
func storedBytes(t *testing.T, b *Bolt) (int, map[string]int) {
	t.Helper()
	dump, err := DumpBolt(b)
	if err != nil {
		t.Fatal(err)
	}
	n, by := 0, make(map[string]int)
	for k, v := range dump {
		if !strings.HasSuffix(k, "#seq") {
			n += len(k) + len(v)
			bucket, _, _ := strings.Cut(k, "/")
			by[bucket] += len(k) + len(v)
		}
	}
	return n, by
}

// TestDropHistoryBytes measures what a Distributed Map child keeps in a
// Bolt database (the bytes of its keys and values) with and without the
// drop of its history on its ending commit, and checks that the drop
// leaves the head and none of the events.
func TestDropHistoryBytes(t *testing.T) {
	size := make(map[bool]int)
	for _, drop := range []bool{false, true} {
		b, err := OpenBolt(filepath.Join(t.TempDir(), "child.db"), BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		empty, _ := storedBytes(t, b)
		runChild(t, b, "child", drop)
		n, by := storedBytes(t, b)
		size[drop] = n - empty
		t.Logf("drop %t: by bucket %v", drop, by)
		e, err := b.Load(t.Context(), "child")
		if err != nil {
			t.Fatal(err)
		}
		h, err := b.History(t.Context(), "child")
		if err != nil {
			t.Fatal(err)
		}
		if e.HistoryDropped != drop || (len(h) == 0) != drop || e.Status != engine.StatusSucceeded {
			t.Errorf("drop %t: HistoryDropped %t, %d events, status %s", drop, e.HistoryDropped, len(h), e.Status)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("a child of 7 events, 5 KB input and output: %d bytes kept, %d after DropHistory", size[false], size[true])
	if size[true] >= size[false] {
		t.Errorf("DropHistory kept %d bytes, without it %d: want fewer", size[true], size[false])
	}
}

// TestExportDroppedHistory: an execution whose history was dropped is
// exported with no events and checkpoints, marked HistoryDropped (in its
// head too), and what a target store reads of it (LoadExecution,
// VerifyHistory, ReadHistory) says so; one that committed events after
// the drop exports them, their chain starting afresh.
func TestExportDroppedHistory(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "x.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runChild(t, b, "dropped", true)
	runChild(t, b, "kept", false)
	ctx := t.Context()
	ts := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	if err := b.Create(ctx, &engine.Execution{ID: "again", StartedAt: ts, Status: engine.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []*engine.Commit{
		{Status: engine.StatusRunning, DropHistory: true, Events: []engine.Event{{ID: 1, Type: engine.EventExecutionStarted, Timestamp: ts}},
			Checkpoint: &engine.Checkpoint{Name: "gone", State: "S", Document: childDoc("cp", 10), CreatedAt: ts}},
		{Status: engine.StatusRunning, Events: []engine.Event{{ID: 2, Type: "PassStateEntered", State: "S", Timestamp: ts}}},
	} {
		c.Execution, c.Seq = "again", int64(i+1)
		if err := b.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	items, err := exportAll(t, b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		dropped bool
		events  int
	}{"dropped": {true, 0}, "kept": {false, 7}, "again": {true, 1}}
	seen := 0
	for _, it := range items {
		e := it.Execution
		if e == nil {
			continue
		}
		seen++
		w := want[e.ID]
		got, err := LoadExecution(e.ID, e.Spec, e.Head, nil, e.Scopes, e.Namespaces)
		if err != nil {
			t.Fatalf("%s: LoadExecution of the export = %v", e.ID, err)
		}
		if e.HistoryDropped != w.dropped || got.HistoryDropped != w.dropped {
			t.Errorf("%s: exported HistoryDropped %t, loads as %t, want %t", e.ID, e.HistoryDropped, got.HistoryDropped, w.dropped)
		}
		if err := VerifyHistory(e.ID, e.Head, e.History); err != nil {
			t.Errorf("%s: the exported history does not verify: %v", e.ID, err)
		}
		events, err := ReadHistory(e.ID, e.History)
		if err != nil || len(events) != w.events || e.Events != int64(w.events) {
			t.Errorf("%s: exported %d events (Events %d), %v, want %d", e.ID, len(events), e.Events, err, w.events)
		}
		if len(e.Checkpoints) != 0 {
			t.Errorf("%s: exported %d checkpoints, want none", e.ID, len(e.Checkpoints))
		}
		if e.ID == "again" && (len(events) != 1 || events[0].PrevHash != "") {
			t.Errorf("again: exported events %s, want one starting a new chain", fmt.Sprint(events))
		}
	}
	if seen != len(want) {
		t.Errorf("exported %d executions, want %d", seen, len(want))
	}
}
