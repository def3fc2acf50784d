package states_test

import (
	"fmt"

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
