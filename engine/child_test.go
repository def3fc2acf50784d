package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// workflows is a WorkflowSource over definitions by name ("name" and
// "name@ref" keys).
type workflows map[string]string

func (w workflows) ResolveWorkflow(_ context.Context, name, ref string) ([]byte, string, error) {
	key := name
	if ref != "" {
		key += "@" + ref
	}
	def, ok := w[key]
	if !ok {
		return nil, "", fmt.Errorf("no workflow %s: %w", key, engine.ErrNotFound)
	}
	return []byte(def), name + "@1", nil
}

// childAgents are a Researcher that counts its calls and answers with its
// topic, and a Fails agent that fails.
func childAgents(t *testing.T, calls *atomic.Int64) *agents.Registry {
	t.Helper()
	reg := registry(t, agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		calls.Add(1)
		return map[string]any{"found": fmt.Sprint("notes on ", req.Input.(map[string]any)["topic"])}, nil
	}), "Researcher")
	if err := reg.Register("Fails", agents.Func(func(context.Context, *agents.Request) (any, error) {
		return nil, asl.Errorf("Research.Unavailable", "the library is closed")
	})); err != nil {
		t.Fatal(err)
	}
	return reg
}

var research = workflows{
	"research": `{"StartAt":"Look","States":{"Look":{"Type":"Task","Agent":"Researcher","End":true}}}`,
	"broken":   `{"StartAt":"Look","States":{"Look":{"Type":"Task","Agent":"Fails","End":true}}}`,
	"reviewed": `{"StartAt":"Look","States":{"Look":{"Type":"Task","Agent":"Researcher","ResultPath":"$.r","Next":"Ok"},
		"Ok":{"Type":"Approval","Prompt":"Fine?","ResultPath":"$.review","End":true}}}`,
}

const triage = `{"StartAt":"Research","States":{
	"Research":{"Type":"Workflow","WorkflowId":"%s","Input":{"topic.$":"$.ticket"},"ResultPath":"$.research",%s"End":true}}}`

// TestChildExecutionWorkflowState: a Workflow state runs its workflow as a
// child execution on Input; the child's output lands at ResultPath; the
// child is linked to its parent; its failure is the state's error, with
// the child's error name, caught by Catch.
func TestChildExecutionWorkflowState(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: childAgents(t, &calls), Store: st, Workflows: research})
	res, err := x.Run(ctx, mustParse(t, fmt.Sprintf(triage, "research", "")), mustJSON(t, `{"ticket":"refunds"}`), engine.StartOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"ticket":"refunds","research":{"found":"notes on refunds"}}`)
	child := engine.ChildWorkflowID("p", "Research#1", 0)
	e, err := st.Load(ctx, child)
	if err != nil || e.Parent != "p" || e.Registry != "research@1" || e.MachineName != "research" || e.Status != engine.StatusSucceeded {
		t.Fatalf("the child %s: %+v, %v", child, e, err)
	}
	if !engine.IsWorkflowChild(child, "p") {
		t.Error("IsWorkflowChild says no")
	}

	caught := fmt.Sprintf(triage, "broken", `"Catch":[{"ErrorEquals":["Research.Unavailable"],"ResultPath":"$.error","Next":"Fallback"}],`)
	caught = strings.Replace(caught, `"End":true}}}`, `"End":true},"Fallback":{"Type":"Pass","End":true}}}`, 1)
	res, err = x.Run(ctx, mustParse(t, caught), mustJSON(t, `{"ticket":"x"}`), engine.StartOptions{ID: "q"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("caught: %+v %v", res, err)
	}
	cause := fmt.Sprint(res.Output.(map[string]any)["error"].(map[string]any)["Cause"])
	if want := "child execution q/Research#1.0 of workflow broken failed: the library is closed"; cause != want {
		t.Errorf("cause %q, want %q", cause, want)
	}

	res, err = x.Run(ctx, mustParse(t, fmt.Sprintf(triage, "missing", "")), mustJSON(t, `{"ticket":"x"}`), engine.StartOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, "States.TaskFailed", "state Research: no workflow missing")
}

// TestChildExecutionWaits: a child that waits for an approval parks its
// parent (WAITING for Workflow); deciding the child ends it and continues
// the parent, which gets the child's output. Stopping a parent that waits
// stops its child.
func TestChildExecutionWaits(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: childAgents(t, &calls), Store: st, Workflows: research})
	def := mustParse(t, fmt.Sprintf(triage, "reviewed", ""))
	res, err := x.Run(ctx, def, mustJSON(t, `{"ticket":"t"}`), engine.StartOptions{ID: "w"})
	if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForChild {
		t.Fatalf("run = %+v, %v, want WAITING for Workflow", res, err)
	}
	child := engine.ChildWorkflowID("w", "Research#1", 0)
	if _, err := x.Decide(ctx, child, engine.Decision{Approval: "approve", Approver: "ann"}, engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := st.Load(ctx, "w")
	if err != nil || p.Status != engine.StatusSucceeded {
		t.Fatalf("the parent after the child's decision: %+v, %v", p, err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d research calls, want 1", calls.Load())
	}

	if res, err = x.Run(ctx, def, mustJSON(t, `{"ticket":"t"}`), engine.StartOptions{ID: "s"}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if _, err := x.Stop(ctx, "s", "", ""); err != nil {
		t.Fatal(err)
	}
	c, err := st.Load(ctx, engine.ChildWorkflowID("s", "Research#1", 0))
	if err != nil || c.Status != engine.StatusAborted {
		t.Errorf("the child of a stopped parent: %+v, %v", c, err)
	}
}

// TestChildExecutionResumeAttaches: a parent that stopped while its child
// ran (its process died) resumes attached to the child: the child runs on
// from its last commit and is never started a second time.
func TestChildExecutionResumeAttaches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	block := make(chan struct{})
	var once sync.Once
	reg := childAgents(t, &calls)
	if err := reg.Register("Slow", agents.Func(func(actx context.Context, req *agents.Request) (any, error) {
		once.Do(func() { close(block) })
		<-actx.Done()
		return nil, actx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	src := workflows{"two": `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Researcher","ResultPath":"$.a","Next":"B"},
		"B":{"Type":"Task","Agent":"Slow","End":true}}}`}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st, Workflows: src})
	done := make(chan error, 1)
	go func() {
		_, err := x.Run(ctx, mustParse(t, fmt.Sprintf(triage, "two", "")), mustJSON(t, `{"ticket":"t"}`), engine.StartOptions{ID: "c"})
		done <- err
	}()
	<-block
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled run returned no error")
	}
	// Another process resumes the parent, with B answering this time.
	reg2 := childAgents(t, &calls)
	if err := reg2.Register("Slow", agents.Func(func(context.Context, *agents.Request) (any, error) { return "slow done", nil })); err != nil {
		t.Fatal(err)
	}
	y := engine.New(engine.Config{Agents: reg2, Store: st, Workflows: src})
	res, err := y.Resume(context.Background(), "c", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"ticket":"t","research":"slow done"}`)
	if calls.Load() != 1 {
		t.Errorf("%d calls of A, want 1 (the child was not started again)", calls.Load())
	}
	if _, err := st.Load(context.Background(), engine.ChildWorkflowID("c", "Research#1", 1)); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a second child exists: %v", err)
	}
}

// TestChildExecutionTimeoutAndDepth: a child that outlasts Timeout is
// stopped and the state fails with States.Timeout; a workflow that calls
// itself stops at MaxChildDepth with an error saying so.
func TestChildExecutionTimeoutAndDepth(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	reg := childAgents(t, &calls)
	if err := reg.Register("Slow", agents.Func(func(actx context.Context, req *agents.Request) (any, error) {
		<-actx.Done()
		return nil, actx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	src := workflows{
		"slow": `{"StartAt":"B","States":{"B":{"Type":"Task","Agent":"Slow","End":true}}}`,
		"self": `{"StartAt":"Again","States":{"Again":{"Type":"Workflow","WorkflowId":"self","End":true}}}`,
	}
	x := engine.New(engine.Config{Agents: reg, Store: store.NewMemory(), Workflows: src})
	res, err := x.Run(ctx, mustParse(t, `{"StartAt":"W","States":{"W":{"Type":"Workflow","WorkflowId":"slow","Timeout":1,"End":true}}}`), mustJSON(t, `{}`), engine.StartOptions{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, "States.Timeout", "did not end within the state's Timeout (1s) and was stopped")
	res, err = x.Run(ctx, mustParse(t, src["self"]), mustJSON(t, `{}`), engine.StartOptions{ID: "d"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, "States.TaskFailed", "past the limit of 8 child executions within each other")
}

// TestStartExecution: arn:aws:states:::states:startExecution starts a
// child of the workflow its StateMachineArn names: fire and forget
// (StartExecution's response), .sync (DescribeExecution's, Output as
// text), .sync:2 (Output as JSON), a failed child (.sync: States.TaskFailed
// with the description as cause), .waitForTaskToken (the child is given
// the token; its answer is the state's result); an agent mapped to the
// ARN still wins.
func TestChildExecutionStartExecution(t *testing.T) {
	ctx := context.Background()
	const task = `{"StartAt":"Start","States":{"Start":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution%s",
		"Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:%s","Input":{"topic.$":"$.ticket"%s}},"End":true}}}`
	var calls atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: childAgents(t, &calls), Store: st, Workflows: research})
	run := func(id, pattern, workflow, extra string) *engine.Result {
		t.Helper()
		res, err := x.Run(ctx, mustParse(t, fmt.Sprintf(task, pattern, workflow, extra)), mustJSON(t, `{"ticket":"refunds"}`), engine.StartOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := run("ff", "", "research", "")
	x.WaitDetached()
	out := res.Output.(map[string]any)
	child := engine.ChildWorkflowID("ff", "Start#1", 0)
	if out["ExecutionArn"] != "arn:aws:states:us-east-1:123456789012:execution:research:"+child || out["StartDate"] == nil {
		t.Errorf("StartExecution's response = %v", out)
	}
	if e, err := st.Load(ctx, child); err != nil || e.Status != engine.StatusSucceeded || e.Parent != "ff" {
		t.Errorf("the detached child: %+v, %v", e, err)
	}

	res = run("s1", ".sync", "research", "")
	out = res.Output.(map[string]any)
	if out["Status"] != "SUCCEEDED" || out["Output"] != `{"found":"notes on refunds"}` || out["Input"] != `{"topic":"refunds"}` {
		t.Errorf(".sync = %v", out)
	}
	res = run("s2", ".sync:2", "research", "")
	out = res.Output.(map[string]any)
	if got, _ := out["Output"].(map[string]any); got["found"] != "notes on refunds" {
		t.Errorf(".sync:2 = %v", out)
	}
	res = run("s3", ".sync", "broken", "")
	wantError(t, res, "States.TaskFailed", `"Status":"FAILED"`)

	res = run("tt", ".waitForTaskToken", "research", `,"token.$":"$$.Task.Token"`)
	if res.Status != engine.StatusWaiting {
		t.Fatalf(".waitForTaskToken = %+v, want WAITING", res)
	}
	x.WaitDetached()
	ce, err := st.Load(ctx, engine.ChildWorkflowID("tt", "Start#1", 0))
	if err != nil {
		t.Fatal(err)
	}
	token, _ := ce.Input.(map[string]any)["token"].(string)
	if res, err = x.SendTaskSuccess(ctx, token, mustJSON(t, `{"answer":42}`), engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"answer":42}`)

	// A mapped agent wins over the registry.
	reg := childAgents(t, &calls)
	if err := reg.Register("arn:aws:states:::states:startExecution.sync", agents.Func(func(context.Context, *agents.Request) (any, error) { return "mocked", nil })); err != nil {
		t.Fatal(err)
	}
	y := engine.New(engine.Config{Agents: reg, Store: store.NewMemory(), Workflows: research})
	res, err = y.Run(ctx, mustParse(t, fmt.Sprintf(task, ".sync", "research", "")), mustJSON(t, `{"ticket":"x"}`), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `"mocked"`)

	for _, bad := range []struct{ params, want string }{
		{`{"StateMachineArn":"research"}`, `StateMachineArn "research" is not arn:aws:states:REGION:ACCOUNT:stateMachine:NAME`},
		{`{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:research","Input":"{not json"}`, "Input: a string Input must hold JSON text"},
		{`{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:research","Name":"a b"}`, `Name must be 1 to 80 letters`},
		{`"text"`, "the parameters must be an object"},
	} {
		def := `{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync","Parameters":` + bad.params + `,"End":true}}}`
		if bad.params == `"text"` {
			def = `{"StartAt":"S","States":{"S":{"Type":"Pass","Result":"text","Next":"T"},"T":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync","End":true}}}`
		}
		res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{}`), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res, "States.TaskFailed", bad.want)
	}
}

// TestChildExecutionRollback: rolling a parent back to a
// checkpoint taken before its child started stops the child (recorded as
// ChildExecutionStopped); entering the state again starts a new child.
func TestChildExecutionRollback(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: childAgents(t, &calls), Store: st, Workflows: research})
	def := `{"StartAt":"Keep","States":{"Keep":{"Type":"Checkpoint","Name":"before","Next":"Research"},
		"Research":{"Type":"Workflow","WorkflowId":"reviewed","Input":{"topic.$":"$.ticket"},"End":true}}}`
	if res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"ticket":"t"}`), engine.StartOptions{ID: "rb"}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("run = %+v, %v", res, err)
	}
	first := engine.ChildWorkflowID("rb", "Research#1", 0)
	res, err := x.Rollback(ctx, "rb", "before", engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Rollback = %+v, %v", res, err)
	}
	c, err := st.Load(ctx, first)
	if err != nil || c.Status != engine.StatusAborted || c.Error != engine.ErrParentRolledBack {
		t.Errorf("the first child after the rollback: %+v, %v", c, err)
	}
	second, err := st.Load(ctx, first+"~2")
	if err != nil || second.Status != engine.StatusWaiting || second.Parent != "rb" {
		t.Errorf("the second child: %+v, %v", second, err)
	}
	if n := eventCount(t, st, "rb", engine.EventChildStopped); n != 1 {
		t.Errorf("%d ChildExecutionStopped events, want 1", n)
	}
}

// TestChildExecutionNameOfAnother: a startExecution Name that names an
// execution this state did not start is refused; its output is not read.
func TestChildExecutionNameOfAnother(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: childAgents(t, &calls), Store: st, Workflows: research})
	if _, err := x.Run(ctx, mustParse(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"the other's secret","End":true}}}`), mustJSON(t, `{}`), engine.StartOptions{ID: "other"}); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{".sync", ""} {
		def := `{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution` + pattern + `",
			"Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:research","Name":"other"},"End":true}}}`
		res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{}`), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res, "States.TaskFailed", "ExecutionAlreadyExistsException: an execution named other exists, not started by this state")
	}
}

// TestChildExecutionMapChildWakesParent: a Distributed Map whose item
// waits for an approval parks its execution; deciding the item's child
// ends it and continues the parent at once, which collects the map run.
func TestChildExecutionMapChildWakesParent(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	def := `{"StartAt":"Fan","States":{"Fan":{"Type":"Map","ItemsPath":"$.items","End":true,
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"Ok","States":{
			"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","End":true}}}}}}`
	res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"items":[{"n":1}]}`), engine.StartOptions{ID: "m"})
	if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForMapRun {
		t.Fatalf("run = %+v, %v, want WAITING for MapRun", res, err)
	}
	runs, err := x.MapRuns(ctx, "m")
	if err != nil || len(runs) != 1 {
		t.Fatalf("MapRuns = %+v, %v", runs, err)
	}
	if _, err := x.Decide(ctx, engine.ChildID(runs[0].ID, 0), engine.Decision{Approval: "approve", Approver: "ann"}, engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := st.Load(ctx, "m")
	if err != nil || p.Status != engine.StatusSucceeded {
		t.Fatalf("the parent after its item's decision: %s, %v", p.Status, err)
	}
}
