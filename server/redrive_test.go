package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// routed fails unless its input's kind is "a"; its guard needs a kind.
const routed = `{"StartAt":"Route","Governance":{"Guard":{"Schema":{"type":"object","required":["kind"]}}},"States":{
	"Route":{"Type":"Choice","Choices":[{"Variable":"$.kind","StringEquals":"a","Next":"A"}]},
	"A":{"Type":"Pass","End":true}}}`

// failedExecution starts an execution of routed that fails.
func failedExecution(t *testing.T, ts *testServer, name string) {
	t.Helper()
	start := map[string]any{"definition": json.RawMessage(routed), "input": json.RawMessage(`{"kind":"z"}`), "name": name}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, name, func(e api.Execution) bool { return e.Status == "FAILED" })
}

func TestRedriveOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	failedExecution(t, ts, "c")
	path := "/v1/executions/c/redrive"
	fix := map[string]any{"patch": json.RawMessage(`[{"op":"test","path":"/kind","value":"z"},{"op":"replace","path":"/kind","value":"a"}]`)}

	for _, role := range []Role{RoleViewer, RoleApprover} {
		if code, body := ts.call(t, role, "POST", path, fix, nil); code != http.StatusForbidden {
			t.Errorf("%v: %d %s, want 403", role, code, body)
		}
	}
	refusals := []struct {
		name    string
		body    any
		want    int
		pointer string
	}{
		{"unknown field", `{"patch":[],"note":1}`, http.StatusBadRequest, ""},
		{"not strict JSON", `{"patch":[}`, http.StatusBadRequest, ""},
		{"patch not an array", map[string]any{"patch": map[string]any{"op": "add"}}, http.StatusBadRequest, "/patch"},
		{"unknown op", map[string]any{"patch": json.RawMessage(`[{"op":"replace","path":"/kind","value":"a"},{"op":"merge","path":"/x"}]`)}, http.StatusBadRequest, "/patch/1/op"},
		{"bad pointer", map[string]any{"patch": json.RawMessage(`[{"op":"remove","path":"kind"}]`)}, http.StatusBadRequest, "/patch/0/path"},
		{"test fails", map[string]any{"patch": json.RawMessage(`[{"op":"test","path":"/kind","value":"q"}]`)}, http.StatusBadRequest, "/patch/0/value"},
		{"missing member", map[string]any{"patch": json.RawMessage(`[{"op":"remove","path":"/nope"}]`)}, http.StatusBadRequest, "/patch/0/path"},
		{"guard", map[string]any{"patch": json.RawMessage(`[{"op":"remove","path":"/kind"}]`)}, http.StatusUnprocessableEntity, "/patch"},
		{"unknown execution", nil, http.StatusNotFound, ""},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.want == http.StatusNotFound {
				p = "/v1/executions/nope/redrive"
			}
			code, body := ts.call(t, RoleOperator, "POST", p, tc.body, nil)
			if code != tc.want {
				t.Fatalf("%d %s, want %d", code, body, tc.want)
			}
			pr := problemIn(t, body)
			if tc.pointer != "" && (len(pr.Errors) != 1 || pr.Errors[0].Pointer != tc.pointer) {
				t.Errorf("problem %+v, want one error at %s", pr, tc.pointer)
			}
		})
	}
	var e api.Execution
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/c", nil, &e); code != 200 || e.Status != "FAILED" {
		t.Fatalf("after the refusals: %d %s, want FAILED", code, body)
	}

	e = api.Execution{}
	code, body := ts.call(t, RoleOperator, "POST", path, fix, &e)
	if code != http.StatusAccepted || e.ID != "c" || e.Status != "RUNNING" || e.Error != "" {
		t.Fatalf("redrive: %d %s, want 202, RUNNING without the error", code, body)
	}
	e = ts.waitFor(t, "c", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if string(e.Output) != `{"kind":"a"}` {
		t.Errorf("output %s, want {\"kind\":\"a\"}", e.Output)
	}
	if code, body := ts.call(t, RoleOperator, "POST", path, nil, nil); code != http.StatusConflict || problemIn(t, body).Type != api.ProblemType+"not-redrivable" {
		t.Errorf("redrive of a SUCCEEDED execution: %d %s, want 409 not-redrivable", code, body)
	}

	// Without a body it runs the failed state again as it was.
	failedExecution(t, ts, "d")
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/d/redrive", nil, nil); code != http.StatusAccepted {
		t.Fatalf("redrive without a body: %d %s", code, body)
	}
	// The answer comes once the redrive is recorded (RUNNING): FAILED again
	// means the failed state ran again.
	ts.waitFor(t, "d", func(e api.Execution) bool { return e.Status == "FAILED" })
	var hist api.History
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/d/history", nil, &hist); code != 200 {
		t.Fatalf("history: %d %s", code, body)
	}
	count := map[string]int{}
	for _, ev := range hist.Events {
		count[ev.Type]++
	}
	if count["ExecutionRedriven"] != 1 || count["ExecutionFailed"] != 2 || count["ChoiceStateEntered"] != 2 {
		t.Errorf("history counts %v, want 1 ExecutionRedriven, 2 ExecutionFailed, 2 ChoiceStateEntered", count)
	}
}
