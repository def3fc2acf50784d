package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// stepper is an agent of three durable steps, "a", "b" and "c", each
// counting its runs; crashAt (1-based over all step runs) cancels the
// run's context during that step, as a process dying there would.
type stepper struct {
	mu      sync.Mutex
	runs    map[string]int
	total   int
	crashAt int
	cancel  context.CancelFunc
}

func (s *stepper) agent() agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		var got []any
		for _, name := range []string{"a", "b", "c"} {
			out, err := req.Journal(ctx, agents.StepSpec{Name: name, Kind: "ToolCall", Input: map[string]any{"step": name}, Detail: map[string]any{"tool": "lookup"}},
				func(ctx context.Context) (any, error) {
					s.mu.Lock()
					s.runs[name]++
					s.total++
					crash := s.total == s.crashAt
					s.mu.Unlock()
					if crash {
						s.cancel()
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return map[string]any{"step": name, "n": len(got)}, nil
				})
			if err != nil {
				return nil, err
			}
			got = append(got, out)
		}
		return map[string]any{"steps": got}, nil
	})
}

const oneTask = `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Steps","End":true}}}`

// TestJournalResume: a call that stops during any of its steps (its run
// cancelled) runs again when the execution resumes; every step that had
// finished returns its recorded result without running again, the output
// is the uninterrupted run's, and each step has one event in the history.
// (A stopping run writes what batched durability held back; a process
// killed outright loses up to a batch window of steps, as of states.)
func TestJournalResume(t *testing.T) {
	for _, dur := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched} {
		for crash := 1; crash <= 3; crash++ {
			t.Run(fmt.Sprintf("%s/crash in step %d", dur, crash), func(t *testing.T) {
				st := store.NewMemory()
				s := &stepper{runs: map[string]int{}, crashAt: crash}
				ctx, cancel := context.WithCancel(context.Background())
				s.cancel = cancel
				x := engine.New(engine.Config{Agents: registry(t, s.agent(), "Steps"), Store: st, Durability: dur})
				if _, err := x.Run(ctx, mustParse(t, oneTask), map[string]any{}, engine.StartOptions{ID: "e"}); !errors.Is(err, context.Canceled) {
					t.Fatalf("run during a crash: %v, want context.Canceled", err)
				}
				x2 := engine.New(engine.Config{Agents: registry(t, s.agent(), "Steps"), Store: st, Durability: dur})
				res, err := x2.Resume(context.Background(), "e", engine.ResumeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				wantOutput(t, res, `{"steps":[{"step":"a","n":0},{"step":"b","n":1},{"step":"c","n":2}]}`)
				for _, name := range []string{"a", "b", "c"} {
					want := 1
					if name == string(rune('a'+crash-1)) {
						want = 2 // in flight at the crash: run again
					}
					if s.runs[name] != want {
						t.Errorf("step %s ran %d times, want %d", name, s.runs[name], want)
					}
				}
				hist, err := st.History(context.Background(), "e")
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]int{}
				for _, e := range hist {
					if e.Type == "ToolCallSucceeded" {
						d := e.Detail.(map[string]any)
						seen[d["name"].(string)]++
						if d["tool"] != "lookup" || d["inputHash"] == nil || e.Output == nil || e.Own == 0 {
							t.Errorf("step event %+v lacks its tool, input hash, output or own number", e)
						}
					}
				}
				for _, name := range []string{"a", "b", "c"} {
					if seen[name] != 1 {
						t.Errorf("step %s has %d events in the history, want 1", name, seen[name])
					}
				}
				if err := st.VerifyHistory(context.Background(), "e"); err != nil {
					t.Errorf("history does not verify: %v", err)
				}
			})
		}
	}
}

// TestJournalRecordsErrors: a step that fails is recorded with its error,
// which it returns again without running when the call runs again after a
// crash; a step given another input than the one recorded is an error.
func TestJournalRecordsErrors(t *testing.T) {
	st := store.NewMemory()
	runs := 0
	ctx, cancel := context.WithCancel(context.Background())
	input := "first"
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		_, err := req.RunStep(ctx, "flaky", func(context.Context) (any, error) {
			runs++
			return nil, asl.Errorf(asl.ErrAgentToolError, "the lookup service said no")
		})
		var ae *asl.Error
		if !errors.As(err, &ae) || ae.Name != asl.ErrAgentToolError {
			return nil, fmt.Errorf("step error %v, want Agent.ToolError", err)
		}
		if _, err := req.Journal(ctx, agents.StepSpec{Name: "typed", Input: input}, func(context.Context) (any, error) { return "ok", nil }); err != nil {
			return nil, err
		}
		if ctx.Err() == nil && input == "first" {
			cancel() // the process dies after both steps
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return "done", nil
	})
	x := engine.New(engine.Config{Agents: registry(t, a, "Steps"), Store: st})
	if _, err := x.Run(ctx, mustParse(t, oneTask), map[string]any{}, engine.StartOptions{ID: "e"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	input = "second"
	x2 := engine.New(engine.Config{Agents: registry(t, a, "Steps"), Store: st})
	res, err := x2.Resume(context.Background(), "e", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("the failed step ran %d times, want 1 (its error recorded)", runs)
	}
	wantError(t, res, asl.ErrRuntime, `step "typed" ran again with another input`)
}

// TestJournalNewAttempt: a retried Task runs its steps again; its
// journal is its attempt's.
func TestJournalNewAttempt(t *testing.T) {
	synctest.Test(t, testJournalNewAttempt)
}

func testJournalNewAttempt(t *testing.T) {
	runs := 0
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		if _, err := req.RunStep(ctx, "s", func(context.Context) (any, error) { runs++; return runs, nil }); err != nil {
			return nil, err
		}
		if req.Attempt == 0 {
			return nil, asl.Errorf(asl.ErrAgentModelError, "try again")
		}
		return "done", nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Steps","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":1}],"End":true}}}`
	x := engine.New(engine.Config{Agents: registry(t, a, "Steps"), Store: store.NewMemory()})
	res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `"done"`)
	if runs != 2 {
		t.Errorf("the step ran %d times over two attempts, want 2", runs)
	}
}

// TestJournalConcurrentSteps: steps may run at once (a model asking for
// several tools); each is recorded once.
func TestJournalConcurrentSteps(t *testing.T) {
	st := store.NewMemory()
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		var wg sync.WaitGroup
		outs := make([]any, 8)
		errs := make([]error, 8)
		for i := range 8 {
			wg.Go(func() {
				outs[i], errs[i] = req.RunStep(ctx, fmt.Sprint("tool-", i), func(context.Context) (any, error) { return i * i, nil })
			})
		}
		wg.Wait()
		return outs, errors.Join(errs...)
	})
	x := engine.New(engine.Config{Agents: registry(t, a, "Steps"), Store: st})
	res, err := x.Run(context.Background(), mustParse(t, oneTask), map[string]any{}, engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `[0,1,4,9,16,25,36,49]`)
	hist, _ := st.History(context.Background(), "e")
	n := 0
	for _, e := range hist {
		if e.Type == "StepSucceeded" {
			n++
		}
	}
	if n != 8 {
		t.Errorf("%d step events, want 8", n)
	}
}

// TestJournalRefusesBadSteps: a step without a name, of an unknown kind,
// or whose result is not JSON fails the Task with a named error.
func TestJournalRefusesBadSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec agents.StepSpec
		out  any
		want asl.ErrorName
		msg  string
	}{
		{"no name", agents.StepSpec{}, 1, asl.ErrRuntime, "name must be 1 to 256 bytes"},
		{"unknown kind", agents.StepSpec{Name: "s", Kind: "Thinking"}, 1, asl.ErrRuntime, `kind "Thinking"`},
		{"result not JSON", agents.StepSpec{Name: "s"}, func() {}, asl.ErrAgentInvalidOutput, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
				return req.Journal(ctx, tc.spec, func(context.Context) (any, error) { return tc.out, nil })
			})
			x := engine.New(engine.Config{Agents: registry(t, a, "Steps"), Store: store.NewMemory()})
			res, err := x.Run(context.Background(), mustParse(t, oneTask), map[string]any{}, engine.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, res, tc.want, tc.msg)
		})
	}
}
