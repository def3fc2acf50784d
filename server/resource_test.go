package server

import (
	"context"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

func TestMissingAgentsResources(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt": "F", "States": {
	  "F": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:score", "Next": "P"},
	  "P": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "Next": "Q"},
	  "Q": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": true}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	echo := agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, nil })
	if err := reg.Register("score", echo); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterResource("arn:aws:states:::sqs:sendMessage", "Queue"); err != nil {
		t.Fatal(err)
	}
	p := missingAgents(m, reg)
	if p == nil {
		t.Fatal("missingAgents = nil, want two problems")
	}
	want := []struct{ state, detail string }{
		{"P", "Resource arn:aws:states:::sns:publish resolves to no agent of the server"},
		{"Q", `Resource arn:aws:states:::sqs:sendMessage is mapped to agent "Queue", which is neither mocked nor one of the server's agents`},
	}
	if len(p.errors) != len(want) {
		t.Fatalf("errors = %+v, want %d", p.errors, len(want))
	}
	for i, w := range want {
		if e := p.errors[i]; e.State != w.state || !strings.Contains(e.Detail, w.detail) {
			t.Errorf("errors[%d] = %+v, want state %s and %q", i, e, w.state, w.detail)
		}
	}
	if err := reg.Register("Queue", echo); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("arn:aws:states:::sns:publish", echo); err != nil {
		t.Fatal(err)
	}
	if p := missingAgents(m, reg); p != nil {
		t.Errorf("missingAgents = %+v, want nil once every resource resolves", p.errors)
	}
}
