package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// TestWorkflows: register versions, read them, start an execution of a
// registered workflow pinned to its version; each refusal.
func TestWorkflows(t *testing.T) {
	ts := newTestServer(t)
	v1 := json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"one","ResultPath":"$.v","End":true}}}`)
	v2 := json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"two","ResultPath":"$.v","End":true}}}`)
	var w api.Workflow
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "greet", Definition: v1}, &w); code != http.StatusCreated || w.Version != 1 {
		t.Fatalf("register v1: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "greet", Definition: v1}, &w); code != http.StatusOK || w.Version != 1 {
		t.Errorf("register v1 again: %d %s, want 200 with version 1", code, body)
	}
	// A running execution stays on the version it started with.
	var e1 api.Execution
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "greet", Name: "g1"}, &e1); code != http.StatusCreated {
		t.Fatalf("start greet: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "greet", Definition: v2}, &w); code != http.StatusCreated || w.Version != 2 {
		t.Fatalf("register v2: %d %s", code, body)
	}
	e1 = ts.waitFor(t, "g1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if string(e1.Output) != `{"v":"one"}` || e1.Workflow != "greet" {
		t.Errorf("g1 = %s %s, want version 1's output", e1.Workflow, e1.Output)
	}
	ts.call(t, RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "greet", Name: "g2"}, nil)
	ts.call(t, RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "greet", Version: 1, Name: "g3"}, nil)
	if e := ts.waitFor(t, "g2", func(e api.Execution) bool { return e.Status == "SUCCEEDED" }); string(e.Output) != `{"v":"two"}` {
		t.Errorf("g2 (latest) = %s", e.Output)
	}
	if e := ts.waitFor(t, "g3", func(e api.Execution) bool { return e.Status == "SUCCEEDED" }); string(e.Output) != `{"v":"one"}` {
		t.Errorf("g3 (version 1) = %s", e.Output)
	}
	var got api.Workflow
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/workflows/greet?version=1", nil, &got); code != 200 || got.Version != 1 || len(got.Definition) == 0 {
		t.Errorf("get version 1: %d %s", code, body)
	}
	var list api.WorkflowList
	if ts.call(t, RoleViewer, "GET", "/v1/workflows", nil, &list); len(list.Workflows) != 1 || list.Workflows[0].Version != 2 {
		t.Errorf("list = %+v", list)
	}
	if ts.call(t, RoleViewer, "GET", "/v1/workflows/greet/versions", nil, &list); len(list.Workflows) != 2 {
		t.Errorf("versions = %+v", list)
	}
	var ex api.ExecutionList
	if ts.call(t, RoleViewer, "GET", "/v1/executions?workflow=greet&limit=2", nil, &ex); len(ex.Executions) != 2 || ex.Next == "" {
		t.Fatalf("first page = %+v", ex)
	}
	var page2 api.ExecutionList
	ts.call(t, RoleViewer, "GET", "/v1/executions?workflow=greet&limit=2&after="+ex.Next, nil, &page2)
	ids := []string{ex.Executions[0].ID, ex.Executions[1].ID}
	for _, e := range page2.Executions {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"g1", "g2", "g3"}) {
		t.Errorf("paged through %v, want g1 g2 g3 once each", ids)
	}

	for _, tc := range []struct {
		name   string
		role   Role
		method string
		path   string
		body   any
		status int
		ptr    string
	}{
		{"operator registers", RoleOperator, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "x", Definition: v1}, http.StatusForbidden, ""},
		{"bad name", RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "a/b", Definition: v1}, http.StatusBadRequest, "/name"},
		{"no name", RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Definition: v1}, http.StatusBadRequest, "/name"},
		{"invalid definition", RoleAdmin, "POST", "/v1/workflows", map[string]any{"name": "bad", "definition": json.RawMessage(`{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`)}, http.StatusUnprocessableEntity, "/definition/States/A"},
		{"unknown workflow", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "nope"}, http.StatusNotFound, "/workflow"},
		{"unknown version", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "greet", Version: 9}, http.StatusNotFound, "/workflow"},
		{"both", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "greet", Definition: v1}, http.StatusBadRequest, "/workflow"},
		{"get unknown", RoleViewer, "GET", "/v1/workflows/nope", nil, http.StatusNotFound, ""},
		{"bad version", RoleViewer, "GET", "/v1/workflows/greet?version=0", nil, http.StatusBadRequest, ""},
		{"bad cursor", RoleViewer, "GET", "/v1/executions?after=nobody", nil, http.StatusBadRequest, ""},
		{"bad time", RoleViewer, "GET", "/v1/executions?startedAfter=yesterday", nil, http.StatusBadRequest, ""},
	} {
		code, body := ts.call(t, tc.role, tc.method, tc.path, tc.body, nil)
		if code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.status)
			continue
		}
		if p := problemIn(t, body); tc.ptr != "" && !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool { return e.Pointer == tc.ptr }) {
			t.Errorf("%s: %s names no field at %s", tc.name, body, tc.ptr)
		}
	}
}
