package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// hookLog records what engine hooks were told.
type hookLog struct {
	mu       sync.Mutex
	started  []string
	finished []string // "id status"
	exited   []string // "id state"
	commits  []error
	calls    []agentCall
}

type agentCall struct {
	id, agent string
	d         time.Duration
	err       error
}

func (l *hookLog) hooks() engine.Hooks {
	return engine.Hooks{
		ExecutionStarted: func(id string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.started = append(l.started, id)
		},
		ExecutionFinished: func(id string, s engine.Status) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.finished = append(l.finished, id+" "+string(s))
		},
		StateExited: func(id, state string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.exited = append(l.exited, id+" "+state)
		},
		Committed: func(d time.Duration, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.commits = append(l.commits, err)
		},
		AgentCalled: func(_ context.Context, id, agent string, d time.Duration, _ engine.Usage, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.calls = append(l.calls, agentCall{id, agent, d, err})
		},
	}
}

// countingStore counts the Commit calls that reach a store, and fails them
// from the failAt-th on (0: never).
type countingStore struct {
	engine.Store
	commits atomic.Int64
	failAt  int64
}

var errStoreDown = errors.New("store down")

func (s *countingStore) Commit(ctx context.Context, c *engine.Commit) error {
	n := s.commits.Add(1)
	if s.failAt > 0 && n >= s.failAt {
		return errStoreDown
	}
	return s.Store.Commit(ctx, c)
}

func TestHooks(t *testing.T) {
	def := `{"StartAt":"Prep","States":{
		"Prep":{"Type":"Task","Agent":"ok","Next":"Each"},
		"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.done","ItemProcessor":{"StartAt":"Work","States":{
			"Work":{"Type":"Task","Agent":"ok","End":true}}},"Next":"Bad"},
		"Bad":{"Type":"Task","Agent":"bad","End":true}}}`
	reg := agents.NewRegistry()
	ok := agents.Func(func(_ context.Context, req *agents.Request) (any, error) { return req.Input, nil })
	bad := agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, errors.New("no luck") })
	for name, a := range map[string]agents.Agent{"ok": ok, "bad": bad} {
		if err := reg.Register(name, a); err != nil {
			t.Fatal(err)
		}
	}
	st := &countingStore{Store: store.NewMemory()}
	var log hookLog
	x := engine.New(engine.Config{Agents: reg, Store: st, Hooks: log.hooks()})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{"items":[1,2]}`), engine.StartOptions{ID: "e1"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	wantError(t, res, asl.ErrTaskFailed, "no luck")

	if want := []string{"e1"}; !slices.Equal(log.started, want) {
		t.Errorf("ExecutionStarted got %q, want %q", log.started, want)
	}
	if want := []string{"e1 FAILED"}; !slices.Equal(log.finished, want) {
		t.Errorf("ExecutionFinished got %q, want %q", log.finished, want)
	}
	// Bad failed: it did not exit. The Map's items exit in any order, but
	// before the Map.
	if len(log.exited) == 4 {
		slices.Sort(log.exited[1:3])
	}
	if want := []string{"e1 Prep", "e1 Each/0/Work", "e1 Each/1/Work", "e1 Each"}; !slices.Equal(log.exited, want) {
		t.Errorf("StateExited got %q, want %q", log.exited, want)
	}
	if got, want := int64(len(log.commits)), st.commits.Load(); got != want || got == 0 {
		t.Errorf("Committed called %d times, want %d (the store's Commit calls, at least one)", got, want)
	}
	for i, err := range log.commits {
		if err != nil {
			t.Errorf("Committed call %d: err = %v, want nil", i, err)
		}
	}
	var oks, bads int
	for _, c := range log.calls {
		if c.id != "e1" || c.d < 0 {
			t.Errorf("AgentCalled(%q, %q, %v, %v): want id e1 and a duration >= 0", c.id, c.agent, c.d, c.err)
		}
		switch c.agent {
		case "ok":
			oks++
			if c.err != nil {
				t.Errorf("AgentCalled(ok) err = %v, want nil", c.err)
			}
		case "bad":
			bads++
			var ae *asl.Error
			if !errors.As(c.err, &ae) || ae.Name != asl.ErrTaskFailed {
				t.Errorf("AgentCalled(bad) err = %v, want a %s *asl.Error", c.err, asl.ErrTaskFailed)
			}
		default:
			t.Errorf("AgentCalled with agent %q, want ok or bad", c.agent)
		}
	}
	if oks != 3 || bads != 1 {
		t.Errorf("AgentCalled: %d calls of ok and %d of bad, want 3 and 1", oks, bads)
	}
}

// TestHooksCommitError: a failing Store.Commit is reported to Committed,
// and an execution whose end is not committed has not finished.
func TestHooksCommitError(t *testing.T) {
	def := `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"at.$":"$$.State.EnteredTime"},"Next":"B"},"B":{"Type":"Pass","End":true}}}`
	st := &countingStore{Store: store.NewMemory(), failAt: 2}
	var log hookLog
	x := engine.New(engine.Config{Store: st, Hooks: log.hooks()})
	_, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{}`), engine.StartOptions{ID: "e2"})
	if !errors.Is(err, errStoreDown) {
		t.Fatalf("run: err = %v, want %v", err, errStoreDown)
	}
	if len(log.commits) != 2 || log.commits[0] != nil || !errors.Is(log.commits[1], errStoreDown) {
		t.Errorf("Committed got errors %v, want [nil %v]", log.commits, errStoreDown)
	}
	if want := []string{"e2"}; !slices.Equal(log.started, want) {
		t.Errorf("ExecutionStarted got %q, want %q", log.started, want)
	}
	if len(log.finished) != 0 {
		t.Errorf("ExecutionFinished got %q, want none", log.finished)
	}
}

// TestHooksNone: the zero Hooks are fine on every path the hooks cover.
func TestHooksNone(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"ok","End":true}}}`
	reg := agents.NewRegistry()
	if err := reg.Register("ok", agents.Func(func(_ context.Context, req *agents.Request) (any, error) { return req.Input, nil })); err != nil {
		t.Fatal(err)
	}
	x := engine.New(engine.Config{Agents: reg, Store: store.NewMemory()})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{"a":1}`), engine.StartOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	wantOutput(t, res, `{"a":1}`)
}

// spanKey is the context key of the fake spans of TestHooksStates.
type spanKey struct{}

// stateLog records what the state and trace hooks were told.
type stateLog struct {
	mu      sync.Mutex
	parents []string // "state<-parent": the span in the context StateEntered got
	ended   []string // "state waiting err"
	agents  []string // "agent<-span usage"
	invoked []string // the span in the context the agent ran with
	traces  []string // NewTrace's parents
}

func (l *stateLog) hooks() engine.Hooks {
	return engine.Hooks{
		NewTrace: func(parent string) string {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.traces = append(l.traces, parent)
			return "trace-of(" + parent + ")"
		},
		StateEntered: func(ctx context.Context, id, trace, scope, state string) context.Context {
			l.mu.Lock()
			defer l.mu.Unlock()
			parent, _ := ctx.Value(spanKey{}).(string)
			l.parents = append(l.parents, fmt.Sprintf("%s %s %s<-%s", id, trace, scope+state, parent))
			return context.WithValue(ctx, spanKey{}, scope+state)
		},
		StateEnded: func(ctx context.Context, id, scope, state string, waiting bool, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if span, _ := ctx.Value(spanKey{}).(string); span != scope+state {
				t := fmt.Sprintf("StateEnded(%s) with span %q", scope+state, span)
				l.ended = append(l.ended, t)
				return
			}
			l.ended = append(l.ended, fmt.Sprintf("%s %t %v", scope+state, waiting, err != nil))
		},
		AgentCalled: func(ctx context.Context, id, agent string, d time.Duration, u engine.Usage, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			span, _ := ctx.Value(spanKey{}).(string)
			l.agents = append(l.agents, fmt.Sprintf("%s<-%s %d %g", agent, span, u.Tokens, u.Cost))
		},
	}
}

// TestHooksStates: every state entered ends (completed, waiting or
// failed) with the context StateEntered gave it, which nested states, the
// agent and AgentCalled (with the usage reported) receive; NewTrace's
// trace context is stored and given to StateEntered after a resume.
func TestHooksStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		def := `{"StartAt":"Ask","States":{
			"Ask":{"Type":"Task","Agent":"llm","Next":"Each"},
			"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.done","ItemProcessor":{"StartAt":"Work","States":{
				"Work":{"Type":"Pass","End":true}}},"Next":"Sleep"},
			"Sleep":{"Type":"Wait","Seconds":3600,"Next":"Boom"},
			"Boom":{"Type":"Fail","Error":"Boom"}}}`
		var log stateLog
		reg := agents.NewRegistry()
		llm := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			req.ReportUsage(agents.Usage{Tokens: 7, Cost: 0.25})
			span, _ := ctx.Value(spanKey{}).(string)
			log.mu.Lock()
			log.invoked = append(log.invoked, span)
			log.mu.Unlock()
			return req.Input, nil
		})
		if err := reg.Register("llm", llm); err != nil {
			t.Fatal(err)
		}
		st := store.NewMemory()
		cfg := engine.Config{Agents: reg, Store: st, Hooks: log.hooks()}
		res, err := engine.New(cfg).Run(t.Context(), mustParse(t, def), mustJSON(t, `{"items":[1]}`), engine.StartOptions{ID: "e", TraceParent: "tp"})
		if err != nil || res.Status != engine.StatusWaiting {
			t.Fatalf("run: %+v, %v; want WAITING", res, err)
		}
		if e, err := st.Load(t.Context(), "e"); err != nil || e.Trace != "trace-of(tp)" {
			t.Fatalf("stored trace: %v, %v; want trace-of(tp)", e, err)
		}
		time.Sleep(time.Hour)
		// A new executor, as after a restart.
		if res, err = engine.New(cfg).Resume(t.Context(), "e", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusFailed {
			t.Fatalf("resume: %+v, %v; want FAILED", res, err)
		}
		wantParents := []string{
			"e trace-of(tp) Ask<-", "e trace-of(tp) Each<-", "e trace-of(tp) Each/0/Work<-Each",
			"e trace-of(tp) Sleep<-", "e trace-of(tp) Sleep<-", "e trace-of(tp) Boom<-",
		}
		if !slices.Equal(log.parents, wantParents) {
			t.Errorf("StateEntered got %q, want %q", log.parents, wantParents)
		}
		wantEnded := []string{"Ask false false", "Each/0/Work false false", "Each false false", "Sleep true false", "Sleep false false", "Boom false true"}
		if !slices.Equal(log.ended, wantEnded) {
			t.Errorf("StateEnded got %q, want %q", log.ended, wantEnded)
		}
		if want := []string{"llm<-Ask 7 0.25"}; !slices.Equal(log.agents, want) {
			t.Errorf("AgentCalled got %q, want %q", log.agents, want)
		}
		if want := []string{"Ask"}; !slices.Equal(log.invoked, want) {
			t.Errorf("agent invoked with spans %q, want %q", log.invoked, want)
		}
		if want := []string{"tp"}; !slices.Equal(log.traces, want) {
			t.Errorf("NewTrace got %q, want %q", log.traces, want)
		}
	})
}

// TestHooksForkTrace: a fork is a new execution with a new trace.
func TestHooksForkTrace(t *testing.T) {
	var log stateLog
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: registry(t, (&calls{}).agent(), "Worker"), Store: st, Hooks: log.hooks()})
	if _, err := x.Run(t.Context(), mustParse(t, checkpointed), map[string]any{}, engine.StartOptions{ID: "doc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Fork(t.Context(), "doc", "drafted", engine.ResumeOptions{ForkID: "doc-2"}); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Load(t.Context(), "doc-2"); err != nil || e.Trace != "trace-of()" {
		t.Errorf("fork's trace: %v, %v; want trace-of()", e, err)
	}
	if want := []string{"", ""}; !slices.Equal(log.traces, want) {
		t.Errorf("NewTrace got %q, want %q", log.traces, want)
	}
}
