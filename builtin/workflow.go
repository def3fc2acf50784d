package builtin

import (
	"context"
	"strings"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

// workflowFields are the fields of a workflow agent.
const workflowFields = "Type, Comment, Description, InputSchema, Workflow"

// Workflow returns an agent that runs a registered workflow as a child
// execution of its call: workflow is "name" or "name@ref" (a version, an
// alias, a semver label or constraint); the call's input is the child's,
// and the child's output the call's result. Offered to a loop agent as a
// tool, it is a workflow the model can call; a call repeated after a
// crash attaches to the child its first start made.
func Workflow(workflow string) agents.Agent {
	name, ref, _ := strings.Cut(workflow, "@")
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		return req.RunWorkflow(ctx, name, ref, req.Input)
	})
}

// workflowAgent reads a workflow agent: Workflow names a registered
// workflow, "name[@ref]".
func (p *fieldParser) workflowAgent() string {
	p.unknown("workflow", workflowFields)
	w := p.str("Workflow", true)
	if p.err != nil {
		return ""
	}
	name, ref, hasRef := strings.Cut(w, "@")
	if !states.ValidWorkflowName(name) || hasRef && (ref == "" || strings.ContainsAny(ref, " \t\n@/")) {
		p.fail("Workflow", "Workflow %q must be a registered workflow's name (letters, digits, '-', '_', '.'), optionally @version, @alias or @semver", w)
	}
	return w
}
