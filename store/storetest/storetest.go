// Package storetest is the acceptance suite every store.Store must pass:
// Run checks the engine's contract (engine.Store, engine.Checkpoints,
// engine.Scheduler) and the store package's additions against a fresh
// store per test.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// Tamperer is implemented by a store under test (usually a test wrapper
// around it) that lets the suite rewrite a stored history, to check that
// VerifyHistory notices. change receives the stored events as History
// returns them; TamperHistory stores the events it returns in their place,
// each with the Hash, PrevHash, DocHash and Superseded it carries (nothing
// recomputed), and leaves the rest of the execution as it is.
type Tamperer interface {
	TamperHistory(id string, change func([]engine.Event) []engine.Event) error
}

// Run runs the acceptance suite; open returns a new, empty store for each
// test (and arranges its closing with t.Cleanup). Tests of tampered
// histories run when the store implements Tamperer.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		test func(t *testing.T, s store.Store)
	}{
		{"CreateAndDuplicate", testCreate},
		{"Trace", testTrace},
		{"MaxPayload", testMaxPayload},
		{"Durability", testDurability},
		{"CommitAndLoad", testCommitAndLoad},
		{"PartialCommits", testPartialCommits},
		{"Usage", testUsage},
		{"NoAliasing", testNoAliasing},
		{"DropScopes", testDropScopes},
		{"DeleteScope", testDeleteScope},
		{"FailedCommitChangesNothing", testFailedCommit},
		{"CanceledCommit", testCanceled},
		{"HistoryChain", testHistoryChain},
		{"TamperedHistory", testTampered},
		{"HistoryRange", testHistoryRange},
		{"Rollback", testRollback},
		{"DropHistory", testDropHistory},
		{"List", testList},
		{"ListFilters", testListFilters},
		{"ListPaging", testListPaging},
		{"Workflows", testWorkflows},
		{"WorkflowDefinitionShared", testWorkflowDefinitionShared},
		{"WorkflowBadArguments", testWorkflowBadArguments},
		{"WorkflowsConcurrent", testWorkflowsConcurrent},
		{"WorkflowVersionLabels", testWorkflowVersionLabels},
		{"WorkflowVersionAliases", testWorkflowVersionAliases},
		{"WorkflowVersionResolve", testWorkflowVersionResolve},
		{"Due", testDue},
		{"Unfinished", testUnfinished},
		{"Checkpoints", testCheckpoints},
		{"CheckpointDedupAndGC", testCheckpointGC},
		{"GCKeepsNewestOfLiveExecution", testGCKeepsNewest},
		{"GCOrphanedBlob", testGCOrphan},
		{"Memory", testMemory},
		{"MemoryMergeAndExpiry", testMemoryMerge},
		{"MemoryWithFailedCommit", testMemoryFailedCommit},
		{"MemoryDelete", testMemoryDelete},
		{"MemoryNamespaces", testNamespaces},
		{"Definitions", testDefinitions},
		{"UnknownIDs", testUnknown},
		{"Concurrent", testConcurrent},
		{"ConcurrentWithFailures", testConcurrentFailures},
		{"Close", testClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.test(t, open(t))
		})
	}
	t.Run("Outbox", func(t *testing.T) { runOutbox(t, open) })
	t.Run("Cache", func(t *testing.T) { runCache(t, open) })
	t.Run("Feedback", func(t *testing.T) { runFeedback(t, open) })
}

// t0 is the suite's reference time, in a zone that is not UTC so that
// stores are seen to keep instants, not zones.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+1", 3600))

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// Doc decodes JSON text into a document, failing t when it does not
// decode.
func Doc(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// text is a document's exact JSON text ("<nil>" for a value that has none).
func text(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// hash is a document's canonical hash.
func hash(t *testing.T, v any) string {
	t.Helper()
	h, err := jsonvalue.CanonicalHash(v)
	if err != nil {
		t.Fatalf("CanonicalHash(%s): %v", text(v), err)
	}
	return h
}

// exactDoc is a document whose numbers and strings only survive exact
// encoding: 20+ digit integers, 0.1, 1.0, 1e400, a decomposed "é".
const exactDoc = `{"big":12345678901234567890123,"tenth":0.1,"one":1.0,"huge":1e400,"neg":-0.0,` +
	`"nfd":"e\u0301","nested":{"list":[1,2.50,{"deep":[true,false,null]}],"empty":{},"none":[]}}`

// definition is a small definition text (with spacing, to see it kept).
const definition = `{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}`

// newExecution returns an execution to Create.
func newExecution(t *testing.T, id string) *engine.Execution {
	return &engine.Execution{
		ID:          id,
		MachineName: "machine-" + id,
		Definition:  []byte(definition),
		Input:       Doc(t, exactDoc),
		Status:      engine.StatusRunning,
		StartedAt:   t0,
		Agents:      []byte(`{"Agent":{"0":{"Return":1}}}`),
		AgentsKind:  "mock",
		Registry:    "machine-" + id + "@1",
		Progress: engine.Progress{
			Scopes: map[string]*engine.Scope{"": {Next: "A", Doc: Doc(t, exactDoc), Visits: map[string]int{}}},
		},
	}
}

// create creates executions, failing the test on error.
func create(t *testing.T, s store.Store, es ...*engine.Execution) {
	t.Helper()
	for _, e := range es {
		if err := s.Create(t.Context(), e); err != nil {
			t.Fatalf("Create(%s) = %v", e.ID, err)
		}
	}
}

// commit commits, failing the test on error.
func commit(t *testing.T, s store.Store, c *engine.Commit) {
	t.Helper()
	if err := s.Commit(t.Context(), c); err != nil {
		t.Fatalf("Commit(%s #%d) = %v", c.Execution, c.Seq, err)
	}
}

// load loads, failing the test on error.
func load(t *testing.T, s store.Store, id string) *engine.Execution {
	t.Helper()
	e, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%s) = %v", id, err)
	}
	return e
}

// history reads a history, failing the test on error.
func history(t *testing.T, s store.Store, id string) []engine.Event {
	t.Helper()
	h, err := s.History(t.Context(), id)
	if err != nil {
		t.Fatalf("History(%s) = %v", id, err)
	}
	return h
}

// checkExecution compares a loaded execution with what was written.
func checkExecution(t *testing.T, got, want *engine.Execution) {
	t.Helper()
	str := []struct{ name, got, want string }{
		{"ID", got.ID, want.ID},
		{"MachineName", got.MachineName, want.MachineName},
		{"Definition", string(got.Definition), string(want.Definition)},
		{"DefinitionHash", got.DefinitionHash, want.DefinitionHash},
		{"Input", text(got.Input), text(want.Input)},
		{"Status", string(got.Status), string(want.Status)},
		{"Output", text(got.Output), text(want.Output)},
		{"Error", got.Error, want.Error},
		{"Cause", got.Cause, want.Cause},
		{"Parent", got.Parent, want.Parent},
		{"ParentCheckpoint", got.ParentCheckpoint, want.ParentCheckpoint},
		{"Agents", string(got.Agents), string(want.Agents)},
		{"AgentsKind", got.AgentsKind, want.AgentsKind},
		{"Trace", got.Trace, want.Trace},
		{"Registry", got.Registry, want.Registry},
		{"WaitingFor", got.WaitingFor, want.WaitingFor},
	}
	for _, f := range str {
		if f.got != f.want {
			t.Errorf("execution %s: %s = %q, want %q", want.ID, f.name, f.got, f.want)
		}
	}
	times := []struct {
		name      string
		got, want time.Time
	}{{"StartedAt", got.StartedAt, want.StartedAt}, {"StoppedAt", got.StoppedAt, want.StoppedAt}, {"WakeAt", got.WakeAt, want.WakeAt}}
	for _, f := range times {
		if !f.got.Equal(f.want) {
			t.Errorf("execution %s: %s = %v, want %v", want.ID, f.name, f.got, f.want)
		}
	}
	if got.Seq != want.Seq {
		t.Errorf("execution %s: Seq = %d, want %d", want.ID, got.Seq, want.Seq)
	}
	if got.MaxPayload != want.MaxPayload {
		t.Errorf("execution %s: MaxPayload = %d, want %d", want.ID, got.MaxPayload, want.MaxPayload)
	}
	checkProgress(t, want.ID, &got.Progress, &want.Progress)
}

// checkProgress compares progress.
func checkProgress(t *testing.T, id string, got, want *engine.Progress) {
	t.Helper()
	if !maps.Equal(got.Invocations, want.Invocations) {
		t.Errorf("execution %s: Invocations = %v, want %v", id, got.Invocations, want.Invocations)
	}
	if got.LastEvent != want.LastEvent || got.LastOwnEvent != want.LastOwnEvent {
		t.Errorf("execution %s: LastEvent, LastOwnEvent = %d, %d, want %d, %d", id, got.LastEvent, got.LastOwnEvent, want.LastEvent, want.LastOwnEvent)
	}
	if g, w := slices.Sorted(maps.Keys(got.Scopes)), slices.Sorted(maps.Keys(want.Scopes)); !slices.Equal(g, w) {
		t.Errorf("execution %s: scope keys = %q, want %q", id, g, w)
		return
	}
	for k, w := range want.Scopes {
		checkScope(t, fmt.Sprintf("execution %s scope %q", id, k), got.Scopes[k], w)
	}
}

// checkScope compares a scope.
func checkScope(t *testing.T, where string, got, want *engine.Scope) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want a scope", where)
		return
	}
	str := []struct{ name, got, want string }{
		{"Next", got.Next, want.Next},
		{"Doc", text(got.Doc), text(want.Doc)},
		{"Output", text(got.Output), text(want.Output)},
		{"Error", got.Error, want.Error},
		{"Cause", got.Cause, want.Cause},
		{"Vars", text(got.Vars), text(want.Vars)},
		{"Done, Failed", fmt.Sprint(got.Done, got.Failed), fmt.Sprint(want.Done, want.Failed)},
	}
	for _, f := range str {
		if f.got != f.want {
			t.Errorf("%s: %s = %s, want %s", where, f.name, f.got, f.want)
		}
	}
	if (got.Vars == nil) != (want.Vars == nil) {
		t.Errorf("%s: Vars nil = %t, want %t", where, got.Vars == nil, want.Vars == nil)
	}
	if !maps.Equal(got.Visits, want.Visits) {
		t.Errorf("%s: Visits = %v, want %v", where, got.Visits, want.Visits)
	}
	switch g, w := got.Step, want.Step; {
	case (g == nil) != (w == nil):
		t.Errorf("%s: Step = %+v, want %+v", where, g, w)
	case g != nil && (g.Visit != w.Visit || g.Attempt != w.Attempt || !slices.Equal(g.Retries, w.Retries) || !g.WakeAt.Equal(w.WakeAt)):
		t.Errorf("%s: Step = %+v, want %+v", where, *g, *w)
	case g != nil:
		checkCallback(t, where, g.Callback, w.Callback)
	}
}

// checkCallback compares the pending task tokens of two steps.
func checkCallback(t *testing.T, where string, got, want *engine.PendingCallback) {
	t.Helper()
	switch {
	case (got == nil) != (want == nil):
		t.Errorf("%s: Step.Callback = %+v, want %+v", where, got, want)
	case got == nil:
	case got.Attempt != want.Attempt || got.SecretHash != want.SecretHash || !got.IssuedAt.Equal(want.IssuedAt) ||
		!got.Deadline.Equal(want.Deadline) || got.Heartbeat != want.Heartbeat || !got.HeartbeatDeadline.Equal(want.HeartbeatDeadline) ||
		text(got.Outcome) != text(want.Outcome):
		t.Errorf("%s: Step.Callback = %+v, want %+v", where, *got, *want)
	}
}

func testCreate(t *testing.T, s store.Store) {
	e := newExecution(t, "e1")
	create(t, s, e)
	e.DefinitionHash = hash(t, Doc(t, definition))
	checkExecution(t, load(t, s, "e1"), e)

	if err := s.Create(t.Context(), newExecution(t, "e1")); !errors.Is(err, engine.ErrExists) {
		t.Errorf("Create(e1) again = %v, want ErrExists", err)
	}
	for _, id := range []string{"", "a\x00b"} {
		if err := s.Create(t.Context(), newExecution(t, id)); err == nil {
			t.Errorf("Create(%q) = nil, want an error", id)
		}
	}
	ids, err := s.Unfinished(t.Context())
	if err != nil || !slices.Equal(ids, []string{"e1"}) {
		t.Errorf("Unfinished() = %q, %v, want [e1] (rejected creations must leave nothing)", ids, err)
	}
}

// testTrace: an execution's trace context is stored with it and kept by
// commits; an execution without one loads without one.
func testTrace(t *testing.T, s store.Store) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced, plain := newExecution(t, "traced"), newExecution(t, "plain")
	traced.Trace = tp
	create(t, s, traced, plain)
	commit(t, s, step(t, "traced", 1))
	for _, e := range []*engine.Execution{traced, plain} {
		if got := load(t, s, e.ID).Trace; got != e.Trace {
			t.Errorf("Load(%s).Trace = %q, want %q", e.ID, got, e.Trace)
		}
	}
}

// testMaxPayload: an execution's own payload limit is stored with it and
// kept by commits; an execution without one loads with 0.
func testMaxPayload(t *testing.T, s store.Store) {
	limited, unlimited, plain := newExecution(t, "limited"), newExecution(t, "unlimited"), newExecution(t, "plain")
	limited.MaxPayload, unlimited.MaxPayload = 2000, -1
	create(t, s, limited, unlimited, plain)
	commit(t, s, step(t, "limited", 1))
	for _, e := range []*engine.Execution{limited, unlimited, plain} {
		if got := load(t, s, e.ID).MaxPayload; got != e.MaxPayload {
			t.Errorf("Load(%s).MaxPayload = %d, want %d", e.ID, got, e.MaxPayload)
		}
	}
}

func testDurability(t *testing.T, s store.Store) {
	var execs []*engine.Execution
	for _, d := range []engine.Durability{"", engine.DurabilityStrict, engine.DurabilityBatched, engine.DurabilityNone} {
		e := newExecution(t, "d-"+string(d))
		e.Durability = d
		execs = append(execs, e)
	}
	create(t, s, execs...)
	commit(t, s, step(t, execs[2].ID, 1))
	for _, e := range execs {
		if got := load(t, s, e.ID).Durability; got != e.Durability {
			t.Errorf("Load(%s).Durability = %q, want %q", e.ID, got, e.Durability)
		}
	}
}

// step returns a commit with rich progress: exact numbers, variables,
// nested scopes, visits, a step with retries and a wake-up time.
func step(t *testing.T, id string, seq int64) *engine.Commit {
	return &engine.Commit{
		Execution: id, Seq: seq, Status: engine.StatusRunning,
		Scopes: map[string]*engine.Scope{
			"": {
				Next: "Review", Doc: Doc(t, exactDoc),
				Vars:   map[string]any{"count": json.Number("100000000000000000001"), "ratio": json.Number("0.10")},
				Visits: map[string]int{"A": 1, "Review": 2},
				Step:   &engine.StepProgress{Visit: 2, Attempt: 3, Retries: []int64{2, 1}, WakeAt: at(90 * time.Second)},
			},
			"Review#2.3/0/": {Next: "Inner", Doc: Doc(t, `[1.50,"x"]`), Vars: map[string]any{}},
			"Review#2.3/1/": {Done: true, Output: Doc(t, `{"ok":1e2}`)},
			"Review#2.3/2/": {Done: true, Failed: true, Error: "Agent.ModelError", Cause: "overloaded"},
		},
		Invocations: map[string]int{"Reviewer": 7, "Writer": 0},
		LastEvent:   12, LastOwnEvent: 2,
	}
}

func testCommitAndLoad(t *testing.T, s store.Store) {
	e := newExecution(t, "e1")
	create(t, s, e)
	e.DefinitionHash = hash(t, Doc(t, definition))

	c := step(t, "e1", 1)
	commit(t, s, c)
	e.Seq, e.Progress = 1, engine.Progress{Scopes: c.Scopes, Invocations: c.Invocations, LastEvent: 12, LastOwnEvent: 2}
	checkExecution(t, load(t, s, "e1"), e)

	// Waiting: only the scope that changes is in the commit; its step
	// waits for a task token, answered already.
	callback := &engine.PendingCallback{
		Attempt: 1, SecretHash: "5f2b3c0e9d1a4b6c8e7f00112233445566778899aabbccddeeff001122334455",
		IssuedAt: at(time.Minute), Deadline: at(time.Hour), Heartbeat: 30 * time.Second, HeartbeatDeadline: at(90 * time.Second),
		Outcome: map[string]any{"output": Doc(t, `{"approved":true,"amount":12.50}`)},
	}
	c = &engine.Commit{
		Execution: "e1", Seq: 2, Status: engine.StatusWaiting, WakeAt: at(time.Hour), WaitingFor: "Wait",
		Scopes:      map[string]*engine.Scope{"": {Next: "Wait", Doc: Doc(t, `{"n":2.0}`), Step: &engine.StepProgress{Visit: 1, Attempt: 1, Callback: callback}}},
		Invocations: map[string]int{"Reviewer": 8}, LastEvent: 13, LastOwnEvent: 2,
	}
	commit(t, s, c)
	e.Seq, e.Status, e.WakeAt, e.WaitingFor = 2, engine.StatusWaiting, at(time.Hour), "Wait"
	e.Progress.Scopes[""] = c.Scopes[""]
	e.Progress.Invocations, e.Progress.LastEvent = c.Invocations, 13
	checkExecution(t, load(t, s, "e1"), e)

	// Ended: the wake-up time is cleared, the output kept exactly.
	c = &engine.Commit{
		Execution: "e1", Seq: 3, Status: engine.StatusSucceeded, Output: Doc(t, exactDoc), StoppedAt: at(2 * time.Hour),
		Invocations: map[string]int{"Reviewer": 8}, LastEvent: 14, LastOwnEvent: 2,
	}
	commit(t, s, c)
	e.Seq, e.Status, e.WakeAt, e.WaitingFor, e.Output, e.StoppedAt = 3, engine.StatusSucceeded, time.Time{}, "", Doc(t, exactDoc), at(2*time.Hour)
	e.Progress.LastEvent = 14
	checkExecution(t, load(t, s, "e1"), e)

	// A failure.
	create(t, s, newExecution(t, "e2"))
	commit(t, s, &engine.Commit{Execution: "e2", Seq: 1, Status: engine.StatusFailed, Error: "States.TaskFailed", Cause: "boom\n\"quoted\"", StoppedAt: at(time.Minute)})
	got := load(t, s, "e2")
	if got.Status != engine.StatusFailed || got.Error != "States.TaskFailed" || got.Cause != "boom\n\"quoted\"" || !got.StoppedAt.Equal(at(time.Minute)) {
		t.Errorf("Load(e2) = %s %q %q %v, want FAILED States.TaskFailed with its cause and stop time", got.Status, got.Error, got.Cause, got.StoppedAt)
	}
}

func testNoAliasing(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	c := step(t, "e1", 1)
	c.Events = []engine.Event{{ID: 1, Type: engine.EventExecutionStarted, Timestamp: t0, Input: Doc(t, `{"a":1}`), Document: Doc(t, `{"a":1}`)}}
	commit(t, s, c)
	want := text(c.Scopes[""].Doc)

	// The engine reuses its Commit: nothing the store keeps may change.
	c.Scopes[""].Doc.(map[string]any)["big"] = "changed"
	c.Scopes[""].Vars["count"] = "changed"
	c.Invocations["Reviewer"] = 99
	c.Events[0].Input.(map[string]any)["a"] = "changed"
	c.Scopes["Review#2.3/0/"] = nil

	e := load(t, s, "e1")
	if got := text(e.Progress.Scopes[""].Doc); got != want {
		t.Errorf("scope document after the commit changed = %s, want %s", got, want)
	}
	if got := text(e.Progress.Scopes[""].Vars["count"]); got != "100000000000000000001" {
		t.Errorf("variable after the commit changed = %s, want 100000000000000000001", got)
	}
	if got := e.Progress.Invocations["Reviewer"]; got != 7 {
		t.Errorf("invocations after the commit changed = %d, want 7", got)
	}
	if _, ok := e.Progress.Scopes["Review#2.3/0/"]; !ok {
		t.Errorf("scope deleted from the Commit after it returned is gone from the store")
	}
	if got := text(history(t, s, "e1")[0].Input); got != `{"a":1}` {
		t.Errorf("event input after the commit changed = %s, want {\"a\":1}", got)
	}

	// Nor may a loaded execution share memory with the store.
	e.Progress.Scopes[""].Doc.(map[string]any)["big"] = "changed"
	e.Progress.Invocations["Reviewer"] = 99
	e.Input.(map[string]any)["big"] = "changed"
	again := load(t, s, "e1")
	if got := text(again.Progress.Scopes[""].Doc); got != want {
		t.Errorf("scope document after changing a loaded copy = %s, want %s", got, want)
	}
	if got := again.Progress.Invocations["Reviewer"]; got != 7 {
		t.Errorf("invocations after changing a loaded copy = %d, want 7", got)
	}
	if got := text(again.Input); got != text(Doc(t, exactDoc)) {
		t.Errorf("input after changing a loaded copy = %s, want %s", got, exactDoc)
	}
}

func testDropScopes(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	keys := []string{"", "Map#1.0/0/", "Map#1.0/1/", "Map#1.0/1/Inner#1.0/0/", "Map#1.0/10/", "Map#1.1/0/", "Mapper#1.0/0/", "Other#1.0/0/"}
	scopes := make(map[string]*engine.Scope)
	for _, k := range keys {
		scopes[k] = &engine.Scope{Next: "S", Doc: k}
	}
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, Scopes: scopes})

	tests := []struct {
		name   string
		drop   []string
		scopes map[string]*engine.Scope
		want   []string
	}{
		{"one prefix", []string{"Map#1.0/"}, nil, []string{"", "Map#1.1/0/", "Mapper#1.0/0/", "Other#1.0/0/"}},
		{"dropped first, then set", []string{"Map#1.1/"}, map[string]*engine.Scope{"Map#1.1/3/": {Next: "New"}},
			[]string{"", "Map#1.1/3/", "Mapper#1.0/0/", "Other#1.0/0/"}},
		{"several prefixes", []string{"Mapper#", "Other#1.0/0/"}, nil, []string{"", "Map#1.1/3/"}},
		{"a prefix matching nothing", []string{"Nothing#"}, nil, []string{"", "Map#1.1/3/"}},
	}
	for i, tt := range tests {
		commit(t, s, &engine.Commit{Execution: "e1", Seq: int64(i + 2), Status: engine.StatusRunning, DropScopes: tt.drop, Scopes: tt.scopes})
		got := slices.Sorted(maps.Keys(load(t, s, "e1").Progress.Scopes))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: scopes after DropScopes %q = %q, want %q", tt.name, tt.drop, got, tt.want)
		}
	}
	if got := load(t, s, "e1").Progress.Scopes["Map#1.1/3/"]; got == nil || got.Next != "New" {
		t.Errorf("scope set in the commit that dropped its prefix = %+v, want Next New", got)
	}
}

func testDeleteScope(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, Scopes: map[string]*engine.Scope{
		"": {Next: "A"}, "P#1.0/0/": {Next: "B"}, "P#1.0/1/": {Next: "C"},
	}})
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, Status: engine.StatusRunning, Scopes: map[string]*engine.Scope{
		"P#1.0/0/": nil, "P#1.0/1/": {Next: "D"}, "never-set": nil,
	}})
	sc := load(t, s, "e1").Progress.Scopes
	if got, want := slices.Sorted(maps.Keys(sc)), []string{"", "P#1.0/1/"}; !slices.Equal(got, want) {
		t.Fatalf("scopes = %q, want %q", got, want)
	}
	if sc[""].Next != "A" || sc["P#1.0/1/"].Next != "D" {
		t.Errorf("scopes Next = %q, %q, want A, D", sc[""].Next, sc["P#1.0/1/"].Next)
	}
}

func testFailedCommit(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	commit(t, s, step(t, "e1", 1))
	before := load(t, s, "e1")
	bad := step(t, "e1", 2)
	bad.Status = engine.StatusSucceeded
	bad.Events = []engine.Event{{ID: 13, Type: "PassStateEntered", Timestamp: t0, Document: Doc(t, `{}`)}, {ID: 14, Type: "PassStateExited", Timestamp: t0, Document: make(chan int)}}
	if err := s.Commit(t.Context(), bad); err == nil {
		t.Fatalf("Commit with a document that is not JSON = nil, want an error")
	}
	checkExecution(t, load(t, s, "e1"), before)
	if h := history(t, s, "e1"); len(h) != 0 {
		t.Errorf("history after a failed commit has %d events, want 0", len(h))
	}
}

func testCanceled(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Commit(ctx, step(t, "e1", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a canceled context = %v, want context.Canceled", err)
	}
	if err := s.Create(ctx, newExecution(t, "e2")); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a canceled context = %v, want context.Canceled", err)
	}
	if e := load(t, s, "e1"); e.Seq != 0 {
		t.Errorf("Seq after a canceled commit = %d, want 0", e.Seq)
	}
	if _, err := s.Load(t.Context(), "e2"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Load(e2) after a canceled create = %v, want ErrNotFound", err)
	}
}

// events returns n events numbered from first, of one document shared by
// identity, with inputs, outputs, detail and errors.
func events(t *testing.T, first int64, n int, ts time.Time) []engine.Event {
	d := Doc(t, `{"step":1,"value":0.10}`)
	out := make([]engine.Event, n)
	for i := range out {
		id := first + int64(i)
		out[i] = engine.Event{ID: id, Type: "TaskStateEntered", Timestamp: ts.Add(time.Duration(i) * time.Nanosecond), State: "S", Scope: "Map/1/", Document: d}
		switch i % 4 {
		case 1:
			out[i].Type, out[i].Input = engine.EventTaskScheduled, Doc(t, `{"q":"é"}`)
		case 2:
			out[i].Type, out[i].Output, out[i].Document = engine.EventTaskSucceeded, Doc(t, `[1.0,2]`), Doc(t, fmt.Sprintf(`{"step":%d}`, id))
		case 3:
			out[i].Type, out[i].ID, out[i].Own, out[i].Detail = "CheckpointSaved", 0, id, Doc(t, `{"name":"cp"}`)
			out[i].Error, out[i].Cause = "Custom.Error", "why"
		}
	}
	return out
}

// checkChain checks that a history links up and verifies.
func checkChain(t *testing.T, s store.Store, id string, h []engine.Event) {
	t.Helper()
	prev := ""
	for i, e := range h {
		if e.PrevHash != prev {
			t.Errorf("event %d: PrevHash = %q, want %q", i+1, e.PrevHash, prev)
		}
		if len(e.Hash) != 64 || e.Hash == e.PrevHash {
			t.Errorf("event %d: Hash = %q, want a new hex SHA-256", i+1, e.Hash)
		}
		prev = e.Hash
	}
	if err := s.VerifyHistory(t.Context(), id); err != nil {
		t.Errorf("VerifyHistory(%s) = %v, want nil", id, err)
	}
}

func testHistoryChain(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"), newExecution(t, "e2"))
	var want []engine.Event
	for i := range 3 {
		evs := events(t, int64(1+5*i), 5, at(time.Duration(i)*time.Second))
		commit(t, s, &engine.Commit{Execution: "e1", Seq: int64(i + 1), Status: engine.StatusRunning, Events: evs})
		want = append(want, evs...)
	}
	// An events-only commit, and one with no events.
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 4, Status: engine.StatusRunning})
	got := history(t, s, "e1")
	if len(got) != len(want) {
		t.Fatalf("History(e1) has %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Own != w.Own || g.Type != w.Type || g.State != w.State || g.Scope != w.Scope || g.Error != w.Error || g.Cause != w.Cause {
			t.Errorf("event %d = %d/%d %s %s %q %q %q, want %d/%d %s %s %q %q %q", i+1,
				g.ID, g.Own, g.Type, g.State, g.Scope, g.Error, g.Cause, w.ID, w.Own, w.Type, w.State, w.Scope, w.Error, w.Cause)
		}
		if !g.Timestamp.Equal(w.Timestamp) || g.Timestamp.Location() != time.UTC {
			t.Errorf("event %d: Timestamp = %v, want %v in UTC", i+1, g.Timestamp, w.Timestamp)
		}
		for _, f := range []struct{ n, g, w string }{
			{"Input", text(g.Input), text(w.Input)}, {"Output", text(g.Output), text(w.Output)}, {"Detail", text(g.Detail), text(w.Detail)},
			{"DocHash", g.DocHash, hash(t, w.Document)},
		} {
			if f.g != f.w {
				t.Errorf("event %d: %s = %s, want %s", i+1, f.n, f.g, f.w)
			}
		}
		if g.Superseded || g.Document != nil {
			t.Errorf("event %d: Superseded, Document = %t, %v, want false, nil", i+1, g.Superseded, g.Document)
		}
	}
	checkChain(t, s, "e1", got)

	// The hash covers the event, not where it is stored: the same events
	// give the same chain in another execution, and value-equal documents
	// the same DocHash.
	for i := range 3 {
		commit(t, s, &engine.Commit{Execution: "e2", Seq: int64(i + 1), Status: engine.StatusRunning, Events: events(t, int64(1+5*i), 5, at(time.Duration(i)*time.Second))})
	}
	if g2 := history(t, s, "e2"); g2[len(g2)-1].Hash != got[len(got)-1].Hash {
		t.Errorf("last hash of identical histories = %s and %s, want equal", g2[len(g2)-1].Hash, got[len(got)-1].Hash)
	}
	commit(t, s, &engine.Commit{Execution: "e2", Seq: 4, Status: engine.StatusRunning, Events: []engine.Event{
		{ID: 16, Type: "PassStateExited", Timestamp: t0, Document: Doc(t, `{"a":1.0,"b":"e\u0301"}`)},
		{ID: 17, Type: "PassStateExited", Timestamp: t0, Document: Doc(t, `{"b":"é","a":1}`)},
	}})
	g2 := history(t, s, "e2")
	if a, b := g2[len(g2)-2].DocHash, g2[len(g2)-1].DocHash; a != b {
		t.Errorf("DocHash of value-equal documents = %s and %s, want equal", a, b)
	}
	checkChain(t, s, "e2", g2)

	// Strings that are not valid UTF-8 are stored as JSON has them (with
	// U+FFFD) and the history still verifies.
	commit(t, s, &engine.Commit{Execution: "e2", Seq: 5, Status: engine.StatusRunning, Events: []engine.Event{
		{ID: 18, Type: "TaskFailed", Timestamp: t0, State: "S\xff", Error: "E\xc3", Cause: "bad \xff\xfe bytes", Input: "\xff", Document: "\xff"},
	}})
	g2 = history(t, s, "e2")
	if e := g2[len(g2)-1]; e.State != "S\uFFFD" || e.Error != "E\uFFFD" || e.Cause != "bad \uFFFD\uFFFD bytes" || e.Input != "\uFFFD" {
		t.Errorf("event with invalid UTF-8 = %q %q %q %q, want each bad byte as U+FFFD", e.State, e.Error, e.Cause, e.Input)
	}
	checkChain(t, s, "e2", g2)
}

func testTampered(t *testing.T, s store.Store) {
	if _, ok := s.(Tamperer); !ok {
		t.Skip("the store does not implement storetest.Tamperer")
	}
	tests := []struct {
		name   string
		change func([]engine.Event) []engine.Event
		ok     bool
	}{
		{"untouched", func(h []engine.Event) []engine.Event { return h }, true},
		{"superseded flag set", func(h []engine.Event) []engine.Event { h[2].Superseded = true; return h }, true},
		{"output changed", func(h []engine.Event) []engine.Event { h[2].Output = []any{"forged"}; return h }, false},
		{"output number respelled", func(h []engine.Event) []engine.Event {
			h[2].Output = []any{json.Number("1.5"), json.Number("2")}
			return h
		}, false},
		{"state renamed", func(h []engine.Event) []engine.Event { h[4].State = "Other"; return h }, false},
		{"timestamp moved", func(h []engine.Event) []engine.Event { h[0].Timestamp = h[0].Timestamp.Add(time.Nanosecond); return h }, false},
		{"id renumbered", func(h []engine.Event) []engine.Event { h[1].ID++; return h }, false},
		{"cause changed", func(h []engine.Event) []engine.Event { h[3].Cause = "other"; return h }, false},
		{"detail removed", func(h []engine.Event) []engine.Event { h[3].Detail = nil; return h }, false},
		{"document hash changed", func(h []engine.Event) []engine.Event { h[1].DocHash = h[2].DocHash; return h }, false},
		{"event deleted", func(h []engine.Event) []engine.Event { return slices.Delete(h, 3, 4) }, false},
		{"events swapped", func(h []engine.Event) []engine.Event { h[1], h[2] = h[2], h[1]; return h }, false},
		{"last event dropped", func(h []engine.Event) []engine.Event { return h[:len(h)-1] }, false},
		{"rehashed but chain broken", func(h []engine.Event) []engine.Event { h[5].PrevHash = h[3].Hash; return h }, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("t%d", i)
			create(t, s, newExecution(t, id))
			commit(t, s, &engine.Commit{Execution: id, Seq: 1, Status: engine.StatusRunning, Events: events(t, 1, 4, t0)})
			commit(t, s, &engine.Commit{Execution: id, Seq: 2, Status: engine.StatusRunning, Events: events(t, 5, 4, at(time.Second))})
			if err := s.(Tamperer).TamperHistory(id, tt.change); err != nil {
				t.Fatalf("TamperHistory = %v", err)
			}
			err := s.VerifyHistory(t.Context(), id)
			if tt.ok && err != nil {
				t.Errorf("VerifyHistory = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, store.ErrTampered) {
				t.Errorf("VerifyHistory = %v, want ErrTampered", err)
			}
		})
	}
}

func testRollback(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	// AWS-numbered events 1..6 with own events 1..2 between them.
	ev := func(id, own int64) engine.Event {
		return engine.Event{ID: id, Own: own, Type: fmt.Sprintf("E%d.%d", id, own), Timestamp: t0, Document: Doc(t, `{}`)}
	}
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, Events: []engine.Event{ev(1, 0), ev(2, 0), ev(3, 0), ev(0, 1)}})
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, Status: engine.StatusRunning, Events: []engine.Event{ev(4, 0), ev(0, 2), ev(5, 0), ev(6, 0)}})
	// Back to event 3 and own event 1; the rollback's own event and the
	// events after it are new.
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 3, Status: engine.StatusRunning,
		Rollback: &engine.Rollback{ToEvent: 3, ToOwnEvent: 1}, Events: []engine.Event{ev(0, 2), ev(4, 0)}})
	check := func(want []string) {
		t.Helper()
		h := history(t, s, "e1")
		var got []string
		for _, e := range h {
			m := e.Type
			if e.Superseded {
				m += "~"
			}
			got = append(got, m)
		}
		if !slices.Equal(got, want) {
			t.Errorf("history (~ superseded) = %q, want %q", got, want)
		}
		checkChain(t, s, "e1", h)
	}
	check([]string{"E1.0", "E2.0", "E3.0", "E0.1", "E4.0~", "E0.2~", "E5.0~", "E6.0~", "E0.2", "E4.0"})
	// A second rollback, further back, leaves superseded events as they are.
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 4, Status: engine.StatusRunning, Rollback: &engine.Rollback{ToEvent: 2}})
	check([]string{"E1.0", "E2.0", "E3.0~", "E0.1~", "E4.0~", "E0.2~", "E5.0~", "E6.0~", "E0.2~", "E4.0~"})
}

func testList(t *testing.T, s store.Store) {
	statuses := []engine.Status{engine.StatusSucceeded, engine.StatusFailed, engine.StatusRunning, engine.StatusFailed, engine.StatusWaiting}
	for i, st := range statuses {
		id := fmt.Sprintf("e%d", i)
		e := newExecution(t, id)
		e.StartedAt = at(time.Duration(i) * time.Minute)
		if i == 3 {
			e.Parent = "e1"
			e.StartedAt = at(time.Minute) // the same start as e1
		}
		create(t, s, e)
		c := &engine.Commit{Execution: id, Seq: 1, Status: st}
		switch st {
		case engine.StatusFailed:
			c.Error, c.StoppedAt = "States.TaskFailed", at(time.Hour)
		case engine.StatusWaiting:
			c.WaitingFor, c.WakeAt = "Approval", at(2*time.Hour)
		}
		commit(t, s, c)
	}
	tests := []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{}, []string{"e4", "e2", "e3", "e1", "e0"}},
		{store.ListOptions{Limit: 2}, []string{"e4", "e2"}},
		{store.ListOptions{Status: engine.StatusFailed}, []string{"e3", "e1"}},
		{store.ListOptions{Status: engine.StatusFailed, Limit: 1}, []string{"e3"}},
		{store.ListOptions{Status: engine.StatusTimedOut}, nil},
	}
	for _, tt := range tests {
		got, err := s.List(t.Context(), tt.opts)
		if err != nil {
			t.Fatalf("List(%+v) = %v", tt.opts, err)
		}
		var ids []string
		for _, x := range got {
			ids = append(ids, x.ID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("List(%+v) = %q, want %q", tt.opts, ids, tt.want)
		}
	}
	got, err := s.List(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatalf("List() = %v", err)
	}
	want := []store.Summary{
		{ID: "e4", MachineName: "machine-e4", Status: engine.StatusWaiting, StartedAt: at(4 * time.Minute), WaitingFor: "Approval", WakeAt: at(2 * time.Hour)},
		{ID: "e2", MachineName: "machine-e2", Status: engine.StatusRunning, StartedAt: at(2 * time.Minute)},
		{ID: "e3", MachineName: "machine-e3", Status: engine.StatusFailed, StartedAt: at(time.Minute), StoppedAt: at(time.Hour), Error: "States.TaskFailed", Parent: "e1"},
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.MachineName != w.MachineName || g.Status != w.Status || g.Error != w.Error || g.Parent != w.Parent || g.WaitingFor != w.WaitingFor ||
			!g.StartedAt.Equal(w.StartedAt) || !g.StoppedAt.Equal(w.StoppedAt) || !g.WakeAt.Equal(w.WakeAt) {
			t.Errorf("List()[%d] = %+v, want %+v", i, g, w)
		}
	}

	// A status change moves an execution in the index.
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, Status: engine.StatusSucceeded})
	for _, tt := range []struct {
		status engine.Status
		want   []string
	}{{engine.StatusFailed, []string{"e3"}}, {engine.StatusSucceeded, []string{"e1", "e0"}}} {
		got, err := s.List(t.Context(), store.ListOptions{Status: tt.status})
		var ids []string
		for _, x := range got {
			ids = append(ids, x.ID)
		}
		if err != nil || !slices.Equal(ids, tt.want) {
			t.Errorf("List(%s) after e1 succeeded = %q, %v, want %q", tt.status, ids, err, tt.want)
		}
	}
}

func testDue(t *testing.T, s store.Store) {
	now := at(time.Hour)
	setup := []struct {
		id     string
		status engine.Status
		wake   time.Time
	}{
		{"later", engine.StatusWaiting, now.Add(time.Second)},
		{"past", engine.StatusWaiting, now.Add(-time.Second)},
		{"approval", engine.StatusWaiting, time.Time{}},
		{"running", engine.StatusRunning, now.Add(-2 * time.Second)},
		{"now", engine.StatusWaiting, now},
		{"earliest", engine.StatusWaiting, now.Add(-time.Hour)},
	}
	for _, x := range setup {
		e := newExecution(t, x.id)
		if x.id == "earliest" {
			// Created waiting, not through a commit.
			e.Status, e.WakeAt, e.WaitingFor = x.status, x.wake, "Wait"
			create(t, s, e)
			continue
		}
		create(t, s, e)
		commit(t, s, &engine.Commit{Execution: x.id, Seq: 1, Status: x.status, WakeAt: x.wake, WaitingFor: "Wait"})
	}
	due := func(now time.Time, want []string) {
		t.Helper()
		got, err := s.Due(t.Context(), now)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Due(%v) = %q, %v, want %q", now, got, err, want)
		}
	}
	due(now, []string{"earliest", "past", "now"})
	due(now.Add(-2*time.Hour), nil)
	due(now.Add(time.Minute), []string{"earliest", "past", "now", "later"})

	// Woken: RUNNING without a wake-up time; rescheduled: a new time.
	commit(t, s, &engine.Commit{Execution: "past", Seq: 2, Status: engine.StatusRunning})
	commit(t, s, &engine.Commit{Execution: "earliest", Seq: 1, Status: engine.StatusWaiting, WakeAt: now.Add(2 * time.Minute), WaitingFor: "Retry"})
	commit(t, s, &engine.Commit{Execution: "now", Seq: 2, Status: engine.StatusWaiting, WaitingFor: "Approval"})
	due(now, nil)
	due(now.Add(time.Hour), []string{"later", "earliest"})
	commit(t, s, &engine.Commit{Execution: "later", Seq: 2, Status: engine.StatusFailed, WakeAt: now.Add(time.Second)})
	due(now.Add(time.Hour), []string{"earliest"})
}

func testUnfinished(t *testing.T, s store.Store) {
	for _, id := range []string{"c", "a", "b", "d"} {
		create(t, s, newExecution(t, id))
	}
	commit(t, s, &engine.Commit{Execution: "b", Seq: 1, Status: engine.StatusSucceeded})
	commit(t, s, &engine.Commit{Execution: "d", Seq: 1, Status: engine.StatusWaiting})
	got, err := s.Unfinished(t.Context())
	slices.Sort(got)
	if want := []string{"a", "c"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Unfinished() = %q, %v, want %q", got, err, want)
	}
	commit(t, s, &engine.Commit{Execution: "d", Seq: 2, Status: engine.StatusRunning})
	got, err = s.Unfinished(t.Context())
	slices.Sort(got)
	if want := []string{"a", "c", "d"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Unfinished() after d resumed = %q, %v, want %q", got, err, want)
	}
}

func testDefinitions(t *testing.T, s store.Store) {
	e1 := newExecution(t, "e1")
	e2 := newExecution(t, "e2")
	e2.Definition = []byte(`{"States":{"A":{"End":true,"Type":"Pass"}},"StartAt":"A"}`) // the same definition, written otherwise
	e3 := newExecution(t, "e3")
	e3.Definition, e3.DefinitionHash = []byte(`{"StartAt":"B","States":{"B":{"Type":"Succeed"}}}`), "given-hash"
	create(t, s, e1, e2, e3)
	h := hash(t, Doc(t, definition))
	for _, tt := range []struct {
		id, hash, def string
	}{{"e1", h, definition}, {"e2", h, definition}, {"e3", "given-hash", string(e3.Definition)}} {
		e := load(t, s, tt.id)
		if e.DefinitionHash != tt.hash || string(e.Definition) != tt.def {
			t.Errorf("Load(%s) definition = %s %s, want %s %s", tt.id, e.DefinitionHash, e.Definition, tt.hash, tt.def)
		}
		def, err := s.Definition(t.Context(), tt.hash)
		if err != nil || string(def) != tt.def {
			t.Errorf("Definition(%s) = %s, %v, want %s", tt.hash, def, err, tt.def)
		}
	}
	if _, err := s.Definition(t.Context(), "unknown"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Definition(unknown) = %v, want ErrNotFound", err)
	}
	bad := newExecution(t, "bad")
	bad.Definition = []byte(`{"StartAt":`)
	if err := s.Create(t.Context(), bad); err == nil {
		t.Errorf("Create with a definition that is not JSON and no hash = nil, want an error")
	}
}

func testUnknown(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "known"))
	ctx := t.Context()
	calls := []struct {
		name string
		call func() error
	}{
		{"Load", func() error { _, err := s.Load(ctx, "nope"); return err }},
		{"Commit", func() error {
			return s.Commit(ctx, &engine.Commit{Execution: "nope", Seq: 1, Status: engine.StatusRunning})
		}},
		{"History", func() error { _, err := s.History(ctx, "nope"); return err }},
		{"VerifyHistory", func() error { return s.VerifyHistory(ctx, "nope") }},
		{"ListCheckpoints", func() error { _, err := s.ListCheckpoints(ctx, "nope"); return err }},
		{"Checkpoint of an unknown execution", func() error { _, err := s.Checkpoint(ctx, "nope", "cp"); return err }},
		{"unknown Checkpoint", func() error { _, err := s.Checkpoint(ctx, "known", "cp"); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", c.name, err)
		}
	}
	if _, err := s.Load(ctx, "nope"); err == nil {
		t.Fatal("Load(nope) after a failed commit = nil, want ErrNotFound")
	}
}

// concurrentCommits commits n steps of 3 events to execution id.
func concurrentCommits(t *testing.T, s store.Store, id string, n int) error {
	d := map[string]any{"id": id, "pad": make([]any, 16)}
	for seq := 1; seq <= n; seq++ {
		evs := make([]engine.Event, 3)
		for i := range evs {
			evs[i] = engine.Event{ID: int64(3*(seq-1) + i + 1), Type: "PassStateExited", Timestamp: t0, State: "S", Document: d}
		}
		err := s.Commit(t.Context(), &engine.Commit{
			Execution: id, Seq: int64(seq), Status: engine.StatusRunning, Events: evs, LastEvent: int64(3 * seq),
			Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: d, Visits: map[string]int{"S": seq}}},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func testConcurrent(t *testing.T, s store.Store) {
	const executions, commits = 64, 20
	for i := range executions {
		create(t, s, newExecution(t, fmt.Sprintf("c%02d", i)))
	}
	var wg sync.WaitGroup
	errs := make([]error, executions)
	for i := range executions {
		wg.Go(func() { errs[i] = concurrentCommits(t, s, fmt.Sprintf("c%02d", i), commits) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("execution c%02d: %v", i, err)
		}
	}
	for i := range executions {
		id := fmt.Sprintf("c%02d", i)
		if err := s.VerifyHistory(t.Context(), id); err != nil {
			t.Errorf("VerifyHistory(%s) = %v", id, err)
		}
		e := load(t, s, id)
		if n := len(history(t, s, id)); n != 3*commits || e.Seq != commits || e.Progress.LastEvent != 3*commits || e.Progress.Scopes[""].Visits["S"] != commits {
			t.Errorf("execution %s: %d events, Seq %d, LastEvent %d, visits %v, want %d, %d, %d, %d", id, n, e.Seq, e.Progress.LastEvent, e.Progress.Scopes[""].Visits, 3*commits, commits, 3*commits, commits)
		}
	}
}

func testConcurrentFailures(t *testing.T, s store.Store) {
	const executions, commits = 32, 10
	for i := range executions {
		create(t, s, newExecution(t, fmt.Sprintf("ok%02d", i)))
	}
	var wg sync.WaitGroup
	errs := make([]error, 2*executions)
	for i := range executions {
		wg.Go(func() { errs[i] = concurrentCommits(t, s, fmt.Sprintf("ok%02d", i), commits) })
		wg.Go(func() { errs[executions+i] = concurrentCommits(t, s, fmt.Sprintf("missing%02d", i), 1) })
	}
	wg.Wait()
	for i, err := range errs {
		if i < executions && err != nil {
			t.Errorf("execution ok%02d: %v, want nil", i, err)
		}
		if i >= executions && !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("execution missing%02d: %v, want ErrNotFound", i-executions, err)
		}
	}
	for i := range executions {
		id := fmt.Sprintf("ok%02d", i)
		if err := s.VerifyHistory(t.Context(), id); err != nil {
			t.Errorf("VerifyHistory(%s) = %v", id, err)
		}
		if n := len(history(t, s, id)); n != 3*commits {
			t.Errorf("execution %s has %d events, want %d", id, n, 3*commits)
		}
	}
}

func testClose(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() again = %v, want nil", err)
	}
	if _, err := s.Load(t.Context(), "e1"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Load after Close = %v, want ErrClosed", err)
	}
	if err := s.Commit(t.Context(), &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Commit after Close = %v, want ErrClosed", err)
	}
	if err := s.Create(t.Context(), newExecution(t, "e2")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Create after Close = %v, want ErrClosed", err)
	}
}

// testPartialCommits checks what a commit leaves as it was: one without a
// Status keeps the status and what goes with it; Invocations replace the
// counters only when given, AddInvocations add to them; the event
// counters never go backwards.
func testPartialCommits(t *testing.T, s store.Store) {
	e := newExecution(t, "partial")
	create(t, s, e)
	wake := at(time.Hour)
	commit(t, s, &engine.Commit{Execution: "partial", Seq: 1, Status: engine.StatusWaiting, WakeAt: wake, WaitingFor: "Wait",
		Invocations: map[string]int{"A": 3}, LastEvent: 10, LastOwnEvent: 2})
	// A nested scope's commit: no status, calls of B, older event counters.
	commit(t, s, &engine.Commit{Execution: "partial", Seq: 2, AddInvocations: map[string]int{"B": 2, "A": 1}, LastEvent: 7, LastOwnEvent: 1,
		Scopes: map[string]*engine.Scope{"M#1.0/0/": {Next: "X", Doc: Doc(t, `{}`)}}})
	got := load(t, s, "partial")
	if got.Status != engine.StatusWaiting || !got.WakeAt.Equal(wake) || got.WaitingFor != "Wait" {
		t.Errorf("after a commit without status: %s until %v for %q, want WAITING until %v for Wait", got.Status, got.WakeAt, got.WaitingFor, wake)
	}
	if want := map[string]int{"A": 4, "B": 2}; !maps.Equal(got.Progress.Invocations, want) {
		t.Errorf("Invocations = %v, want %v", got.Progress.Invocations, want)
	}
	if got.Progress.LastEvent != 10 || got.Progress.LastOwnEvent != 2 {
		t.Errorf("event counters = %d, %d; want 10, 2 (never backwards)", got.Progress.LastEvent, got.Progress.LastOwnEvent)
	}
	// A commit with a status replaces the whole status group; absolute
	// Invocations replace the counters (a rollback).
	commit(t, s, &engine.Commit{Execution: "partial", Seq: 3, Status: engine.StatusRunning, Invocations: map[string]int{"A": 1}})
	got = load(t, s, "partial")
	if got.Status != engine.StatusRunning || !got.WakeAt.IsZero() || got.WaitingFor != "" {
		t.Errorf("after RUNNING: %s until %v for %q, want RUNNING with no wake-up", got.Status, got.WakeAt, got.WaitingFor)
	}
	if want := map[string]int{"A": 1}; !maps.Equal(got.Progress.Invocations, want) {
		t.Errorf("Invocations after a replacement = %v, want %v", got.Progress.Invocations, want)
	}
	if due, err := s.Due(t.Context(), at(2*time.Hour)); err != nil || len(due) != 0 {
		t.Errorf("Due after the wait was cleared = %v, %v; want none", due, err)
	}
}

// testUsage checks the usage totals and budget notices: AddUsage adds up
// (costs to 1e-9), Usage replaces the totals (a fork), Notices are kept
// once each, and a commit without them leaves them as they are.
func testUsage(t *testing.T, s store.Store) {
	e := newExecution(t, "usage")
	e.Progress.Usage = engine.Usage{Tokens: 5}
	create(t, s, e)
	if got := load(t, s, "usage").Progress.Usage; got != (engine.Usage{Tokens: 5}) {
		t.Errorf("usage after Create = %+v, want 5 tokens", got)
	}
	commit(t, s, &engine.Commit{Execution: "usage", Seq: 1, AddUsage: &engine.Usage{InputTokens: 7, OutputTokens: 3, Tokens: 10, Cost: 0.1}, Notices: []string{"alert:0"}})
	commit(t, s, &engine.Commit{Execution: "usage", Seq: 2, AddUsage: &engine.Usage{Tokens: 1, Cost: 0.2}, Notices: []string{"alert:0", "alert:1"}})
	commit(t, s, &engine.Commit{Execution: "usage", Seq: 3, Status: engine.StatusRunning})
	got := load(t, s, "usage").Progress
	if want := (engine.Usage{InputTokens: 7, OutputTokens: 3, Tokens: 16, Cost: 0.3}); got.Usage != want {
		t.Errorf("usage = %+v, want %+v", got.Usage, want)
	}
	if want := []string{"alert:0", "alert:1"}; !slices.Equal(got.Notices, want) {
		t.Errorf("notices = %q, want %q", got.Notices, want)
	}
	commit(t, s, &engine.Commit{Execution: "usage", Seq: 4, Usage: &engine.Usage{Cost: 2}, AddUsage: &engine.Usage{Cost: 0.5}})
	if got := load(t, s, "usage").Progress.Usage; got != (engine.Usage{Cost: 2.5}) {
		t.Errorf("usage after a replacement = %+v, want cost 2.5", got)
	}
}

// WantIntegrityError checks that err, returned by call, is an
// *store.IntegrityError about execution id's checkpoint cp naming field,
// and matches store.ErrTampered.
func WantIntegrityError(t testing.TB, call string, err error, id, cp, field string) {
	t.Helper()
	var ie *store.IntegrityError
	switch {
	case !errors.As(err, &ie):
		t.Errorf("%s = %v, want an *IntegrityError", call, err)
	case !errors.Is(err, store.ErrTampered):
		t.Errorf("%s = %v, does not match ErrTampered", call, err)
	case ie.Execution != id || ie.Checkpoint != cp || ie.Field != field:
		t.Errorf("%s = %v: execution %q, checkpoint %q, field %q, want %q, %q, %q", call, err, ie.Execution, ie.Checkpoint, ie.Field, id, cp, field)
	}
}
