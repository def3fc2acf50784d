package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

// TestSandboxRefusedWhereTheMachineCannot: on a machine that cannot
// sandbox, a workflow with a sandboxed Tools block (a Task's or the
// DefaultTools) is refused at start, one problem per block; one without
// starts.
func TestSandboxRefusedWhereTheMachineCannot(t *testing.T) {
	was := sandboxAvailable
	t.Cleanup(func() { sandboxAvailable = was })
	sandboxAvailable = func() error { return errors.New("bwrap: not installed") }
	m, err := states.Parse([]byte(`{"StartAt":"T","DefaultTools":{"Sandboxed":true},"States":{
		"T":{"Type":"Task","Agent":"A","Next":"U","Tools":{"Sandboxed":true,"Sandbox":{"Network":true}}},
		"U":{"Type":"Task","Agent":"A","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = checkSandboxes(m, agents.NewRegistry())
	var list states.ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("checkSandboxes = %v, want a problem for the DefaultTools and one for T", err)
	}
	if list[0].Pointer != "/DefaultTools" || list[1].Pointer != "/States/T/Tools" || list[1].State != "T" {
		t.Errorf("problems at %s and %s (%s), want /DefaultTools and /States/T/Tools (T)", list[0].Pointer, list[1].Pointer, list[1].State)
	}
	if !strings.Contains(list[1].Msg, "this machine cannot sandbox: bwrap: not installed") || !strings.Contains(list[1].Msg, "never runs unsandboxed") {
		t.Errorf("message = %q", list[1].Msg)
	}
	plain, err := states.Parse([]byte(`{"StartAt":"U","States":{"U":{"Type":"Task","Agent":"A","End":true,"Tools":{"Allowed":["x"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSandboxes(plain, agents.NewRegistry()); err != nil {
		t.Errorf("checkSandboxes of a workflow without a sandbox = %v", err)
	}
}
