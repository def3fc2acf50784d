package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChildExecutionCLI: `aslrun run` of a definition whose Task is
// states:startExecution.sync:2 with no agent mapped to it runs the --db's
// registered workflow as a child (no agent needed, none refused), and a
// Workflow state does the same.
func TestChildExecutionCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	child := writeFile(t, dir, "child.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"found.$":"$.topic"},"End":true}}}`)
	if code, out, errOut := invoke(t, "", "workflow", "register", child, "--name", "research", "--db", db); code != 0 {
		t.Fatalf("register: exit %d %s %s", code, out, errOut)
	}
	for name, def := range map[string]string{
		"resource.json": `{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2",
			"Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:research","Input":{"topic":"refunds"}},"OutputPath":"$.Output","End":true}}}`,
		"state.json": `{"StartAt":"S","States":{"S":{"Type":"Workflow","WorkflowId":"research","Input":{"topic":"refunds"},"End":true}}}`,
	} {
		f := writeFile(t, dir, name, def)
		code, out, errOut := invoke(t, "", "run", f, "--db", db)
		if code != 0 || !strings.Contains(out, `"found": "refunds"`) {
			t.Errorf("run %s: exit %d %s %s", name, code, out, errOut)
		}
	}
}
