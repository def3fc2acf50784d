package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// TestBoltFeedbackReopen: feedback is in the file: a reopened database
// lists it, read-only too; a database that never had feedback lists none,
// read-only, without its bucket.
func TestBoltFeedbackReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b := openBolt(t, path)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenBolt(path, store.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ro.ListFeedback(ctx, engine.FeedbackFilter{Workflow: "w"}); err != nil || len(got) != 0 {
		t.Errorf("a database without feedback lists %v, %v", got, err)
	}
	if err := ro.AddFeedback(ctx, &engine.Feedback{ID: "f1", Value: "up"}); err == nil {
		t.Error("AddFeedback on a read-only database succeeded")
	}
	ro.Close()

	b = openBolt(t, path)
	f := &engine.Feedback{ID: "f1", Execution: "e1", Workflow: "w", State: "S", Type: "rating", Value: jsonNumber(t, "4.50"), CreatedAt: time.Unix(1_700_000_000, 1)}
	if err := b.AddFeedback(ctx, f); err != nil {
		t.Fatal(err)
	}
	b.Close()
	for _, opts := range []store.BoltOptions{{}, {ReadOnly: true}} {
		b, err := store.OpenBolt(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.ListFeedback(ctx, engine.FeedbackFilter{Execution: "e1"})
		b.Close()
		if err != nil || len(got) != 1 || got[0].ID != "f1" || !got[0].CreatedAt.Equal(f.CreatedAt) || got[0].Value != f.Value {
			t.Errorf("reopened (%+v): %+v, %v", opts, got, err)
		}
	}
}

// jsonNumber decodes a JSON number.
func jsonNumber(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFeedbackClosed: a closed store refuses feedback calls with
// ErrClosed.
func TestFeedbackClosed(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "aslrun.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []interface {
		engine.FeedbackStore
		Close() error
	}{store.NewMemory(), b} {
		s.Close()
		if err := s.AddFeedback(ctx, &engine.Feedback{ID: "f1", Value: "up"}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%T: AddFeedback after Close = %v, want ErrClosed", s, err)
		}
		if _, err := s.ListFeedback(ctx, engine.FeedbackFilter{}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%T: ListFeedback after Close = %v, want ErrClosed", s, err)
		}
	}
}

// FuzzFeedback adds an item of fuzzed names, comment and value (JSON
// text): it is refused with ErrFeedbackArgument, or listed by its
// workflow and state with every field as given and its value's exact
// JSON text.
func FuzzFeedback(f *testing.F) {
	f.Add("f1", "triage", "Classify", "good", `{"accuracy":4,"notes":"fine"}`)
	f.Add("0195a3b4-c5d6-7e8f-9a0b-000000000001", "w", "Map/Item", "e\u0301 😀", `12345678901234567890123.50`)
	f.Add("", "w", "S", "", `"up"`)
	f.Add("f\x00", "w", "S", "", `null`)
	f.Add("f", "\xff", "S", "", `[1e400,-0.0,{"":[]}]`)
	f.Add("f", "w", "S", "a\x00b", `"\u0000"`)
	f.Add("0", "\xc9", "\x80", "", `""`) // invalid apart, valid together
	f.Fuzz(func(t *testing.T, id, workflow, state, comment, value string) {
		v, err := jsonvalue.Decode([]byte(value))
		if err != nil {
			return
		}
		want, err := jsonvalue.Marshal(v)
		if err != nil {
			return
		}
		m := store.NewMemory()
		defer m.Close()
		ctx := context.Background()
		fb := &engine.Feedback{ID: id, Workflow: workflow, State: state, Comment: comment, Type: "structured", Value: v, Output: v}
		if err := m.AddFeedback(ctx, fb); err != nil {
			if !errors.Is(err, store.ErrFeedbackArgument) {
				t.Fatalf("AddFeedback = %v, want nil or ErrFeedbackArgument", err)
			}
			text := true
			for _, s := range []string{id, workflow, state, comment} {
				text = text && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
			}
			short := max(len(id), len(workflow), len(state)) <= store.MaxFeedbackName
			if id != "" && text && short {
				t.Fatalf("AddFeedback refused valid text: %v", err)
			}
			return
		}
		got, err := m.ListFeedback(ctx, engine.FeedbackFilter{Workflow: workflow, State: state})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != id || got[0].Workflow != workflow || got[0].State != state || got[0].Comment != comment {
			t.Fatalf("listed %+v", got)
		}
		for _, x := range []any{got[0].Value, got[0].Output} {
			if b, err := jsonvalue.Marshal(x); err != nil || string(b) != string(want) {
				t.Errorf("value came back as %s (%v), want %s", b, err, want)
			}
		}
		if err := m.AddFeedback(ctx, fb); !errors.Is(err, engine.ErrExists) {
			t.Errorf("AddFeedback again = %v, want ErrExists", err)
		}
	})
}

// BenchmarkBoltListFeedback lists 100 items of a workflow of 10,000
// items in 10 states and 100 executions: of one state (read from the
// state's index), of one execution (its index), and of one state without
// naming the workflow (every item up to the 100th of the state).
func BenchmarkBoltListFeedback(b *testing.B) {
	ctx := context.Background()
	s, err := store.OpenBolt(filepath.Join(b.TempDir(), "aslrun.db"), store.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 10_000
	errs := make(chan error, 16)
	for w := range 16 {
		go func() {
			for i := w; i < n; i += 16 {
				errs <- s.AddFeedback(ctx, &engine.Feedback{ID: fmt.Sprintf("0195a3b4-c5d6-7e8f-9a0b-%012x", i), Execution: fmt.Sprint("e", i%100),
					Workflow: "w", State: fmt.Sprint("S", i%10), Type: "rating", Value: i % 5, Output: map[string]any{"label": "spam"}})
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	for _, bb := range []struct {
		name string
		f    engine.FeedbackFilter
	}{
		{"WorkflowState", engine.FeedbackFilter{Workflow: "w", State: "S7", Limit: 100}},
		{"Execution", engine.FeedbackFilter{Execution: "e42", Limit: 100}},
		{"StateOnly", engine.FeedbackFilter{State: "S7", Limit: 100}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				got, err := s.ListFeedback(ctx, bb.f)
				if err != nil || len(got) != 100 {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}

// Feedback is added under its ID and listed in ID order, by workflow,
// state or execution.
func ExampleMemory_ListFeedback() {
	ctx := context.Background()
	m := store.NewMemory()
	defer m.Close()
	for i, v := range []any{"up", "down", "up"} {
		err := m.AddFeedback(ctx, &engine.Feedback{
			ID: fmt.Sprintf("0195a3b4-c5d6-7e8f-9a0b-%012d", 3-i), Workflow: "triage", State: "Classify",
			By: "alice", Type: "thumbs", Value: v,
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	items, _ := m.ListFeedback(ctx, engine.FeedbackFilter{Workflow: "triage", Limit: 2})
	for _, f := range items {
		fmt.Println(f.ID, f.Value)
	}
	err := m.AddFeedback(ctx, &engine.Feedback{ID: items[0].ID, Value: "up"})
	fmt.Println(errors.Is(err, engine.ErrExists))
	// Output:
	// 0195a3b4-c5d6-7e8f-9a0b-000000000001 up
	// 0195a3b4-c5d6-7e8f-9a0b-000000000002 down
	// true
}
