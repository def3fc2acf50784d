package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// TestListShowsPendingApprovals: an execution waiting for an approval
// lists it, as describing it does (the list showed "approvals": []).
func TestListShowsPendingApprovals(t *testing.T) {
	ts := newTestServer(t)
	start := map[string]any{"definition": json.RawMessage(reviewFlow), "input": json.RawMessage(`{"topic":"x"}`), "mock": json.RawMessage(reviewMock), "name": "r1"}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	described := ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "WAITING" })
	var list api.ExecutionList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions?status=WAITING", nil, &list); code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Executions) != 1 {
		t.Fatalf("list = %+v, want the waiting execution", list.Executions)
	}
	got, want := list.Executions[0].Approvals, described.Approvals
	if len(got) != 1 || len(want) != 1 || got[0].ID != want[0].ID || got[0].State != "Review" || got[0].Digest != want[0].Digest {
		t.Errorf("listed approvals = %+v, want those described: %+v", got, want)
	}
}

// TestStartNamesInlineDefinition: machineName names an inline definition
// in lists and in $$.StateMachine.Name; without it the name is
// "StateMachine"; a bad name, or one beside a registered workflow, is a 400
// at /machineName.
func TestStartNamesInlineDefinition(t *testing.T) {
	ts := newTestServer(t)
	def := json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"m.$":"$$.StateMachine.Name"},"End":true}}}`)
	for _, tc := range []struct{ id, machine, want string }{{"named", "orders-v2", "orders-v2"}, {"unnamed", "", "StateMachine"}} {
		start := map[string]any{"definition": def, "name": tc.id}
		if tc.machine != "" {
			start["machineName"] = tc.machine
		}
		if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
			t.Fatalf("start %s: %d %s", tc.id, code, body)
		}
		e := ts.waitFor(t, tc.id, func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
		if e.Workflow != tc.want || string(e.Output) != `{"m":"`+tc.want+`"}` {
			t.Errorf("%s: workflow %q, output %s; want %q", tc.id, e.Workflow, e.Output, tc.want)
		}
	}
	for _, bad := range []map[string]any{
		{"definition": def, "machineName": "a b"},
		{"definition": def, "machineName": "x\u202e"},
		{"workflow": "orders", "machineName": "orders"},
	} {
		code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", bad, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "/machineName") {
			t.Errorf("start %v: %d %s, want 400 at /machineName", bad, code, body)
		}
	}
}
