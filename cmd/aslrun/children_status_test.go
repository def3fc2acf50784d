package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// registerResearch registers workflow "research" (two Pass states) in the
// bbolt database db.
func registerResearch(t *testing.T, db string) {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(`{"StartAt":"Look","States":{"Look":{"Type":"Pass","Result":"notes","ResultPath":"$.found","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := jsonvalue.Marshal(v)
	hash, _ := jsonvalue.CanonicalHash(v)
	st, err := store.OpenBolt(db, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.RegisterWorkflow(context.Background(), "research", text, hash, store.VersionMeta{}); err != nil {
		t.Fatal(err)
	}
}

// TestChildExecutionStatus: status names a Workflow state's child as its
// parent's child at its state, and lists a parent's children, in text and
// JSON, from the database and through the API of the serve holding it,
// alike; list names the child as such too.
func TestChildExecutionStatus(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	registerResearch(t, db)
	flow := writeFile(t, dir, "flow.json", `{"StartAt":"Research","States":{
		"Research":{"Type":"Workflow","WorkflowId":"research","ResultPath":"$.a","Next":"Named"},
		"Named":{"Type":"Workflow","WorkflowId":"research","ResultPath":"$.b","End":true}}}`)
	if code, out, errOut := invoke(t, "", "run", flow, "--name", "p", "--db", db); code != 0 {
		t.Fatalf("run: exit %d %s %s", code, out, errOut)
	}
	child, second := engine.ChildWorkflowID("p", "Research#1", 0), engine.ChildWorkflowID("p", "Named#1", 0)

	status := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errOut := invoke(t, "", append([]string{"status"}, append(args, "--db", db)...)...)
		if code != 0 {
			t.Fatalf("status %v: exit %d %s", args, code, errOut)
		}
		return out
	}
	check := func(t *testing.T) (parentJSON, childJSON string) {
		t.Helper()
		parentJSON = status(t, "p", "--json")
		var p struct {
			Children []struct {
				ID, State, Workflow, Status string
				Detached                    bool
			}
		}
		if err := json.Unmarshal([]byte(parentJSON), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Children) != 2 || p.Children[0].ID != child || p.Children[0].State != "Research#1" || p.Children[0].Workflow != "research@1" ||
			p.Children[0].Status != "SUCCEEDED" || p.Children[1].ID != second || p.Children[1].State != "Named#1" || p.Children[1].Detached {
			t.Errorf("status p --json children: %s", parentJSON)
		}
		text := status(t, "p")
		if !strings.Contains(text, child+"  state Research#1  workflow research@1  SUCCEEDED") || !strings.Contains(text, second+"  state Named#1") {
			t.Errorf("status p lists no children:\n%s", text)
		}
		childJSON = status(t, child, "--json")
		var c map[string]any
		if err := json.Unmarshal([]byte(childJSON), &c); err != nil {
			t.Fatal(err)
		}
		if c["parent"] != "p" || c["parentState"] != "Research#1" || len(c["children"].([]any)) != 0 {
			t.Errorf("status %s --json: %s", child, childJSON)
		}
		if text := status(t, child); !strings.Contains(text, "p, state Research#1") || strings.Contains(text, "forked") {
			t.Errorf("status %s does not name its parent's state:\n%s", child, text)
		}
		return parentJSON, childJSON
	}
	localParent, localChild := check(t)
	code, out, _ := invoke(t, "", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "(child of p, state Research#1)") {
		t.Errorf("list: exit %d\n%s\nwant the child named as p's", code, out)
	}

	if testing.Short() {
		return
	}
	p := startServe(t, db, "--grace", "5s")
	remoteParent, remoteChild := check(t)
	// Usage is unknown through the API: the rest is alike.
	if withoutUsage(t, remoteParent) != withoutUsage(t, localParent) || withoutUsage(t, remoteChild) != withoutUsage(t, localChild) {
		t.Errorf("through the API:\n%s\n%s\nfrom the database:\n%s\n%s", remoteParent, remoteChild, localParent, localChild)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d; log:\n%s", code, p.log)
	}
}

// withoutUsage is status --json's out without its usage.
func withoutUsage(t *testing.T, out string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "usage")
	b, _ := json.Marshal(m)
	return string(b)
}
