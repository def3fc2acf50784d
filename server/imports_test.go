package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// TestImportsOverTheAPI: a template (a definition with Parameters) is
// registered as a workflow; a workflow importing it as
// registry://review@^1.0.0 is registered with the version it resolved to
// in its lock, its Include expanded into what is stored, and runs; an
// inline definition may import the registry too; a file import, a URL and
// a constraint no version satisfies are refused at the definition.
func TestImportsOverTheAPI(t *testing.T) {
	ts := newTestServer(t)
	tmpl := json.RawMessage(`{"Parameters":{"Team":{"Type":"string","Required":true}},
		"StartAt":"Tag","States":{"Tag":{"Type":"Pass","Parameters":{"team":"{{Team | upper}}","doc.$":"$.doc"},"End":true}}}`)
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "review", Definition: tmpl, Label: "1.2.0"}, nil); code != http.StatusCreated {
		t.Fatalf("register the template: %d %s", code, body)
	}
	flow := func(imp string) json.RawMessage {
		return json.RawMessage(`{"Imports":{"review":"` + imp + `"},"StartAt":"Review","States":{
			"Review":{"Type":"Include","Template":"review","Parameters":{"Team":"ops"},"ResultPath":"$.review","End":true}}}`)
	}
	var w api.Workflow
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "triage", Definition: flow("registry://review@^1.0.0")}, &w); code != http.StatusCreated {
		t.Fatalf("register the workflow: %d %s", code, body)
	}
	if got := w.Lock["registry://review@^1.0.0"] + w.Lock["review"]; got != "review@1" {
		t.Errorf("lock = %v, want the import resolved to review@1", w.Lock)
	}
	var stored api.Workflow
	ts.call(t, RoleViewer, "GET", "/v1/workflows/triage", nil, &stored)
	if strings.Contains(string(stored.Definition), `"Include"`) || strings.Contains(string(stored.Definition), "{{") {
		t.Errorf("the stored definition is not expanded: %s", stored.Definition)
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", api.StartExecution{Workflow: "triage", Name: "t1", Input: json.RawMessage(`{"doc":"d"}`)}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	if e := ts.waitFor(t, "t1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" }); string(e.Output) != `{"doc":"d","review":{"doc":"d","team":"OPS"}}` {
		t.Errorf("output = %s", e.Output)
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", api.StartExecution{Definition: flow("registry://review@1.2.0"), Name: "t2", Input: json.RawMessage(`{"doc":"e"}`)}, nil); code != http.StatusCreated {
		t.Fatalf("start inline: %d %s", code, body)
	}
	ts.waitFor(t, "t2", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	for imp, want := range map[string]string{
		"./review.json":                   "/definition",
		"https://example.com/review.json": "/definition",
		"registry://review@^2.0.0":        "/definition",
	} {
		code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "bad", Definition: flow(imp)}, nil)
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), want) {
			t.Errorf("import %s: %d %s, want 422 at %s", imp, code, body, want)
		}
	}
	bad := json.RawMessage(`{"Parameters":{"Team":{"Type":"colour"}},"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`)
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "bad", Definition: bad}, nil); code != http.StatusUnprocessableEntity {
		t.Errorf("a template with a bad parameter type: %d %s, want 422", code, body)
	}
}
