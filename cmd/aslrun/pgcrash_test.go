package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// pgLeaseTTL is the lease time-to-live of the servers these tests start
// (ASLRUN_LEASE_TTL): short, so that takeovers come within the tests'
// time, and long enough that renewals every third of it keep up on a busy
// 2-core machine under the race detector.
const pgLeaseTTL = 2 * time.Second

// pgDatabase makes a fresh, migrated database on the test PostgreSQL
// (skipping outside CI when there is none) and returns its URL and a store
// on it for the test's own reads.
func pgDatabase(t *testing.T) (string, *postgres.DB) {
	t.Helper()
	url := pgtest.Fresh(t)
	if code, out, errOut := invoke(t, "", "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: exit %d: %s%s", code, out, errOut)
	}
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}

// pgServer is an `aslrun serve` on PostgreSQL that a test kills, stops and
// restarts; its socket stays the same across restarts.
type pgServer struct {
	url, sock string
	// args are more flags of serve.
	args []string
	p    *serveProcess
}

// start starts the server (again) and waits until it serves.
func (s *pgServer) start(t *testing.T) {
	t.Helper()
	if err := s.restart(t); err != nil {
		t.Fatal(err)
	}
}

// restart is start for a goroutine other than the test's: it returns
// what went wrong.
func (s *pgServer) restart(t *testing.T) error {
	cmd := aslrunCmd(append([]string{"serve", "--db", s.url, "--socket", s.sock, "--poll", "100ms", "--grace", "100ms"}, s.args...)...)
	cmd.Env = append(cmd.Env, envLeaseTTL+"="+pgLeaseTTL.String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &serveProcess{cmd: cmd, sock: s.sock, log: &workerLog{changed: make(chan struct{})}, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.log.add(sc.Text())
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) // a stopped process ignores SIGKILL's wait
		cmd.Process.Kill()
		<-p.done
	})
	s.p = p
	return p.log.await(30*time.Second, "serving")
}

// await waits until the log has a line containing every one of parts,
// for at most within.
func (l *workerLog) await(within time.Duration, parts ...string) error {
	deadline := time.After(within)
	for seen := 0; ; {
		l.mu.Lock()
		lines, changed := l.lines, l.changed
		l.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if containsAll(lines[seen], parts) {
				return nil
			}
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("no line with %q within %v; the log:\n%s", parts, within, l)
		}
	}
}

// kill kills the server with SIGKILL and waits for it to exit.
func (s *pgServer) kill() {
	s.p.cmd.Process.Kill()
	err := <-s.p.done
	s.p.done <- err
}

// pid is the running server's process id, as its leases name it.
func (s *pgServer) pid() int { return s.p.cmd.Process.Pid }

// startServers starts n servers on url, with sockets in a directory of
// the test, and args as more flags of serve.
func startServers(t *testing.T, url string, n int, args ...string) []*pgServer {
	t.Helper()
	dir := t.TempDir()
	servers := make([]*pgServer, n)
	for i := range servers {
		servers[i] = &pgServer{url: url, sock: filepath.Join(dir, fmt.Sprintf("s%d.sock", i)), args: args}
		servers[i].start(t)
	}
	return servers
}

// referenceOutput runs the crash pipeline once, uninterrupted, on a bbolt
// database of its own, and returns its output.
func referenceOutput(t *testing.T) any {
	t.Helper()
	out, _ := referenceRun(t)
	return out
}

// referenceRun runs the crash pipeline once, uninterrupted, on a bbolt
// database of its own, and returns its output and the number of events
// in its history.
func referenceRun(t *testing.T) (any, int) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "ref.db")
	code, out, errOut := invoke(t, "", "run", "testdata/crash/pipeline.json", "--mock", "testdata/crash/mock.json",
		"--input", "@testdata/crash/input.json", "--db", db, "--name", "ref")
	if code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, errOut)
	}
	v, err := jsonvalue.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = invoke(t, "", "history", "ref", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("reference run: history: exit %d: %s", code, errOut)
	}
	var events []api.Event
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("reference run: history --json: %v", err)
	}
	return v, len(events)
}

// eventsRecorded returns how many history events the executions ids have
// recorded together, as their heads count them (AWS-numbered and the
// engine's own); an execution not created yet has recorded none. Schema 13
// no longer keeps a count in a column of executions.
func eventsRecorded(ctx context.Context, db *postgres.DB, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		e, err := db.Load(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("loading %s: %w", id, err)
		}
		n += int(e.Progress.LastEvent + e.Progress.LastOwnEvent)
	}
	return n, nil
}

// awaitEnded waits until every execution in ids has ended, reading the
// database directly (servers may be down), and returns them. A read that
// fails (the connection was cut) is tried again.
func awaitEnded(t *testing.T, db *postgres.DB, ids []string, within time.Duration, logs func() string) map[string]*engine.Execution {
	t.Helper()
	ended := map[string]*engine.Execution{}
	deadline := time.Now().Add(within)
	for len(ended) < len(ids) {
		for _, id := range ids {
			if ended[id] != nil {
				continue
			}
			e, err := db.Load(context.Background(), id)
			if err == nil && e.Status.Ended() {
				ended[id] = e
			}
		}
		if time.Now().After(deadline) {
			var open []string
			for _, id := range ids {
				if ended[id] == nil {
					open = append(open, id)
				}
			}
			t.Log(logs())
			t.Fatalf("%d executions not ended after %v: %v", len(open), within, open)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ended
}

// serverLogs returns the servers' logs, for a failure's message.
func serverLogs(servers []*pgServer) func() string {
	return func() string {
		var b strings.Builder
		for i, s := range servers {
			fmt.Fprintf(&b, "server %d log:\n%s\n", i, s.p.log)
		}
		return b.String()
	}
}

// startOn starts execution id of the crash pipeline through one of the
// servers, trying the next when the one tried is down (killed meanwhile).
// A start that reached a server before it died may have created the
// execution: starting it again with the same workflow and input returns
// it, or says that the name is taken once it has ended.
func startOn(t *testing.T, servers []*pgServer, first int, id string) {
	t.Helper()
	def, mock, input := readFile(t, "testdata/crash/pipeline.json"), readFile(t, "testdata/crash/mock.json"), readFile(t, "testdata/crash/input.json")
	req := api.StartExecution{Definition: def, Mock: mock, Input: input, Name: id}
	var err error
	for attempt := range 100 {
		s := servers[(first+attempt)%len(servers)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = client.NewUnix(s.sock).Start(ctx, req)
		cancel()
		if err == nil || client.StatusOf(err) == 409 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: no server took the start: %v", id, err)
}

func readFile(t *testing.T, path string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkEnded checks that execution e succeeded with output want, and that
// its history verifies with no call completed twice (checkHistory).
func checkEnded(t *testing.T, url string, e *engine.Execution, want any) {
	t.Helper()
	if e.Status != engine.StatusSucceeded {
		t.Errorf("%s: %s (%s: %s), want SUCCEEDED", e.ID, e.Status, e.Error, e.Cause)
		return
	}
	if !jsonvalue.Equal(e.Output, want) {
		got, _ := json.Marshal(e.Output)
		exp, _ := json.Marshal(want)
		t.Errorf("%s: output %s, want %s", e.ID, got, exp)
	}
	checkHistory(t, url, e.ID)
}

// TestPostgresCrashAcrossServers runs executions of the crash pipeline
// (every state kind) on three `aslrun serve` processes sharing one
// PostgreSQL database, each started through a random server, while
// servers are killed with SIGKILL and restarted. Every execution must end
// with the output of an uninterrupted run, with a history that verifies
// and in which no agent call completed twice (a call whose result was
// committed was never made again, whichever server took the execution
// over).
//
// The kills are set by the executions' progress, not by the clock: the
// k-th of n kills comes once the executions together have recorded about
// k/(n+1) of the events uninterrupted runs of them all record (read from
// the database), and kills a random server, restarted as soon as it has
// exited. So there are exactly n kills, at the same points of the work,
// however fast or loaded the machine is.
//
// By default 12 executions and 3 kills; ASLRUN_LONG=1 runs 50 and 8, and
// ASLRUN_CRASH_EXECUTIONS sets the number of executions.
func TestPostgresCrashAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	url, db := pgDatabase(t)
	executions, wantKills := 12, 3
	if long(t) {
		executions, wantKills = 50, 8
	}
	if n, err := strconv.Atoi(os.Getenv("ASLRUN_CRASH_EXECUTIONS")); err == nil && n > 0 {
		executions = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("ASLRUN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set ASLRUN_CRASH_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	want, perExecution := referenceRun(t)
	// The kills' points: the k-th within the k-th of n+1 equal shares of
	// the events of all the executions, at a random place in the share.
	total := executions * perExecution
	share := total / (wantKills + 1)
	if share < 2 {
		t.Fatalf("%d executions of %d events: too few events for %d kills", executions, perExecution, wantKills)
	}
	points := make([]int, wantKills)
	for k := range points {
		points[k] = (k+1)*share + rng.IntN(share/2)
	}
	ctx := context.Background()
	ids := make([]string, executions)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%02d", i)
	}
	servers := startServers(t, url, 3)

	// The killer: at each point, once the executions have recorded that
	// many events, a random server is killed and restarted. When every
	// execution has ended (ended is closed), their events are all
	// recorded: a point not reached by then never will be.
	var mu sync.Mutex // servers[i].p, across restarts
	ended := make(chan struct{})
	kills := 0
	var killer sync.WaitGroup
	killer.Go(func() {
		krng := rand.New(rand.NewPCG(seed, 1))
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for _, at := range points {
			for {
				done := false
				select {
				case <-ended:
					done = true
				case <-tick.C:
				}
				n, err := eventsRecorded(ctx, db, ids)
				if err != nil {
					t.Errorf("reading the events recorded: %v", err)
					return
				}
				if n >= at {
					break
				}
				if done {
					t.Errorf("the executions ended with %d events recorded, fewer than the %d of kill %d (an uninterrupted run records %d)", n, at, kills+1, perExecution)
					return
				}
			}
			mu.Lock()
			s := servers[krng.IntN(len(servers))]
			s.kill()
			kills++
			err := s.restart(t)
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	var endOnce sync.Once
	stopKiller := func() {
		endOnce.Do(func() { close(ended) })
		killer.Wait()
	}
	defer stopKiller() // also when the test fails before the executions end
	for _, id := range ids {
		startOn(t, servers, rng.IntN(len(servers)), id)
	}
	all := awaitEnded(t, db, ids, 90*time.Second, func() string {
		mu.Lock()
		defer mu.Unlock()
		return serverLogs(servers)()
	})
	stopKiller()
	for _, id := range ids {
		checkEnded(t, url, all[id], want)
	}
	if kills != wantKills {
		t.Errorf("%d kills, want %d", kills, wantKills)
	}
	t.Logf("%d executions on 3 servers, %d kills at %v events of %d", len(ids), kills, points, total)
}

// leaseOwner returns who holds an execution's lease ("" when nobody) and
// its epoch.
func leaseOwner(t *testing.T, url, id string) (string, int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner string
	var epoch int64
	err = conn.QueryRow(ctx, `SELECT owner, epoch FROM leases WHERE execution = $1`, id).Scan(&owner, &epoch)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return owner, epoch
}

// ownedBy reports whether a lease owner names process pid.
func ownedBy(owner string, pid int) bool {
	return strings.Contains(owner, "/"+strconv.Itoa(pid)+"/")
}

// historyOf returns an execution's history as the API gives it, verified.
func historyOf(t *testing.T, url, id string) []api.Event {
	t.Helper()
	if code, out, errOut := invoke(t, "", "history", id, "--verify", "--db", url); code != 0 {
		t.Fatalf("%s: history does not verify: %s%s", id, out, errOut)
	}
	_, out, _ := invoke(t, "", "history", id, "--json", "--db", url)
	var events []api.Event
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("%s: history --json: %v", id, err)
	}
	return events
}

// TestPostgresFencing: a server stopped with SIGSTOP in the middle of an
// agent call, past its lease; another server takes the execution over and
// finishes it; the first, continued with SIGCONT, finishes its call: its
// commit is refused (the lease's epoch moved on), its run stops, and the
// execution's history is exactly what the second server left.
func TestPostgresFencing(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	url, db := pgDatabase(t)
	servers := startServers(t, url, 2)
	a := servers[0]
	def := json.RawMessage(`{"StartAt":"Slow","States":{
		"Slow":{"Type":"Task","Agent":"Slow","ResultPath":"$.slow","Next":"Last"},
		"Last":{"Type":"Task","Agent":"Last","ResultPath":"$.last","End":true}}}`)
	mock := json.RawMessage(`{"Slow":{"0-1":{"Return":"slow done","DelaySeconds":1}},"Last":{"0-1":{"Return":"last done"}}}`)
	ctx := context.Background()
	if _, err := client.NewUnix(a.sock).Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: "f1", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	owner, epoch := leaseOwner(t, url, "f1")
	if !ownedBy(owner, a.pid()) {
		t.Fatalf("f1 is leased by %q (epoch %d), want server A (pid %d)", owner, epoch, a.pid())
	}
	// A is in its 1 s agent call: stop it there, past its lease.
	time.Sleep(200 * time.Millisecond)
	if err := a.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ended := awaitEnded(t, db, []string{"f1"}, 30*time.Second, serverLogs(servers))
	e := ended["f1"]
	if owner, epoch2 := leaseOwner(t, url, "f1"); epoch2 <= epoch || ownedBy(owner, a.pid()) {
		t.Errorf("after the takeover the lease is %q epoch %d, want B's with an epoch after %d", owner, epoch2, epoch)
	}
	before := historyOf(t, url, "f1")
	if err := a.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// A's call returns at once (its time has passed); its commit is
	// refused and its run stops.
	a.p.log.waitFor(t, "lease", "fenced off")
	time.Sleep(500 * time.Millisecond)
	t.Logf("server A, continued:\n%s", a.p.log)
	after := historyOf(t, url, "f1")
	if len(after) != len(before) || after[len(after)-1].Hash != before[len(before)-1].Hash {
		t.Errorf("server A changed the history after it was fenced off: %d events (last %s), were %d (last %s)",
			len(after), after[len(after)-1].Type, len(before), before[len(before)-1].Type)
	}
	e2, err := db.Load(ctx, "f1")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*engine.Execution{e, e2} {
		if x.Status != engine.StatusSucceeded || !jsonvalue.Equal(x.Output, map[string]any{"slow": "slow done", "last": "last done"}) {
			got, _ := json.Marshal(x.Output)
			t.Errorf("f1: %s %s, want SUCCEEDED with both results", x.Status, got)
		}
	}
	checkCompletions(t, after, 2)
}

// checkCompletions checks that a history has n task completions, none of
// them twice, and one end.
func checkCompletions(t *testing.T, events []api.Event, n int) {
	t.Helper()
	seen := map[string]int{}
	ends := 0
	for _, e := range events {
		switch e.Type {
		case "TaskSucceeded", "TaskFailed":
			seen[e.State]++
		case "ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut":
			ends++
		}
	}
	if len(seen) != n || ends != 1 {
		t.Errorf("history: task completions %v and %d ends, want %d states completed once and one end", seen, ends, n)
	}
	for state, k := range seen {
		if k != 1 {
			t.Errorf("history: %s completed %d times, want once", state, k)
		}
	}
}

// TestPostgresDecisionAcrossServers: an execution waits at an Approval on
// one server; the decision reaches another; the execution then waits at a
// Wait whose timer every server watches, and ends exactly once.
func TestPostgresDecisionAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	url, db := pgDatabase(t)
	servers := startServers(t, url, 3)
	def := json.RawMessage(`{"StartAt":"Ok","States":{
		"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","Next":"Pause"},
		"Pause":{"Type":"Wait","Seconds":1,"Next":"Work"},
		"Work":{"Type":"Task","Agent":"Worker","ResultPath":"$.work","End":true}}}`)
	mock := json.RawMessage(`{"Worker":{"0":{"Return":"worked"}}}`)
	ctx := context.Background()
	c0, c1 := client.NewUnix(servers[0].sock), client.NewUnix(servers[1].sock)
	if _, err := c0.Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: "d1", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if e, err := c0.Wait(ctx, "d1", 10*time.Millisecond); err != nil || e.Status != "WAITING" {
		t.Fatalf("d1: %+v %v", e, err)
	}
	inbox, err := c1.Approvals(ctx, "d1")
	if err != nil || len(inbox) != 1 {
		t.Fatalf("server 1's inbox: %v %v", inbox, err)
	}
	if _, err := c1.Decide(ctx, inbox[0].ID, api.Decision{Option: "approve"}); err != nil {
		t.Fatal(err)
	}
	// The same decision again, on the third server: refused, the
	// approval is decided.
	if _, err := client.NewUnix(servers[2].sock).Decide(ctx, inbox[0].ID, api.Decision{Option: "approve"}); err == nil {
		t.Error("a second decision of the same approval, on another server, was accepted")
	}
	e := awaitEnded(t, db, []string{"d1"}, 30*time.Second, serverLogs(servers))["d1"]
	if e.Status != engine.StatusSucceeded {
		t.Fatalf("d1: %s (%s: %s)", e.Status, e.Error, e.Cause)
	}
	if out, _ := json.Marshal(e.Output); !strings.Contains(string(out), `"work":"worked"`) || !strings.Contains(string(out), `"ok"`) {
		t.Errorf("d1: output %s", out)
	}
	// Every server has polled the due timer several times by now.
	time.Sleep(500 * time.Millisecond)
	events := historyOf(t, url, "d1")
	count := map[string]int{}
	for _, ev := range events {
		count[ev.Type]++
	}
	for _, typ := range []string{"WaitStateExited", "ExecutionSucceeded", "TaskSucceeded"} {
		if count[typ] != 1 {
			t.Errorf("history has %d %s events, want 1: %v", count[typ], typ, count)
		}
	}
	checkCompletions(t, events, 1)
}

// TestPostgresLostConnection: every connection of the servers to the
// database is ended (pg_terminate_backend) several times while
// executions run; the servers connect again and go on, and every
// execution ends as an uninterrupted run does.
func TestPostgresLostConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	url, db := pgDatabase(t)
	want := referenceOutput(t)
	servers := startServers(t, url, 2)
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%02d", i)
		startOn(t, servers, i, ids[i])
	}
	ctx := context.Background()
	terminated := 0
	for range 5 {
		time.Sleep(400 * time.Millisecond)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		terminated += n
	}
	if terminated < 5 {
		t.Errorf("%d connections ended, want at least one a time", terminated)
	}
	ended := awaitEnded(t, db, ids, 60*time.Second, serverLogs(servers))
	for _, id := range ids {
		checkEnded(t, url, ended[id], want)
	}
	t.Logf("%d connections ended", terminated)
}

// TestLeaseTTLEnv: what ASLRUN_LEASE_TTL takes and what it refuses.
func TestLeaseTTLEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{"", 0, ""},
		{"2s", 2 * time.Second, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"1ms", time.Millisecond, ""},
		{"0", 0, `ASLRUN_LEASE_TTL="0": want a duration of at least 1ms`},
		{"100us", 0, `ASLRUN_LEASE_TTL="100us": want a duration`},
		{"-5s", 0, `ASLRUN_LEASE_TTL="-5s": want a duration`},
		{"5", 0, `ASLRUN_LEASE_TTL="5": want a duration`},
		{"soon", 0, `ASLRUN_LEASE_TTL="soon": want a duration`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(envLeaseTTL, tc.value)
			got, err := leaseTTLEnv()
			switch {
			case tc.err == "" && (err != nil || got != tc.want):
				t.Errorf("got %v %v, want %v", got, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v %v, want an error containing %q", got, err, tc.err)
			}
		})
	}
}
