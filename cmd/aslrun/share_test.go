package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/store"
)

// TestRunsShareDatabase: eight runs at once on one database, without a
// server, take turns and all finish.
func TestRunsShareDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "slow.json", `{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","ResultPath":"$.slow","End":true}}}`)
	writeFile(t, dir, "mock.json", `{"Slow":{"0":{"Return":"done","DelaySeconds":0.2}}}`)
	results := make([]result, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = cliIn(dir, "run", "slow.json", "--mock", "mock.json", "--input", fmt.Sprintf(`{"n":%d}`, i), "--db", "s.db")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.code != 0 || !jsonEqual(t, r.out, fmt.Sprintf(`{"n":%d,"slow":"done"}`, i)) {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	for _, leftover := range []string{"s.db.holder", "s.db.sock"} {
		if _, err := os.Stat(filepath.Join(dir, leftover)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after every run ended: %v", leftover, err)
		}
	}
}

// TestCommandsBesideRun: while a run holds the database, list, status and
// approve from other processes are answered through its socket, which
// refuses to start executions; a second run waits its turn, saying for whom, and then
// runs. A stale DB.holder is ignored.
func TestCommandsBesideRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs a POSIX shell and named pipes")
	}
	t.Parallel()
	dir := t.TempDir()
	started, hold := filepath.Join(dir, "started"), filepath.Join(dir, "hold")
	if out, err := exec.Command("mkfifo", started, hold).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v: %s", err, out)
	}
	writeFile(t, dir, "hold.sh", "#!/bin/sh\necho started >started\nread x <hold\nexec cat\n")
	if err := os.Chmod(filepath.Join(dir, "hold.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "agents.json", `{"Hold":{"Type":"exec","Command":["./hold.sh"]}}`)
	writeFile(t, dir, "hold.json", `{"StartAt":"Hold","States":{"Hold":{"Type":"Task","Agent":"Hold","ResultPath":"$.held","End":true}}}`)
	writeFile(t, dir, "quick.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"quick","End":true}}}`)
	// A crashed process's holder record: its pid is gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "h.db.holder", fmt.Sprintf(`{"pid":%d,"command":"aslrun run crashed.json"}`, gone.Process.Pid))

	writeFile(t, dir, "ok.json", `{"StartAt":"Ok","States":{"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","End":true}}}`)
	if r := cliIn(dir, "run", "ok.json", "--no-prompt", "--name", "a1", "--db", "h.db"); r.code != exitWaiting {
		t.Fatalf("run ok.json: %+v", r)
	}

	holding := make(chan result, 1)
	go func() {
		holding <- cliIn(dir, "run", "hold.json", "--agents", "agents.json", "--name", "held", "--input", `{"n":1}`, "--db", "h.db")
	}()
	// Wait until the task runs: the script writes to started.
	select {
	case err := <-readFIFO(started):
		if err != nil {
			t.Fatal(err)
		}
	case r := <-holding:
		unblock(started)
		t.Fatalf("run hold.json ended before its task started: %+v", r)
	case <-time.After(30 * time.Second):
		unblock(started)
		t.Fatal("the task did not start within 30 s")
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		f, err := os.OpenFile(hold, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("go\n"))
		f.Close()
	}
	defer release()

	if r := cliIn(dir, "list", "--db", "h.db"); r.code != 0 || !containsAll(r.out, []string{"held", "RUNNING"}) {
		t.Errorf("list beside a run: %+v", r)
	}
	if r := cliIn(dir, "status", "held", "--json", "--db", "h.db"); r.code != 0 || !strings.Contains(r.out, `"RUNNING"`) {
		t.Errorf("status beside a run: %+v", r)
	}
	if r := cliIn(dir, "approve", "a1", "--decision", "approve", "--by", "ana", "--db", "h.db"); r.code != 0 || !strings.Contains(r.out, `"approver": "ana (on behalf, by local admin`) {
		t.Errorf("approve beside a run: %+v", r)
	}
	// The run's socket serves reads and decisions only.
	c := client.NewUnix(filepath.Join(dir, "h.db.sock"))
	_, err := c.Start(context.Background(), api.StartExecution{Definition: json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)})
	if client.StatusOf(err) != http.StatusForbidden {
		t.Errorf("start through a run's socket: %v, want 403", err)
	}

	// gc waits for the run, saying so; Ctrl-C stops the wait.
	gc, gcLines, _ := startWaiting(t, dir, "gc", "--db", "h.db")
	if err := gc.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range gcLines {
	}
	if err := gc.Wait(); err == nil || gc.ProcessState.ExitCode() != exitSignalBase+2 {
		t.Errorf("gc interrupted while it waits: %v, want exit 130", err)
	}

	// A second run waits for the first, saying so, and runs after it.
	second, lines, out := startWaiting(t, dir, "run", "quick.json", "--db", "h.db")
	release()
	var said []string
	for line := range lines {
		said = append(said, line)
	}
	if err := second.Wait(); err != nil || !jsonEqual(t, out.String(), `"quick"`) {
		t.Errorf("the second run: %v, %s; stderr:\n%s", err, out.String(), strings.Join(said, "\n"))
	}
	if r := <-holding; r.code != 0 || !jsonEqual(t, r.out, `{"n":1,"held":{"n":1}}`) {
		t.Errorf("run hold.json: %+v", r)
	}
}

// TestReadHolder: a holder record whose process is gone, or that is not
// one, is ignored.
func TestReadHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, content string
		want          bool
	}{
		{"live", fmt.Sprintf(`{"pid":%d,"command":"aslrun run a.json"}`, os.Getpid()), true},
		{"gone", fmt.Sprintf(`{"pid":%d,"command":"aslrun run a.json"}`, gone.Process.Pid), false},
		{"garbage", `{"pid":`, false},
		{"no pid", `{"command":"x"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(dir, tc.name+".db")
			writeFile(t, dir, tc.name+".db.holder", tc.content)
			if _, got := readHolder(db); got != tc.want {
				t.Errorf("readHolder with %s = %v, want %v", tc.content, got, tc.want)
			}
		})
	}
	if _, ok := readHolder(filepath.Join(dir, "none.db")); ok {
		t.Error("readHolder without a file = true, want false")
	}
}

// TestAllowedReads: what a run's socket answers.
func TestAllowedReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/v1/executions", true},
		{"GET", "/v1/executions/x/history", true},
		{"POST", "/v1/approvals/abc/decision", true},
		{"POST", "/v1/approvals/abc/check", true},
		{"POST", "/v1/workflows/validate", true},
		{"POST", "/v1/executions", false},
		{"POST", "/v1/executions/x/resume", false},
		{"POST", "/v1/workflows", false},
		{"DELETE", "/v1/executions/x", false},
	} {
		r, err := http.NewRequest(tc.method, "http://aslrun"+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := allowedReads(r); got != tc.want {
			t.Errorf("allowedReads(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// startWaiting starts aslrun with args in dir and returns once it says on
// stderr that it waits for the database, naming the run that holds it;
// lines gives the rest of its stderr.
func startWaiting(t *testing.T, dir string, args ...string) (*exec.Cmd, <-chan string, *strings.Builder) {
	t.Helper()
	cmd := aslrunCmd(args...)
	cmd.Dir = dir
	out := &strings.Builder{}
	cmd.Stdout = out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for line := range lines {
		if strings.Contains(line, "waiting for it") {
			if !containsAll(line, []string{"held by pid", "aslrun run hold.json"}) {
				t.Errorf("%v says %q, want the holder's pid and command", args, line)
			}
			return cmd, lines, out
		}
	}
	cmd.Wait()
	t.Fatalf("%v ended without saying it waits: %s", args, out)
	return nil, nil, nil
}

// TestSocketNotOurs: a database held by a process whose socket another
// user owns is refused, naming the socket.
func TestSocketNotOurs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give the socket to another user")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "o.db")
	st, err := store.OpenBolt(db, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sock := filepath.Join(dir, "o.db.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chown(sock, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "o.db.holder", fmt.Sprintf(`{"pid":%d,"command":"aslrun serve","api":"all","socket":%q}`, os.Getpid(), sock))
	code, _, errOut := invoke(t, "", "list", "--db", db)
	if code != exitUsage || !containsAll(errOut, []string{sock, "not yours"}) {
		t.Errorf("list beside another user's socket: exit %d, %q; want 2 naming the socket", code, errOut)
	}
}
