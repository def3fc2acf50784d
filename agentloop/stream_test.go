package agentloop_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/agentloop"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/fake"
	"github.com/aslrun/aslrun/tools"
)

// TestModelLoopStreams: a call whose state streams passes each model
// turn's deltas on as they come, numbered by turn; one that does not
// stream asks the model for none.
func TestModelLoopStreams(t *testing.T) {
	steps := []fake.Step{
		{Reply: &models.Reply{Text: "Let me look.", ToolCalls: []models.ToolCall{{ID: "call_1", Name: "lookup", Arguments: []byte(`{"order":"A-1"}`)}}}, Deltas: []string{"Let me ", "look."}},
		{Reply: &models.Reply{Text: "A-1 shipped."}, Deltas: []string{"A-1 ", "ship", "ped."}},
	}
	l := &lookups{calls: map[string]int{}}
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprint("streaming ", streaming), func(t *testing.T) {
			m := fake.New(steps...)
			a, err := agentloop.New(agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{l.tool()}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			req := &agents.Request{Agent: "Support", Input: "Where is A-1?"}
			if streaming {
				req.OnStream = func(turn int, text string) { got = append(got, fmt.Sprintf("%d:%s", turn, text)) }
			}
			out, err := a.Invoke(context.Background(), req)
			if err != nil || out != "A-1 shipped." {
				t.Fatalf("Invoke = %v, %v", out, err)
			}
			want := "[1:Let me  1:look. 2:A-1  2:ship 2:ped.]"
			if !streaming {
				want = "[]"
			}
			if fmt.Sprint(got) != want {
				t.Errorf("streamed %v, want %s", got, want)
			}
		})
	}
}
