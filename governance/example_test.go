package governance_test

import (
	"fmt"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonvalue"
)

func decode(s string) any {
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		panic(err) // examples only
	}
	return v
}

// A payment flow where an agent may draft but never confirm, with a
// monotonic step counter.
func ExampleRules_Check() {
	rules, err := governance.Compile(decode(`{
	  "Guard": {
	    "Schema": {"type": "object", "required": ["step"], "properties": {"step": {"type": "integer"}}},
	    "Transitions": {"MonotonicIntegerPaths": ["$.step"]}
	  },
	  "WritePolicy": {
	    "Allow": ["$.draft", "$.step", "$.payment.amount"],
	    "Deny": ["$.payment.confirmed"],
	    "Rules": [{"Deny": "path == '$.payment.amount' && value > 1000", "Reason": "payment.amount above 1000 requires approval"}]
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	prev := decode(`{"step": 1, "payment": {"amount": 100, "confirmed": false}}`)
	for _, proposed := range []string{
		`{"step": 2, "payment": {"amount": 100, "confirmed": false}, "draft": "Dear customer"}`,
		`{"step": 2, "payment": {"amount": 100, "confirmed": true}}`,
		`{"step": 2, "payment": {"amount": 5000, "confirmed": false}}`,
		`{"step": 0, "payment": {"amount": 100, "confirmed": false}}`,
		`{"step": "two", "payment": {"amount": 100, "confirmed": false}}`,
	} {
		if v := rules.Check(prev, decode(proposed), "Drafter"); v != nil {
			fmt.Println(v)
		} else {
			fmt.Println("allowed")
		}
	}
	// Output:
	// allowed
	// Governance.WriteDenied: write to $.payment.confirmed denied by WritePolicy.Deny "$.payment.confirmed"
	// Governance.WriteDenied: write to $.payment.amount denied: payment.amount above 1000 requires approval
	// Governance.TransitionViolation: $.step decreased from 1 to 0
	// Governance.SchemaViolation: $.step must be an integer
}

func ExampleWritten() {
	prev := decode(`{"a": 1, "list": [1, 2], "obj": {"x": true}}`)
	proposed := decode(`{"a": 1.0, "list": [1, 2, 3], "obj": "gone", "new": {}}`)
	for _, w := range governance.Written(prev, proposed) {
		fmt.Println(w.Op, w.Path)
	}
	// Output:
	// add $.list[2]
	// add $.new
	// replace $.obj
}

func ExampleDetail_JSON() {
	rules, _ := governance.Compile(decode(`{"Guard": {"Transitions": {"ImmutablePaths": ["$.agent_id"]}}}`))
	v := rules.Check(decode(`{"agent_id": "a"}`), decode(`{"agent_id": "b"}`), "Agent")
	out, _ := jsonvalue.Marshal(v.Detail.JSON())
	fmt.Println(string(out))
	// Output:
	// {"new":"b","old":"a","path":"$.agent_id","reason":"$.agent_id changed from \"a\" to \"b\"","rule":"Guard.Transitions.ImmutablePaths"}
}
