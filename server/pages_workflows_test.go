package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// TestWorkflowPages: the registered workflows, one with its versions and
// graph, validation with every problem at its place, and a start form for
// operators only.
func TestWorkflowPages(t *testing.T) {
	ts := newTestServer(t)
	def := json.RawMessage(`{"StartAt":"Greet","States":{"Greet":{"Type":"Pass","Result":"hi","ResultPath":"$.greeting","End":true}}}`)
	for _, d := range []json.RawMessage{def, json.RawMessage(`{"StartAt":"Greet","States":{"Greet":{"Type":"Pass","Result":"hello","ResultPath":"$.greeting","End":true}}}`)} {
		if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "greet<x>", Definition: d}, nil); code != http.StatusBadRequest {
			t.Fatalf("a name with <: %d %s, want 400", code, body)
		}
		if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "greet", Definition: d}, nil); code != http.StatusCreated {
			t.Fatalf("register: %d %s", code, body)
		}
	}
	viewer := ts.signedIn(t, RoleViewer)
	code, body, _ := viewer.get(t, "/workflows")
	if code != 200 || !strings.Contains(body, `<tr class="workflow" data-name="greet">`) || !strings.Contains(body, "<td>2</td>") {
		t.Fatalf("workflows page: %d\n%s", code, body)
	}
	code, body, _ = viewer.get(t, "/workflows/greet?version=1")
	if code != 200 || !strings.Contains(body, `<dd id="version">1</dd>`) || !strings.Contains(body, "<svg") || strings.Contains(body, `id="start-form"`) {
		t.Errorf("a viewer's workflow page: %d, want version 1, its graph and no start form\n%s", code, body)
	}
	csrf := viewer.csrf(t)
	code, body, _ = viewer.post(t, "/workflows", url.Values{"csrf": {csrf}, "definition": {`{"StartAt":"A","States":{"A":{"Type":"Pass"},"B":{"Type":"Wait"}}}`}})
	if code != 200 || strings.Count(body, `<li class="problem">`) < 2 || !strings.Contains(body, "/States/A") {
		t.Errorf("validation: %d, want every problem with its pointer\n%s", code, body)
	}
	if code, _, _ := viewer.post(t, "/workflows/greet/start", url.Values{"csrf": {csrf}, "version": {"1"}, "input": {"{}"}}); code != http.StatusForbidden {
		t.Errorf("a viewer's start: %d, want 403", code)
	}

	op := ts.signedIn(t, RoleOperator)
	code, body, _ = op.get(t, "/workflows/greet")
	if code != 200 || !strings.Contains(body, `id="start-form"`) || !strings.Contains(body, `<dd id="version">2</dd>`) {
		t.Fatalf("an operator's workflow page: %d\n%s", code, body)
	}
	opCSRF := op.csrf(t)
	if code, body, _ := op.post(t, "/workflows/greet/start", url.Values{"csrf": {opCSRF}, "version": {"1"}, "input": {"{oops"}}); code != http.StatusBadRequest || !strings.Contains(body, "the input is not JSON") {
		t.Errorf("a bad input: %d, want 400 with the reason\n%s", code, body)
	}
	code, _, h := op.post(t, "/workflows/greet/start", url.Values{"csrf": {opCSRF}, "version": {"1"}, "input": {`{"who":"ana"}`}, "name": {"g-1"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/g-1" {
		t.Fatalf("start: %d to %q", code, h.Get("Location"))
	}
	e := ts.waitFor(t, "g-1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if string(e.Output) != `{"greeting":"hi","who":"ana"}` || e.Workflow != "greet" {
		t.Errorf("g-1: %s %s, want version 1's output", e.Workflow, e.Output)
	}
	if code, _, _ := op.post(t, "/workflows/greet/start", url.Values{"csrf": {"forged"}, "version": {"1"}}); code != http.StatusForbidden {
		t.Errorf("a forged start: %d, want 403", code)
	}
	if code, _, _ := viewer.get(t, "/workflows/nope"); code != http.StatusNotFound {
		t.Errorf("an unknown workflow: %d, want 404", code)
	}
}

// TestTimelineChanges: the timeline says what each state changed, as the
// JSON Patch from its input to its output.
func TestTimelineChanges(t *testing.T) {
	ts := newTestServer(t)
	def := json.RawMessage(`{"StartAt":"Greet","States":{"Greet":{"Type":"Pass","Result":"hi","ResultPath":"$.greeting","Next":"Drop"},
		"Drop":{"Type":"Pass","Parameters":{"greeting.$":"$.greeting"},"End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "c-1", "definition": def, "input": json.RawMessage(`{"who":"ana"}`)}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "c-1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/c-1")
	for _, want := range []string{
		`<tr class="change op-add"><td>add</td><td><code>/greeting</code></td><td><code>&#34;hi&#34;</code></td></tr>`,
		`<tr class="change op-remove"><td>remove</td><td><code>/who</code></td><td><code></code></td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the timeline lacks %s", want)
		}
	}
}
