package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/client"
)

// workerLog collects the lines a worker logs, and lets a test wait for one.
type workerLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on every new line
}

func (l *workerLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *workerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitFor waits until the worker has logged a line containing every one of
// parts, failing the test when none came within a generous deadline.
func (l *workerLog) waitFor(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for seen := 0; ; {
		l.mu.Lock()
		lines, changed := l.lines, l.changed
		l.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if containsAll(lines[seen], parts) {
				return
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the worker did not log a line with %q; its log:\n%s", parts, l)
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// status returns `status ID --json` of an execution (run in this process:
// through the worker's socket when one holds db).
func status(t *testing.T, db, id string) map[string]any {
	t.Helper()
	code, out, errOut := invoke(t, "", "status", id, "--json", "--db", db)
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status %s: exit %d, %s%s", id, code, out, errOut)
	}
	return st
}

// wantStatus checks that an execution has status want and, when output is
// set, that output (as JSON).
func wantStatus(t *testing.T, db, id, want, output string) {
	t.Helper()
	st := status(t, db, id)
	if st["status"] != want {
		t.Fatalf("%s: status %v, want %s (%v)", id, st["status"], want, st)
	}
	if output == "" {
		return
	}
	if got, _ := json.Marshal(st["output"]); !sameJSON(t, string(got), output) {
		t.Errorf("%s: output %s, want %s", id, got, output)
	}
}

// orphan leaves an execution RUNNING, as a process killed in the middle of
// it does: it runs the workflow hold.json of dir (whose task is the script
// hold.sh) in a subprocess, waits until the script says it has started,
// then kills the subprocess. Once dir holds a file named released, the
// script returns its input at once.
func orphan(t *testing.T, dir, db, id string) {
	t.Helper()
	started, hold := filepath.Join(dir, "started"), filepath.Join(dir, "hold")
	if out, err := exec.Command("mkfifo", started, hold).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v: %s", err, out)
	}
	writeFile(t, dir, "hold.sh", "#!/bin/sh\n[ -e released ] && exec cat\nexec 3<>hold\necho started >started\nread x <&3\nexit 1\n")
	if err := os.Chmod(filepath.Join(dir, "hold.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "agents.json", `{"Hold":{"Type":"exec","Command":["./hold.sh"]}}`)
	writeFile(t, dir, "hold.json", `{"StartAt":"Before","States":{
		"Before":{"Type":"Pass","Result":1,"ResultPath":"$.before","Next":"Hold"},
		"Hold":{"Type":"Task","Agent":"Hold","ResultPath":"$.held","Next":"After"},
		"After":{"Type":"Pass","Result":2,"ResultPath":"$.after","End":true}}}`)

	cmd := aslrunCmd("run", "hold.json", "--agents", "agents.json", "--input", `{"n":1}`, "--db", db, "--name", id)
	cmd.Dir = dir
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-readFIFO(started):
		if err != nil {
			t.Fatal(err)
		}
	case err := <-exited:
		unblock(started)
		t.Fatalf("run ended (%v) before its task started: %s", err, errOut.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		unblock(started)
		t.Fatalf("the task did not start within 30 s: %s", errOut.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	// The script, in a process group of its own, outlived aslrun: it holds
	// hold open and waits for a line there. Send one, and it exits.
	if f, err := os.OpenFile(hold, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Write([]byte("\n"))
		f.Close()
	}
	writeFile(t, dir, "released", "")
}

// unblock ends a wait to read the named pipe fifo that no writer will end.
func unblock(fifo string) {
	if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// readFIFO reads the named pipe path to its end in the background: the
// channel gets the error once the writer has closed it (opening it blocks
// until a writer opens it).
func readFIFO(path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(path)
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		done <- err
	}()
	return done
}

// result is the end of a CLI subprocess.
type result struct {
	code        int
	out, errOut string
	err         error
}

// cliIn runs aslrun in dir as a subprocess; safe to call from any goroutine.
func cliIn(dir string, args ...string) result {
	cmd := aslrunCmd(args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{out: out.String(), errOut: errOut.String()}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else {
		r.err = err
	}
	return r
}

// TestServeBesideCLI: one `aslrun serve` holds the database; it recovers
// an execution a killed process left RUNNING and wakes one whose Wait is
// due, while CLI processes (run, list, status, approve, history) work
// beside it at the same time through its API; a second serve (or
// worker, its other name) is refused, and so is a command the API does
// not serve.
func TestServeBesideCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the serve test needs a POSIX shell and named pipes")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")

	// Before any server: an execution left RUNNING by a killed process...
	orphan(t, dir, db, "orphan")
	wantStatus(t, db, "orphan", "RUNNING", "")
	// ... and one parked on a Wait that is already due: a synctest bubble's
	// clock starts at 2000-01-01, so the Wait's wake-up time is long past.
	early := writeFile(t, dir, "early.json", `{"StartAt":"Nap","States":{
		"Nap":{"Type":"Wait","Seconds":60,"Next":"Done"},
		"Done":{"Type":"Pass","Result":{"rested":true},"End":true}}}`)
	synctest.Test(t, func(t *testing.T) {
		if code, out, errOut := invoke(t, "", "run", early, "--db", db, "--name", "early"); code != exitWaiting {
			t.Fatalf("run early: exit %d, %s%s", code, out, errOut)
		}
	})
	wantStatus(t, db, "early", "WAITING", "")

	p := startServe(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.NewUnix(p.sock)
	for _, id := range []string{"orphan", "early"} {
		if e, err := c.Wait(ctx, id, 20*time.Millisecond); err != nil || e.Status != "SUCCEEDED" || (e.Status == "WAITING") {
			t.Fatalf("%s under serve: %+v %v; log:\n%s", id, e, err, p.log)
		}
	}
	wantStatus(t, db, "orphan", "SUCCEEDED", `{"n":1,"before":1,"held":{"n":1,"before":1},"after":2}`)
	wantStatus(t, db, "early", "SUCCEEDED", `{"rested":true}`)

	writeFile(t, dir, "slow.json", `{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","ResultPath":"$.slow","End":true}}}`)
	writeFile(t, dir, "mock.json", `{"Slow":{"0-99":{"Return":"done","DelaySeconds":0.2}}}`)
	writeFile(t, dir, "ok.json", `{"StartAt":"Ok","States":{"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","End":true}}}`)

	// Three CLI processes at once beside the server.
	var wg sync.WaitGroup
	var slow, ask, hist result
	wg.Add(3)
	go func() {
		defer wg.Done()
		slow = cliIn(dir, "run", "slow.json", "--mock", "mock.json", "--input", `{"n":7}`, "--db", "w.db", "--name", "s1")
	}()
	go func() {
		defer wg.Done()
		ask = cliIn(dir, "run", "ok.json", "--no-prompt", "--db", "w.db", "--name", "a1")
	}()
	go func() { defer wg.Done(); hist = cliIn(dir, "history", "orphan", "--verify", "--db", "w.db") }()
	wg.Wait()
	if slow.code != 0 || !jsonEqual(t, slow.out, `{"n":7,"slow":"done"}`) || !strings.Contains(slow.errOut, "execution: s1") {
		t.Errorf("run slow.json through serve: %+v", slow)
	}
	if ask.code != exitWaiting || !strings.Contains(ask.out, `"WAITING"`) || !strings.Contains(ask.errOut, "aslrun approve a1 --decision approve|reject") {
		t.Errorf("run ok.json through serve: %+v", ask)
	}
	if hist.code != 0 || !strings.Contains(hist.out, "history verified") {
		t.Errorf("history --verify through serve: %+v", hist)
	}

	var appr, list, stat result
	wg.Add(3)
	go func() {
		defer wg.Done()
		appr = cliIn(dir, "approve", "a1", "--decision", "approve", "--by", "ana", "--comment", "fine", "--db", "w.db")
	}()
	go func() { defer wg.Done(); list = cliIn(dir, "list", "--db", "w.db") }()
	go func() { defer wg.Done(); stat = cliIn(dir, "status", "s1", "--json", "--db", "w.db") }()
	wg.Wait()
	if appr.code != 0 || !strings.Contains(appr.out, `"approver": "ana (on behalf, by local admin`) || !strings.Contains(appr.out, `"fine"`) {
		t.Errorf("approve through serve: %+v", appr)
	}
	if list.code != 0 || !containsAll(list.out, []string{"orphan", "early", "s1", "a1", "SUCCEEDED"}) {
		t.Errorf("list through serve: %+v", list)
	}
	if stat.code != 0 || !strings.Contains(stat.out, `"SUCCEEDED"`) {
		t.Errorf("status through serve: %+v", stat)
	}

	// What the API does not serve, what it leaves to the server, and what
	// it refuses.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--db", "w.db"}, "already running"},
		{[]string{"worker", "--db", "w.db"}, "already running"},
		{[]string{"gc", "--db", "w.db"}, "docs/api.md"},
		{[]string{"checkpoints", "nope", "--db", "w.db"}, "nope"},
		{[]string{"run", "slow.json", "--agents", "agents.json", "--db", "w.db"}, "aslrun serve --agents FILE"},
		{[]string{"resume", "s1", "--from-checkpoint", "x", "--db", "w.db"}, `no checkpoint "x"`},
		{[]string{"resume", "s1", "--from-checkpoint", "x", "--mock", "mock.json", "--db", "w.db"}, "--mock cannot be used through the API"},
		{[]string{"run", "slow.json", "--mock", "mock.json", "--name", "s1", "--db", "w.db"}, "s1"},
	} {
		if r := cliIn(dir, tc.args...); r.code != exitUsage || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v beside serve: %+v, want exit 2 saying %q", tc.args, r, tc.want)
		}
	}

	// nap is due only in an hour: the server, polling every 50 ms, leaves
	// it parked.
	writeFile(t, dir, "sleepy.json", `{"StartAt":"Nap","States":{
		"Nap":{"Type":"Wait","Seconds":3600,"Next":"Done"},
		"Done":{"Type":"Pass","Result":{"rested":true},"End":true}}}`)
	if r := cliIn(dir, "run", "sleepy.json", "--db", "w.db", "--name", "nap"); r.code != exitWaiting || !strings.Contains(r.out, `"Nap"`) {
		t.Fatalf("run sleepy.json through serve: %+v", r)
	}
	wantStatus(t, db, "nap", "WAITING", "")
}
