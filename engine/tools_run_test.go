package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
)

// TestToolsRun: req.Tools.Run applies the state's Tools block to one
// tool call: a tool outside it is States.Permissions without running it;
// its Timeout ends a call that takes longer (States.Timeout naming the
// tool) while one within it answers; without a Tools block the call runs.
func TestToolsRun(t *testing.T) {
	ran := map[string]int{}
	{
		a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			name := req.Input.(map[string]any)["tool"].(string)
			wait := req.Input.(map[string]any)["wait"].(string)
			d, _ := time.ParseDuration(wait)
			return req.Tools.Run(ctx, name, map[string]any{"q": 1}, func(ctx context.Context, in map[string]any) (any, error) {
				ran[name]++
				select {
				case <-time.After(d):
					return in["q"], nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
		})
		def := func(tools string) string {
			return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A",` + tools + `"End":true}}}`
		}
		block := `"Tools":{"Allowed":["search"],"Timeout":"100ms"},`
		for _, tc := range []struct {
			name, def, input string
			fails            asl.ErrorName
			took             time.Duration
		}{
			{"within the Timeout", def(block), `{"tool":"search","wait":"50ms"}`, "", 50 * time.Millisecond},
			{"past the Timeout", def(block), `{"tool":"search","wait":"1s"}`, asl.ErrTimeout, 100 * time.Millisecond},
			{"not allowed", def(block), `{"tool":"delete","wait":"0s"}`, asl.ErrPermissions, 0},
			{"no Tools block", def(""), `{"tool":"delete","wait":"1s"}`, "", time.Second},
		} {
			t.Run(tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					start := time.Now()
					res := execute(t, tc.def, tc.input, map[string]agents.Agent{"A": a})
					if tc.fails != "" {
						wantError(t, res, tc.fails, "")
					} else {
						wantOutput(t, res, `1`)
					}
					if took := time.Since(start); took != tc.took {
						t.Errorf("took %v, want %v", took, tc.took)
					}
				})
			})
		}
		if ran["delete"] != 1 {
			t.Errorf("the tool outside the block ran %d times, want only without a block", ran["delete"])
		}
	}
}

// TestToolsParametersAndValidation: a tool call gets the block's default
// Parameters under its own arguments; Validation.Input refuses arguments
// outside its schema before the tool runs; Validation.Output bounds the
// result's size and sanitizes its strings.
func TestToolsParametersAndValidation(t *testing.T) {
	var got map[string]any
	result := any(nil)
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		in := req.Input.(map[string]any)
		return req.Tools.Run(ctx, in["tool"].(string), in["args"].(map[string]any), func(_ context.Context, args map[string]any) (any, error) {
			got = args
			return result, nil
		})
	})
	block := `"Tools":{
	  "Parameters":{"search":{"limit":10,"lang":"en"}},
	  "Validation":{
	    "search":{"Input":{"Schema":{"type":"object","required":["q"],"properties":{"q":{"type":"string"},"limit":{"type":"integer","maximum":50}}}}},
	    "fetch":{"Output":{"MaxSize":"1K","Sanitize":true}}}},`
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A",` + block + `"End":true}}}`
	for _, tc := range []struct {
		name, input string
		result      any
		want        string
		fails       asl.ErrorName
		cause       string
	}{
		{"defaults under the arguments", `{"tool":"search","args":{"q":"go","limit":20}}`, "ok", `"ok"`, "", ""},
		{"input outside the schema", `{"tool":"search","args":{"q":"go","limit":99}}`, "ok", "", asl.ErrAgentInvalidInput, "Validation.Input.Schema"},
		{"input missing a field", `{"tool":"search","args":{}}`, "ok", "", asl.ErrAgentInvalidInput, "q"},
		{"output sanitized", `{"tool":"fetch","args":{}}`, map[string]any{"text": "safe\u200b\u202eevil\u0007 text\n"}, `{"text":"safeevil text\n"}`, "", ""},
		{"output too big", `{"tool":"fetch","args":{}}`, strings.Repeat("x", 2000), "", asl.ErrAgentToolError, "MaxSize of 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, result = nil, tc.result
			res := execute(t, def, tc.input, map[string]agents.Agent{"A": a})
			if tc.fails != "" {
				wantError(t, res, tc.fails, tc.cause)
				if tc.fails == asl.ErrAgentInvalidInput && got != nil {
					t.Errorf("the tool ran with %v", got)
				}
				return
			}
			wantOutput(t, res, tc.want)
		})
	}
	result = "ok"
	execute(t, def, `{"tool":"search","args":{"q":"go","limit":20}}`, map[string]agents.Agent{"A": a})
	if fmt.Sprint(got) != "map[lang:en limit:20 q:go]" {
		t.Errorf("the tool got %v, want the defaults under its arguments", got)
	}
}
