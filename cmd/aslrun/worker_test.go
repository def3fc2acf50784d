package main

import (
	"bufio"
	"bytes"
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

// startWorker runs `aslrun worker` on db as a subprocess until the test
// ends, and waits until it has logged that it listens on its socket.
func startWorker(t *testing.T, db string) *workerLog {
	t.Helper()
	w := aslrunCmd("worker", "--db", db, "--poll", "50ms")
	stderr, err := w.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &workerLog{changed: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.add(sc.Text())
		}
	}()
	t.Cleanup(func() {
		w.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { <-scanned; w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			w.Process.Kill()
			t.Errorf("the worker did not stop on interrupt; its log:\n%s", logs)
		}
	})
	logs.waitFor(t, "worker started")
	return logs
}

// cli runs aslrun as a subprocess and returns its exit code and outputs.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := aslrunCmd(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
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
	signalled := make(chan error, 1)
	go func() {
		f, err := os.Open(started) // blocks until the script opens it to write
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		signalled <- err
	}()
	select {
	case err := <-signalled:
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

// TestWorker checks that a worker recovers an execution a killed process
// left RUNNING and wakes a parked execution when it is due, that while it
// holds the database every other command still works (through its socket),
// and that it wakes no execution before it is due.
func TestWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("worker test skipped in -short mode")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the worker test needs a POSIX shell and named pipes")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")

	// Before any worker: an execution left RUNNING by a killed process...
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

	logs := startWorker(t, db)
	logs.waitFor(t, "msg=execution", "id=orphan ")
	wantStatus(t, db, "orphan", "SUCCEEDED", `{"n":1,"before":1,"held":{"n":1,"before":1},"after":2}`)
	logs.waitFor(t, "msg=execution", "id=early ")
	wantStatus(t, db, "early", "SUCCEEDED", `{"rested":true}`)
	for _, id := range []string{"orphan", "early"} {
		if code, out, _ := invoke(t, "", "history", id, "--verify", "--db", db); code != 0 {
			t.Errorf("history %s --verify through the worker: exit %d, %s", id, code, out)
		}
	}

	// Commands are served by the worker: run parks and exits 3.
	writeFile(t, dir, "sleepy.json", `{"StartAt":"Nap","States":{
		"Nap":{"Type":"Wait","Seconds":3600,"Next":"Done"},
		"Done":{"Type":"Pass","Result":{"rested":true},"End":true}}}`)
	run := aslrunCmd("run", "sleepy.json", "--db", "w.db", "--name", "nap")
	run.Dir = dir // relative paths are the client's
	var rout bytes.Buffer
	run.Stdout = &rout
	err := run.Run()
	code, out := 0, rout.String()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	if code != exitWaiting || !strings.Contains(out, `"WAITING"`) || !strings.Contains(out, `"Nap"`) {
		t.Fatalf("run through the worker: exit %d, %s", code, out)
	}
	code, out, _ = invoke(t, "", "list", "--status", "waiting", "--db", db)
	if code != 0 || !strings.Contains(out, "nap") {
		t.Errorf("list --status waiting: exit %d, %s", code, out)
	}
	if code, _, errOut := cli(t, "worker", "--db", db); code != exitUsage || !strings.Contains(errOut, "already running") {
		t.Errorf("a second worker: exit %d, %s", code, errOut)
	}
	// nap is due only in an hour: the worker, polling every 50 ms, leaves
	// it parked.
	wantStatus(t, db, "nap", "WAITING", "")
}
