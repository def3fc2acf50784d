package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// checkDropped checks that an execution's history is empty and verifies,
// that it has no checkpoints and that Load says its history was dropped.
func checkDropped(t *testing.T, s store.Store, id string) *engine.Execution {
	t.Helper()
	if h := history(t, s, id); len(h) != 0 {
		t.Errorf("History(%s) has %d events, want none", id, len(h))
	}
	evs, total, err := s.HistoryRange(t.Context(), id, 0, 0)
	if err != nil || len(evs) != 0 || total != 0 {
		t.Errorf("HistoryRange(%s, 0, 0) = %d events, total %d, %v, want none, 0, nil", id, len(evs), total, err)
	}
	if err := s.VerifyHistory(t.Context(), id); err != nil {
		t.Errorf("VerifyHistory(%s) = %v, want nil", id, err)
	}
	if got := listCheckpoints(t, s, id); len(got) != 0 {
		t.Errorf("ListCheckpoints(%s) = %q, want none", id, got)
	}
	e := load(t, s, id)
	if !e.HistoryDropped {
		t.Errorf("Load(%s).HistoryDropped = false, want true", id)
	}
	return e
}

// historyHashes lists the hashes of an execution's events.
func historyHashes(t *testing.T, s store.Store, id string) []string {
	t.Helper()
	var out []string
	for _, e := range history(t, s, id) {
		out = append(out, e.Hash)
	}
	return out
}

// testDropHistory: a commit with DropHistory drops the execution's events
// (its own too) and checkpoints, and the snapshots only they referenced;
// the head stays, marked HistoryDropped, and the empty history verifies.
// Later commits start a new chain. Other executions keep everything.
func testDropHistory(t *testing.T, s store.Store) {
	ctx := t.Context()
	ended, express, other := newExecution(t, "ended"), newExecution(t, "express"), newExecution(t, "other")
	create(t, s, ended, express, other)
	for _, e := range []*engine.Execution{ended, express, other} {
		if got := load(t, s, e.ID); got.HistoryDropped {
			t.Errorf("Load(%s).HistoryDropped = true before any drop, want false", e.ID)
		}
	}

	// other has a history and a checkpoint whose document ended's
	// checkpoints share.
	commit(t, s, &engine.Commit{Execution: "other", Seq: 1, Status: engine.StatusRunning, Events: events(t, 1, 5, t0),
		Checkpoint: checkpoint(t, "kept", `{"shared":1}`, t0, time.Time{})})
	otherHashes := historyHashes(t, s, "other")

	// A Distributed Map child: two steps with checkpoints, then the commit
	// that ends it drops its history.
	commit(t, s, &engine.Commit{Execution: "ended", Seq: 1, Status: engine.StatusRunning, Events: events(t, 1, 5, t0),
		Checkpoint: checkpoint(t, "mine", `{"only":"ended"}`, t0, time.Time{}), LastEvent: 5})
	commit(t, s, &engine.Commit{Execution: "ended", Seq: 2, Status: engine.StatusRunning, Events: events(t, 6, 3, at(time.Second)),
		Checkpoint: checkpoint(t, "shared", `{"shared":1}`, at(time.Second), time.Time{}), LastEvent: 8})
	if n := len(history(t, s, "ended")); n != 8 {
		t.Fatalf("History(ended) before the drop has %d events, want 8", n)
	}
	end := &engine.Commit{
		Execution: "ended", Seq: 3, Status: engine.StatusSucceeded, Output: Doc(t, exactDoc), StoppedAt: at(time.Minute),
		Events: []engine.Event{{ID: 9, Type: engine.EventExecutionSucceeded, Timestamp: at(time.Minute), Output: Doc(t, exactDoc), Document: Doc(t, exactDoc)}},
		Scopes: map[string]*engine.Scope{"": {Next: "", Doc: Doc(t, `{"done":true}`), Visits: map[string]int{"A": 1}}},
		// The ending commit's own checkpoint is dropped too.
		Checkpoint:  checkpoint(t, "last", `{"last":1}`, at(time.Minute), time.Time{}),
		Invocations: map[string]int{"Agent": 2}, LastEvent: 9, LastOwnEvent: 1,
		DropHistory: true,
	}
	commit(t, s, end)
	got := checkDropped(t, s, "ended")
	want := newExecution(t, "ended")
	want.DefinitionHash = hash(t, Doc(t, definition))
	want.Status, want.Output, want.StoppedAt, want.Seq = engine.StatusSucceeded, Doc(t, exactDoc), at(time.Minute), 3
	want.Progress = engine.Progress{
		Scopes:      map[string]*engine.Scope{"": {Doc: Doc(t, `{"done":true}`), Visits: map[string]int{"A": 1}}},
		Invocations: map[string]int{"Agent": 2}, LastEvent: 9, LastOwnEvent: 1,
	}
	checkExecution(t, got, want)
	for _, name := range []string{"mine", "shared", "last"} {
		if _, err := s.Checkpoint(ctx, "ended", name); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("Checkpoint(ended, %s) after the drop = %v, want ErrNotFound", name, err)
		}
	}
	// GC removes the snapshot only the dropped checkpoints referenced
	// ({"only":"ended"}; {"last":1} was never kept), not the one other's
	// checkpoint shares.
	gc(t, s, at(time.Hour), store.GCReport{Blobs: 1})
	if cp, err := s.Checkpoint(ctx, "other", "kept"); err != nil || text(cp.Document) != `{"shared":1}` {
		t.Errorf("Checkpoint(other, kept) after ended's drop and GC = %v, want {\"shared\":1}", err)
	}

	// Dropping again changes nothing.
	commit(t, s, &engine.Commit{Execution: "ended", Seq: 4, DropHistory: true})
	again := checkDropped(t, s, "ended")
	want.Seq = 4
	checkExecution(t, again, want)

	// An EXPRESS child drops on every commit: it never keeps an event, and
	// what it loads is its progress, from which it resumes.
	for seq := int64(1); seq <= 3; seq++ {
		commit(t, s, &engine.Commit{
			Execution: "express", Seq: seq, Status: engine.StatusRunning, Events: events(t, 3*seq-2, 3, at(time.Duration(seq)*time.Second)),
			Scopes:    map[string]*engine.Scope{"": {Next: "S", Doc: Doc(t, `{"seq":1}`), Visits: map[string]int{"S": int(seq)}}},
			LastEvent: 3 * seq, AddInvocations: map[string]int{"Agent": 1},
			DropHistory: true,
		})
		e := checkDropped(t, s, "express")
		wantProgress := engine.Progress{
			Scopes:      map[string]*engine.Scope{"": {Next: "S", Doc: Doc(t, `{"seq":1}`), Visits: map[string]int{"S": int(seq)}}},
			Invocations: map[string]int{"Agent": int(seq)}, LastEvent: 3 * seq,
		}
		checkProgress(t, "express", &e.Progress, &wantProgress)
		if e.Status != engine.StatusRunning || e.Seq != seq {
			t.Errorf("Load(express) after commit %d: Status, Seq = %s, %d, want RUNNING, %d", seq, e.Status, e.Seq, seq)
		}
	}
	if ids, err := s.Unfinished(ctx); err != nil || !slices.Contains(ids, "express") {
		t.Errorf("Unfinished() = %q, %v, want express among them", ids, err)
	}

	// A commit without DropHistory keeps its events again, in a chain
	// that starts afresh; the execution stays marked.
	evs := events(t, 10, 5, at(10*time.Second))
	commit(t, s, &engine.Commit{Execution: "express", Seq: 4, Status: engine.StatusRunning, Events: evs[:2], LastEvent: 11})
	commit(t, s, &engine.Commit{Execution: "express", Seq: 5, Status: engine.StatusRunning, Events: evs[2:], LastEvent: 14,
		Checkpoint: checkpoint(t, "after", `{"after":1}`, at(10*time.Second), time.Time{})})
	h := history(t, s, "express")
	if len(h) != len(evs) {
		t.Fatalf("History(express) after commits without a drop has %d events, want %d", len(h), len(evs))
	}
	for i := range h {
		if h[i].ID != evs[i].ID || h[i].Type != evs[i].Type {
			t.Errorf("History(express) event %d = %d %s, want %d %s", i+1, h[i].ID, h[i].Type, evs[i].ID, evs[i].Type)
		}
	}
	checkChain(t, s, "express", h)
	page, total, err := s.HistoryRange(ctx, "express", 3, 0)
	if err != nil || total != int64(len(evs)) || len(page) != 2 || page[0].ID != evs[3].ID {
		t.Errorf("HistoryRange(express, 3, 0) = %d events, total %d, %v, want events 4 and 5 of %d", len(page), total, err, len(evs))
	}
	if got := listCheckpoints(t, s, "express"); !slices.Equal(got, []string{"after"}) {
		t.Errorf("ListCheckpoints(express) = %q, want [after]", got)
	}
	if e := load(t, s, "express"); !e.HistoryDropped || e.Progress.LastEvent != 14 {
		t.Errorf("Load(express): HistoryDropped, LastEvent = %t, %d, want true, 14", e.HistoryDropped, e.Progress.LastEvent)
	}
	// The commit that ends it drops that history too.
	commit(t, s, &engine.Commit{Execution: "express", Seq: 6, Status: engine.StatusSucceeded, Output: Doc(t, `{"ok":1}`), StoppedAt: at(time.Minute),
		Events: []engine.Event{{ID: 15, Type: engine.EventExecutionSucceeded, Timestamp: at(time.Minute), Output: Doc(t, `{"ok":1}`)}}, DropHistory: true})
	if e := checkDropped(t, s, "express"); e.Status != engine.StatusSucceeded || text(e.Output) != `{"ok":1}` {
		t.Errorf("Load(express) after its end = %s %s, want SUCCEEDED {\"ok\":1}", e.Status, text(e.Output))
	}

	// A drop names an execution as any commit does.
	if err := s.Commit(ctx, &engine.Commit{Execution: "nope", Seq: 1, Status: engine.StatusRunning, DropHistory: true}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Commit(nope, DropHistory) = %v, want ErrNotFound", err)
	}

	// other kept everything.
	if got := historyHashes(t, s, "other"); !slices.Equal(got, otherHashes) {
		t.Errorf("History(other) after the others' drops = %q, want %q", got, otherHashes)
	}
	if err := s.VerifyHistory(ctx, "other"); err != nil {
		t.Errorf("VerifyHistory(other) = %v, want nil", err)
	}
	if got := listCheckpoints(t, s, "other"); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("ListCheckpoints(other) = %q, want [kept]", got)
	}
	if e := load(t, s, "other"); e.HistoryDropped {
		t.Errorf("Load(other).HistoryDropped = true, want false")
	}

	// An execution created marked HistoryDropped (an EXPRESS child) is
	// loaded so before its first commit.
	born := newExecution(t, "born-dropped")
	born.HistoryDropped = true
	create(t, s, born)
	if e := load(t, s, "born-dropped"); !e.HistoryDropped {
		t.Error("Load(born-dropped).HistoryDropped = false after a Create that set it, want true")
	}
}
