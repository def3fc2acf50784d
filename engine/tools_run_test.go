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

// TestToolsHooks: a Before hook may let a call go on, rewrite its input
// or veto it; an After hook may rewrite its output or withhold it; a hook
// that answers something else fails the call naming it.
func TestToolsHooks(t *testing.T) {
	var got map[string]any
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		in := req.Input.(map[string]any)
		return req.Tools.Run(ctx, "search", in, func(_ context.Context, args map[string]any) (any, error) {
			got = args
			return map[string]any{"hits": 3, "q": args["q"]}, nil
		})
	})
	before := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		call := req.Input.(map[string]any)
		q := call["input"].(map[string]any)["q"]
		switch q {
		case "secret":
			return map[string]any{"allow": false, "reason": "not that"}, nil
		case "rewrite":
			return map[string]any{"input": map[string]any{"q": "rewritten", "by": call["parameters"]}}, nil
		case "odd":
			return "yes", nil
		}
		return nil, nil
	})
	after := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		call := req.Input.(map[string]any)
		if call["input"].(map[string]any)["q"] == "hide" {
			return map[string]any{"allow": false, "reason": "withheld"}, nil
		}
		out := call["output"].(map[string]any)
		return map[string]any{"output": map[string]any{"hits": out["hits"], "checked": true}}, nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Tools":{"Hooks":{
	  "Before":{"Agent":"Before","Parameters":{"policy":"p1"}},"After":{"Agent":"After"}}},"End":true}}}`
	as := map[string]agents.Agent{"A": a, "Before": before, "After": after}
	for _, tc := range []struct {
		q, want string
		fails   asl.ErrorName
		cause   string
	}{
		{"go", `{"hits":3,"checked":true}`, "", ""},
		{"rewrite", `{"hits":3,"checked":true}`, "", ""},
		{"secret", "", asl.ErrAgentToolError, `vetoed the call of tool "search": not that`},
		{"hide", "", asl.ErrAgentToolError, "withheld"},
		{"odd", "", asl.ErrAgentInvalidOutput, "Tools.Hooks.Before"},
	} {
		t.Run(tc.q, func(t *testing.T) {
			got = nil
			res := execute(t, def, `{"q":"`+tc.q+`"}`, as)
			if tc.fails != "" {
				wantError(t, res, tc.fails, tc.cause)
				if tc.q == "secret" && got != nil {
					t.Errorf("a vetoed tool ran with %v", got)
				}
				return
			}
			wantOutput(t, res, tc.want)
			if tc.q == "rewrite" && fmt.Sprint(got) != "map[by:map[policy:p1] q:rewritten]" {
				t.Errorf("the tool got %v, want the Before hook's input", got)
			}
		})
	}
}
