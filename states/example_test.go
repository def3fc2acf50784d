package states_test

import (
	"encoding/json"
	"fmt"

	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/states"
)

func ExampleParse() {
	m, err := states.Parse([]byte(`{
	  "StartAt": "Draft",
	  "States": {
	    "Draft": {
	      "Type": "Task",
	      "Agent": "Writer",
	      "Tools": {"Allowed": ["search"]},
	      "Budget": {"MaxCost": "$0.50"},
	      "Next": "Review"
	    },
	    "Review": {
	      "Type": "Approval",
	      "Prompt": "Publish {{$.title}}?",
	      "Timeout": "24h",
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	draft := m.States["Draft"].(*states.Task)
	review := m.States["Review"].(*states.Approval)
	fmt.Println(draft.Agent, draft.Tools.Permits("search"), draft.Tools.Permits("shell"), draft.Budget.MaxCost)
	fmt.Println(review.Options, review.Timeout)

	_, err = states.Parse([]byte(`{
	  "StartAt": "Review",
	  "States": {
	    "Review": {"Type": "Approval", "Prompt": "ok?", "Timeout": "soon", "Next": "Gone"}
	  }
	}`))
	fmt.Println(err)
	// Output:
	// Writer true false 0.5
	// [approve reject] 24h0m0s
	// /States/Review/Timeout (Review): Timeout must be a duration (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"), not "soon"
	// /States/Review/Next (Review): transition to state "Gone", which does not exist
	// /States: the state machine has no terminal state: at least one state must have "End": true or be a Succeed or Fail state
}

func ExampleGeneration_Resolve() {
	m, err := states.Parse([]byte(`{
	  "StartAt": "Summarize",
	  "States": {
	    "Summarize": {
	      "Type": "Task",
	      "Agent": "Writer",
	      "Model": {"Preferred": "gpt-4o", "Fallback": ["gpt-4o-mini"], "FallbackOn": ["RateLimitExceeded", "ModelError"]},
	      "Generation": {"Temperature": 0.2, "MaxTokens.$": "$.budget", "StopSequences": ["END"]},
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	task := m.States["Summarize"].(*states.Task)
	fmt.Println(task.Model.Models(), task.Model.FallbackOn)

	input := map[string]any{"budget": json.Number("512")}
	values, err := task.Generation.Resolve(func(field string, path *jsonpath.Expr, _ *jsonata.Template) (any, error) {
		return path.Eval(input, nil)
	})
	fmt.Println(values.Temperature, values.MaxTokens, values.StopSequences, err)

	input["budget"] = json.Number("0")
	_, err = task.Generation.Resolve(func(field string, path *jsonpath.Expr, _ *jsonata.Template) (any, error) {
		return path.Eval(input, nil)
	})
	fmt.Println(err)
	// Output:
	// [gpt-4o gpt-4o-mini] [States.RateLimitExceeded Agent.ModelError]
	// 0.2 512 [END] <nil>
	// Generation.MaxTokens must be an integer between 1 and 1000000, not 0
}
