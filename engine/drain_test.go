package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestDrain: a drained run lets the agent call in flight finish, commits
// its result, and stops at the next state boundary with the execution
// RUNNING; a new executor resumes it without calling the agent again.
func TestDrain(t *testing.T) {
	st := store.NewMemory()
	release := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	slow := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		calls.Add(1)
		close(started)
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	reg := registry(t, slow, "Slow")
	def := mustParse(t, `{"StartAt":"Call","States":{
		"Call":{"Type":"Task","Agent":"Slow","ResultPath":"$.call","Next":"After"},
		"After":{"Type":"Pass","Result":"yes","ResultPath":"$.after","End":true}}}`)
	x := engine.New(engine.Config{Agents: reg, Store: st})
	ctx := context.Background()
	runErr := make(chan error, 1)
	go func() {
		_, err := x.Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "d"})
		runErr <- err
	}()
	<-started
	drained := make(chan error, 1)
	go func() { drained <- x.Drain(ctx) }()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v while the agent call was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-runErr; !errors.Is(err, engine.ErrDrained) {
		t.Fatalf("Run = %v, want ErrDrained", err)
	}
	if err := <-drained; err != nil {
		t.Fatalf("Drain = %v", err)
	}
	e, err := st.Load(ctx, "d")
	if err != nil || e.Status != engine.StatusRunning || e.Progress.Scopes[""].Next != "After" {
		t.Fatalf("after the drain: %+v %v; want RUNNING at After", e, err)
	}
	res, err := engine.New(engine.Config{Agents: reg, Store: st}).Resume(ctx, "d", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"call":"done","after":"yes"}`)
	if n := calls.Load(); n != 1 {
		t.Errorf("the agent was called %d times, want once", n)
	}
	// A drained executor's runs stop at their first boundary.
	if _, err := x.Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "late"}); !errors.Is(err, engine.ErrDrained) {
		t.Errorf("a run after Drain: %v, want ErrDrained", err)
	}
}
