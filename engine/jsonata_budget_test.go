package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/store"
)

// The JSONata expressions of issue 23 that never ended, and one of the
// same shape that builds little: without a budget it runs for hours.
const (
	bombNested = `$count([1..10000000].([1..10000000]))`
	bombMapped = `[1..10000000].($*2) ~> $count()`
	bombSmall  = `$count([1..100000].([1..100000]))`
)

// jsonataMachine is a JSONata workflow of one state, named Bomb.
func jsonataMachine(state string) string {
	return `{"QueryLanguage":"JSONata","StartAt":"Bomb","States":{"Bomb":` + state + `}}`
}

// TestJSONataBudgetFailsState: an expression past the default budget, or
// past a configured one, fails its state with States.QueryEvaluationError
// naming the state, the field and the limit; Catch sees it.
func TestJSONataBudgetFailsState(t *testing.T) {
	echo := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) { return req.Input, nil })
	for _, tc := range []struct {
		name, state string
		limits      jsonata.Limits
		status      engine.Status
		error, want string
	}{
		{"pass output", `{"Type":"Pass","Output":"{% ` + bombNested + ` %}","End":true}`, jsonata.Limits{},
			engine.StatusFailed, "States.QueryEvaluationError", "An error occurred while executing the state 'Bomb' (entered at the event id #2). The JSONata expression '" + bombNested + "' specified for the field 'Output' exceeded the memory budget of 67108864 bytes."},
		{"task output", `{"Type":"Task","Agent":"Echo","Output":"{% ` + bombMapped + ` %}","End":true}`, jsonata.Limits{},
			engine.StatusFailed, "States.QueryEvaluationError", "specified for the field 'Output' exceeded the memory budget of 67108864 bytes."},
		{"configured steps", `{"Type":"Pass","Output":{"n":"{% $sum([1..5000]) %}"},"End":true}`, jsonata.Limits{Steps: 1000},
			engine.StatusFailed, "States.QueryEvaluationError", "specified for the field 'Output/n' exceeded the evaluation budget of 1000 steps."},
		{"within configured steps", `{"Type":"Pass","Output":"{% $sum([1..300]) %}","End":true}`, jsonata.Limits{Steps: 1000},
			engine.StatusSucceeded, "", ""},
		{"caught", `{"Type":"Task","Agent":"Echo","Arguments":"{% ` + bombNested + ` %}","Catch":[{"ErrorEquals":["States.QueryEvaluationError"],"Output":"{% $states.errorOutput.Error %}","Next":"Caught"}],"End":true},
			"Caught":{"Type":"Pass","End":true}`, jsonata.Limits{},
			engine.StatusSucceeded, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := engine.New(engine.Config{Agents: registry(t, echo, "Echo"), JSONataLimits: tc.limits})
			res, err := x.Run(t.Context(), mustParse(t, jsonataMachine(tc.state)), mustJSON(t, `{}`), engine.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || res.Error != tc.error || !strings.Contains(res.Cause, tc.want) {
				t.Errorf("Run = %s %s %q, want %s %s with a cause containing %q", res.Status, res.Error, res.Cause, tc.status, tc.error, tc.want)
			}
			if tc.name == "caught" && res.Output != "States.QueryEvaluationError" {
				t.Errorf("output = %v, want the caught error's name", res.Output)
			}
		})
	}
}

// TestJSONataTimeouts: a Task whose Arguments outlast its TimeoutSeconds
// fails with States.Timeout (its agent never called), and an execution
// whose expression outlasts the execution's TimeoutSeconds times out. The
// expressions run without a budget, so only the deadlines stop them.
func TestJSONataTimeouts(t *testing.T) {
	called := make(chan struct{}, 1)
	agent := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		called <- struct{}{}
		return nil, nil
	})
	unbounded := jsonata.Limits{Steps: -1, Memory: -1}
	for _, tc := range []struct {
		name, def string
		status    engine.Status
		error     string
	}{
		{"task", jsonataMachine(`{"Type":"Task","Agent":"A","TimeoutSeconds":1,"Arguments":{"n":"{% ` + bombSmall + ` %}"},"End":true}`), engine.StatusFailed, "States.Timeout"},
		{"execution", `{"QueryLanguage":"JSONata","TimeoutSeconds":1,"StartAt":"Bomb","States":{"Bomb":{"Type":"Pass","Output":"{% ` + bombSmall + ` %}","End":true}}}`, engine.StatusTimedOut, "States.Timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := engine.New(engine.Config{Agents: registry(t, agent, "A"), JSONataLimits: unbounded})
			res, err := x.Run(t.Context(), mustParse(t, tc.def), mustJSON(t, `{}`), engine.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || res.Error != tc.error {
				t.Errorf("Run = %s %s %q, want %s %s", res.Status, res.Error, res.Cause, tc.status, tc.error)
			}
			select {
			case <-called:
				t.Error("the agent was called")
			default:
			}
		})
	}
}

// TestJSONataStop: Stop ends an execution in the middle of an
// evaluation that has no budget, as it ends one waiting on an agent.
func TestJSONataStop(t *testing.T) {
	running := make(chan struct{})
	var once sync.Once
	limits := jsonata.Limits{Steps: -1, Memory: -1, Progress: func() { once.Do(func() { close(running) }) }}
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st, JSONataLimits: limits})
	type outcome struct {
		res *engine.Result
		err error
	}
	ran := make(chan outcome, 1)
	go func() {
		res, err := x.Run(context.Background(), mustParse(t, jsonataMachine(`{"Type":"Pass","Output":"{% `+bombSmall+` %}","End":true}`)), mustJSON(t, `{}`), engine.StartOptions{ID: "bomb"})
		ran <- outcome{res, err}
	}()
	<-running
	res, err := x.Stop(t.Context(), "bomb", "Ops.Stopped", "runaway expression")
	if err != nil || res.Status != engine.StatusAborted {
		t.Fatalf("Stop = %+v, %v, want ABORTED", res, err)
	}
	if o := <-ran; o.err != nil || o.res.Status != engine.StatusAborted {
		t.Errorf("Run = %+v, %v, want ABORTED", o.res, o.err)
	}
	checkAborted(t, st, x, "bomb", "Ops.Stopped", "runaway expression")
}

// TestJSONataNoGlobalLock: while one execution is inside the evaluation
// of an expression (held there between two of its steps), another
// execution's JSONata states run to the end.
func TestJSONataNoGlobalLock(t *testing.T) {
	running, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	limits := jsonata.Limits{Steps: -1, Memory: -1, Progress: func() {
		once.Do(func() {
			close(running)
			<-release
		})
	}}
	x := engine.New(engine.Config{Store: store.NewMemory(), JSONataLimits: limits})
	ran := make(chan *engine.Result, 1)
	go func() {
		res, _ := x.Run(context.Background(), mustParse(t, jsonataMachine(`{"Type":"Pass","Output":"{% `+bombSmall+` %}","End":true}`)), mustJSON(t, `{}`), engine.StartOptions{ID: "bomb"})
		ran <- res
	}()
	<-running
	quick := `{"QueryLanguage":"JSONata","StartAt":"A","States":{
		"A":{"Type":"Pass","Assign":{"n":"{% $states.input.n * 2 %}"},"Next":"B"},
		"B":{"Type":"Choice","Choices":[{"Condition":"{% $n > 1 %}","Next":"C"}]},
		"C":{"Type":"Pass","Output":"{% $uppercase($states.input.s) & $string($n) %}","End":true}}}`
	res, err := x.Run(t.Context(), mustParse(t, quick), mustJSON(t, `{"n":1,"s":"ok"}`), engine.StartOptions{ID: "quick"})
	if err != nil || res.Status != engine.StatusSucceeded || res.Output != "OK2" {
		t.Errorf("Run beside a running evaluation = %+v, %v; want SUCCEEDED with \"OK2\"", res, err)
	}
	close(release)
	if _, err := x.Stop(t.Context(), "bomb", "Ops.Stopped", ""); err != nil {
		t.Fatal(err)
	}
	if res := <-ran; res == nil || res.Status != engine.StatusAborted {
		t.Errorf("the bomb's Run = %+v, want ABORTED", res)
	}
}
