package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// leaseWorkflow calls the agent Slow between two Pass states.
const leaseWorkflow = `{"StartAt":"First","States":{
	"First":{"Type":"Pass","Result":1,"ResultPath":"$.first","Next":"Call"},
	"Call":{"Type":"Task","Agent":"Slow","ResultPath":"$.call","Next":"After"},
	"After":{"Type":"Pass","Result":"yes","ResultPath":"$.after","End":true}}}`

// process is one process of the tests: a DB handle of its own, with the
// executor running on it.
type process struct {
	db *DB
	x  *engine.Executor
}

// openProcess opens url as the process owner, with leases lasting ttl,
// whose agent Slow is slow.
func openProcess(t *testing.T, url, owner string, ttl time.Duration, slow agents.Func) process {
	t.Helper()
	db, err := Open(context.Background(), url, Options{Migrate: true, LeaseOwner: owner, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg := agents.NewRegistry()
	if err := reg.Register("Slow", slow); err != nil {
		t.Fatal(err)
	}
	return process{db: db, x: engine.New(engine.Config{Agents: reg, Store: db})}
}

// blockingAgent returns an agent that says so on started at its first
// call, then answers "from-a" once release is closed, whatever its
// context says (a process paused mid-call does not notice either).
func blockingAgent(started, release chan struct{}) agents.Func {
	return func(ctx context.Context, req *agents.Request) (any, error) {
		close(started)
		<-release
		return "from-a", nil
	}
}

func startLeased(t *testing.T, p process, id string) <-chan error {
	t.Helper()
	m, err := states.Parse([]byte(leaseWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.x.Run(context.Background(), m, map[string]any{}, engine.StartOptions{ID: id})
		done <- err
	}()
	return done
}

func historyHashes(t *testing.T, db *DB, id string) []string {
	t.Helper()
	h, err := db.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(h))
	for i, e := range h {
		out[i] = e.Type + " " + e.Hash
	}
	return out
}

// TestExecutorsShareByLease: two processes on one database. The second
// cannot run an execution the first holds, nor is it handed it as
// unfinished; once the first's lease expires (the first paused past it),
// the second takes the execution over and finishes it, and the first's
// commit when it goes on is refused: nothing of it shows in the history.
func TestExecutorsShareByLease(t *testing.T) {
	url := testServer.Schema(t)
	started, release := make(chan struct{}), make(chan struct{})
	// The first renews rarely: the test expires its lease as a pause
	// would, before the first notices.
	a := openProcess(t, url, "a", time.Minute, blockingAgent(started, release))
	b := openProcess(t, url, "b", 300*time.Millisecond, func(context.Context, *agents.Request) (any, error) { return "from-b", nil })
	ctx := context.Background()
	const id = "shared"
	runA := startLeased(t, a, id)
	<-started

	if ids, err := b.db.Unfinished(ctx); err != nil || slices.Contains(ids, id) {
		t.Fatalf("Unfinished on the second = %v, %v; want without %s, which the first runs", ids, err, id)
	}
	before := historyHashes(t, b.db, id)
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := b.x.Resume(wctx, id, engine.ResumeOptions{})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHeld) {
		t.Fatalf("Resume on the second while the first holds the lease = %v; want it to wait for the lease until its context ends", err)
	}
	if got := historyHashes(t, b.db, id); !slices.Equal(got, before) {
		t.Fatalf("the waiting Resume changed the history:\n%v\nwant\n%v", got, before)
	}

	// The first is paused past its lease.
	if _, err := a.db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE execution = $1`, id); err != nil {
		t.Fatal(err)
	}
	if ids, err := b.db.Unfinished(ctx); err != nil || !slices.Contains(ids, id) {
		t.Fatalf("Unfinished on the second = %v, %v; want %s, whose lease expired", ids, err, id)
	}
	res, err := b.x.Resume(ctx, id, engine.ResumeOptions{})
	if err != nil {
		t.Fatalf("the second's Resume after the first's lease expired: %v", err)
	}
	want, _ := jsonvalue.Decode([]byte(`{"first":1,"call":"from-b","after":"yes"}`))
	if res.Status != engine.StatusSucceeded || !jsonvalue.Equal(res.Output, want) {
		t.Fatalf("the second ended the execution %s with %v, want SUCCEEDED with %v", res.Status, res.Output, want)
	}
	finished := historyHashes(t, b.db, id)

	// The first goes on: its agent answers, and its commit is refused.
	close(release)
	select {
	case err := <-runA:
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("the first's Run = %v, want its commit refused (ErrFenced)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first's Run did not return")
	}
	if got := historyHashes(t, a.db, id); !slices.Equal(got, finished) {
		t.Fatalf("the history changed after the second finished:\n%v\nwant\n%v", got, finished)
	}
	if err := a.db.VerifyHistory(ctx, id); err != nil {
		t.Fatal(err)
	}
	e, err := a.db.Load(ctx, id)
	if err != nil || e.Status != engine.StatusSucceeded || !jsonvalue.Equal(e.Output, want) {
		t.Fatalf("Load = %+v, %v; want the second's outcome", e, err)
	}
}

// TestRunStopsWhenLeaseLost: a run whose lease another process takes over
// stops at once (its agent call is cancelled) with ErrLeaseLost, and
// commits nothing more.
func TestRunStopsWhenLeaseLost(t *testing.T) {
	url := testServer.Schema(t)
	started := make(chan struct{})
	slow := func(ctx context.Context, req *agents.Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	a := openProcess(t, url, "a", 300*time.Millisecond, slow)
	ctx := context.Background()
	const id = "taken"
	runA := startLeased(t, a, id)
	<-started
	before := historyHashes(t, a.db, id)
	// Another process takes the lease over (as after an expiry).
	if _, err := a.db.pool.Exec(ctx, `UPDATE leases SET owner = 'intruder', epoch = epoch + 1, expires_at = clock_timestamp() + interval '1 minute' WHERE execution = $1`, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-runA:
		if !errors.Is(err, engine.ErrLeaseLost) || !errors.Is(err, ErrFenced) {
			t.Fatalf("Run = %v, want ErrLeaseLost wrapping ErrFenced", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop when its lease was taken over")
	}
	if got := historyHashes(t, a.db, id); !slices.Equal(got, before) {
		t.Fatalf("the run committed after losing its lease:\n%v\nwant\n%v", got, before)
	}
	l, err := a.db.currentLease(ctx, a.db.pool, id)
	if err != nil || l.Owner != "intruder" {
		t.Fatalf("lease = %+v, %v; want the intruder's, untouched", l, err)
	}
}

// TestResumeWaitsForRelease: a Resume on one process waits while another
// holds the execution, and goes on as soon as it is released.
func TestResumeWaitsForRelease(t *testing.T) {
	url := testServer.Schema(t)
	started, release := make(chan struct{}), make(chan struct{})
	a := openProcess(t, url, "a", time.Minute, blockingAgent(started, release))
	b := openProcess(t, url, "b", time.Minute, func(context.Context, *agents.Request) (any, error) { return "from-b", nil })
	ctx := context.Background()
	const id = "waited"
	// The first parks the execution on a Wait after its call: the second
	// resumes it once the first lets go.
	m, err := states.Parse([]byte(`{"StartAt":"Call","States":{
		"Call":{"Type":"Task","Agent":"Slow","ResultPath":"$.call","Next":"Wait"},
		"Wait":{"Type":"Wait","Seconds":3600,"Next":"After"},
		"After":{"Type":"Pass","Result":"yes","ResultPath":"$.after","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	runA := make(chan error, 1)
	go func() {
		_, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: id})
		runA <- err
	}()
	<-started
	resumed := make(chan error, 1)
	go func() {
		res, err := b.x.Resume(ctx, id, engine.ResumeOptions{})
		if err == nil && res.Status != engine.StatusWaiting {
			err = errors.New("resumed to " + string(res.Status) + ", want WAITING (the Wait is not due)")
		}
		resumed <- err
	}()
	select {
	case err := <-resumed:
		t.Fatalf("Resume returned (%v) while the first held the execution", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-runA; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-resumed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Resume did not go on once the first released the execution")
	}
	l, err := b.db.currentLease(ctx, b.db.pool, id)
	if err != nil || l.Owner != "" || l.Epoch != 2 {
		t.Fatalf("lease = %+v, %v; want released at epoch 2 (the first's, then the second's)", l, err)
	}
}

// TestServeTakesOverExpired: a server leaves alone the executions another
// live process runs, and takes over (and finishes) one whose process
// stopped renewing its lease, without being restarted.
func TestServeTakesOverExpired(t *testing.T) {
	url := testServer.Schema(t)
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	a := openProcess(t, url, "a", time.Minute, blockingAgent(started, release))
	b := openProcess(t, url, "b", time.Minute, func(context.Context, *agents.Request) (any, error) { return "from-b", nil })
	const id = "orphan"
	startLeased(t, a, id)
	<-started

	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan *engine.Result, 4)
	served := make(chan error, 1)
	go func() {
		served <- b.x.Serve(ctx, engine.ServeOptions{Poll: 20 * time.Millisecond, OnResult: func(got string, res *engine.Result, err error) {
			if got == id && err == nil {
				results <- res
			}
		}})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	select {
	case res := <-results:
		t.Fatalf("the server ran %s (%s) while the first process held it", id, res.Status)
	case <-time.After(300 * time.Millisecond):
	}
	// The first process dies: its lease is left to expire.
	if _, err := a.db.pool.Exec(context.Background(), `UPDATE leases SET expires_at = clock_timestamp() WHERE execution = $1`, id); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-results:
		if res.Status != engine.StatusSucceeded {
			t.Fatalf("the server ended %s as %s, want SUCCEEDED", id, res.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not take over the execution whose lease expired")
	}
}

// TestRunRefusesHeldID: starting an execution under an id another process
// runs fails at once with ErrExists, rather than waiting for it.
func TestRunRefusesHeldID(t *testing.T) {
	url := testServer.Schema(t)
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	a := openProcess(t, url, "a", time.Minute, blockingAgent(started, release))
	b := openProcess(t, url, "b", time.Minute, blockingAgent(make(chan struct{}), release))
	const id = "taken-id"
	startLeased(t, a, id)
	<-started
	select {
	case err := <-startLeased(t, b, id):
		if !errors.Is(err, engine.ErrExists) {
			t.Fatalf("Run of an id another process runs = %v, want ErrExists", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run of an id another process runs waited for it")
	}
}
