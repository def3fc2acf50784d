package server

import (
	"encoding/json"
	"net/http"
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
