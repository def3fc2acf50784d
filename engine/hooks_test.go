package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
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
		AgentCalled: func(id, agent string, d time.Duration, err error) {
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
	def := `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","End":true}}}`
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
