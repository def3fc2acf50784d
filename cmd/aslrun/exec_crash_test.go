//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// callProcesses returns the pids of the processes whose environment says
// they run a call of execution id (ASLRUN_EXECUTION, which every process
// an exec agent's command starts inherits). Zombies have no environment
// left, and are not counted.
func callProcesses(t *testing.T, id string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	mark := []byte("\x00ASLRUN_EXECUTION=" + id + "\x00")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone meanwhile, or not ours
		}
		if bytes.Contains(append([]byte{0}, env...), mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitUntil checks cond every 10 ms until it holds or limit passes, and
// reports whether it held.
func waitUntil(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestExecDiesWithServer: an exec agent's command that started a
// background process and blocks, in a real `aslrun serve`: SIGKILL the
// server, and every process of the call is gone — the command through
// its parent-death signal, the background process with the command's PID
// namespace. (Where the system refuses namespaces, only the command dies:
// the test then says so and ends the rest itself.)
func TestExecDiesWithServer(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	childPID, initPID := filepath.Join(dir, "child.pid"), filepath.Join(dir, "init.pid")
	// The command records its pid as its namespace sees it, starts a
	// background process that records its pid as seen from outside
	// (/proc is the host's) and sleeps, then sleeps itself.
	writeFile(t, dir, "tool.sh", `echo $$ > `+initPID+`
sh -c 'read -r p rest < /proc/self/stat; echo $p > `+childPID+`.tmp; mv `+childPID+`.tmp `+childPID+`; exec sleep 300' >/dev/null 2>&1 &
sleep 300
`)
	agentsFile := writeFile(t, dir, "agents.json", `{"Tool": {"Type": "exec", "Command": ["sh", "tool.sh"]}}`)
	p := startServe(t, db, "--agents", agentsFile)
	id := fmt.Sprintf("exec-crash-%d", time.Now().UnixNano())
	def := json.RawMessage(`{"StartAt":"Tool","States":{"Tool":{"Type":"Task","Agent":"Tool","End":true}}}`)
	if _, err := client.NewUnix(p.sock).Start(context.Background(), api.StartExecution{Definition: def, Name: id}); err != nil {
		t.Fatalf("start: %v", err)
	}
	if !waitUntil(30*time.Second, func() bool { _, err := os.Stat(childPID); return err == nil }) {
		t.Fatalf("the command did not start its background process; log:\n%s", p.log)
	}
	data, err := os.ReadFile(childPID)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("child pid %q: %v", data, err)
	}
	// The command, its sleep, the background sleep: the command may not
	// have started its own sleep yet when the background one wrote its
	// pid.
	var before []int
	if !waitUntil(30*time.Second, func() bool { before = callProcesses(t, id); return len(before) >= 3 }) {
		t.Fatalf("processes of the call before the kill: %v, want at least 3", before)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.done <- <-p.done // for the cleanup

	inNamespace := false
	if data, err := os.ReadFile(initPID); err == nil {
		inNamespace = strings.TrimSpace(string(data)) == "1"
	}
	var left []int
	gone := waitUntil(10*time.Second, func() bool {
		left = callProcesses(t, id)
		if inNamespace {
			return len(left) == 0
		}
		// Without a namespace only the background process may remain.
		return len(left) == 0 || len(left) == 1 && left[0] == child
	})
	if !inNamespace {
		t.Logf("the system refuses PID namespaces: the command died with the server, its background process %d did not (left: %v)", child, left)
	}
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if !gone {
		t.Errorf("processes of the call %v outlived the server's SIGKILL (of %v before it)", left, before)
	}
	if !inNamespace && len(left) == 0 {
		t.Errorf("without a PID namespace, want the background process %d to survive, as documented", child)
	}
}
