package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// createLeft creates execution id of m, started at start, without its
// lease: queued, as a Run that found no slot free leaves a start.
func createLeft(t *testing.T, db *DB, id string, m *states.Machine, start time.Time) {
	t.Helper()
	def, err := jsonvalue.Marshal(m.Definition)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := jsonvalue.CanonicalHash(m.Definition)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Execution{ID: id, MachineName: "StateMachine", Status: engine.StatusRunning,
		StartedAt: start, Input: map[string]any{}, Definition: def, DefinitionHash: hash}
	if err := db.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// TestClaimStarts: ClaimStarts takes, in the order asked, up to n of the
// queued starts still as they were created, and skips the ones another
// process claimed, committed to, stopped, or is claiming; what it took is
// held as Claim holds it.
func TestClaimStarts(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	other := openOther(t, db, "other")
	base := time.Now().Add(-time.Hour)
	ids := []string{"q1", "stolen", "committed", "stopping", "locked", "q2", "q3"}
	for i, id := range ids {
		createAt(t, db, id, base.Add(time.Duration(i)*time.Second))
	}
	if _, err := other.Acquire(ctx, "stolen", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	commitStatus(t, db, "committed", 1, engine.StatusRunning, time.Time{})
	if err := other.RequestStop(ctx, "stopping", "Halted", "by the test"); err != nil {
		t.Fatal(err)
	}
	// A concurrent claim holds locked's ready row.
	tx, err := other.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM ready WHERE execution = 'locked' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		ids  []string
		n    int
		want string
	}{
		{[]string{"q1"}, 0, "want at least 1"},
		{[]string{"q1", "bad\x00id"}, 1, `execution "bad\x00id"`},
	} {
		if _, err := db.ClaimStarts(ctx, bad.ids, bad.n); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ClaimStarts(%q, %d) = %v, want an error saying %q", bad.ids, bad.n, err, bad.want)
		}
	}
	if got, err := db.ClaimStarts(ctx, nil, 1); err != nil || len(got) != 0 {
		t.Errorf("ClaimStarts(none) = %v, %v; want nothing", got, err)
	}

	// The first in the order asked, not the oldest.
	first, err := db.ClaimStarts(ctx, []string{"q2", "q1", "nope"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimedIDs(first); !slices.Equal(got, []string{"q2"}) {
		t.Errorf("ClaimStarts([q2 q1 nope], 1) = %v, want [q2]", got)
	}
	rest, err := db.ClaimStarts(ctx, []string{"stolen", "committed", "stopping", "locked", "q3", "q1", "q2"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range rest {
		order = append(order, c.Execution)
	}
	if !slices.Equal(order, []string{"q3", "q1"}) {
		t.Errorf("ClaimStarts(…, 5) = %v, want [q3 q1], in the order asked: the others are not as created, or held", order)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readyRows(t, db); !slices.Equal(got, []string{"committed", "locked", "stopping"}) {
		t.Errorf("ready after the claims = %v, want [committed locked stopping] (left to Claim)", got)
	}
	for _, c := range append(first, rest...) {
		l, err := db.currentLease(ctx, db.pool, c.Execution)
		if err != nil || l.Owner != "me" || l.Epoch != 1 || db.fence(c.Execution) != 1 {
			t.Errorf("%s: lease %+v, %v, fence %d; want me's, epoch 1, fencing commits", c.Execution, l, err, db.fence(c.Execution))
		}
	}
	// Claimed as Claim claims: a commit under the lease goes, and the
	// release queues what is left to run.
	commitStatus(t, db, "q3", 1, engine.StatusRunning, time.Time{})
	rest[0].Release()
	if l, err := db.currentLease(ctx, db.pool, "q3"); err != nil || l.Owner != "" {
		t.Errorf("q3 after its release: lease %+v, %v; want released", l, err)
	}
	if got := readyRows(t, db); !slices.Contains(got, "q3") {
		t.Errorf("ready after q3's release = %v, want q3 queued again (RUNNING, unheld)", got)
	}
	// Claimed is claimed: none is taken twice, here or by Claim.
	again, err := other.ClaimStarts(ctx, []string{"q1", "q2"}, 2)
	if err != nil || len(again) != 0 {
		t.Errorf("ClaimStarts of starts claimed already = %v, %v; want none", claimedIDs(again), err)
	}
	for _, c := range append(first, rest[1:]...) {
		c.Release()
	}
}

// TestServerRunsItsQueuedStarts: a server with no slot free queues the
// starts it is given and, when a slot frees, runs them itself, oldest
// first, ahead of older work another process queued; that work still runs
// before the server is through its own (every few rounds, a server claims
// from all there is to run first).
func TestServerRunsItsQueuedStarts(t *testing.T) {
	url := testServer.Schema(t)
	const own = 10
	calls := make(chan string, own+2)
	agent := func(ctx context.Context, req *agents.Request) (any, error) {
		calls <- req.Execution
		return "ok", nil
	}
	gate, s0Calls := make(chan struct{}), make(chan struct{})
	a := openProcess(t, url, "a", time.Minute, func(ctx context.Context, req *agents.Request) (any, error) {
		if req.Execution == "s0" {
			close(s0Calls)
			<-gate
		}
		return agent(ctx, req)
	})
	c := openProcess(t, url, "c", time.Minute, agent)
	results := serving(t, a, 1)
	m, err := states.Parse([]byte(leaseWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// s0 takes a's only slot: Run runs it to its end.
	s0 := make(chan error, 1)
	go func() {
		_, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "s0"})
		s0 <- err
	}()
	select {
	case <-s0Calls:
	case <-time.After(notifyTimeout):
		t.Fatal("s0 does not run")
	}
	// Another process leaves a start it has no room for, as its Run does.
	createLeft(t, c.db, "older", m, time.Now().Add(-time.Hour))
	// a has no room for these: it queues them, RUNNING.
	var ids []string
	for i := range own {
		id := fmt.Sprintf("s%d", i+1)
		res, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: id})
		if err != nil || res.Status != engine.StatusRunning {
			t.Fatalf("Run(%s) = %v, %v; want it queued, RUNNING", id, res, err)
		}
		ids = append(ids, id)
	}
	close(gate)
	if err := <-s0; err != nil {
		t.Fatal(err)
	}
	var order []string
	for range own + 2 {
		select {
		case id := <-calls:
			order = append(order, id)
		case <-time.After(notifyTimeout):
			t.Fatalf("calls %v, then none within %v", order, notifyTimeout)
		}
	}
	for range own + 1 {
		select {
		case res := <-results:
			if res.Status != engine.StatusSucceeded {
				t.Errorf("%s: %s", res.ID, res.Status)
			}
		case <-time.After(notifyTimeout):
			t.Fatal("not every execution ended")
		}
	}
	if order[0] != "s0" || order[1] != "s1" {
		t.Errorf("calls in the order %v: want s0, then s1 (a's own queued start, not older)", order)
	}
	at := slices.Index(order, "older")
	if at < 0 || at == len(order)-1 {
		t.Errorf("calls in the order %v: want older before a's last start", order)
	}
	if got := slices.DeleteFunc(slices.Clone(order[1:]), func(id string) bool { return id == "older" }); !slices.Equal(got, ids) {
		t.Errorf("a ran its queued starts in the order %v, want %v (oldest first)", got, ids)
	}
}

// TestFailedRunHeldBack: a claimed execution whose run fails before it
// commits (here, its stored definition does not parse) is not queued
// again at its release, so the server does not claim it straight back
// and fail again in a loop; the sweep queues it again later, and it is
// claimed then.
func TestFailedRunHeldBack(t *testing.T) {
	url := testServer.Schema(t)
	a := openProcess(t, url, "a", time.Minute, unused)
	var mu sync.Mutex
	failures := 0
	failed := make(chan struct{}, 16)
	serveWith(t, a, engine.ServeOptions{Poll: 50 * time.Millisecond, MaxConcurrent: 2,
		OnResult: func(id string, res *engine.Result, err error) {
			if err == nil {
				t.Errorf("%s: ran (%s), want its run to fail", id, res.Status)
				return
			}
			mu.Lock()
			failures++
			mu.Unlock()
			failed <- struct{}{}
		}})
	// Left for any server with no definition: its load fails.
	createAt(t, a.db, "broken", time.Now())
	select {
	case <-failed:
	case <-time.After(notifyTimeout):
		t.Fatal("the broken execution was not claimed")
	}
	// Polls come every 50 ms: a queued execution would be claimed again
	// several times over.
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	n := failures
	mu.Unlock()
	if n != 1 {
		t.Errorf("the broken execution's run failed %d times in 0.5 s, want once (held back, not claimed again at once)", n)
	}
	if got := readyRows(t, a.db); len(got) != 0 {
		t.Errorf("ready after the failed run = %v, want it held back", got)
	}
	if l, err := a.db.currentLease(context.Background(), a.db.pool, "broken"); err != nil || l.Owner != "" {
		t.Errorf("lease after the failed run: %+v, %v; want released", l, err)
	}
	// The sweep queues it again, and the server claims it at its next poll.
	if _, err := a.db.pool.Exec(context.Background(), sweepQuery); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(notifyTimeout):
		t.Fatal("the broken execution was not claimed again after the sweep")
	}
}

// TestDrainedRunQueued: a claimed run that a drain stops is not held back
// like a failed one: its release queues it at once, for another server.
func TestDrainedRunQueued(t *testing.T) {
	url := testServer.Schema(t)
	calling, release := make(chan struct{}), make(chan struct{})
	a := openProcess(t, url, "a", time.Minute, blockingAgent(calling, release))
	c := openProcess(t, url, "c", time.Minute, unused)
	m, err := states.Parse([]byte(leaseWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	serveWith(t, a, engine.ServeOptions{Poll: neverPoll, MaxConcurrent: 1,
		OnResult: func(id string, res *engine.Result, err error) { ended <- err }})
	// Queued by a process that does not run it: a claims it.
	createLeft(t, c.db, "drained", m, time.Now())
	select {
	case <-calling:
	case <-time.After(notifyTimeout):
		t.Fatal("a did not claim the execution")
	}
	drained := make(chan error, 1)
	go func() { drained <- a.x.Drain(context.Background()) }()
	close(release)
	select {
	case err := <-ended:
		if !errors.Is(err, engine.ErrDrained) {
			t.Fatalf("the run ended with %v, want ErrDrained", err)
		}
	case <-time.After(notifyTimeout):
		t.Fatal("the drained run did not end")
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if got := readyRows(t, c.db); !slices.Equal(got, []string{"drained"}) {
		t.Errorf("ready after the drain = %v, want [drained] (queued at once, not held back)", got)
	}
	if got := awaitStatus(t, c.db, "drained", engine.StatusRunning); got.Status != engine.StatusRunning {
		t.Errorf("status %s", got.Status)
	}
}

// TestRunFailedHoldsBack: the release after RunFailed leaves a RUNNING
// execution out of the ready queue, unless the database failed the run in
// a way another try may not meet (a lost connection, a deadlock, a lease
// lost, a server shutting down), when it is queued as after any release.
// A statement timeout holds it back: the commit would time out again.
func TestRunFailedHoldsBack(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	timedOut := statementTimeout(t, db)
	for _, tt := range []struct {
		id     string
		err    error
		queued bool
	}{
		{"broken", errors.New("its definition no longer parses"), false},
		{"db-away", db.dbErr("commit execution db-away", io.ErrUnexpectedEOF), true},
		{"wrapped-db-away", fmt.Errorf("execution x: %w", db.dbErr("load", io.ErrUnexpectedEOF)), true},
		{"deadlock", db.dbErr("commit", &pgconn.PgError{Code: "40P01"}), true},
		{"fenced", db.dbErr("commit", &pgconn.PgError{Code: "AR001"}), true},
		{"bad-data", db.dbErr("commit", &pgconn.PgError{Code: "22P02"}), false},
		{"schema", db.dbErr("commit", &pgconn.PgError{Code: "42883"}), false},
		{"statement-timeout", timedOut, false},
		{"admin-shutdown", db.dbErr("commit", &pgconn.PgError{Code: "57P01"}), true},
		{"fine", nil, true},
	} {
		createAt(t, db, tt.id, time.Now())
		_, release, err := db.Lease(ctx, tt.id, false)
		if err != nil {
			t.Fatal(err)
		}
		if tt.err != nil {
			db.RunFailed(tt.id, tt.err)
		}
		release()
		if got := slices.Contains(readyRows(t, db), tt.id); got != tt.queued {
			t.Errorf("%s: queued after its release = %v, want %v", tt.id, got, tt.queued)
		}
	}
	// Not held here: nothing to note, nothing breaks.
	db.RunFailed("nobody", errors.New("x"))
}

// statementTimeout returns the error of a statement the database cancels
// at its statement_timeout, as db words it.
func statementTimeout(t *testing.T, db *DB) error {
	t.Helper()
	ctx := context.Background()
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 10`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `SELECT pg_sleep(10)`)
	if got := sqlState(err); got != codeQueryCanceled {
		t.Fatalf("pg_sleep past the statement timeout: %v (SQLSTATE %q), want SQLSTATE %s", err, got, codeQueryCanceled)
	}
	return db.dbErr("commit", err)
}

// TestPassing: which errors another try may not meet (the run is queued
// again at once) and which it meets again (the run is held back), by
// SQLSTATE class, with 57014 (a statement timeout) apart from the rest of
// its class.
func TestPassing(t *testing.T) {
	db := &DB{url: "postgres://test"}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"not the database's", errors.New("its definition no longer parses"), false},
		{"connection lost", db.dbErr("commit", io.ErrUnexpectedEOF), true},
		{"wrapped", fmt.Errorf("execution x: %w", db.dbErr("commit", io.ErrUnexpectedEOF)), true},
		{"connection failure 08006", db.dbErr("commit", &pgconn.PgError{Code: "08006"}), true},
		{"serialization failure 40001", db.dbErr("commit", &pgconn.PgError{Code: "40001"}), true},
		{"deadlock 40P01", db.dbErr("commit", &pgconn.PgError{Code: "40P01"}), true},
		{"too many connections 53300", db.dbErr("commit", &pgconn.PgError{Code: "53300"}), true},
		{"query canceled 57014", db.dbErr("commit", &pgconn.PgError{Code: "57014"}), false},
		{"wrapped query canceled 57014", fmt.Errorf("execution x: %w", db.dbErr("commit", &pgconn.PgError{Code: "57014"})), false},
		{"admin shutdown 57P01", db.dbErr("commit", &pgconn.PgError{Code: "57P01"}), true},
		{"crash shutdown 57P02", db.dbErr("commit", &pgconn.PgError{Code: "57P02"}), true},
		{"cannot connect now 57P03", db.dbErr("commit", &pgconn.PgError{Code: "57P03"}), true},
		{"database dropped 57P04", db.dbErr("commit", &pgconn.PgError{Code: "57P04"}), true},
		{"io error 58030", db.dbErr("commit", &pgconn.PgError{Code: "58030"}), true},
		{"fenced AR001", db.dbErr("commit", &pgconn.PgError{Code: "AR001"}), true},
		{"conflict AR002", db.dbErr("commit", &pgconn.PgError{Code: "AR002"}), true},
		{"invalid text 22P02", db.dbErr("commit", &pgconn.PgError{Code: "22P02"}), false},
		{"unique violation 23505", db.dbErr("commit", &pgconn.PgError{Code: "23505"}), false},
		{"undefined function 42883", db.dbErr("commit", &pgconn.PgError{Code: "42883"}), false},
		{"a PgError outside dbErr", &pgconn.PgError{Code: "08006"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := passing(tt.err); got != tt.want {
				t.Errorf("passing(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
