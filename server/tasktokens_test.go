package server

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/jsonvalue"
)

const callbackDefinition = `{"StartAt":"Call","States":{
	"Call":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters":{"FunctionName":"notify","Payload":{"token.$":"$$.Task.Token"}},
		"HeartbeatSeconds":3600,"ResultPath":"$.answer",
		"Catch":[{"ErrorEquals":["Rejected"],"ResultPath":"$.error","Next":"Refused"}],"End":true},
	"Refused":{"Type":"Pass","End":true}}}`

var tokenIn = regexp.MustCompile(`aslrun-tt1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// waitingForToken starts an execution that waits for its task token and
// returns the token its agent was handed (read from the history the
// store keeps, where the agent's input is).
func waitingForToken(t *testing.T, ts *testServer, name string) string {
	t.Helper()
	start := map[string]any{"definition": json.RawMessage(callbackDefinition), "input": json.RawMessage(`{"n":1}`), "name": name,
		"mock": json.RawMessage(`{"notify":{"0":{"Return":{"queued":true}}}}`)}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	e := ts.waitFor(t, name, func(e api.Execution) bool { return e.Status != "RUNNING" })
	if e.Status != "WAITING" || e.WaitingFor != "TaskToken" {
		t.Fatalf("execution %+v, want WAITING for a TaskToken", e)
	}
	events, err := ts.st.History(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type == "TaskScheduled" {
			b, _ := jsonvalue.Marshal(ev.Input)
			if tok := tokenIn.FindString(string(b)); tok != "" {
				return tok
			}
		}
	}
	t.Fatalf("no token in the history of %s", name)
	return ""
}

func TestTaskTokensOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	token := waitingForToken(t, ts, "cb")
	success := map[string]any{"token": token, "output": json.RawMessage(`{"ok":true}`)}
	for _, role := range []Role{RoleViewer, RoleApprover} {
		if code, body := ts.call(t, role, "POST", "/v1/task-tokens/success", success, nil); code != http.StatusForbidden {
			t.Errorf("%v: %d %s, want 403", role, code, body)
		}
	}
	refusals := []struct {
		name, path string
		body       any
		pointer    string
	}{
		{"no token", "success", map[string]any{"output": 1}, "/token"},
		{"no output", "success", map[string]any{"token": token}, "/output"},
		{"output not strict JSON", "success", `{"token":"` + token + `","output":{"a":1,"a":2}}`, ""},
		{"unknown field", "failure", `{"token":"x","reason":"y"}`, ""},
		{"forged token", "failure", map[string]any{"token": token[:len(token)-4] + "AAAA"}, "/token"},
		{"not a token", "heartbeat", map[string]any{"token": "abc"}, "/token"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, RoleOperator, "POST", "/v1/task-tokens/"+tc.path, tc.body, nil)
			if code != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", code, body)
			}
			pr := problemIn(t, body)
			if tc.pointer != "" && (len(pr.Errors) != 1 || pr.Errors[0].Pointer != tc.pointer) {
				t.Errorf("problem %+v, want one error at %s", pr, tc.pointer)
			}
		})
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/task-tokens/heartbeat", map[string]any{"token": token}, nil); code != http.StatusNoContent {
		t.Fatalf("heartbeat: %d %s, want 204", code, body)
	}
	var e api.Execution
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/task-tokens/success", success, &e); code != http.StatusAccepted || e.ID != "cb" {
		t.Fatalf("success: %d %s, want 202", code, body)
	}
	e = ts.waitFor(t, "cb", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if string(e.Output) != `{"answer":{"ok":true},"n":1}` {
		t.Errorf("output %s", e.Output)
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/task-tokens/success", success, nil); code != http.StatusBadRequest {
		t.Errorf("the token a second time: %d %s, want 400", code, body)
	}

	token = waitingForToken(t, ts, "cf")
	failure := map[string]any{"token": token, "error": "Rejected", "cause": "no stock"}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/task-tokens/failure", failure, nil); code != http.StatusAccepted {
		t.Fatalf("failure: %d %s, want 202", code, body)
	}
	e = ts.waitFor(t, "cf", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if string(e.Output) != `{"error":{"Cause":"no stock","Error":"Rejected"},"n":1}` {
		t.Errorf("output %s", e.Output)
	}
}
