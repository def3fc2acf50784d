package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// runFeedback runs the feedback tests (engine.FeedbackStore), each on a
// fresh store; a store that keeps no feedback skips them.
func runFeedback(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		test func(t *testing.T, s engine.FeedbackStore)
	}{
		{"AddAndList", testFeedbackAdd},
		{"Filters", testFeedbackFilters},
		{"Paging", testFeedbackPaging},
		{"DuplicateID", testFeedbackDuplicate},
		{"JSONRoundTrip", testFeedbackJSON},
		{"ThousandInOrder", testFeedbackMany},
		{"BadArguments", testFeedbackBadArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			fs, ok := s.(engine.FeedbackStore)
			if !ok {
				t.Skipf("%T keeps no feedback", s)
			}
			tt.test(t, fs)
		})
	}
}

// feedbackID is the n-th of a run of ids in time order, as UUIDv7s are.
func feedbackID(n int) string {
	return fmt.Sprintf("0195a3b4-c5d6-7e8f-9a0b-%012x", n)
}

// feedbackItem returns item n about state of workflow in execution exec.
func feedbackItem(t *testing.T, n int, workflow, state, exec string) *engine.Feedback {
	t.Helper()
	return &engine.Feedback{
		ID: feedbackID(n), Execution: exec, Workflow: workflow, State: state, Step: state + "#1",
		By: "alice", Role: "reviewer", Type: "rating", Value: json.Number(fmt.Sprint(n%5 + 1)),
		Comment: fmt.Sprintf("comment %d", n), Output: Doc(t, `{"label":"spam","score":0.90}`),
		CreatedAt: at(time.Duration(n) * time.Second),
	}
}

// addFeedback adds items, failing t on an error.
func addFeedback(t *testing.T, s engine.FeedbackStore, fs ...*engine.Feedback) {
	t.Helper()
	for _, f := range fs {
		if err := s.AddFeedback(t.Context(), f); err != nil {
			t.Fatalf("AddFeedback(%s) = %v", f.ID, err)
		}
	}
}

// listFeedback lists, failing t on an error.
func listFeedback(t *testing.T, s engine.FeedbackStore, f engine.FeedbackFilter) []engine.Feedback {
	t.Helper()
	out, err := s.ListFeedback(t.Context(), f)
	if err != nil {
		t.Fatalf("ListFeedback(%+v) = %v", f, err)
	}
	return out
}

// feedbackIDs are the ids of items.
func feedbackIDs(fs []engine.Feedback) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return ids
}

// checkFeedback compares a listed item with what was added: every field,
// the JSON values by their exact text, the time as an instant in UTC.
func checkFeedback(t *testing.T, got engine.Feedback, want *engine.Feedback) {
	t.Helper()
	for _, x := range []struct{ name, got, want string }{
		{"ID", got.ID, want.ID}, {"Execution", got.Execution, want.Execution}, {"Workflow", got.Workflow, want.Workflow},
		{"State", got.State, want.State}, {"Step", got.Step, want.Step}, {"By", got.By, want.By},
		{"Role", got.Role, want.Role}, {"Type", got.Type, want.Type}, {"Comment", got.Comment, want.Comment},
		{"Value", text(got.Value), text(want.Value)}, {"Output", text(got.Output), text(want.Output)},
	} {
		if x.got != x.want {
			t.Errorf("feedback %s: %s = %q, want %q", want.ID, x.name, x.got, x.want)
		}
	}
	if (got.Output == nil) != (want.Output == nil) {
		t.Errorf("feedback %s: Output = %#v, want %#v", want.ID, got.Output, want.Output)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || (!got.CreatedAt.IsZero() && got.CreatedAt.Location() != time.UTC) {
		t.Errorf("feedback %s: CreatedAt = %v, want %v in UTC", want.ID, got.CreatedAt, want.CreatedAt)
	}
}

func testFeedbackAdd(t *testing.T, s engine.FeedbackStore) {
	if got := listFeedback(t, s, engine.FeedbackFilter{}); len(got) != 0 {
		t.Fatalf("a new store lists %v", feedbackIDs(got))
	}
	items := []*engine.Feedback{
		feedbackItem(t, 2, "triage", "Classify", "e1"),
		{ID: feedbackID(1), Execution: "e1", Workflow: "triage", State: "Branch/Draft", Step: "Branch/Draft#2",
			By: "bob", Type: "thumbs", Value: "down", CreatedAt: at(0)},
		feedbackItem(t, 3, "triage", "Classify", "e2"),
	}
	addFeedback(t, s, items...)
	got := listFeedback(t, s, engine.FeedbackFilter{})
	if want := []string{feedbackID(1), feedbackID(2), feedbackID(3)}; !slices.Equal(feedbackIDs(got), want) {
		t.Fatalf("listed %v, want %v", feedbackIDs(got), want)
	}
	byID := map[string]*engine.Feedback{}
	for _, f := range items {
		byID[f.ID] = f
	}
	for _, g := range got {
		checkFeedback(t, g, byID[g.ID])
	}
}

func testFeedbackFilters(t *testing.T, s engine.FeedbackStore) {
	// Items 0..11: workflows a and b, states X and Y, executions e0..e2,
	// added out of id order.
	for _, n := range []int{7, 0, 11, 3, 5, 9, 1, 10, 2, 8, 4, 6} {
		addFeedback(t, s, feedbackItem(t, n, "ab"[n%2:n%2+1], "XY"[n/2%2:n/2%2+1], fmt.Sprintf("e%d", n%3)))
	}
	ids := func(ns ...int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = feedbackID(n)
		}
		return out
	}
	tests := []struct {
		f    engine.FeedbackFilter
		want []string
	}{
		{engine.FeedbackFilter{}, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{engine.FeedbackFilter{Workflow: "a"}, ids(0, 2, 4, 6, 8, 10)},
		{engine.FeedbackFilter{Workflow: "b"}, ids(1, 3, 5, 7, 9, 11)},
		{engine.FeedbackFilter{State: "X"}, ids(0, 1, 4, 5, 8, 9)},
		{engine.FeedbackFilter{Workflow: "a", State: "Y"}, ids(2, 6, 10)},
		{engine.FeedbackFilter{Workflow: "b", State: "X"}, ids(1, 5, 9)},
		{engine.FeedbackFilter{Execution: "e0"}, ids(0, 3, 6, 9)},
		{engine.FeedbackFilter{Execution: "e1", Workflow: "a"}, ids(4, 10)},
		{engine.FeedbackFilter{Execution: "e2", Workflow: "b", State: "Y"}, ids(11)},
		{engine.FeedbackFilter{Workflow: "c"}, nil},
		{engine.FeedbackFilter{Workflow: "a", State: "Z"}, nil},
		{engine.FeedbackFilter{Execution: "e9"}, nil},
		// Names are whole: "e" is not a prefix match of "e0".
		{engine.FeedbackFilter{Execution: "e"}, nil},
	}
	for _, tt := range tests {
		if got := feedbackIDs(listFeedback(t, s, tt.f)); !slices.Equal(got, tt.want) {
			t.Errorf("ListFeedback(%+v) = %v, want %v", tt.f, got, tt.want)
		}
	}
}

func testFeedbackPaging(t *testing.T, s engine.FeedbackStore) {
	for n := range 10 {
		addFeedback(t, s, feedbackItem(t, 2*n, "w", "S"+fmt.Sprint(n%2), "e"+fmt.Sprint(n%2)))
	}
	for _, base := range []engine.FeedbackFilter{{}, {Workflow: "w"}, {Workflow: "w", State: "S0"}, {Execution: "e1"}, {State: "S1"}} {
		all := feedbackIDs(listFeedback(t, s, base))
		for _, limit := range []int{1, 2, 3, 100} {
			var paged []string
			f := base
			f.Limit = limit
			for pages := 0; ; pages++ {
				if pages > len(all)+1 {
					t.Fatalf("%+v: paging does not end", f)
				}
				page := feedbackIDs(listFeedback(t, s, f))
				if len(page) > limit {
					t.Fatalf("%+v: page of %d", f, len(page))
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				f.After = page[len(page)-1]
			}
			if !slices.Equal(paged, all) {
				t.Errorf("%+v limit %d: paged %v, want %v", base, limit, paged, all)
			}
		}
	}
	// After an id that is not kept (between two) starts at the next one.
	if got := feedbackIDs(listFeedback(t, s, engine.FeedbackFilter{After: feedbackID(5), Limit: 2})); !slices.Equal(got, []string{feedbackID(6), feedbackID(8)}) {
		t.Errorf("after %s: %v, want items 6 and 8", feedbackID(5), got)
	}
	if got := listFeedback(t, s, engine.FeedbackFilter{After: feedbackID(18)}); len(got) != 0 {
		t.Errorf("after the last: %v", feedbackIDs(got))
	}
	if got := listFeedback(t, s, engine.FeedbackFilter{After: "~"}); len(got) != 0 {
		t.Errorf("after every id: %v", feedbackIDs(got))
	}
}

func testFeedbackDuplicate(t *testing.T, s engine.FeedbackStore) {
	first := feedbackItem(t, 1, "w", "S", "e1")
	addFeedback(t, s, first)
	again := feedbackItem(t, 1, "other", "T", "e2")
	again.Value = "up"
	err := s.AddFeedback(t.Context(), again)
	if !errors.Is(err, engine.ErrExists) {
		t.Fatalf("AddFeedback of a kept id = %v, want ErrExists", err)
	}
	got := listFeedback(t, s, engine.FeedbackFilter{})
	if len(got) != 1 {
		t.Fatalf("listed %v after a refused duplicate", feedbackIDs(got))
	}
	checkFeedback(t, got[0], first)
	for _, f := range []engine.FeedbackFilter{{Workflow: "other"}, {Execution: "e2"}} {
		if got := listFeedback(t, s, f); len(got) != 0 {
			t.Errorf("ListFeedback(%+v) = %v: the refused duplicate was indexed", f, feedbackIDs(got))
		}
	}
}

func testFeedbackJSON(t *testing.T, s engine.FeedbackStore) {
	docs := []string{exactDoc, `"déjà vu \u2028 <&> 😀 \u0000x"`, `[]`, `0`, `-1.250e+3`, `null`, `false`, `{}`,
		`{"accuracy":4,"notes":{"tags":["a","b"],"weight":0.30}}`}
	var items []*engine.Feedback
	for i, d := range docs {
		f := &engine.Feedback{ID: feedbackID(i), Workflow: "w", State: "S", Type: "structured", Value: Doc(t, d),
			Output: Doc(t, docs[len(docs)-1-i]), Comment: "ünïcödé ✓ " + d[:1], By: "名前", CreatedAt: t0}
		items = append(items, f)
	}
	// An item without an output keeps none; one at the zero time keeps it.
	items = append(items, &engine.Feedback{ID: feedbackID(len(docs)), Type: "text", Value: "fine"})
	addFeedback(t, s, items...)
	got := listFeedback(t, s, engine.FeedbackFilter{})
	if len(got) != len(items) {
		t.Fatalf("listed %d items, want %d", len(got), len(items))
	}
	for i, g := range got {
		checkFeedback(t, g, items[i])
	}
	if m, ok := got[len(docs)-1].Value.(map[string]any); !ok {
		t.Errorf("structured value = %#v", got[len(docs)-1].Value)
	} else if n, ok := m["notes"].(map[string]any)["weight"].(json.Number); !ok || n != "0.30" {
		t.Errorf("nested number = %#v, want json.Number 0.30", m["notes"])
	}
	if last := got[len(got)-1]; last.Output != nil || !last.CreatedAt.IsZero() {
		t.Errorf("item without output nor time: Output %#v, CreatedAt %v", last.Output, last.CreatedAt)
	}
}

func testFeedbackMany(t *testing.T, s engine.FeedbackStore) {
	const n = 1000
	// Added by 8 writers at once, each in an order that is not the ids'.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				k := i * 7 % n // 7 is prime to n: each item once
				if err := s.AddFeedback(t.Context(), feedbackItem(t, k, "w", "S"+fmt.Sprint(k%2), "e")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := listFeedback(t, s, engine.FeedbackFilter{})
	if len(got) != n {
		t.Fatalf("listed %d items, want %d", len(got), n)
	}
	for i, g := range got {
		if g.ID != feedbackID(i) {
			t.Fatalf("item %d is %s, want %s", i, g.ID, feedbackID(i))
		}
	}
	checkFeedback(t, got[n-1], feedbackItem(t, n-1, "w", "S1", "e"))
	odd := listFeedback(t, s, engine.FeedbackFilter{Workflow: "w", State: "S1", After: feedbackID(500), Limit: 100})
	if len(odd) != 100 || odd[0].ID != feedbackID(501) || odd[99].ID != feedbackID(699) {
		t.Errorf("state S1 after 500, 100 of them: %d items, %v … %v", len(odd), odd[0].ID, odd[len(odd)-1].ID)
	}
}

// unencodable is a value that is not JSON.
type unencodable struct{}

func testFeedbackBadArguments(t *testing.T, s engine.FeedbackStore) {
	bad := []struct {
		name string
		f    *engine.Feedback
	}{
		{"nil", nil},
		{"empty id", &engine.Feedback{Value: 1}},
		{"NUL in workflow", &engine.Feedback{ID: "f1", Workflow: "a\x00b"}},
		{"bad UTF-8 in state", &engine.Feedback{ID: "f1", State: "\xff"}},
		{"NUL in comment", &engine.Feedback{ID: "f1", Comment: "x\x00"}},
		{"long by", &engine.Feedback{ID: "f1", By: fmt.Sprintf("%0*d", store.MaxFeedbackName+1, 0)}},
		{"value not JSON", &engine.Feedback{ID: "f1", Value: unencodable{}}},
		{"output not JSON", &engine.Feedback{ID: "f1", Value: "up", Output: []any{unencodable{}}}},
	}
	for _, b := range bad {
		if err := s.AddFeedback(t.Context(), b.f); !errors.Is(err, store.ErrFeedbackArgument) {
			t.Errorf("AddFeedback(%s) = %v, want ErrFeedbackArgument", b.name, err)
		}
	}
	if got := listFeedback(t, s, engine.FeedbackFilter{}); len(got) != 0 {
		t.Errorf("refused items were kept: %v", feedbackIDs(got))
	}
	for _, f := range []engine.FeedbackFilter{{Limit: -1}, {Workflow: "\x00"}, {After: "\xfe"}, {Execution: "a\x00"}} {
		if _, err := s.ListFeedback(t.Context(), f); !errors.Is(err, store.ErrFeedbackArgument) {
			t.Errorf("ListFeedback(%+v) = %v, want ErrFeedbackArgument", f, err)
		}
	}
}
