package server

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// testWorkflows resolves workflow names for Workflow states: a map from
// name to definition, every one at version 1.
type testWorkflows map[string]string

func (w testWorkflows) ResolveWorkflow(_ context.Context, name, ref string) ([]byte, string, error) {
	def, ok := w[name]
	if !ok || ref != "" {
		return nil, "", fmt.Errorf("no workflow %s@%s: %w", name, ref, engine.ErrNotFound)
	}
	return []byte(def), name + "@1", nil
}

// childWorkflows are the workflows the parents of these tests call.
var childWorkflows = testWorkflows{
	"research": `{"StartAt":"Look <up>","States":{"Look <up>":{"Type":"Pass","Result":{"found":"notes"},"Next":"Tidy"},"Tidy":{"Type":"Pass","End":true}}}`,
	"broken":   `{"StartAt":"Give up","States":{"Give up":{"Type":"Fail","Error":"Research.Closed","Cause":"the library is closed"}}}`,
	"reviewed": `{"StartAt":"Ok","States":{"Ok":{"Type":"Approval","Prompt":"Fine?","Options":["approve"],"ResultPath":"$.review","End":true}}}`,
}

// parentFlow starts four children: a Workflow state's, one in each of
// two Map items, a named fire-and-forget startExecution, and a failing one
// whose error is caught. Its first state's name needs escaping.
const parentFlow = `{"StartAt":"Research <&>","States":{
	"Research <&>":{"Type":"Workflow","WorkflowId":"research","ResultPath":"$.research","Next":"Each"},
	"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,"ResultPath":"$.each","Next":"Fire",
		"ItemProcessor":{"StartAt":"Deep","States":{"Deep":{"Type":"Workflow","WorkflowId":"research","End":true}}}},
	"Fire":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution",
		"Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:research","Input":{"x":1},"Name":"fired"},
		"ResultPath":"$.fired","Next":"Broken"},
	"Broken":{"Type":"Workflow","WorkflowId":"broken","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Done"}],"End":true},
	"Done":{"Type":"Succeed"}}}`

// newChildrenServer is a test server whose executor resolves
// childWorkflows, with parentFlow run to its end as execution "p".
func newChildrenServer(t *testing.T) *testServer {
	t.Helper()
	ts := newTestServer(t, func(c *Config) {
		c.Executor = engine.New(engine.Config{Store: c.Store.(engine.Store), AgentsFor: storedMocks, Workflows: childWorkflows})
	})
	m, err := states.Parse([]byte(parentFlow))
	if err != nil {
		t.Fatal(err)
	}
	input, err := jsonvalue.Decode([]byte(`{"items":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.s.x.Run(context.Background(), m, input, engine.StartOptions{ID: "p", MachineName: "triage"})
	ts.s.x.WaitDetached()
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("the parent: %+v, %v", res, err)
	}
	return ts
}

// TestChildExecutionAPI: GET /v1/executions/{id}/children lists the
// children in start order with the step that started each, its workflow
// and status; ?status= keeps some; a child has none; the client reads
// the same.
func TestChildExecutionAPI(t *testing.T) {
	ts := newChildrenServer(t)
	var l api.ChildExecutionList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/p/children", nil, &l); code != http.StatusOK {
		t.Fatalf("children: %d %s", code, body)
	}
	type row struct {
		ID, State, Workflow, Status string
		Detached                    bool
	}
	want := []row{
		{engine.ChildWorkflowID("p", "Research <&>#1", 0), "Research <&>#1", "research@1", "SUCCEEDED", false},
		{engine.ChildWorkflowID("p", "Each#1.0/0/Deep#1", 0), "Each#1.0/0/Deep#1", "research@1", "SUCCEEDED", false},
		{engine.ChildWorkflowID("p", "Each#1.0/1/Deep#1", 0), "Each#1.0/1/Deep#1", "research@1", "SUCCEEDED", false},
		{"fired", "Fire", "research@1", "SUCCEEDED", true},
		{engine.ChildWorkflowID("p", "Broken#1", 0), "Broken#1", "broken@1", "FAILED", false},
	}
	if l.Execution != "p" || len(l.Children) != len(want) {
		t.Fatalf("children = %+v, want %d", l, len(want))
	}
	for i, c := range l.Children {
		got := row{c.ID, c.State, c.Workflow, c.Status, c.Detached}
		if got != want[i] {
			t.Errorf("child %d = %+v, want %+v", i, got, want[i])
		}
		if c.StartedAt == nil || c.StoppedAt == nil || c.StoppedAt.Before(*c.StartedAt) {
			t.Errorf("child %s started %v, stopped %v", c.ID, c.StartedAt, c.StoppedAt)
		}
	}
	if l.Children[4].Error != "Research.Closed" {
		t.Errorf("the broken child's error %q, want Research.Closed", l.Children[4].Error)
	}

	if code, _ := ts.call(t, RoleViewer, "GET", "/v1/executions/p/children?status=failed", nil, &l); code != http.StatusOK || len(l.Children) != 1 || l.Children[0].Status != "FAILED" {
		t.Errorf("?status=failed: %d %+v, want the broken child", code, l.Children)
	}
	child := "/v1/executions/" + url.PathEscape(want[0].ID) + "/children"
	var none api.ChildExecutionList
	if code, body := ts.call(t, RoleViewer, "GET", child, nil, &none); code != http.StatusOK || none.Children == nil || len(none.Children) != 0 {
		t.Errorf("a child's children: %d %s, want an empty list", code, body)
	}

	c := client.New(ts.URL, ts.tokens[RoleViewer], nil)
	cl, err := c.Children(context.Background(), "p", "SUCCEEDED")
	if err != nil || len(cl.Children) != 4 || cl.Children[3].ID != "fired" {
		t.Errorf("client.Children = %+v, %v, want the 4 that succeeded", cl, err)
	}
	if _, err := c.Children(context.Background(), "nope", ""); client.StatusOf(err) != http.StatusNotFound {
		t.Errorf("client.Children of an unknown execution: %v, want a 404", err)
	}
}

// TestChildExecutionAPIRefusals: what GET /v1/executions/{id}/children
// refuses, and who may not call it.
func TestChildExecutionAPIRefusals(t *testing.T) {
	ts := newChildrenServer(t)
	for _, tc := range []struct {
		name, path string
		role       Role
		code       int
	}{
		{"unknown execution", "/v1/executions/nope/children", RoleViewer, http.StatusNotFound},
		{"unknown parameter", "/v1/executions/p/children?state=Fire", RoleViewer, http.StatusBadRequest},
		{"unknown status", "/v1/executions/p/children?status=DONE", RoleViewer, http.StatusBadRequest},
		{"status twice", "/v1/executions/p/children?status=FAILED&status=SUCCEEDED", RoleViewer, http.StatusBadRequest},
		{"no token", "/v1/executions/p/children", 0, http.StatusUnauthorized},
		{"a worker", "/v1/executions/p/children", RoleWorker, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, tc.role, "GET", tc.path, nil, nil)
			if code != tc.code {
				t.Fatalf("GET %s = %d %s, want %d", tc.path, code, body, tc.code)
			}
			var pr api.Problem
			if err := json.Unmarshal(body, &pr); err != nil || pr.Detail == "" {
				t.Errorf("GET %s: a problem without a detail: %s", tc.path, body)
			}
		})
	}
}

// TestChildStep reads the step from a child's id, and only from a
// Workflow child's.
func TestChildStep(t *testing.T) {
	for _, tc := range []struct {
		parent, child, step string
		ok                  bool
	}{
		{"p", "p/Research#1.0", "Research#1", true},
		{"p", "p/Each#1.0/3/Deep#2.1", "Each#1.0/3/Deep#2", true},
		{"a/b", "a/b/S.x#1.12", "S.x#1", true},
		{"p", "p/Each#1.0:3", "", false},              // a Distributed Map's child
		{"p", "fork-of-p", "", false},                 // a fork
		{"p", "fired", "", false},                     // named by its Task
		{"p", "p/Research#1.", "", false},             // no attempt
		{"p", "p/Research.0", "", false},              // no visit
		{"", "p/Research#1.0", "", false},             // no parent
		{"p", "q/Research#1.0", "", false},            // another's
		{"p", "p/Research#1.-1", "", false},           // not a number
		{"p", "p/Research#1.0~2", "Research#1", true}, // after a rollback
		{"p", "p/Research#1.0~", "", false},
		{"p", "p/Research#1.0~x", "", false},
		{"p", "p/Research#1~2", "", false},
	} {
		step, ok := ChildStep(tc.parent, tc.child)
		if step != tc.step || ok != tc.ok {
			t.Errorf("ChildStep(%q, %q) = %q, %v, want %q, %v", tc.parent, tc.child, step, ok, tc.step, tc.ok)
		}
	}
}

// TestChildExecutionPage: the page's HTML escapes the state names and ids
// of children and links to them by their escaped ids; a child's page
// links back; past pageChildren children, the page lists the first ones
// and says how many more there are.
func TestChildExecutionPage(t *testing.T) {
	ts := newChildrenServer(t)
	b := ts.signedIn(t, RoleViewer)
	code, body, _ := b.get(t, "/executions/p")
	if code != http.StatusOK {
		t.Fatalf("the parent's page: %d", code)
	}
	child := engine.ChildWorkflowID("p", "Research <&>#1", 0)
	for _, want := range []string{
		`<a class="child-state" href="#event-3">Research &lt;&amp;&gt;#1</a>`,
		`<a class="child-link" href="/executions/` + html.EscapeString(url.PathEscape(child)) + `">p/Research &lt;&amp;&gt;#1.0</a>`,
		`<li class="child" data-child="p/Research &lt;&amp;&gt;#1.0" data-node="Research &lt;&amp;&gt;">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the parent's page has no %s", want)
		}
	}
	if strings.Contains(body, "Research <&>") || strings.Contains(body, "more-children") {
		t.Error("the parent's page holds a state name unescaped, or says there are more children")
	}
	code, body, _ = b.get(t, "/executions/"+url.PathEscape(child))
	if want := `<dd id="child-parent"><a href="/executions/p">p</a>, state <code class="state">Research &lt;&amp;&gt;#1</code> (runs research@1)</dd>`; code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("the child's page: %d, no %s", code, want)
	}
	if strings.Contains(body, `id="children"`) {
		t.Error("the child's page lists children")
	}
	// A child its Task named: its parent's history says which state.
	code, body, _ = b.get(t, "/executions/fired")
	if want := `<dd id="child-parent"><a href="/executions/p">p</a>, state <code class="state">Fire</code> (runs research@1)</dd>`; code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("the named child's page: %d, no %s", code, want)
	}

	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":4,"End":true,
		"ItemProcessor":{"StartAt":"Deep","States":{"Deep":{"Type":"Workflow","WorkflowId":"research","End":true}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	items := strings.Repeat("0,", pageChildren+2)
	input, _ := jsonvalue.Decode([]byte(`{"items":[` + items[:len(items)-1] + `]}`))
	if res, err := ts.s.x.Run(context.Background(), m, input, engine.StartOptions{ID: "many"}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("many: %+v, %v", res, err)
	}
	_, body, _ = b.get(t, "/executions/many")
	if n := strings.Count(body, `<li class="child"`); n != pageChildren || !strings.Contains(body, `<p class="hint" id="more-children">2 more:`) {
		t.Errorf("a page of %d children lists %d, want %d and 2 more", pageChildren+2, n, pageChildren)
	}
}

// FuzzChildStep: ChildStep never panics, and a step it reads is the one
// the id was made of, as engine.ChildWorkflowID makes them (with "~N"
// after a rollback).
func FuzzChildStep(f *testing.F) {
	f.Add("p", "p/Research#1.0")
	f.Add("p", "p/Each#1.0/3/Deep#2.1")
	f.Add("p", "p/Each#1.0:3")
	f.Add("a/b", "a/b/.#.")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, parent, child string) {
		step, ok := ChildStep(parent, child)
		if !ok {
			if step != "" {
				t.Errorf("ChildStep(%q, %q) = %q, false", parent, child, step)
			}
			return
		}
		prefix := parent + "/" + step + "."
		attempt, cut := strings.CutPrefix(child, prefix)
		attempt, again, rolled := strings.Cut(attempt, "~")
		if !cut || !digits(attempt) || rolled && !digits(again) || !strings.Contains(step, "#") {
			t.Errorf("ChildStep(%q, %q) = %q: the id is not <parent>/<step>.<attempt>", parent, child, step)
		}
		if !engine.IsWorkflowChild(child, parent) {
			t.Errorf("ChildStep(%q, %q) reads a step of what IsWorkflowChild says is no Workflow child", parent, child)
		}
	})
}
