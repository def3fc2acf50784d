package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// effectLoop is the loop of the durability tests: a Task between pure
// states, ten turns. %s is the Parameters of its first Pass.
const effectLoop = `{"StartAt":"Start","States":{
	"Start":{"Type":"Pass","Parameters":{"n.$":"States.MathAdd($.n, 1)"%s},"Next":"Call"},
	"Call":{"Type":"Task","Agent":"Worker","ResultPath":"$.r","Next":"P1"},
	"P1":{"Type":"Pass","Result":"x","ResultPath":"$.p1","Next":"P2"},
	"P2":{"Type":"Pass","Next":"Loop"},
	"Loop":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericLessThan":10,"Next":"Start"}],"Default":"Done"},
	"Done":{"Type":"Succeed"}}}`

// dyingStore is a store whose process "dies" after a number of commits:
// every later commit fails and nothing of it is written, as after a
// kill -9 nothing more reaches the disk.
type dyingStore struct {
	*store.Memory
	commits atomic.Int64
	dieAt   int64 // the commit that fails first; 0: never
}

func (s *dyingStore) Commit(ctx context.Context, c *engine.Commit) error {
	if n := s.commits.Add(1); s.dieAt > 0 && n >= s.dieAt {
		return errors.New("the process died")
	}
	return s.Memory.Commit(ctx, c)
}

// recordingAgent answers with its input and records each call's idempotency key
// and input.
type recordingAgent struct {
	takes  time.Duration // how long each call takes
	mu     sync.Mutex
	keys   []string
	inputs map[string][]string
}

func (a *recordingAgent) agent() agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		if a.takes > 0 {
			time.Sleep(a.takes)
		}
		in, _ := jsonvalue.Marshal(req.Input)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.keys = append(a.keys, req.IdempotencyKey())
		if a.inputs == nil {
			a.inputs = map[string][]string{}
		}
		a.inputs[req.IdempotencyKey()] = append(a.inputs[req.IdempotencyKey()], string(in))
		return map[string]any{"echo": req.Input}, nil
	})
}

func loopDef(t *testing.T, extra string) string {
	t.Helper()
	return strings.Replace(effectLoop, "%s", extra, 1)
}

// TestCommitAtEffects: the pure states of a loop are written with its next
// Task (one commit per turn and one for the end), a pure state that reads
// the context object or draws a random value is written at once, and the
// history has every state's events either way.
func TestCommitAtEffects(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		commits     int64
	}{
		{"pure", "", 10 + 1},
		{"uuid", `,"id.$":"States.UUID()"`, 2*10 + 1},
		{"random", `,"r.$":"States.MathRandom(1, 100)"`, 2*10 + 1},
		{"seeded random", `,"r.$":"States.MathRandom(1, 100, 7)"`, 10 + 1},
		{"context", `,"at.$":"$$.State.EnteredTime"`, 2*10 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &dyingStore{Memory: store.NewMemory()}
			a := &recordingAgent{}
			x := engine.New(engine.Config{Agents: registry(t, a.agent(), "Worker"), Store: st})
			res, err := x.Run(context.Background(), mustParse(t, loopDef(t, tc.extra)), mustJSON(t, `{"n":0}`), engine.StartOptions{ID: "e"})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("run: %v %+v", err, res)
			}
			if got := st.commits.Load(); got != tc.commits {
				t.Errorf("%d commits, want %d", got, tc.commits)
			}
			hist, err := st.History(context.Background(), "e")
			if err != nil {
				t.Fatal(err)
			}
			entered := map[string]int{}
			for _, e := range hist {
				if strings.HasSuffix(string(e.Type), "StateEntered") {
					entered[e.State]++
				}
			}
			for _, s := range []string{"Start", "Call", "P1", "P2", "Loop"} {
				if entered[s] != 10 {
					t.Errorf("state %s entered %d times in the history, want 10", s, entered[s])
				}
			}
			if err := st.VerifyHistory(context.Background(), "e"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestReplayAfterDeath kills the "process" at every commit of the loop in
// turn (nothing more is written), resumes, and checks that the execution
// ends as an uninterrupted run does, that no call whose result was written
// is made again, and (strict) that a call made again gets the input of the
// first — a random value drawn before it included.
//
// Each case runs in a synctest bubble, where a call's time and the batch
// window pass on the bubble's clock: the window's timer fires only while
// every goroutine of the run waits, here while the agent's call takes its
// time, so a run makes the same commits however loaded the machine is.
// (On the real clock, an uninterrupted batched run that took longer than
// its window made more commits than the dying runs it was compared with,
// and the test reported a death at a commit those runs never made.)
func TestReplayAfterDeath(t *testing.T) {
	const (
		window   = 10 * time.Millisecond
		callTime = 25 * time.Millisecond // two windows and a half: one write of the window per call
	)
	uuid := `,"id.$":"States.UUID()"`
	for _, tc := range []struct {
		mode  engine.Durability
		extra string
		// commits is what an uninterrupted run makes. Strict: one per
		// turn and the end (11), and one more per turn for a state that
		// draws a UUID (21). Batched: one window written during each of
		// the ten calls, and the end.
		commits int64
		// repeated is how many calls a death may make again at most.
		// Strict: the call whose commit died. Batched: the call whose
		// result was in the window lost, and the call made while that
		// window was being written.
		repeated int
	}{
		{engine.DurabilityStrict, "", 11, 1},
		{engine.DurabilityStrict, uuid, 21, 1},
		{engine.DurabilityBatched, "", 11, 2},
		{engine.DurabilityBatched, uuid, 11, 2},
	} {
		name := string(tc.mode)
		if tc.extra != "" {
			name += " uuid"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := mustParse(t, loopDef(t, tc.extra))
				config := func(a *recordingAgent, st engine.Store) engine.Config {
					a.takes = callTime
					return engine.Config{Agents: registry(t, a.agent(), "Worker"), Store: st, Durability: tc.mode, BatchWindow: window}
				}
				clean := &recordingAgent{}
				cst := &dyingStore{Memory: store.NewMemory()}
				want, err := engine.New(config(clean, cst)).Run(context.Background(), m, mustJSON(t, `{"n":0}`), engine.StartOptions{ID: "clean"})
				if err != nil || want.Status != engine.StatusSucceeded {
					t.Fatalf("uninterrupted run: %v %+v", err, want)
				}
				if got := cst.commits.Load(); got != tc.commits {
					t.Fatalf("uninterrupted run: %d commits, want %d", got, tc.commits)
				}
				for die := int64(1); die <= tc.commits; die++ {
					st := &dyingStore{Memory: store.NewMemory(), dieAt: die}
					a := &recordingAgent{}
					if _, err := engine.New(config(a, st)).Run(context.Background(), m, mustJSON(t, `{"n":0}`), engine.StartOptions{ID: "e"}); err == nil {
						t.Fatalf("the run went on after the process died at commit %d (%d commits tried)", die, st.commits.Load())
					}
					// A run that returned writes nothing more: a batch
					// window's timer left running would write what the
					// failed commit kept after the resume began.
					tried := st.commits.Load()
					time.Sleep(time.Hour)
					if got := st.commits.Load(); got != tried {
						t.Fatalf("died at %d: %d commits tried after the run returned", die, got-tried)
					}
					written := die - 1
					st.dieAt = 0
					res, err := engine.New(config(a, st)).Resume(context.Background(), "e", engine.ResumeOptions{})
					if err != nil {
						t.Fatalf("died at %d: resume: %v", die, err)
					}
					if tc.extra == "" && !jsonvalue.Equal(res.Output, want.Output) {
						got, _ := jsonvalue.Marshal(res.Output)
						w, _ := jsonvalue.Marshal(want.Output)
						t.Errorf("died at %d: output %s, want %s", die, got, w)
					}
					repeated := 0
					for key, ins := range a.inputs {
						if len(ins) > 1 {
							repeated++
							// Batched: a lost window is lost whole, the
							// random values drawn in it too.
							if tc.mode == engine.DurabilityStrict && ins[0] != ins[1] {
								t.Errorf("died at %d: call %s made again with another input:\n%s\n%s", die, key, ins[0], ins[1])
							}
						}
					}
					if repeated > tc.repeated {
						t.Errorf("died at commit %d (%d written): %d calls made again, want at most %d", die, written, repeated, tc.repeated)
					}
					if err := st.VerifyHistory(context.Background(), "e"); err != nil {
						t.Error(err)
					}
				}
			})
		})
	}
}

// TestBatchedWritesWithinTheWindow: a batched execution's commits reach
// the store without another commit to carry them, within the window.
func TestBatchedWritesWithinTheWindow(t *testing.T) {
	st := &dyingStore{Memory: store.NewMemory()}
	release := make(chan struct{})
	reached := make(chan struct{}, 1)
	reg := agents.NewRegistry()
	calls := 0
	reg.Register("Worker", agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		calls++
		if calls == 2 {
			reached <- struct{}{}
			<-release
		}
		return map[string]any{}, nil
	}))
	x := engine.New(engine.Config{Agents: reg, Store: st, Durability: engine.DurabilityBatched, BatchWindow: time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := x.Run(context.Background(), mustParse(t, loopDef(t, "")), mustJSON(t, `{"n":0}`), engine.StartOptions{ID: "b"})
		done <- err
	}()
	<-reached
	// The first turn's Task completed before the second call: a window
	// writes it while the second call is still running (no other commit
	// comes to carry it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := st.Load(context.Background(), "b")
		if err != nil {
			t.Fatal(err)
		}
		if e.Progress.Invocations["Worker"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first call's result was not written within 10 s: invocations %v", e.Progress.Invocations)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestDurabilityRefused: the modes an executor cannot give are refused at
// start, naming what was asked.
func TestDurabilityRefused(t *testing.T) {
	def := mustParse(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	for _, tc := range []struct {
		store bool
		asked engine.Durability
		want  string
	}{
		{false, engine.DurabilityStrict, "asks for strict durability, but the executor has no store"},
		{false, engine.DurabilityBatched, "asks for batched durability"},
		{true, engine.DurabilityNone, "asks for durability none"},
		{true, "fast", `durability "fast": want strict, batched or none`},
	} {
		cfg := engine.Config{}
		if tc.store {
			cfg.Store = store.NewMemory()
		}
		_, err := engine.New(cfg).Run(context.Background(), def, map[string]any{}, engine.StartOptions{Durability: tc.asked})
		if !errors.Is(err, engine.ErrDurability) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("store %v, durability %q: %v, want ErrDurability saying %q", tc.store, tc.asked, err, tc.want)
		}
	}
	for _, ok := range []engine.Durability{"", engine.DurabilityNone} {
		if res, err := engine.New(engine.Config{}).Run(context.Background(), def, map[string]any{}, engine.StartOptions{Durability: ok}); err != nil || res.Status != engine.StatusSucceeded {
			t.Errorf("no store, durability %q: %v", ok, err)
		}
	}
}

// TestMapDiscardingResults: a Map whose results are thrown away keeps none
// of them, and resumes after a death mid-way to the same output.
func TestMapDiscardingResults(t *testing.T) {
	def := mustParse(t, `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":4,"ResultPath":null,
		"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Worker","Next":"P"},"P":{"Type":"Pass","End":true}}},"End":true}}}`)
	items := make([]any, 50)
	for i := range items {
		items[i] = map[string]any{"i": jsonvalue.IntNumber(int64(i))}
	}
	input := map[string]any{"items": items}
	for _, die := range []int64{0, 8, 12} {
		st := &dyingStore{Memory: store.NewMemory(), dieAt: die}
		a := &recordingAgent{}
		x := engine.New(engine.Config{Agents: registry(t, a.agent(), "Worker"), Store: st, MaxPayloadSize: -1})
		res, err := x.Run(context.Background(), def, input, engine.StartOptions{ID: "m"})
		if die > 0 {
			if err == nil {
				t.Fatalf("died at %d: the run went on", die)
			}
			e, lerr := st.Load(context.Background(), "m")
			if lerr != nil {
				t.Fatal(lerr)
			}
			done := 0
			for key, sc := range e.Progress.Scopes {
				if sc.Done {
					done++
					if sc.Output != nil {
						t.Errorf("died at %d: finished item %s keeps its output %v", die, key, sc.Output)
					}
				}
			}
			if done == 0 {
				t.Errorf("died at %d: no finished item recorded", die)
			}
			st.dieAt = 0
			if res, err = x.Resume(context.Background(), "m", engine.ResumeOptions{}); err != nil {
				t.Fatalf("died at %d: resume: %v", die, err)
			}
		}
		if err != nil || res.Status != engine.StatusSucceeded || !jsonvalue.Equal(res.Output, input) {
			t.Fatalf("died at %d: %v %+v", die, err, res)
		}
		if len(a.inputs) != len(items) {
			t.Errorf("died at %d: %d items called, want %d", die, len(a.inputs), len(items))
		}
	}
}
