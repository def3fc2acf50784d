package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWorker runs `aslrun worker` on db as a subprocess until the test
// ends, and waits until its socket answers.
func startWorker(t *testing.T, db string) *exec.Cmd {
	t.Helper()
	w := aslrunCmd("worker", "--db", db, "--poll", "100ms")
	var logs bytes.Buffer
	w.Stderr = &logs
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			w.Process.Kill()
			t.Errorf("the worker did not stop on interrupt; its log:\n%s", logs.String())
		}
	})
	for range 100 {
		if _, err := os.Stat(socketPath(db)); err == nil {
			return w
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the worker's socket did not appear; its log:\n%s", logs.String())
	return nil
}

// cli runs aslrun as a subprocess and returns its exit code and outputs.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := aslrunCmd(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// statusOf polls `status --json` until the execution has status want.
func statusOf(t *testing.T, db, id, want string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, out, errOut := cli(t, "status", id, "--json", "--db", db)
		var st map[string]any
		if code == 0 && json.Unmarshal([]byte(out), &st) == nil && st["status"] == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %s (exit %d, %s), want %s", id, out, code, errOut, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWorker checks that while a worker holds the database every other
// command still works (through its socket), that it wakes a parked
// execution when it is due, and that it recovers an execution a killed
// process left RUNNING.
func TestWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("worker test skipped in -short mode")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	sleepy := filepath.Join(dir, "sleepy.json")
	if err := os.WriteFile(sleepy, []byte(`{"StartAt":"Nap","States":{
		"Nap":{"Type":"Wait","Seconds":6,"Next":"Done"},
		"Done":{"Type":"Pass","Result":{"rested":true},"End":true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	// An execution left RUNNING by a killed process, before any worker.
	crash := []string{"run", "testdata/crash/pipeline.json", "--mock", "testdata/crash/mock.json", "--input", "@testdata/crash/input.json", "--db", db, "--name", "orphan"}
	cmd := aslrunCmd(crash...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	startWorker(t, db)
	statusOf(t, db, "orphan", "SUCCEEDED", 20*time.Second)

	// Commands are served by the worker: run parks and exits 3.
	run := aslrunCmd("run", "sleepy.json", "--db", "w.db", "--name", "nap")
	run.Dir = dir // relative paths are the client's
	var rout bytes.Buffer
	run.Stdout = &rout
	err := run.Run()
	code, out := 0, rout.String()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != exitWaiting || !strings.Contains(out, `"WAITING"`) || !strings.Contains(out, `"Nap"`) {
		t.Fatalf("run through the worker: exit %d, %s", code, out)
	}
	code, out, _ = cli(t, "list", "--status", "waiting", "--db", db)
	if code != 0 || !strings.Contains(out, "nap") {
		t.Errorf("list --status waiting: exit %d, %s", code, out)
	}
	st := statusOf(t, db, "nap", "SUCCEEDED", 20*time.Second)
	if out, _ := json.Marshal(st["output"]); string(out) != `{"rested":true}` {
		t.Errorf("nap output %s, want {\"rested\":true}", out)
	}
	if code, out, _ := cli(t, "history", "nap", "--verify", "--db", db); code != 0 {
		t.Errorf("history --verify through the worker: exit %d, %s", code, out)
	}
	if code, _, errOut := cli(t, "worker", "--db", db); code != exitUsage || !strings.Contains(errOut, "already running") {
		t.Errorf("a second worker: exit %d, %s", code, errOut)
	}
}
