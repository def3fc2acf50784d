package postgres

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// TestChildExecutionOnAnotherServer: a parent running on server A, whose only slot
// it holds, starts a Workflow child; A has no room for it, so server B
// takes it from the database and runs it (B's agent answers); the parent
// waits for it without a slot and ends with the output of the child B ran.
func TestChildExecutionOnAnotherServer(t *testing.T) {
	url := testServer.Schema(t)
	ctx := context.Background()
	release := make(chan struct{})
	open := func(owner string, hold agents.Func) process {
		db, err := Open(ctx, url, Options{Migrate: true, LeaseOwner: owner, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		reg := agents.NewRegistry()
		_ = reg.Register("Answer", agents.Func(func(context.Context, *agents.Request) (any, error) { return "from-" + owner, nil }))
		_ = reg.Register("Hold", hold)
		x := engine.New(engine.Config{Agents: reg, Store: db, Workflows: store.WorkflowSource(db), ChildPoll: 100 * time.Millisecond})
		return process{db: db, x: x}
	}
	held := func(ctx context.Context, req *agents.Request) (any, error) {
		<-release
		return "held", nil
	}
	a := open("a", held)
	b := open("b", held)
	child := []byte(`{"StartAt":"Do","States":{"Do":{"Type":"Task","Agent":"Answer","End":true}}}`)
	v, _ := jsonvalue.Decode(child)
	hash, _ := jsonvalue.CanonicalHash(v)
	if _, err := a.db.RegisterWorkflow(ctx, "work", child, hash, store.VersionMeta{}); err != nil {
		t.Fatal(err)
	}
	serveWith(t, a, engine.ServeOptions{Poll: 50 * time.Millisecond, MaxConcurrent: 1})
	serveWith(t, b, engine.ServeOptions{Poll: 50 * time.Millisecond, MaxConcurrent: 2})
	// The parent holds A's one slot in its second branch while its first
	// branch's child is started: A has no room for the child.
	m, err := states.Parse([]byte(`{"StartAt":"Both","States":{"Both":{"Type":"Parallel","End":true,"Branches":[
		{"StartAt":"W","States":{"W":{"Type":"Workflow","WorkflowId":"work","End":true}}},
		{"StartAt":"H","States":{"H":{"Type":"Task","Agent":"Hold","End":true}}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if _, err := a.x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "parent"}); err != nil {
			t.Error(err)
		}
	}()
	childID := engine.ChildWorkflowID("parent", "Both#1.0/0/W#1", 0)
	e := awaitStatus(t, a.db, childID, engine.StatusSucceeded)
	if e.Output != "from-b" {
		t.Errorf("the child's output %v, want from-b (run by B)", e.Output)
	}
	close(release)
	p := awaitStatus(t, a.db, "parent", engine.StatusSucceeded)
	got, _ := json.Marshal(p.Output)
	if string(got) != `["from-b","held"]` {
		t.Errorf("the parent's output %s, want the child B ran and the held branch", got)
	}
}
