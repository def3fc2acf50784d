package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// serveProcess is a running `aslrun serve`.
type serveProcess struct {
	cmd  *exec.Cmd
	sock string
	log  *workerLog
	done chan error
}

// startServe starts `aslrun serve` on db with more args and waits until its
// socket answers.
func startServe(t *testing.T, db string, args ...string) *serveProcess {
	t.Helper()
	cmd := aslrunCmd(append([]string{"serve", "--db", db, "--poll", "50ms"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, sock: db + ".sock", log: &workerLog{changed: make(chan struct{})}, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.log.add(sc.Text())
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	p.log.waitFor(t, "serving")
	return p
}

// stop sends sig and returns the exit code.
func (p *serveProcess) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop on %v; log:\n%s", sig, p.log)
		return -1
	}
}

// TestServe: a real `aslrun serve` process: the API over its unix socket
// (its owner is the local admin), metrics, SIGTERM with executions in
// flight (exit 0, socket removed, nothing lost) and a restart that
// finishes them.
func TestServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	// A grace period shorter than the agent calls: they are cancelled at
	// SIGTERM, and the next serve makes them again.
	p := startServe(t, db, "--grace", "100ms")
	if fi, err := os.Stat(p.sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v %v, want mode 0600", p.sock, fi, err)
	}
	c := client.NewUnix(p.sock)
	ctx := context.Background()

	// Twenty executions whose agent takes a second: SIGTERM while they run.
	def := json.RawMessage(`{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","ResultPath":"$.slow","End":true}}}`)
	mock := json.RawMessage(`{"Slow":{"0":{"Return":"done","DelaySeconds":1}}}`)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: fmt.Sprintf("e%02d", i), Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d on SIGTERM; log:\n%s", code, p.log)
	}
	if _, err := os.Stat(p.sock); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after SIGTERM: %v", err)
	}

	// The next serve resumes them all.
	p = startServe(t, db)
	c = client.NewUnix(p.sock)
	for i := range 20 {
		id := fmt.Sprintf("e%02d", i)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		e, err := c.Wait(waitCtx, id, 20*time.Millisecond)
		cancel()
		if err != nil || e.Status != "SUCCEEDED" || string(e.Output) != fmt.Sprintf(`{"n":%d,"slow":"done"}`, i) {
			t.Fatalf("execution %s after the restart: %+v %v", id, e, err)
		}
	}

	// An approval decided by the local admin, on behalf of someone.
	flow := json.RawMessage(`{"StartAt":"Ok","States":{"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","End":true}}}`)
	if _, err := c.Start(ctx, api.StartExecution{Definition: flow, Name: "a1"}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Wait(ctx, "a1", 10*time.Millisecond); err != nil || e.Status != "WAITING" {
		t.Fatalf("a1: %+v %v", e, err)
	}
	inbox, err := c.Approvals(ctx, "a1")
	if err != nil || len(inbox) != 1 {
		t.Fatalf("inbox: %v %v", inbox, err)
	}
	if _, err := c.Decide(ctx, inbox[0].ID, api.Decision{Option: "approve", OnBehalfOf: "ana"}); err != nil {
		t.Fatal(err)
	}
	e, err := c.Wait(ctx, "a1", 10*time.Millisecond)
	if err != nil || e.Status != "SUCCEEDED" || !strings.Contains(string(e.Output), `"approver":"ana (on behalf, by local admin`) {
		t.Fatalf("a1 after the decision: %s %v", e.Output, err)
	}
	if h, err := c.History(ctx, "a1", true); err != nil || len(h) == 0 || h[len(h)-1].Type != "ExecutionSucceeded" {
		t.Errorf("history: %v %v", h, err)
	}

	// Metrics moved. (A finished execution is counted just after its end
	// is committed, which a client may see first: poll.)
	wants := []string{"aslrun_executions_started_total 1", `aslrun_executions_finished_total{status="SUCCEEDED"} `, "aslrun_state_transitions_total"}
	finished := regexp.MustCompile(`aslrun_executions_finished_total\{status="SUCCEEDED"\} [1-9]`)
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := (&http.Client{Transport: unixTransport(p.sock)}).Get("http://aslrun/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if finished.Match(body) && !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(string(body), w) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !finished.Match(body) {
		t.Errorf("metrics count no finished execution")
	}
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("serve exited %d on SIGINT", code)
	}
}

// TestServeRefusals: what serve refuses to start with.
func TestServeRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:0"}, "needs --tokens"},
		{[]string{"--listen", "0.0.0.0:0", "--insecure"}, "needs --tokens"},
		{[]string{"--tls-cert", "c.pem"}, "go together"},
		{[]string{"--insecure"}, "go with --listen"},
		{[]string{"--log-format", "xml"}, "text or json"},
		{[]string{"--tokens", filepath.Join(dir, "missing")}, "missing"},
	} {
		code, _, errOut := invoke(t, "", append([]string{"serve", "--db", db}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("serve %v: exit %d, %q; want 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
}

func unixTransport(sock string) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
}

// TestServeSocketFoundFromDB: a server on a socket of its own choosing is
// found by the other commands from --db alone.
func TestServeSocketFoundFromDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	sock := filepath.Join(dir, "elsewhere.sock")
	startServe(t, db, "--socket", sock)
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the chosen socket: %v", err)
	}
	wf := writeFile(t, dir, "p.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"ok","End":true}}}`)
	if r := cliIn(dir, "run", wf, "--db", db, "--name", "via-socket"); r.err != nil || r.code != 0 || strings.TrimSpace(r.out) != `"ok"` {
		t.Fatalf("run beside the server: %+v", r)
	}
	if r := cliIn(dir, "list", "--db", db); r.err != nil || r.code != 0 || !strings.Contains(r.out, "via-socket") {
		t.Errorf("list beside the server: %+v", r)
	}
}

// TestServeDrains: within the grace period, SIGTERM lets the agent calls
// in flight finish: the executions reach their end before serve exits.
func TestServeDrains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	p := startServe(t, db, "--grace", "30s")
	c := client.NewUnix(p.sock)
	ctx := context.Background()
	def := json.RawMessage(`{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","ResultPath":"$.slow","End":true}}}`)
	mock := json.RawMessage(`{"Slow":{"0":{"Return":"done","DelaySeconds":1}}}`)
	for i := range 5 {
		if _, err := c.Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: fmt.Sprintf("d%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d; log:\n%s", code, p.log)
	}
	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		if code, out, errOut := invoke(t, "", "status", id, "--json", "--db", db); code != 0 || !strings.Contains(out, `"SUCCEEDED"`) {
			t.Errorf("%s after a drained stop: %d %s %s; want SUCCEEDED", id, code, out, errOut)
		}
	}
}

// TestRemoteRunMaxPayload: run --max-payload beside a serve passes the
// limit to the server, which stores it with the execution; without it the
// server's --max-payload applies.
func TestRemoteRunMaxPayload(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, filepath.Join(dir, "p.db"), "--max-payload", "100")
	// Big makes a document of 1,099 bytes.
	writeFile(t, dir, "big.json", `{"StartAt":"Big","States":{"Big":{"Type":"Pass","Parameters":{"s.$":"States.ArrayRange(1, 300, 1)"},"End":true}}}`)
	for _, tc := range []struct {
		name, limit string
		want        int // the execution's maxPayload
		wantCode    int
	}{
		{name: "raised", limit: "2000", want: 2000, wantCode: 0},
		{name: "unlimited", limit: "-5", want: -1, wantCode: 0},
		{name: "server's", want: 0, wantCode: exitFailed},
	} {
		args := []string{"run", "big.json", "--db", "p.db", "--name", tc.name}
		if tc.limit != "" {
			args = append(args, "--max-payload", tc.limit)
		}
		r := cliIn(dir, args...)
		if r.code != tc.wantCode || !strings.Contains(r.errOut, "execution: "+tc.name) {
			t.Errorf("%v beside serve: %+v, want exit %d", args, r, tc.wantCode)
		}
		e, err := client.NewUnix(p.sock).Execution(context.Background(), tc.name)
		if err != nil {
			t.Fatalf("execution %s: %v", tc.name, err)
		}
		if e.MaxPayload != tc.want {
			t.Errorf("execution %s: maxPayload %d, want %d", tc.name, e.MaxPayload, tc.want)
		}
	}
}
