package builtin_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// registryOf is a workflow registry of definitions by name.
type registryOf map[string]string

func (r registryOf) ResolveWorkflow(_ context.Context, name, ref string) ([]byte, string, error) {
	def, ok := r[name]
	if !ok {
		return nil, "", fmt.Errorf("no workflow %s: %w", name, engine.ErrNotFound)
	}
	return []byte(def), name + "@1", nil
}

// TestChildExecutionAsTool: a workflow agent of the agents file, offered to a
// loop agent as a tool, runs its workflow as a child execution when the
// model calls it, and the model gets the child's output; called by a Task
// directly it is the Task's child too.
func TestChildExecutionAsTool(t *testing.T) {
	chat := &chatServer{}
	srv := httptest.NewServer(chat)
	defer srv.Close()
	t.Setenv("LOOP_TEST_KEY", "sk-test")
	f, err := builtin.ParseAgentsFile([]byte(fmt.Sprintf(`{
	  "Hosts": {"Allow": [%q]},
	  "Models": {"fast": {"Provider": "openai", "Model": "gpt-test", "BaseURL": %q, "APIKeyEnv": "LOOP_TEST_KEY", "MaxRetries": 0}},
	  "Lookup": {"Type": "workflow", "Workflow": "lookup@1", "Description": "Looks an order up",
	    "InputSchema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}},
	  "Support": {"Type": "loop", "Model": "fast", "Tools": ["Lookup"], "MaxTurns": 4}
	}`, host(t, srv.URL), srv.URL+"/v1")))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st, Workflows: registryOf{
		"lookup": `{"StartAt":"Find","States":{"Find":{"Type":"Pass","Parameters":{"order.$":"$.order","status":"shipped"},"End":true}}}`,
	}})
	run := func(id, def string, input any) *engine.Result {
		t.Helper()
		m, err := states.Parse([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		res, err := x.Run(context.Background(), m, input, engine.StartOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run("loop", `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true}}}`, "Where is A-1?")
	if res.Status != engine.StatusSucceeded || !strings.Contains(fmt.Sprint(res.Output), "has shipped") {
		t.Fatalf("%s %v (%s: %s)", res.Status, res.Output, res.Error, res.Cause)
	}
	children := 0
	list, err := st.List(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if strings.HasPrefix(s.ID, engine.ChildWorkflowID("loop", "A#1", 0)+"/") {
			children++
		}
	}
	if children != 1 {
		t.Errorf("%d child executions of the loop's tool call, want 1: %+v", children, list)
	}

	res = run("direct", `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Lookup","End":true}}}`, map[string]any{"order": "B-2"})
	if res.Status != engine.StatusSucceeded || fmt.Sprint(res.Output) != "map[order:B-2 status:shipped]" {
		t.Errorf("a Task calling the workflow agent: %s %v (%s: %s)", res.Status, res.Output, res.Error, res.Cause)
	}
	if e, err := st.Load(context.Background(), engine.ChildWorkflowID("direct", "A#1", 0)+"/call"); err != nil || e.Parent != "direct" {
		t.Errorf("the direct call's child: %+v, %v", e, err)
	}
}

// TestWorkflowAgentRefused: a workflow agent needs a Workflow naming a
// workflow; other fields are refused at their pointer.
func TestWorkflowAgentRefused(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"W": {"Type": "workflow"}}`, "/W/Workflow"},
		{`{"W": {"Type": "workflow", "Workflow": "my flow"}}`, `/W/Workflow: Workflow "my flow" must be a registered workflow's name`},
		{`{"W": {"Type": "workflow", "Workflow": "flow@"}}`, `/W/Workflow: Workflow "flow@"`},
		{`{"W": {"Type": "workflow", "Workflow": "flow", "Command": ["x"]}}`, `/W/Command: unknown field "Command" (a workflow agent has Type, Comment, Description, InputSchema, Workflow)`},
	} {
		_, err := builtin.ParseAgentsFile([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAgentsFile(%s) = %v, want %q", tc.file, err, tc.want)
		}
	}
}
