package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// ExampleExecutor_Run registers a Go agent, parses a definition and runs it.
func ExampleExecutor_Run() {
	// An agent is any value with Invoke; agents.Func adapts a function.
	shout := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		in := req.Input.(map[string]any)
		return map[string]any{"text": strings.ToUpper(in["text"].(string))}, nil
	})
	reg := agents.NewRegistry()
	if err := reg.Register("Shouter", shout); err != nil {
		panic(err)
	}

	m, err := states.Parse([]byte(`{
	  "StartAt": "Shout",
	  "States": {
	    "Shout": {
	      "Type": "Task",
	      "Agent": "Shouter",
	      "Parameters": {"text.$": "States.Format('hello, {}', $.name)"},
	      "ResultPath": "$.greeting",
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		panic(err)
	}

	x := engine.New(engine.Config{Agents: reg})
	res, err := x.Run(context.Background(), m, map[string]any{"name": "ada"}, engine.StartOptions{})
	if err != nil {
		panic(err)
	}
	out, _ := jsonvalue.Marshal(res.Output)
	fmt.Println(res.Status, string(out))
	// Output: SUCCEEDED {"greeting":{"text":"HELLO, ADA"},"name":"ada"}
}

// ExampleExecutor_Run_typed uses a typed Go agent and shows a failure
// caught by a Catch.
func ExampleExecutor_Run_typed() {
	type order struct {
		Amount float64 `json:"amount"`
	}
	type decision struct {
		Approved bool `json:"approved"`
	}
	approve := agents.Typed(func(_ context.Context, o order) (decision, error) {
		if o.Amount > 1000 {
			return decision{}, fmt.Errorf("amount %v needs a human", o.Amount)
		}
		return decision{Approved: true}, nil
	})
	reg := agents.NewRegistry()
	_ = reg.Register("Approver", approve)
	m, err := states.Parse([]byte(`{
	  "StartAt": "Approve",
	  "States": {
	    "Approve": {
	      "Type": "Task", "Agent": "Approver", "ResultPath": "$.decision",
	      "Catch": [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.error", "Next": "Escalate"}],
	      "End": true
	    },
	    "Escalate": {"Type": "Pass", "Parameters": {"escalated": true, "why.$": "$.error.Cause"}, "End": true}
	  }
	}`))
	if err != nil {
		panic(err)
	}
	x := engine.New(engine.Config{Agents: reg})
	for _, amount := range []float64{250, 5000} {
		res, _ := x.Run(context.Background(), m, map[string]any{"amount": amount}, engine.StartOptions{})
		out, _ := jsonvalue.Marshal(res.Output)
		fmt.Println(string(out))
	}
	// Output:
	// {"amount":250,"decision":{"approved":true}}
	// {"escalated":true,"why":"amount 5000 needs a human"}
}
