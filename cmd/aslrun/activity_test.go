package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/jsonvalue"
)

// activityServe starts `aslrun serve` on a TCP port of the loopback with a
// tokens file holding an operator's and a worker's tokens, and returns it
// with the URL and both tokens.
func activityServe(t *testing.T, db string) (p *serveProcess, url, operator, worker string) {
	t.Helper()
	dir := filepath.Dir(db)
	tokens := filepath.Join(dir, "tokens")
	for _, role := range []string{"operator", "worker"} {
		code, out, errOut := invoke(t, "", "token", "create", role+"-1", "--role", role, "--tokens", tokens)
		if code != 0 {
			t.Fatalf("token create --role %s: %d %s", role, code, errOut)
		}
		if role == "operator" {
			operator = strings.TrimSpace(out)
		} else {
			worker = strings.TrimSpace(out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p = startServe(t, db, "--listen", addr, "--tokens", tokens)
	return p, "http://" + addr, operator, worker
}

// TestPythonActivityWorker: workers written in Python (the example
// workflows/activity-worker/worker.py, standard library only) serve the
// tasks of a real `aslrun serve`: each execution ends with the outputs the
// workers gave, a failure the worker sends taking the Catch.
func TestPythonActivityWorker(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (.ci/run installs it)")
	}
	t.Parallel()
	example := filepath.Join("..", "..", "workflows", "activity-worker")
	def, err := os.ReadFile(filepath.Join(example, "workflow.json"))
	if err != nil {
		t.Fatal(err)
	}
	input, err := os.ReadFile(filepath.Join(example, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(example, "output.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, url, operator, worker := activityServe(t, filepath.Join(dir, "a.db"))
	c := client.New(url, operator, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const executions = 3
	for i := range executions {
		name := "docs-" + strconv.Itoa(i)
		if _, err := c.Start(ctx, api.StartExecution{Definition: def, Input: input, Name: name}); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
	}
	tokenFile := filepath.Join(dir, "worker.token")
	if err := os.WriteFile(tokenFile, []byte(worker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Two workers share the 12 tasks; each stops after the tasks it
	// counted, so that together they take exactly 12.
	var workers []*exec.Cmd
	var outs []*bytes.Buffer
	for i, n := range []int{5, 7} {
		cmd := exec.CommandContext(ctx, python, filepath.Join(example, "worker.py"), "--url", url, "--token-file", tokenFile,
			"--name", "py-"+strconv.Itoa(i+1), "--wait", "5", "--heartbeat-every", "0.2", "--tasks", strconv.Itoa(n))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers, outs = append(workers, cmd), append(outs, out)
	}
	for i, cmd := range workers {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i+1, err, outs[i])
		}
	}
	wantV, err := jsonvalue.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	for i := range executions {
		name := "docs-" + strconv.Itoa(i)
		e, err := c.Wait(ctx, name, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonvalue.Decode(e.Output)
		if e.Status != "SUCCEEDED" || err != nil || !jsonvalue.Equal(got, wantV) {
			t.Errorf("%s: %s %s, want SUCCEEDED with %s", name, e.Status, e.Output, want)
		}
		hist, err := c.History(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, ev := range hist {
			counts[ev.Type]++
		}
		if counts["ActivityScheduled"] != 4 || counts["ActivityStarted"] != 4 || counts["ActivitySucceeded"] != 2 || counts["ActivityFailed"] != 2 {
			t.Errorf("%s: events %v, want 4 ActivityScheduled and ActivityStarted, 2 ActivitySucceeded and 2 ActivityFailed", name, counts)
		}
	}
	// Both workers did some of the work.
	for i, out := range outs {
		if !strings.Contains(out.String(), " succeeded") && !strings.Contains(out.String(), " rejected") && !strings.Contains(out.String(), " failed") {
			t.Errorf("worker %d handled no task:\n%s", i+1, out)
		}
	}
}

// TestActivityCrash: the server is killed (SIGKILL) while a worker holds a
// task; the next server takes the worker's answer, which finishes the
// execution, and refuses the same answer again. A task scheduled before
// the crash, not yet polled, is found by a poll of the next server.
func TestActivityCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	p, url, operator, worker := activityServe(t, db)
	c, w := client.New(url, operator, nil), client.New(url, worker, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	def := json.RawMessage(`{"StartAt":"Work","States":{"Work":{"Type":"Task","Resource":"arn:aws:states:us-east-1:123456789012:activity:crash-work","HeartbeatSeconds":600,"End":true}}}`)
	for _, name := range []string{"held", "queued"} {
		if _, err := c.Start(ctx, api.StartExecution{Definition: def, Input: json.RawMessage(`{"n":"` + name + `"}`), Name: name}); err != nil {
			t.Fatal(err)
		}
		if e, err := c.Wait(ctx, name, 10*time.Millisecond); err != nil || e.Status != "WAITING" {
			t.Fatalf("%s: %+v, %v", name, e, err)
		}
	}
	task, ok, err := w.PollActivity(ctx, "crash-work", "w", 5*time.Second)
	if err != nil || !ok || task.Execution != "held" {
		t.Fatalf("poll: %+v, %v, %v", task, ok, err)
	}
	p.stop(t, syscall.SIGKILL)

	activityServe2 := func() {
		t.Helper()
		ln, err := net.Listen("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatalf("the port of the killed server: %v", err)
		}
		ln.Close()
		startServe(t, db, "--listen", strings.TrimPrefix(url, "http://"), "--tokens", filepath.Join(dir, "tokens"))
	}
	activityServe2()
	if _, err := w.SendTaskSuccess(ctx, api.TaskSuccess{Token: task.TaskToken, Output: json.RawMessage(`{"done":"held"}`)}); err != nil {
		t.Fatalf("the answer after the crash: %v", err)
	}
	if e, err := c.Wait(ctx, "held", 10*time.Millisecond); err != nil || e.Status != "SUCCEEDED" || string(e.Output) != `{"done":"held"}` {
		t.Fatalf("held: %+v, %v", e, err)
	}
	if _, err := w.SendTaskSuccess(ctx, api.TaskSuccess{Token: task.TaskToken, Output: json.RawMessage(`{"again":true}`)}); client.StatusOf(err) != 400 {
		t.Errorf("the same answer again: %v, want 400", err)
	}
	// The task scheduled before the crash goes to the next poll.
	next, ok, err := w.PollActivity(ctx, "crash-work", "w", 5*time.Second)
	if err != nil || !ok || next.Execution != "queued" || string(next.Input) != `{"n":"queued"}` {
		t.Fatalf("poll after the crash: %+v, %v, %v", next, ok, err)
	}
	if _, err := w.SendTaskFailure(ctx, api.TaskFailure{Token: next.TaskToken, Error: "Nope", Cause: "refused"}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Wait(ctx, "queued", 10*time.Millisecond); err != nil || e.Status != "FAILED" || e.Error != "Nope" {
		t.Fatalf("queued: %+v, %v", e, err)
	}
}
