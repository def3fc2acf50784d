package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// startWaiting starts reviewFlow as id and waits for its approval.
func (ts *testServer) startWaiting(t *testing.T, id string) {
	t.Helper()
	start := map[string]any{"definition": json.RawMessage(reviewFlow), "mock": json.RawMessage(reviewMock), "name": id}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start %s: %d %s", id, code, body)
	}
	ts.waitFor(t, id, func(e api.Execution) bool { return e.Status == "WAITING" && len(e.Approvals) == 1 })
}

// inbox is the number of pending approvals the inbox lists.
func (ts *testServer) inbox(t *testing.T) int {
	t.Helper()
	var list api.ApprovalList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/approvals", nil, &list); code != http.StatusOK {
		t.Fatalf("inbox: %d %s", code, body)
	}
	return len(list.Approvals)
}

// TestStopWaiting: viewers and approvers may not stop an execution; an
// operator stops a waiting one, whose approval leaves the inbox, and its
// history verifies; a second stop is a 409, an unknown execution a 404.
func TestStopWaiting(t *testing.T) {
	ts := newTestServer(t)
	ts.startWaiting(t, "w1")
	if n := ts.inbox(t); n != 1 {
		t.Fatalf("inbox has %d approvals, want 1", n)
	}
	for _, role := range []Role{RoleViewer, RoleApprover} {
		code, body := ts.call(t, role, "POST", "/v1/executions/w1/stop", nil, nil)
		if p := problemIn(t, body); code != http.StatusForbidden || p.Status != http.StatusForbidden {
			t.Errorf("%v stop: %d %s, want 403", role, code, body)
		}
	}
	if code, body := ts.call(t, 0, "POST", "/v1/executions/w1/stop", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("stop without a token: %d %s, want 401", code, body)
	}
	ts.waitFor(t, "w1", func(e api.Execution) bool { return e.Status == "WAITING" }) // refused: unchanged

	var e api.Execution
	code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/w1/stop", api.Stop{Error: "Ops.Stopped", Cause: "the post is cancelled"}, &e)
	if code != http.StatusOK {
		t.Fatalf("operator stop: %d %s, want 200", code, body)
	}
	if e.ID != "w1" || e.Status != "ABORTED" || e.Error != "Ops.Stopped" || e.Cause != "the post is cancelled" || e.StoppedAt == nil || len(e.Approvals) != 0 || e.Output != nil {
		t.Errorf("stopped execution %s, want ABORTED with its error and cause, a stop time and no approval", body)
	}
	if n := ts.inbox(t); n != 0 {
		t.Errorf("inbox has %d approvals after the stop, want none", n)
	}
	var h api.History
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/w1/history?verify=true", nil, &h); code != http.StatusOK || !h.Verified {
		t.Fatalf("history: %d %s", code, body)
	}
	if last := h.Events[len(h.Events)-1]; last.Type != "ExecutionAborted" || last.Error != "Ops.Stopped" || last.Cause != "the post is cancelled" {
		t.Errorf("history ends with %+v, want ExecutionAborted with the error and cause", last)
	}
	var list api.ExecutionList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions?status=aborted", nil, &list); code != http.StatusOK || len(list.Executions) != 1 {
		t.Errorf("list of aborted executions: %d %s", code, body)
	}

	code, body = ts.call(t, RoleOperator, "POST", "/v1/executions/w1/stop", nil, nil)
	if p := problemIn(t, body); code != http.StatusConflict || !strings.HasSuffix(p.Type, "/ended") {
		t.Errorf("second stop: %d %s, want 409 ended", code, body)
	}
	code, body = ts.call(t, RoleOperator, "POST", "/v1/executions/nobody/stop", nil, nil)
	if p := problemIn(t, body); code != http.StatusNotFound || p.Status != http.StatusNotFound {
		t.Errorf("stop of an unknown execution: %d %s, want 404", code, body)
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/w1/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resume of a stopped execution: %d %s, want 409", code, body)
	}
}

// TestStopRunning: an execution whose agent call is in flight (a mock
// that takes ten minutes) is stopped at once, with an empty body.
func TestStopRunning(t *testing.T) {
	ts := newTestServer(t)
	start := map[string]any{
		"definition": json.RawMessage(`{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","End":true}}}`),
		"mock":       json.RawMessage(`{"Slow":{"0":{"Return":{},"DelaySeconds":600}}}`), "name": "r1",
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	var e api.Execution
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/r1/stop", nil, &e); code != http.StatusOK || e.Status != "ABORTED" || e.Error != "" || e.Cause != "" {
		t.Fatalf("stop: %d %s, want 200 ABORTED without error or cause", code, body)
	}
	var h api.History
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/r1/history?verify=true", nil, &h); code != http.StatusOK || !h.Verified {
		t.Fatalf("history: %d %s", code, body)
	}
	if last := h.Events[len(h.Events)-1]; last.Type != "ExecutionAborted" {
		t.Errorf("history ends with %s, want ExecutionAborted", last.Type)
	}
}

// TestStopRefusesBodies: a stop body is strict JSON with known fields of
// bounded length; a refused stop changes nothing.
func TestStopRefusesBodies(t *testing.T) {
	ts := newTestServer(t)
	ts.startWaiting(t, "b1")
	for _, tc := range []struct {
		name    string
		body    string
		status  int
		pointer string
	}{
		{"not JSON", `{"error":`, http.StatusBadRequest, ""},
		{"not an object", `["x"]`, http.StatusBadRequest, ""},
		{"unknown field", `{"reason":"x"}`, http.StatusBadRequest, ""},
		{"duplicate key", `{"error":"a","error":"b"}`, http.StatusBadRequest, ""},
		{"error not a string", `{"error":5}`, http.StatusBadRequest, "/error"},
		{"cause not a string", `{"cause":{}}`, http.StatusBadRequest, "/cause"},
		{"error too long", `{"error":"` + strings.Repeat("é", api.MaxStopError+1) + `"}`, http.StatusBadRequest, "/error"},
		{"cause too long", `{"cause":"` + strings.Repeat("x", api.MaxStopCause+1) + `"}`, http.StatusBadRequest, "/cause"},
		{"too large", `{"cause":"` + strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/b1/stop", tc.body, nil)
			p := problemIn(t, body)
			if code != tc.status || p.Status != tc.status {
				t.Fatalf("%d %s, want %d", code, body, tc.status)
			}
			if tc.pointer != "" && !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool { return e.Pointer == tc.pointer }) {
				t.Errorf("problem %s names no field at %s", body, tc.pointer)
			}
		})
	}
	if n := ts.inbox(t); n != 1 {
		t.Errorf("inbox has %d approvals after refused stops, want 1", n)
	}
	// At the bounds, it stops.
	var e api.Execution
	full := api.Stop{Error: strings.Repeat("é", api.MaxStopError), Cause: strings.Repeat("x", api.MaxStopCause)}
	if code, _ := ts.call(t, RoleOperator, "POST", "/v1/executions/b1/stop", full, &e); code != http.StatusOK || e.Status != "ABORTED" || e.Error != full.Error || e.Cause != full.Cause {
		t.Errorf("stop at the bounds: %d, status %s, want 200 ABORTED with the error and cause", code, e.Status)
	}
}
