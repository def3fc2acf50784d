package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// auditStore is a memory store that checks, independently of the engine,
// every top-level transition it is asked to commit against the workflow's
// compiled rules and the state's own WritePolicy, and remembers every
// document it is handed.
type auditStore struct {
	*store.Memory
	m *states.Machine

	mu        sync.Mutex
	committed []string // transitions committed, "State: prev -> proposed"
	breaches  []string // committed transitions governance refuses
	documents []any    // every top-level document committed
}

func (a *auditStore) Commit(ctx context.Context, c *engine.Commit) error {
	if c.Execution != "e" {
		// A child execution (a Workflow state's) has its own governance.
		return a.Memory.Commit(ctx, c)
	}
	a.mu.Lock()
	if tr := c.Transition; tr != nil && tr.State != "" {
		prev, _ := jsonvalue.Marshal(tr.Previous)
		next, _ := jsonvalue.Marshal(tr.Proposed)
		line := fmt.Sprintf("%s: %s -> %s", tr.State, prev, next)
		a.committed = append(a.committed, line)
		v := a.m.Extensions.Governance.Check(tr.Previous, tr.Proposed, tr.State)
		if own := a.m.States[tr.State].Base().WritePolicy; v == nil && own != nil {
			v = own.Check(tr.Previous, tr.Proposed, tr.State)
		}
		if v != nil {
			a.breaches = append(a.breaches, line+": "+v.Error())
		}
	}
	if top := c.Scopes[""]; top != nil {
		a.documents = append(a.documents, top.Doc, top.Output)
	}
	a.mu.Unlock()
	return a.Memory.Commit(ctx, c)
}

// sawForbidden reports whether a committed document holds "forbidden".
func (a *auditStore) sawForbidden() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range a.documents {
		if b, _ := jsonvalue.Marshal(d); strings.Contains(string(b), "forbidden") {
			return true
		}
	}
	return false
}

// governed is the Governance block of the no-bypass cases: documents are
// objects with an order id that never changes, and nothing may write
// $.secret.
const governed = `"Governance":{
	"Guard":{"Schema":{"type":"object","required":["order"]},"Transitions":{"ImmutablePaths":["$.order"]}},
	"WritePolicy":{"Deny":["$.secret"]}%s}`

type bypassCase struct {
	// states are the definition's States (StartAt is "S"); onViolation,
	// when set, is the block's OnViolation.
	states      string
	onViolation string
	// wantError is the error the execution fails with ("" for success);
	// wantOutput, when set, its output.
	wantError  asl.ErrorName
	wantOutput string
	// decide, when set, answers the Approval the run waits at.
	decide *engine.Decision
}

// bypassCases holds, for every state type the parser accepts, a workflow
// where a state of that type tries to write what governance forbids (or,
// for a type that cannot write, shows that it does not). A type missing
// here fails TestNothingBypassesGovernance.
var bypassCases = map[string]bypassCase{
	"Pass": {states: `"S":{"Type":"Pass","Result":"forbidden","ResultPath":"$.secret","Next":"Tail"}`, wantError: governance.ErrWriteDenied},
	"Task": {states: `"S":{"Type":"Task","Agent":"Forger","ResultPath":"$.secret","Next":"Tail"}`, wantError: governance.ErrWriteDenied},
	"Map": {states: `"S":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.secret","Next":"Tail",
		"ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","Result":"forbidden","End":true}}}}`, wantError: governance.ErrWriteDenied},
	"Parallel": {states: `"S":{"Type":"Parallel","ResultPath":"$.order","Next":"Tail",
		"Branches":[{"StartAt":"B","States":{"B":{"Type":"Pass","Result":"forbidden","End":true}}}]}`, wantError: governance.ErrTransitionViolation},
	// Types that cannot write: their input goes on unchanged (OutputPath
	// only selects; the guard sees the document before it).
	"Choice": {states: `"S":{"Type":"Choice","Choices":[{"Variable":"$.order","IsPresent":true,"Next":"Tail"}]}`,
		wantOutput: `{"order":"o-1","items":[1]}`},
	"Wait":       {states: `"S":{"Type":"Wait","Seconds":0,"Next":"Tail"}`, wantOutput: `{"order":"o-1","items":[1]}`},
	"Succeed":    {states: `"S":{"Type":"Succeed"}`, wantOutput: `{"order":"o-1","items":[1]}`},
	"Fail":       {states: `"S":{"Type":"Fail","Error":"Stop","Cause":"forbidden"}`, wantError: "Stop"},
	"Checkpoint": {states: `"S":{"Type":"Checkpoint","Name":"cp","Next":"Tail"}`, wantOutput: `{"order":"o-1","items":[1]}`},
	"Workflow":   {states: `"S":{"Type":"Workflow","WorkflowId":"forger","ResultPath":"$.secret","Next":"Tail"}`, wantError: governance.ErrWriteDenied},
	// An approver's edit is a write like any other.
	"Approval": {states: `"S":{"Type":"Approval","Prompt":"ok?","Editable":{"Fields":["$.items"],"ResultPath":"$.secret"},"ResultPath":"$.review","Next":"Tail"}`,
		decide: &engine.Decision{Approval: "approve", Edit: map[string]any{"items": []any{"forbidden"}}}, wantError: governance.ErrWriteDenied},
	"Debate": {states: `"S":{"Type":"Debate","Agents":["Forger","Forger2"],"Topic":"t","ResultPath":"$.secret","Next":"Tail"}`, wantError: governance.ErrWriteDenied},
}

// moreBypassCases are the other ways a write reaches the document.
var moreBypassCases = map[string]bypassCase{
	"catch result": {states: `"S":{"Type":"Task","Agent":"Failing","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.secret","Next":"Tail"}],"Next":"Tail"}`,
		wantError: governance.ErrWriteDenied},
	"catch after a refused write": {states: `"S":{"Type":"Task","Agent":"Forger","ResultPath":"$.secret","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.order","Next":"Tail"}],"Next":"Tail"}`,
		wantError: governance.ErrTransitionViolation},
	"variables": {states: `"S":{"Type":"Pass","Assign":{"v":"forbidden"},"Next":"Leak"},
		"Leak":{"Type":"Pass","Parameters":{"x.$":"$v"},"ResultPath":"$.secret","Next":"Tail"}`, wantError: governance.ErrWriteDenied},
	"skip node": {states: `"S":{"Type":"Task","Agent":"Forger","ResultPath":"$.secret","Next":"Tail"}`, onViolation: "SKIP_NODE",
		wantOutput: `{"order":"o-1","items":[1]}`},
	"retry once": {states: `"S":{"Type":"Task","Agent":"Forger","ResultPath":"$.secret","Next":"Tail"}`, onViolation: "RETRY_ONCE",
		wantError: governance.ErrWriteDenied},
	"whole document replaced": {states: `"S":{"Type":"Pass","Result":{"order":"o-2"},"Next":"Tail"}`, wantError: governance.ErrTransitionViolation},
	"map item own policy": {states: `"S":{"Type":"Map","ItemsPath":"$.items","ItemSelector":{"v.$":"$$.Map.Item.Value"},"ResultPath":"$.results","Next":"Tail",
		"ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","Result":"forbidden","ResultPath":"$.x","WritePolicy":{"Deny":["$.x"]},"End":true}}}}`,
		wantError: governance.ErrWriteDenied},
	"reasoning trace": {states: `"S":{"Type":"Task","Agent":"Reasoner","ResultPath":"$.note","Reasoning":{"Store":"$.secret"},"Next":"Tail"}`,
		wantError: governance.ErrWriteDenied},
	"memory read": {states: `"S":{"Type":"Pass","Memory":{"Read":{"Keys":["k"],"InjectAt":"$.secret","Default":"forbidden"}},"Next":"Tail"}`,
		wantError: governance.ErrWriteDenied},
	// OutputPath only selects what the next state gets (the guard sees the
	// document before it), so it cannot write; what it drops, the next
	// write cannot bring back past the transition rules.
	"output path": {states: `"S":{"Type":"Pass","Result":"ok","ResultPath":"$.note","OutputPath":"$.items","Next":"Wrap"},
		"Wrap":{"Type":"Pass","Parameters":{"order":"o-2","secret":"forbidden"},"Next":"Tail"}`, wantError: governance.ErrTransitionViolation},
}

func runBypassCase(t *testing.T, tc bypassCase) *auditStore {
	t.Helper()
	mode := ""
	if tc.onViolation != "" {
		mode = fmt.Sprintf(`,"OnViolation":%q`, tc.onViolation)
	}
	tail := ""
	if strings.Contains(tc.states, `"Tail"`) {
		tail = `,"Tail":{"Type":"Pass","End":true}`
	}
	def := fmt.Sprintf(`{"StartAt":"S",%s,"States":{%s%s}}`, fmt.Sprintf(governed, mode), tc.states, tail)
	m := mustParse(t, def)
	st := &auditStore{Memory: store.NewMemory(), m: m}
	reg := agents.NewRegistry()
	forger := agents.Func(func(context.Context, *agents.Request) (any, error) { return "forbidden", nil })
	_ = reg.Register("Forger", forger)
	_ = reg.Register("Forger2", forger)
	_ = reg.Register("Reasoner", agents.Func(func(context.Context, *agents.Request) (any, error) {
		return map[string]any{"result": "ok", "reasoning": map[string]any{"steps": []any{"forbidden"}}}, nil
	}))
	_ = reg.Register("Failing", agents.Func(func(context.Context, *agents.Request) (any, error) {
		return nil, asl.Errorf("Broken", "forbidden")
	}))
	// A child's output passes its parent's governance as an agent's does.
	children := workflows{"forger": `{"StartAt":"F","States":{"F":{"Type":"Task","Agent":"Forger","End":true}}}`}
	x := engine.New(engine.Config{Agents: reg, Store: st, Workflows: children})
	res, err := x.Run(context.Background(), m, mustJSON(t, `{"order":"o-1","items":[1]}`), engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if tc.decide != nil {
		if res.Status != engine.StatusWaiting {
			t.Fatalf("run = %+v, want WAITING for a decision", res)
		}
		if res, err = x.Decide(context.Background(), "e", *tc.decide, engine.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if tc.wantError != "" {
		wantError(t, res, tc.wantError, "")
	} else {
		wantOutput(t, res, tc.wantOutput)
	}
	if len(st.breaches) > 0 {
		t.Errorf("committed transitions governance refuses:\n%s", strings.Join(st.breaches, "\n"))
	}
	if tc.wantError != "Stop" && st.sawForbidden() {
		t.Errorf("a committed document holds the forbidden value; transitions:\n%s", strings.Join(st.committed, "\n"))
	}
	return st
}

// TestNothingBypassesGovernance runs, for every state type the parser
// accepts and every other way to write the document, a workflow that tries
// a forbidden write, and checks on the store side that nothing governance
// refuses is ever committed.
func TestNothingBypassesGovernance(t *testing.T) {
	for _, typ := range states.StateTypes() {
		tc, ok := bypassCases[typ]
		if !ok {
			t.Errorf("state type %s has no governance case in bypassCases: show that it cannot write past the guard", typ)
			continue
		}
		t.Run(typ, func(t *testing.T) { runBypassCase(t, tc) })
	}
	for name, tc := range moreBypassCases {
		t.Run(name, func(t *testing.T) { runBypassCase(t, tc) })
	}
}

func TestRollbackAndForkCheckTheTarget(t *testing.T) {
	// The checkpoint's document is its output: OutputPath makes it one
	// the schema refuses (no order).
	def := `{"StartAt":"Saved",` + fmt.Sprintf(governed, "") + `,"States":{
		"Saved":{"Type":"Checkpoint","Name":"good","Next":"Save"},
		"Save":{"Type":"Checkpoint","Name":"bad","OutputPath":"$.items","End":true}}}`
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	m := mustParse(t, def)
	res, err := x.Run(ctx, m, mustJSON(t, `{"order":"o-1","items":[1]}`), engine.StartOptions{ID: "g"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `[1]`)
	for _, op := range []func() (*engine.Result, error){
		func() (*engine.Result, error) { return x.Rollback(ctx, "g", "bad", engine.ResumeOptions{}) },
		func() (*engine.Result, error) { return x.Fork(ctx, "g", "bad", engine.ResumeOptions{ForkID: "g2"}) },
	} {
		var ge *engine.GovernanceError
		if _, err := op(); !errors.As(err, &ge) || ge.Violation.Name != asl.ErrorName("Governance.SchemaViolation") {
			t.Errorf("from a checkpoint the schema refuses: %v, want a *GovernanceError Governance.SchemaViolation", err)
		}
	}
	if e, err := st.Load(ctx, "g"); err != nil || e.Status != engine.StatusSucceeded || !jsonvalue.Equal(e.Output, mustJSON(t, `[1]`)) {
		t.Errorf("after a refused rollback: %+v, %v; want it SUCCEEDED with [1] as before", e, err)
	}
	if _, err := st.Load(ctx, "g2"); err == nil {
		t.Error("a refused fork created an execution")
	}
	if res, err := x.Rollback(ctx, "g", "good", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
		t.Errorf("rollback to a good checkpoint: %+v, %v", res, err)
	}
}

// TestInputRefusedBeforeTheExecutionExists: an input the schema refuses is
// an error of Run, and nothing is stored.
func TestInputRefusedBeforeTheExecutionExists(t *testing.T) {
	def := `{"StartAt":"P",` + fmt.Sprintf(governed, "") + `,"States":{"P":{"Type":"Pass","End":true}}}`
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"items":[1]}`), engine.StartOptions{ID: "refused"})
	var ge *engine.GovernanceError
	if !errors.Is(err, engine.ErrInvalidInput) || !errors.As(err, &ge) || ge.Violation.Name != asl.ErrorName("Governance.SchemaViolation") {
		t.Fatalf("Run = %+v, %v; want ErrInvalidInput with a Governance.SchemaViolation", res, err)
	}
	if _, err := st.Load(ctx, "refused"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Load(refused) = %v, want ErrNotFound: a refused input must not create an execution", err)
	}
	if res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"order":"o-1","items":[1]}`), engine.StartOptions{ID: "accepted"}); err != nil || res.Status != engine.StatusSucceeded {
		t.Errorf("an accepted input: %+v, %v", res, err)
	}
}

func TestGovernanceEventAndRetryFeedback(t *testing.T) {
	st := store.NewMemory()
	var mu sync.Mutex
	var seen []map[string]any
	a := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req.Violation)
		if len(seen) == 1 {
			return 5000, nil
		}
		return 50, nil
	})
	def := `{"StartAt":"Pay","Governance":{"WritePolicy":{"Rules":[{"Deny":"path == '$.amount' && value > 1000","Reason":"over 1000 needs approval"}]},"OnViolation":"RETRY_ONCE"},
		"States":{"Pay":{"Type":"Task","Agent":"A","ResultPath":"$.amount","End":true}}}`
	x := engine.New(engine.Config{Agents: registry(t, a, "A"), Store: st})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{"amount":1}`), engine.StartOptions{ID: "v"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"amount":50}`)
	if len(seen) != 2 || seen[0] != nil || seen[1]["path"] != "$.amount" || seen[1]["reason"] != "write to $.amount denied: over 1000 needs approval" {
		t.Errorf("the agent saw violations %v, want none then the refusal of $.amount", seen)
	}
	hist, _ := eventsOf(t, st, "v")
	var events []map[string]any
	for _, e := range hist {
		if e.Type == engine.EventGovernanceViolation {
			events = append(events, e.Detail.(map[string]any))
		}
	}
	if len(events) != 1 {
		t.Fatalf("%d GovernanceViolation events, want 1", len(events))
	}
	d := events[0]
	if d["error"] != string(governance.ErrWriteDenied) || d["action"] != "retry" || d["rule"] != "WritePolicy.Rules[0]" ||
		d["path"] != "$.amount" || fmt.Sprint(d["old"]) != "1" || fmt.Sprint(d["new"]) != "5000" || d["onViolation"] != "RETRY_ONCE" {
		t.Errorf("event detail = %v", d)
	}
}

func TestNonFiniteAgentResult(t *testing.T) {
	nan := agents.Func(func(context.Context, *agents.Request) (any, error) { return math.NaN(), nil })
	plain := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","ResultPath":"$.x","End":true}}}`
	wantError(t, execute(t, plain, `{}`, map[string]agents.Agent{"A": nan}), asl.ErrTaskFailed, "not JSON")
	guarded := `{"StartAt":"T","Governance":{"Guard":{"Schema":{"type":"object"}}},"States":{"T":{"Type":"Task","Agent":"A","ResultPath":"$.x","End":true}}}`
	wantError(t, execute(t, guarded, `{}`, map[string]agents.Agent{"A": nan}), governance.ErrInvalidJSON, "")
}
