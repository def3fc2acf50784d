package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const callbackWorkflow = `{"StartAt":"Call","States":{
	"Call":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters":{"FunctionName":"notify","Payload":{"token.$":"$$.Task.Token"}},
		"HeartbeatSeconds":3600,"ResultPath":"$.answer",
		"Catch":[{"ErrorEquals":["Rejected"],"ResultPath":"$.error","Next":"Refused"}],"End":true},
	"Refused":{"Type":"Pass","End":true}}}`

var tokenRE = regexp.MustCompile(`aslrun-tt1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// startCallback runs the callback workflow as execution id, which waits,
// and returns the token the agent was handed: the exec agent of the agents
// file appends its inputs to the file inbox.
func startCallback(t *testing.T, wf, agentsFile, inbox, db, id string) string {
	t.Helper()
	code, out, errOut := invoke(t, "", "run", wf, "--agents", agentsFile, "--db", db, "--name", id, "--input", `{"n":1}`)
	if code != exitWaiting || !strings.Contains(out, `"waitingFor": "TaskToken"`) || !strings.Contains(errOut, "aslrun task-success TOKEN") {
		t.Fatalf("run: exit %d, %s / %s; want 3, waiting for a TaskToken", code, out, errOut)
	}
	data, err := os.ReadFile(inbox)
	if err != nil {
		t.Fatal(err)
	}
	tokens := tokenRE.FindAllString(string(data), -1)
	if len(tokens) == 0 {
		t.Fatalf("the agent got no token: %s", data)
	}
	return tokens[len(tokens)-1]
}

func TestTaskTokenCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "callback.json", callbackWorkflow)
	inbox := filepath.Join(dir, "inbox.jsonl")
	agentsFile := writeFile(t, dir, "agents.json", `{"notify":{"Type":"exec","Command":["sh","-c","cat >> '`+inbox+`'; echo '{\"queued\":true}'"]}}`)
	answer := writeFile(t, dir, "answer.json", `{"ok":true}`)
	db := filepath.Join(dir, "x.db")

	// Each command is a process of its own: the execution waits in the
	// database between them.
	token := startCallback(t, wf, agentsFile, inbox, db, "c1")
	if code, out, errOut := invoke(t, "", "task-heartbeat", token, "--db", db); code != 0 || out != "" {
		t.Fatalf("task-heartbeat: exit %d, %q / %s", code, out, errOut)
	}
	if code, _, errOut := invoke(t, "", "task-success", token, "--db", db); code != exitUsage || !strings.Contains(errOut, "--output is required") {
		t.Errorf("task-success without --output: exit %d, %s", code, errOut)
	}
	if code, _, errOut := invoke(t, "", "task-success", token, "--db", db, "--output", "{bad"); code != exitUsage || !strings.Contains(errOut, "--output") {
		t.Errorf("task-success with bad JSON: exit %d, %s", code, errOut)
	}
	code, out, errOut := invoke(t, "", "task-success", token, "--db", db, "--output", "@"+answer)
	if code != 0 || !jsonEqual(t, out, `{"n":1,"answer":{"ok":true}}`) {
		t.Fatalf("task-success: exit %d, %s / %s", code, out, errOut)
	}
	forged := "aslrun-tt1." + base64.RawURLEncoding.EncodeToString([]byte("c1")) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for _, args := range [][]string{
		{"task-success", token, "--output", "1"},
		{"task-failure", token, "--error", "E"},
		{"task-heartbeat", token},
		{"task-success", forged, "--output", "1"},
		{"task-heartbeat", "not-a-token"},
	} {
		code, _, errOut := invoke(t, "", append(args, "--db", db)...)
		if code != exitUsage || !strings.Contains(errOut, "task token is not valid") {
			t.Errorf("%v: exit %d, %s; want 2, not valid", args, code, errOut)
		}
	}

	token = startCallback(t, wf, agentsFile, inbox, db, "c2")
	code, out, errOut = invoke(t, "", "task-failure", token, "--db", db, "--error", "Rejected", "--cause", "no stock")
	if code != 0 || !jsonEqual(t, out, `{"n":1,"error":{"Error":"Rejected","Cause":"no stock"}}`) {
		t.Fatalf("task-failure: exit %d, %s / %s", code, out, errOut)
	}
	if code, _, errOut := invoke(t, "", "task-success", "a", "b", "--db", db); code != exitUsage || !strings.Contains(errOut, "exactly one task token") {
		t.Errorf("two tokens: exit %d, %s", code, errOut)
	}
}

func TestTaskTokenThroughServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "callback.json", callbackWorkflow)
	inbox := filepath.Join(dir, "inbox.jsonl")
	agentsFile := writeFile(t, dir, "agents.json", `{"notify":{"Type":"exec","Command":["sh","-c","cat >> '`+inbox+`'; echo '{\"queued\":true}'"]}}`)
	db := filepath.Join(dir, "x.db")
	token := startCallback(t, wf, agentsFile, inbox, db, "s1")

	// With the database held by the server, the commands are its clients.
	startServe(t, db)
	if code, out, errOut := invoke(t, "", "task-heartbeat", token, "--db", db); code != 0 || out != "" {
		t.Fatalf("task-heartbeat through the API: exit %d, %q / %s", code, out, errOut)
	}
	if code, _, errOut := invoke(t, "", "task-success", token, "--db", db, "--output", "1", "--agents", agentsFile); code != exitUsage || !strings.Contains(errOut, "cannot be used through the API") {
		t.Errorf("task-success --agents through the API: exit %d, %s", code, errOut)
	}
	code, out, errOut := invoke(t, "", "task-success", token, "--db", db, "--output", `"done"`)
	if code != 0 || !jsonEqual(t, out, `{"n":1,"answer":"done"}`) {
		t.Fatalf("task-success through the API: exit %d, %s / %s", code, out, errOut)
	}
	if code, _, errOut := invoke(t, "", "task-failure", token, "--db", db); code != exitUsage || !strings.Contains(errOut, "task token is not valid") {
		t.Errorf("the token a second time through the API: exit %d, %s", code, errOut)
	}
}
