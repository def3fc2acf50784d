package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// unused is the agent of a process that runs none.
func unused(context.Context, *agents.Request) (any, error) {
	return nil, errors.New("this process runs no agent")
}

// neverPoll is the Poll of the servers in tests that pass only when
// wake-ups work: no test waits that long.
const neverPoll = time.Hour

// serving serves p until the test ends, telling results on the channel
// it returns; it polls too rarely to find anything that way.
func serving(t *testing.T, p process, maxConcurrent int) <-chan *engine.Result {
	t.Helper()
	return servingPoll(t, p, maxConcurrent, neverPoll)
}

// servingPoll is serving with poll as ServeOptions.Poll.
func servingPoll(t *testing.T, p process, maxConcurrent int, poll time.Duration) <-chan *engine.Result {
	t.Helper()
	results := make(chan *engine.Result, 64)
	serveWith(t, p, engine.ServeOptions{Poll: poll, MaxConcurrent: maxConcurrent, OnResult: func(id string, res *engine.Result, err error) {
		if err != nil {
			t.Errorf("%s: %v", id, err)
			return
		}
		results <- res
	}})
	return results
}

// serveWith serves p with opts until the test ends, once Serve is ready.
func serveWith(t *testing.T, p process, opts engine.ServeOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	ready := make(chan struct{})
	opts.Ready = func() { close(ready) }
	go func() { served <- p.x.Serve(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("Serve = %v", err)
	}
}

// awaitStatus waits until execution id has status want, reading db.
func awaitStatus(t *testing.T, db *DB, id string, want engine.Status) *engine.Execution {
	t.Helper()
	deadline := time.Now().Add(notifyTimeout)
	for {
		e, err := db.Load(context.Background(), id)
		if err == nil && e.Status == want {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v %v after %v, want %s", id, e, err, notifyTimeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gauge counts the agent calls under way in each process, and the most
// there ever were.
type gauge struct {
	mu       sync.Mutex
	now, max map[string]int
	total    int
	changed  chan struct{}
}

func newGauge() *gauge {
	return &gauge{now: map[string]int{}, max: map[string]int{}, changed: make(chan struct{}, 1)}
}

// agent is the agent of process name: it counts itself in while its call
// lasts, which is until release is closed.
func (g *gauge) agent(name string, release <-chan struct{}) agents.Func {
	return func(ctx context.Context, req *agents.Request) (any, error) {
		g.mu.Lock()
		g.now[name]++
		g.total++
		g.max[name] = max(g.max[name], g.now[name])
		g.mu.Unlock()
		select {
		case g.changed <- struct{}{}:
		default:
		}
		defer func() {
			g.mu.Lock()
			g.now[name]--
			g.mu.Unlock()
		}()
		select {
		case <-release:
			return name, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// await waits until cond holds of the gauge.
func (g *gauge) await(t *testing.T, what string, cond func(now map[string]int, total int) bool) {
	t.Helper()
	deadline := time.After(notifyTimeout)
	for {
		g.mu.Lock()
		ok := cond(g.now, g.total)
		now := fmt.Sprint(g.now)
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-g.changed:
		case <-deadline:
			t.Fatalf("%s: not within %v (calls under way: %s)", what, notifyTimeout, now)
		}
	}
}

// TestDispatchSpreadsStarts: every start reaches one server, capped at two
// executions; the executions it has no room for are left to the other
// server, which a wake-up tells (neither polls within the test): both run
// two at once, never more, and every execution ends.
func TestDispatchSpreadsStarts(t *testing.T) {
	url := testServer.Schema(t)
	g := newGauge()
	release := make(chan struct{})
	a := openProcess(t, url, "a", time.Minute, g.agent("a", release))
	b := openProcess(t, url, "b", time.Minute, g.agent("b", release))
	serving(t, a, 2)
	serving(t, b, 2)
	m, err := states.Parse([]byte(leaseWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	ctx := context.Background()
	started := make(chan *engine.Result, n)
	for i := range n {
		go func() {
			res, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: fmt.Sprintf("s%d", i)})
			if err != nil {
				t.Error(err)
			}
			started <- res
		}()
	}
	// A runs two, B the two it was woken for; two wait for room.
	g.await(t, "two calls on each server", func(now map[string]int, _ int) bool { return now["a"] == 2 && now["b"] == 2 })
	close(release)
	for i := range n {
		awaitStatus(t, a.db, fmt.Sprintf("s%d", i), engine.StatusSucceeded)
	}
	for range n {
		<-started
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.max["a"] > 2 || g.max["b"] > 2 {
		t.Errorf("at most %v calls at once per server, want 2 each (the cap)", g.max)
	}
	if g.total != n {
		t.Errorf("%d agent calls, want %d (one per execution)", g.total, n)
	}
}

// approvalWorkflow waits for a decision, then calls the agent Slow.
const approvalWorkflow = `{"StartAt":"Ok","States":{
	"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","Next":"Call"},
	"Call":{"Type":"Task","Agent":"Slow","ResultPath":"$.call","End":true}}}`

// TestDecisionWakesServer: an execution parked by one server is decided
// on another process, which records the decision and leaves the run: the
// server hears of it and runs it on, without polling.
func TestDecisionWakesServer(t *testing.T) {
	url := testServer.Schema(t)
	done := func(context.Context, *agents.Request) (any, error) { return "done", nil }
	a := openProcess(t, url, "a", time.Minute, done)
	b := openProcess(t, url, "b", time.Minute, done)
	results := serving(t, a, 4)
	m, err := states.Parse([]byte(approvalWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "decided"})
	if err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Run = %+v, %v; want WAITING", res, err)
	}
	if _, err := b.x.Decide(ctx, "decided", engine.Decision{Approval: "approve"}, engine.ResumeOptions{RecordOnly: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-results:
		if res.ID != "decided" || res.Status != engine.StatusSucceeded {
			t.Fatalf("the server ran %s to %s, want decided SUCCEEDED", res.ID, res.Status)
		}
	case <-time.After(notifyTimeout):
		t.Fatal("the server did not run the decided execution on")
	}
}

// TestStopReachesHolder: a Stop on a process that does not hold the
// execution reaches the one that runs it, which cancels its agent call and
// commits the end; the Stop returns it. The holder hears of it by
// notification (its lease lasts an hour: no renewal comes within the test)
// or, when it does not listen, at its next renewal.
func TestStopReachesHolder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		serve bool
	}{{"notified", time.Hour, true}, {"renewal", 300 * time.Millisecond, false}} {
		t.Run(tc.name, func(t *testing.T) {
			url := testServer.Schema(t)
			calls := make(chan struct{}, 1)
			cancelled := make(chan error, 1)
			a := openProcess(t, url, "a", tc.ttl, func(ctx context.Context, req *agents.Request) (any, error) {
				calls <- struct{}{}
				<-ctx.Done()
				cancelled <- context.Cause(ctx)
				return nil, ctx.Err()
			})
			b := openProcess(t, url, "b", time.Minute, unused)
			if tc.serve {
				serving(t, a, 4)
			}
			m, err := states.Parse([]byte(leaseWorkflow))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ran := make(chan *engine.Result, 1)
			go func() {
				res, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "stopped"})
				if err != nil {
					t.Error(err)
				}
				ran <- res
			}()
			<-calls
			res, err := b.x.Stop(ctx, "stopped", "Halted", "from b")
			if err != nil {
				t.Fatal(err)
			}
			want := engine.Result{ID: "stopped", Status: engine.StatusAborted, Error: "Halted", Cause: "from b"}
			if res.ID != want.ID || res.Status != want.Status || res.Error != want.Error || res.Cause != want.Cause {
				t.Errorf("Stop = %+v, want %+v", res, want)
			}
			if r := <-ran; r == nil || r.Status != engine.StatusAborted {
				t.Errorf("the holder's run = %+v, want ABORTED", r)
			}
			if err := <-cancelled; err == nil {
				t.Error("the agent call was not cancelled")
			}
			checkAborted(t, a.db, "stopped", "Halted", "from b")
		})
	}
}

// checkAborted checks that execution id ended ABORTED once, with errName
// and cause, and that its history verifies.
func checkAborted(t *testing.T, db *DB, id, errName, cause string) {
	t.Helper()
	ctx := context.Background()
	e, err := db.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != engine.StatusAborted || e.Error != errName || e.Cause != cause {
		t.Errorf("%s: %s %q %q, want ABORTED %q %q", id, e.Status, e.Error, e.Cause, errName, cause)
	}
	if err := db.VerifyHistory(ctx, id); err != nil {
		t.Error(err)
	}
	h, err := db.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	aborted := 0
	for _, ev := range h {
		if ev.Type == engine.EventExecutionAborted {
			aborted++
		}
	}
	if aborted != 1 {
		t.Errorf("%s: %d ExecutionAborted events, want 1", id, aborted)
	}
	if s, err := db.stopRequest(ctx, id); err != nil || s != nil {
		t.Errorf("%s: stop request %+v, %v after the end, want none", id, s, err)
	}
}

// TestStopHolderDied: the process holding the execution died (its lease
// is never renewed). A Stop elsewhere records its request and waits: once
// the lease expires the Stop takes it and ends the execution itself. A
// Stop that gives up waiting leaves its request, which the next process
// to take the lease carries out (a server claiming it).
func TestStopHolderDied(t *testing.T) {
	url := testServer.Schema(t)
	b := openProcess(t, url, "b", time.Minute, unused)
	c := openProcess(t, url, "c", time.Minute, unused)
	ctx := context.Background()
	// A start left for any server, taken by a process that dies.
	died := func(id string) {
		createAt(t, b.db, id, time.Now())
		if _, err := b.db.Acquire(ctx, id, "dead", 500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	died("dead1")
	res, err := b.x.Stop(ctx, "dead1", "Halted", "holder died")
	if err != nil || res.Status != engine.StatusAborted {
		t.Fatalf("Stop = %+v, %v; want ABORTED once the lease expired", res, err)
	}
	checkAborted(t, b.db, "dead1", "Halted", "holder died")

	died("dead2")
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = b.x.Stop(sctx, "dead2", "Halted", "carried out by another")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with a context ending before the lease expires = %v, want its deadline", err)
	}
	// Taking over a dead process's lease is found by polling.
	results := servingPoll(t, c, 4, 50*time.Millisecond)
	select {
	case res := <-results:
		if res.ID != "dead2" || res.Status != engine.StatusAborted {
			t.Fatalf("the server ended %s as %s, want dead2 ABORTED", res.ID, res.Status)
		}
	case <-time.After(notifyTimeout):
		t.Fatal("no server carried the stop request out")
	}
	checkAborted(t, b.db, "dead2", "Halted", "carried out by another")
}
