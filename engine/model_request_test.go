package engine_test

import (
	"context"
	"slices"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
)

// TestTaskModelAndGeneration: a Task's Model block and its Generation,
// paths and expressions evaluated for the call, reach the agent; a value
// out of bounds at run time fails the state naming the field.
func TestTaskModelAndGeneration(t *testing.T) {
	var got *agents.Request
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		got = req
		return "ok", nil
	})
	for _, tc := range []struct{ name, def, input string }{
		{"JSONPath", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,
			"Model":{"Preferred":"gpt-4o","Fallback":["claude-sonnet"],"FallbackOn":["RateLimitExceeded"]},
			"Generation":{"Temperature.$":"$.temp","MaxTokens":300,"StopSequences":["END"]}}}}`, `{"temp":0.2}`},
		{"JSONata", `{"QueryLanguage":"JSONata","StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,
			"Model":{"Preferred":"gpt-4o","Fallback":"claude-sonnet","FallbackOn":["States.RateLimitExceeded"]},
			"Generation":{"Temperature":"{% $states.input.temp %}","MaxTokens":300,"StopSequences":["END"]}}}}`, `{"temp":0.2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			res := execute(t, tc.def, tc.input, map[string]agents.Agent{"A": a})
			wantOutput(t, res, `"ok"`)
			m, g := got.Model, got.Generation
			if m == nil || !slices.Equal(m.Models, []string{"gpt-4o", "claude-sonnet"}) || !m.FallsBackOn(asl.ErrRateLimitExceeded) || m.FallsBackOn(asl.ErrTimeout) {
				t.Errorf("Model = %+v", m)
			}
			if g == nil || g.Temperature == nil || *g.Temperature != 0.2 || g.TopP != nil || g.MaxTokens != 300 || !slices.Equal(g.StopSequences, []string{"END"}) {
				t.Errorf("Generation = %+v", g)
			}
		})
	}
	res := execute(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,"Generation":{"Temperature.$":"$.temp"}}}}`, `{"temp":7}`, map[string]agents.Agent{"A": a})
	wantError(t, res, asl.ErrRuntime, "Generation.Temperature")
	plain := execute(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}}`, `{}`, map[string]agents.Agent{"A": a})
	wantOutput(t, plain, `"ok"`)
	if got.Model != nil || got.Generation != nil {
		t.Errorf("a Task without the blocks gave the agent %+v and %+v", got.Model, got.Generation)
	}
}
