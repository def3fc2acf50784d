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

// blocker is an agent whose calls block until they are cancelled; it
// tells when each call starts and when it saw its cancellation.
type blocker struct{ started, cancelled chan string }

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 16), cancelled: make(chan string, 16)}
}

func (b *blocker) agent() agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		b.started <- req.State
		<-ctx.Done()
		b.cancelled <- req.State
		return nil, ctx.Err()
	})
}

// checkAborted checks that execution id is stored ABORTED with errName
// and cause, that its history ends with one ExecutionAborted event saying
// so and verifies, that nothing of it is pending or due, and that Resume,
// Decide and another Stop refuse it.
func checkAborted(t *testing.T, st *store.Memory, x *engine.Executor, id, errName, cause string) {
	t.Helper()
	ctx := context.Background()
	e, err := st.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != engine.StatusAborted || e.Error != errName || e.Cause != cause || e.StoppedAt.IsZero() {
		t.Errorf("stored %s: status %s, error %q, cause %q, stopped at %v; want ABORTED, %q, %q, a stop time", id, e.Status, e.Error, e.Cause, e.StoppedAt, errName, cause)
	}
	if p := engine.PendingOf(e); len(p) != 0 {
		t.Errorf("PendingOf(%s) = %+v, want none", id, p)
	}
	if err := st.VerifyHistory(ctx, id); err != nil {
		t.Errorf("VerifyHistory(%s) = %v", id, err)
	}
	hist, err := st.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ends := 0
	for _, ev := range hist {
		switch ev.Type {
		case engine.EventExecutionAborted, engine.EventExecutionSucceeded, engine.EventExecutionFailed, engine.EventExecutionTimedOut:
			ends++
		}
	}
	if last := hist[len(hist)-1]; ends != 1 || last.Type != engine.EventExecutionAborted || last.Error != errName || last.Cause != cause {
		t.Errorf("history of %s ends with %+v after %d ending events, want one ExecutionAborted with %q, %q", id, last, ends, errName, cause)
	}
	if hist[0].Type != engine.EventExecutionStarted {
		t.Errorf("history of %s starts with %s", id, hist[0].Type)
	}
	due, err := st.Due(ctx, time.Now().Add(1000*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		if d == id {
			t.Errorf("Due lists the stopped execution %s", id)
		}
	}
	if _, err := x.Resume(ctx, id, engine.ResumeOptions{}); !errors.Is(err, engine.ErrEnded) {
		t.Errorf("Resume(%s) = %v, want ErrEnded", id, err)
	}
	if _, err := x.Decide(ctx, id, engine.Decision{Approval: "approve"}, engine.ResumeOptions{}); !errors.Is(err, engine.ErrDecisionRefused) {
		t.Errorf("Decide(%s) = %v, want ErrDecisionRefused", id, err)
	}
	if _, err := x.Stop(ctx, id, "Again", ""); !errors.Is(err, engine.ErrEnded) {
		t.Errorf("second Stop(%s) = %v, want ErrEnded", id, err)
	}
}

// TestStopRunning: a running execution's agent calls in flight are
// cancelled, and the run ends it as ABORTED.
func TestStopRunning(t *testing.T) {
	for _, tc := range []struct {
		name  string
		def   string
		input string
		calls int
	}{
		{"task", `{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","Next":"After"},"After":{"Type":"Pass","End":true}}}`, `{}`, 1},
		{"map items", `{"StartAt":"Each","States":{"Each":{"Type":"Map","End":true,"ItemProcessor":{"StartAt":"Slow","States":{
			"Slow":{"Type":"Task","Agent":"Slow","End":true}}}}}}`, `[1,2,3]`, 3},
		{"parallel branch", `{"StartAt":"Both","States":{"Both":{"Type":"Parallel","End":true,"Branches":[
			{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","End":true}}},
			{"StartAt":"Quick","States":{"Quick":{"Type":"Pass","End":true}}}]}}}`, `{}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory()
			b := newBlocker()
			var log hookLog
			x := engine.New(engine.Config{Agents: registry(t, b.agent(), "Slow"), Store: st, Hooks: log.hooks()})
			ctx := context.Background()
			type outcome struct {
				res *engine.Result
				err error
			}
			ran := make(chan outcome, 1)
			go func() {
				res, err := x.Run(ctx, mustParse(t, tc.def), mustJSON(t, tc.input), engine.StartOptions{ID: "s"})
				ran <- outcome{res, err}
			}()
			for range tc.calls {
				<-b.started
			}
			res, err := x.Stop(ctx, "s", "Ops.Stopped", "no longer needed")
			if err != nil || res.Status != engine.StatusAborted || res.Error != "Ops.Stopped" || res.Cause != "no longer needed" {
				t.Fatalf("Stop = %+v, %v, want ABORTED with its error and cause", res, err)
			}
			for range tc.calls {
				<-b.cancelled // each call in flight saw its context end
			}
			if o := <-ran; o.err != nil || o.res.Status != engine.StatusAborted {
				t.Errorf("Run = %+v, %v, want ABORTED", o.res, o.err)
			}
			checkAborted(t, st, x, "s", "Ops.Stopped", "no longer needed")
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.finished) != 1 || log.finished[0] != "s ABORTED" {
				t.Errorf("ExecutionFinished got %q, want [s ABORTED]", log.finished)
			}
		})
	}
}

// TestStopWaiting: a waiting execution (approvals pending, at the top or
// in Map items; a long Wait) is ended directly, its approvals gone.
func TestStopWaiting(t *testing.T) {
	for _, tc := range []struct {
		name, def, input string
		approvals        int
	}{
		{"approval", `{"StartAt":"Review","States":{"Review":{"Type":"Approval","Prompt":"ok?","Next":"Done"},"Done":{"Type":"Pass","End":true}}}`, `{}`, 1},
		{"approvals in map items", `{"StartAt":"Each","States":{"Each":{"Type":"Map","End":true,"ItemProcessor":{"StartAt":"Ok","States":{
			"Ok":{"Type":"Approval","Prompt":"item?","End":true}}}}}}`, `[1,2]`, 2},
		{"wait", `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":600,"End":true}}}`, `{}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory()
			var log hookLog
			x := engine.New(engine.Config{Store: st, Hooks: log.hooks()})
			ctx := context.Background()
			res, err := x.Run(ctx, mustParse(t, tc.def), mustJSON(t, tc.input), engine.StartOptions{ID: "w"})
			if err != nil || res.Status != engine.StatusWaiting || len(res.Approvals) != tc.approvals {
				t.Fatalf("Run = %+v, %v, want WAITING with %d approvals", res, err, tc.approvals)
			}
			// Another process (a new executor on the store) stops it.
			y := engine.New(engine.Config{Store: st, Hooks: log.hooks()})
			res, err = y.Stop(ctx, "w", "", "by hand")
			if err != nil || res.Status != engine.StatusAborted || res.Cause != "by hand" {
				t.Fatalf("Stop = %+v, %v, want ABORTED", res, err)
			}
			if p, err := y.Pending(ctx, "w"); err != nil || len(p) != 0 {
				t.Errorf("Pending = %+v, %v, want none", p, err)
			}
			list, err := st.List(ctx, store.ListOptions{Status: engine.StatusWaiting})
			if err != nil || len(list) != 0 {
				t.Errorf("List(WAITING) = %+v, %v, want none", list, err)
			}
			checkAborted(t, st, y, "w", "", "by hand")
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.finished) != 1 || log.finished[0] != "w ABORTED" {
				t.Errorf("ExecutionFinished got %q, want [w ABORTED]", log.finished)
			}
		})
	}
}

// TestStopOrphaned: a RUNNING execution no run holds (its process
// stopped) is ended directly, with the call it had in flight never made
// again.
func TestStopOrphaned(t *testing.T) {
	st := store.NewMemory()
	b := newBlocker()
	x := engine.New(engine.Config{Agents: registry(t, b.agent(), "Slow"), Store: st})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := x.Run(ctx, mustParse(t, `{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","End":true}}}`), map[string]any{}, engine.StartOptions{ID: "o"})
		done <- err
	}()
	<-b.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled (left RUNNING)", err)
	}
	y := engine.New(engine.Config{Agents: registry(t, b.agent(), "Slow"), Store: st})
	res, err := y.Stop(context.Background(), "o", "Ops.Orphan", "")
	if err != nil || res.Status != engine.StatusAborted {
		t.Fatalf("Stop = %+v, %v, want ABORTED", res, err)
	}
	checkAborted(t, st, y, "o", "Ops.Orphan", "")
	select {
	case s := <-b.started:
		t.Errorf("the agent was called again at %s", s)
	default:
	}
}

// TestStopRefuses: an execution that has ended, or that does not exist.
func TestStopRefuses(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	if _, err := x.Run(ctx, mustParse(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), map[string]any{}, engine.StartOptions{ID: "done"}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.History(ctx, "done")
	if _, err := x.Stop(ctx, "done", "", ""); !errors.Is(err, engine.ErrEnded) {
		t.Errorf("Stop(ended) = %v, want ErrEnded", err)
	}
	if after, _ := st.History(ctx, "done"); len(after) != len(before) {
		t.Errorf("a refused Stop recorded %d events", len(after)-len(before))
	}
	if _, err := x.Stop(ctx, "nobody", "", ""); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Stop(unknown) = %v, want ErrNotFound", err)
	}
	if e, _ := st.Load(ctx, "done"); e.Status != engine.StatusSucceeded {
		t.Errorf("the ended execution is now %s", e.Status)
	}
}

// TestStopRacesDecide: a Stop and a decision sent at once on a waiting
// execution; exactly one decides how it ends, and its history verifies.
func TestStopRacesDecide(t *testing.T) {
	st := store.NewMemory()
	var log hookLog
	x := engine.New(engine.Config{Store: st, Hooks: log.hooks()})
	ctx := context.Background()
	m := mustParse(t, `{"StartAt":"Review","States":{"Review":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.review","Next":"Done"},"Done":{"Type":"Pass","End":true}}}`)
	const rounds = 60
	counts := map[engine.Status]int{}
	for i := range rounds {
		id := "race" + itoa(i)
		if res, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: id}); err != nil || res.Status != engine.StatusWaiting {
			t.Fatalf("Run(%s) = %+v, %v", id, res, err)
		}
		var (
			go1                = make(chan struct{})
			decided, stopped   *engine.Result
			decideErr, stopErr error
			wg                 = make(chan struct{}, 2)
		)
		go func() {
			<-go1
			decided, decideErr = x.Decide(ctx, id, engine.Decision{Approval: "approve"}, engine.ResumeOptions{})
			wg <- struct{}{}
		}()
		go func() {
			<-go1
			stopped, stopErr = x.Stop(ctx, id, "Ops.Stopped", "")
			wg <- struct{}{}
		}()
		close(go1)
		<-wg
		<-wg
		e, err := st.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		counts[e.Status]++
		switch e.Status {
		case engine.StatusSucceeded:
			// The decision won: the run ended before Stop could stop it.
			if decideErr != nil || decided.Status != engine.StatusSucceeded || !errors.Is(stopErr, engine.ErrEnded) {
				t.Errorf("%s SUCCEEDED: Decide = %+v, %v; Stop = %+v, %v; want SUCCEEDED and ErrEnded", id, decided, decideErr, stopped, stopErr)
			}
		case engine.StatusAborted:
			// Stop won: the decision was refused, or recorded and its run
			// then stopped.
			if stopErr != nil || stopped.Status != engine.StatusAborted {
				t.Errorf("%s ABORTED: Stop = %+v, %v, want ABORTED", id, stopped, stopErr)
			}
			refused := errors.Is(decideErr, engine.ErrBusy) || errors.Is(decideErr, engine.ErrDecisionRefused) || errors.Is(decideErr, engine.ErrEnded)
			if !refused && (decideErr != nil || decided.Status != engine.StatusAborted) {
				t.Errorf("%s ABORTED: Decide = %+v, %v, want refused or ABORTED", id, decided, decideErr)
			}
			checkAborted(t, st, x, id, "Ops.Stopped", "")
		default:
			t.Fatalf("%s ended %s: Decide = %+v, %v; Stop = %+v, %v", id, e.Status, decided, decideErr, stopped, stopErr)
		}
		if err := st.VerifyHistory(ctx, id); err != nil {
			t.Errorf("VerifyHistory(%s) = %v", id, err)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.finished) != rounds {
		t.Errorf("ExecutionFinished called %d times over %d executions, want once each", len(log.finished), rounds)
	}
	t.Logf("outcomes over %d races: %v", rounds, counts)
}

// gateStore holds Create after the execution is created, until the
// creating run's context ends or release is closed.
type gateStore struct {
	*store.Memory
	created, release chan struct{}
}

func (g *gateStore) Create(ctx context.Context, e *engine.Execution) error {
	if err := g.Memory.Create(ctx, e); err != nil {
		return err
	}
	close(g.created)
	select {
	case <-ctx.Done():
	case <-g.release:
	}
	return nil
}

// TestStopWhileCreated: a Stop that comes between an execution's creation
// and its first state stops its run, which must not go on over the stop.
func TestStopWhileCreated(t *testing.T) {
	st := &gateStore{Memory: store.NewMemory(), created: make(chan struct{}), release: make(chan struct{})}
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	type outcome struct {
		res *engine.Result
		err error
	}
	ran := make(chan outcome, 1)
	go func() {
		res, err := x.Run(ctx, mustParse(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), map[string]any{}, engine.StartOptions{ID: "c"})
		ran <- outcome{res, err}
	}()
	<-st.created
	res, err := x.Stop(ctx, "c", "Ops.Early", "")
	close(st.release)
	o := <-ran
	if err != nil || res.Status != engine.StatusAborted {
		t.Errorf("Stop = %+v, %v, want ABORTED", res, err)
	}
	if o.err != nil || o.res.Status != engine.StatusAborted {
		t.Errorf("Run = %+v, %v, want ABORTED", o.res, o.err)
	}
	checkAborted(t, st.Memory, x, "c", "Ops.Early", "")
}

// loadGate holds the Load calls made while armed until the loading
// context ends or release is closed.
type loadGate struct {
	*store.Memory
	armed            atomic.Bool
	loading, release chan struct{}
}

func (g *loadGate) Load(ctx context.Context, id string) (*engine.Execution, error) {
	e, err := g.Memory.Load(ctx, id)
	if g.armed.CompareAndSwap(true, false) {
		close(g.loading)
		select {
		case <-ctx.Done():
		case <-g.release:
		}
	}
	return e, err
}

// TestStopWhileResuming: a Stop that comes while Resume reads the
// execution stops it; the resume must not go on over the stop.
func TestStopWhileResuming(t *testing.T) {
	st := &loadGate{Memory: store.NewMemory(), loading: make(chan struct{}), release: make(chan struct{})}
	b := newBlocker()
	// The first call blocks until cancelled; a call made again answers.
	var calls atomic.Int64
	blocking := b.agent()
	agent := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		if calls.Add(1) == 1 {
			return blocking.Invoke(ctx, req)
		}
		return map[string]any{}, nil
	})
	x := engine.New(engine.Config{Agents: registry(t, agent, "Slow"), Store: st})
	m := mustParse(t, `{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","End":true}}}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "r"})
		done <- err
	}()
	<-b.started
	cancel()
	<-done // left RUNNING
	<-b.cancelled

	resumed := make(chan error, 1)
	st.armed.Store(true)
	go func() {
		_, err := x.Resume(context.Background(), "r", engine.ResumeOptions{})
		resumed <- err
	}()
	<-st.loading
	res, err := x.Stop(context.Background(), "r", "Ops.Stopped", "")
	close(st.release)
	if err != nil || res.Status != engine.StatusAborted {
		t.Errorf("Stop = %+v, %v, want ABORTED", res, err)
	}
	if err := <-resumed; !errors.Is(err, engine.ErrEnded) {
		t.Errorf("Resume = %v, want ErrEnded (stopped)", err)
	}
	checkAborted(t, st.Memory, x, "r", "Ops.Stopped", "")
	if n := calls.Load(); n != 1 {
		t.Errorf("the agent was called %d times, want once", n)
	}
}
