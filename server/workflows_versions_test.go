package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// versionFlow is a workflow that waits for an approval and then says
// which version it is.
func versionFlow(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"StartAt":"Hold","States":{
"Hold":{"Type":"Approval","Prompt":"go?","Options":["go"],"ResultPath":"$.review","Next":"Say"},
"Say":{"Type":"Pass","Result":"v%d","ResultPath":"$.v","OutputPath":"$.v","End":true}}}`, n))
}

// approveAll approves the pending approval of execution id.
func (ts *testServer) approveAll(t *testing.T, id string) {
	t.Helper()
	e := ts.waitFor(t, id, func(e api.Execution) bool { return e.Status == "WAITING" && len(e.Approvals) == 1 })
	ap := e.Approvals[0]
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/decision", map[string]any{"option": "go", "digest": ap.Digest}, nil); code != http.StatusAccepted {
		t.Fatalf("approve %s: %d %s", id, code, body)
	}
}

// TestWorkflowVersionPinned: an execution started on v1 finishes on v1
// after v2 is published; moving an alias affects only executions started
// afterwards; labels, aliases and refs name versions at the start.
func TestWorkflowVersionPinned(t *testing.T) {
	ts := newTestServer(t)
	register := func(n int, label string) api.Workflow {
		t.Helper()
		var w api.Workflow
		if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "hold", Definition: versionFlow(n), Label: label}, &w); code != http.StatusCreated || w.Version != n || w.Label != label {
			t.Fatalf("register v%d: %d %s", n, code, body)
		}
		return w
	}
	start := func(id string, req api.StartExecution) {
		t.Helper()
		req.Workflow, req.Name = "hold", id
		if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", req, nil); code != http.StatusCreated {
			t.Fatalf("start %s: %d %s", id, code, body)
		}
	}
	setAlias := func(alias string, v int) {
		t.Helper()
		var a api.WorkflowAlias
		if code, body := ts.call(t, RoleAdmin, "PUT", "/v1/workflows/hold/aliases/"+alias, api.SetAlias{Version: v}, &a); code != http.StatusOK || a.Version != v || a.Alias != alias {
			t.Fatalf("set %s to %d: %d %s", alias, v, code, body)
		}
	}
	register(1, "1.0.0")
	setAlias("prod", 1)
	start("on-v1", api.StartExecution{})
	start("on-prod-1", api.StartExecution{Alias: "prod"})
	register(2, "1.1.0")
	start("on-latest", api.StartExecution{})
	start("on-prod-still-1", api.StartExecution{Ref: "prod"})
	start("on-caret", api.StartExecution{Ref: "^1.0.0"})
	start("on-label", api.StartExecution{Ref: "1.0.0"})
	setAlias("prod", 2)
	start("on-prod-2", api.StartExecution{Alias: "prod"})
	for id, want := range map[string]string{
		"on-v1": "v1", "on-prod-1": "v1", "on-latest": "v2", "on-prod-still-1": "v1",
		"on-caret": "v2", "on-label": "v1", "on-prod-2": "v2",
	} {
		ts.approveAll(t, id)
		e := ts.waitFor(t, id, func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
		if string(e.Output) != `"`+want+`"` {
			t.Errorf("%s = %s, want %q", id, e.Output, want)
		}
		if e.Workflow != "hold" {
			t.Errorf("%s workflow = %q, want hold", id, e.Workflow)
		}
	}

	var list api.WorkflowList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/workflows/hold/versions", nil, &list); code != 200 || len(list.Workflows) != 2 {
		t.Fatalf("versions: %d %s", code, body)
	}
	if w := list.Workflows[1]; w.Label != "1.1.0" || !slices.Equal(w.Aliases, []string{"prod"}) || list.Workflows[0].Aliases != nil {
		t.Errorf("versions = %+v, want v2 labelled 1.1.0 with alias prod", list.Workflows)
	}
	var got api.Workflow
	for ref, want := range map[string]int{"1.0.0": 1, "prod": 2, "%5E1.0.0": 2, "1": 1, "latest": 2} {
		if code, body := ts.call(t, RoleViewer, "GET", "/v1/workflows/hold?version="+ref, nil, &got); code != 200 || got.Version != want {
			t.Errorf("GET ?version=%s: %d %s, want version %d", ref, code, body, want)
		}
	}
	var aliases api.AliasList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/workflows/hold/aliases", nil, &aliases); code != 200 || len(aliases.Aliases) != 1 || aliases.Aliases[0].Version != 2 {
		t.Errorf("aliases: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleAdmin, "DELETE", "/v1/workflows/hold/aliases/prod", nil, nil); code != http.StatusNoContent {
		t.Errorf("delete prod: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "hold", Alias: "prod"}, nil); code != http.StatusNotFound {
		t.Errorf("start on a deleted alias: %d %s, want 404", code, body)
	}
}

// TestWorkflowVersionDiffAPI: the diff of two versions by number, label
// or alias.
func TestWorkflowVersionDiffAPI(t *testing.T) {
	ts := newTestServer(t)
	for n, label := range []string{"1.0.0", "2.0.0"} {
		if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "hold", Definition: versionFlow(n + 1), Label: label}, nil); code != http.StatusCreated {
			t.Fatalf("register: %d %s", code, body)
		}
	}
	var d api.WorkflowDiff
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/workflows/hold/diff?from=1.0.0&to=2", nil, &d); code != 200 {
		t.Fatalf("diff: %d %s", code, body)
	}
	if d.Name != "hold" || d.From != 1 || d.To != 2 || d.FromLabel != "1.0.0" || d.ToLabel != "2.0.0" || len(d.Changed) != 1 || d.Changed[0].State != "Say" {
		t.Fatalf("diff = %+v, want Say changed from 1 to 2", d)
	}
	if c := d.Changed[0].Changes; len(c) != 1 || c[0].Pointer != "/States/Say/Result" || string(c[0].Before) != `"v1"` || string(c[0].After) != `"v2"` {
		t.Errorf("changes of Say = %+v, want /States/Say/Result v1 → v2", c)
	}
}

// TestWorkflowVersionRefusals: each refusal of labels, aliases, refs and
// diffs, with its status and the field it names.
func TestWorkflowVersionRefusals(t *testing.T) {
	ts := newTestServer(t)
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "hold", Definition: versionFlow(1), Label: "1.2.0"}, nil); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
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
		{"label taken", RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "hold", Definition: versionFlow(2), Label: "1.2.0"}, http.StatusConflict, "/label"},
		{"label not semver", RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "hold", Definition: versionFlow(2), Label: "v1.2"}, http.StatusBadRequest, "/label"},
		{"lock not name@N", RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "hold", Definition: versionFlow(2), Lock: map[string]string{"r": "review"}}, http.StatusBadRequest, "/lock"},
		{"alias not admin", RoleOperator, "PUT", "/v1/workflows/hold/aliases/prod", api.SetAlias{Version: 1}, http.StatusForbidden, ""},
		{"alias all digits", RoleAdmin, "PUT", "/v1/workflows/hold/aliases/12", api.SetAlias{Version: 1}, http.StatusBadRequest, ""},
		{"alias semver", RoleAdmin, "PUT", "/v1/workflows/hold/aliases/1.2.0", api.SetAlias{Version: 1}, http.StatusBadRequest, ""},
		{"alias version 0", RoleAdmin, "PUT", "/v1/workflows/hold/aliases/prod", api.SetAlias{}, http.StatusBadRequest, "/version"},
		{"alias unknown version", RoleAdmin, "PUT", "/v1/workflows/hold/aliases/prod", api.SetAlias{Version: 7}, http.StatusNotFound, ""},
		{"alias unknown workflow", RoleAdmin, "PUT", "/v1/workflows/nope/aliases/prod", api.SetAlias{Version: 1}, http.StatusNotFound, ""},
		{"delete unset alias", RoleAdmin, "DELETE", "/v1/workflows/hold/aliases/prod", nil, http.StatusNotFound, ""},
		{"delete not admin", RoleOperator, "DELETE", "/v1/workflows/hold/aliases/prod", nil, http.StatusForbidden, ""},
		{"aliases of unknown", RoleViewer, "GET", "/v1/workflows/nope/aliases", nil, http.StatusNotFound, ""},
		{"start unknown alias", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "hold", Alias: "staging"}, http.StatusNotFound, "/workflow"},
		{"start bad alias", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "hold", Alias: "1.2.0"}, http.StatusBadRequest, "/alias"},
		{"start bad ref", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "hold", Ref: "^^1"}, http.StatusBadRequest, "/ref"},
		{"start no match", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "hold", Ref: "^2.0.0"}, http.StatusNotFound, "/workflow"},
		{"start two refs", RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "hold", Version: 1, Ref: "1.2.0"}, http.StatusBadRequest, "/ref"},
		{"ref without workflow", RoleOperator, "POST", "/v1/executions", api.StartExecution{Ref: "1.2.0"}, http.StatusBadRequest, "/workflow"},
		{"get bad ref", RoleViewer, "GET", "/v1/workflows/hold?version=a%20b", nil, http.StatusBadRequest, ""},
		{"get no match", RoleViewer, "GET", "/v1/workflows/hold?version=%5E3.0.0", nil, http.StatusNotFound, ""},
		{"diff without to", RoleViewer, "GET", "/v1/workflows/hold/diff?from=1", nil, http.StatusBadRequest, ""},
		{"diff unknown version", RoleViewer, "GET", "/v1/workflows/hold/diff?from=1&to=5", nil, http.StatusNotFound, ""},
		{"diff bad ref", RoleViewer, "GET", "/v1/workflows/hold/diff?from=1&to=%3E%3E", nil, http.StatusBadRequest, ""},
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
