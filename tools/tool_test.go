package tools

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

func noop(context.Context, *agents.Request, map[string]any) (any, error) { return "ok", nil }

// checkErrors returns the *CheckError problems in err, in order.
func checkErrors(t *testing.T, err error) []*CheckError {
	t.Helper()
	var out []*CheckError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ce *CheckError
		if errors.As(e, &ce) {
			out = append(out, ce)
			return
		}
		t.Errorf("error %v is not a *CheckError", e)
	}
	if err != nil {
		walk(err)
	}
	return out
}

func TestToolsCheck(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name          string
		tool          Tool
		field, ptr    string // the first problem; empty field: no problem
		more          bool   // more than one problem
		noInputSchema bool
	}{
		{name: "minimal", tool: Tool{Name: "t", Call: noop}, noInputSchema: true},
		{name: "full", tool: Tool{Name: "github.search_issues-v2", Category: "web", Call: noop,
			Input:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","pattern":"^[a-z]+$"}},"required":["q"],"$defs":{"x":{"type":"integer"}}}`),
			Output: json.RawMessage(`true`)}},
		{name: "name of 64", tool: Tool{Name: long[:64], Call: noop}, noInputSchema: true},
		{name: "input without type", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"properties":{}}`)}},
		{name: "draft-07 schema", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`)}},
		{name: "local ref", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`)}},

		{name: "empty name", tool: Tool{Call: noop}, field: "Name"},
		{name: "name of 65", tool: Tool{Name: long, Call: noop}, field: "Name"},
		{name: "name with a space", tool: Tool{Name: "read file", Call: noop}, field: "Name"},
		{name: "name with a slash", tool: Tool{Name: "fs/read", Call: noop}, field: "Name"},
		{name: "category", tool: Tool{Name: "t", Category: "web search", Call: noop}, field: "Category"},
		{name: "no call", tool: Tool{Name: "t"}, field: "Call"},
		{name: "two problems", tool: Tool{Name: "", Input: json.RawMessage(`[]`)}, field: "Name", more: true},
		{name: "input not JSON", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":`)}, field: "Input"},
		{name: "input duplicate key", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":"object","type":"object"}`)}, field: "Input"},
		{name: "input array", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`[]`)}, field: "Input"},
		{name: "input true", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`true`)}, field: "Input"},
		{name: "input of strings", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":"string"}`)}, field: "Input", ptr: "/type"},
		{name: "input of types", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":["object","null"]}`)}, field: "Input", ptr: "/type"},
		{name: "unknown type", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`)}, field: "Input", ptr: "/properties/a/type"},
		{name: "negative minLength", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"properties":{"a":{"minLength":-1}}}`)}, field: "Input", ptr: "/properties/a/minLength"},
		{name: "bad pattern", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":"object","properties":{"a":{"pattern":"(["}}}`)}, field: "Input", ptr: "/properties/a/pattern"},
		{name: "remote ref", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`)}, field: "Input"},
		{name: "relative ref", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"$ref":"other.json"}`)}, field: "Input"},
		{name: "file ref", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"$ref":"file:///etc/passwd"}`)}, field: "Input"},
		{name: "missing local ref", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"$ref":"#/$defs/nothing"}`)}, field: "Input"},
		{name: "remote meta-schema", tool: Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"$schema":"https://example.com/meta","type":"object"}`)}, field: "Input"},
		{name: "output not JSON", tool: Tool{Name: "t", Call: noop, Output: json.RawMessage(`nope`)}, field: "Output"},
		{name: "output number", tool: Tool{Name: "t", Call: noop, Output: json.RawMessage(`5`)}, field: "Output"},
		{name: "output bad enum", tool: Tool{Name: "t", Call: noop, Output: json.RawMessage(`{"enum":5}`)}, field: "Output", ptr: "/enum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := tt.tool
			err := tool.Check()
			problems := checkErrors(t, err)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				if tool.schemas == nil {
					t.Fatal("Check() passed but compiled nothing")
				}
				if got := tool.schemas.in == nil; got != tt.noInputSchema {
					t.Errorf("compiled input schema is nil: %v, want %v", got, tt.noInputSchema)
				}
				return
			}
			if len(problems) == 0 {
				t.Fatalf("Check() = nil, want a problem with %s", tt.field)
			}
			p := problems[0]
			if p.Field != tt.field || p.Pointer != tt.ptr || p.Tool != tt.tool.Name {
				t.Errorf("Check() = %v (tool %q, field %q, pointer %q), want tool %q, field %q, pointer %q", err, p.Tool, p.Field, p.Pointer, tt.tool.Name, tt.field, tt.ptr)
			}
			if p.Msg == "" {
				t.Errorf("Check() = %v, with no message", err)
			}
			if got := len(problems) > 1; got != tt.more {
				t.Errorf("Check() = %v: more than one problem: %v, want %v", err, got, tt.more)
			}
			if tool.schemas != nil {
				t.Error("a refused tool kept compiled schemas")
			}
		})
	}
}

// issueKey is an issue without its wording, for comparing.
type issueKey struct{ Pointer, Rule string }

// schemaIssues returns the issues of a validation error, checking its
// ASL name and tool.
func schemaIssues(t *testing.T, err error, name asl.ErrorName, tool string) []issueKey {
	t.Helper()
	var ae *asl.Error
	if !errors.As(err, &ae) || ae.Name != name {
		t.Fatalf("error %v, want an *asl.Error named %s", err, name)
	}
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %v does not wrap a *SchemaError", err)
	}
	if se.Tool != tool || se.Output != (name == asl.ErrAgentInvalidOutput) {
		t.Errorf("SchemaError{Tool: %q, Output: %v}, want tool %q for %s", se.Tool, se.Output, tool, name)
	}
	var out []issueKey
	for _, is := range se.Issues {
		if is.Msg == "" {
			t.Errorf("issue %+v has no message", is)
		}
		out = append(out, issueKey{is.Pointer, is.Rule})
	}
	return out
}

const searchSchema = `{
	"type": "object",
	"properties": {
		"query": {"type": "string", "minLength": 1},
		"limit": {"type": "integer", "minimum": 1, "maximum": 50},
		"tags": {"type": "array", "items": {"type": "string", "enum": ["bug", "docs"]}, "maxItems": 2, "uniqueItems": true},
		"filter": {
			"type": "object",
			"properties": {"state": {"const": "open"}, "a/b": {"type": "boolean"}},
			"additionalProperties": false
		},
		"sort": {"anyOf": [{"type": "string"}, {"type": "null"}]},
		"page": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
		"when": {"type": "string", "pattern": "^[0-9]{4}$"},
		"none": false,
		"not": {"not": {"type": "string"}}
	},
	"required": ["query"],
	"additionalProperties": false
}`

func decodeObject(t testing.TB, s string) map[string]any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v.(map[string]any)
}

func TestToolsValidateInput(t *testing.T) {
	tool := Tool{Name: "search", Input: json.RawMessage(searchSchema), Call: noop}
	if err := tool.Check(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want []issueKey
	}{
		{name: "least", in: `{"query":"x"}`},
		{name: "most", in: `{"query":"x","limit":50,"tags":["bug","docs"],"filter":{"state":"open","a/b":true},"sort":null,"page":1.5,"when":"2026","not":1}`},
		{name: "integer written 2.0", in: `{"query":"x","limit":2.0}`},
		{name: "empty", in: `{}`, want: []issueKey{{"/query", "required"}}},
		{name: "wrong type", in: `{"query":5}`, want: []issueKey{{"/query", "type"}}},
		{name: "too short", in: `{"query":""}`, want: []issueKey{{"/query", "minLength"}}},
		{name: "fraction", in: `{"query":"x","limit":1.5}`, want: []issueKey{{"/limit", "type"}}},
		{name: "over maximum", in: `{"query":"x","limit":51}`, want: []issueKey{{"/limit", "maximum"}}},
		{name: "huge integer", in: `{"query":"x","limit":123456789012345678901234567890}`, want: []issueKey{{"/limit", "maximum"}}},
		{name: "unknown property", in: `{"query":"x","extra":1}`, want: []issueKey{{"/extra", "additionalProperties"}}},
		{name: "enum in array", in: `{"query":"x","tags":["bug","feature"]}`, want: []issueKey{{"/tags/1", "enum"}}},
		{name: "too many items", in: `{"query":"x","tags":["bug","docs","bug"]}`, want: []issueKey{{"/tags", "maxItems"}, {"/tags", "uniqueItems"}}},
		{name: "nested", in: `{"query":"x","filter":{"state":"closed","a/b":1,"x":0}}`, want: []issueKey{{"/filter/a~1b", "type"}, {"/filter/state", "const"}, {"/filter/x", "additionalProperties"}}},
		{name: "anyOf", in: `{"query":"x","sort":1}`, want: []issueKey{{"/sort", "anyOf"}}},
		{name: "oneOf both", in: `{"query":"x","page":1}`, want: []issueKey{{"/page", "oneOf"}}},
		{name: "pattern", in: `{"query":"x","when":"20x6"}`, want: []issueKey{{"/when", "pattern"}}},
		{name: "false schema", in: `{"query":"x","none":1}`, want: []issueKey{{"/none", "false"}}},
		{name: "not", in: `{"query":"x","not":"s"}`, want: []issueKey{{"/not", "not"}}},
		{name: "several", in: `{"limit":0,"extra":true}`, want: []issueKey{{"/extra", "additionalProperties"}, {"/limit", "minimum"}, {"/query", "required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tool.ValidateInput(decodeObject(t, tt.in))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateInput(%s) = %v, want nil", tt.in, err)
				}
				return
			}
			got := schemaIssues(t, err, asl.ErrAgentInvalidInput, "search")
			if !equalIssues(got, tt.want) {
				t.Errorf("ValidateInput(%s) = %v: issues %v, want %v", tt.in, err, got, tt.want)
			}
		})
	}
}

func equalIssues(a, b []issueKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestToolsValidateInputWithoutSchema(t *testing.T) {
	tool := Tool{Name: "any", Call: noop}
	if err := tool.Check(); err != nil {
		t.Fatal(err)
	}
	for _, in := range []map[string]any{nil, {}, {"a": []any{json.Number("1"), nil}}} {
		if err := tool.ValidateInput(in); err != nil {
			t.Errorf("ValidateInput(%v) = %v, want nil", in, err)
		}
	}
}

func TestToolsValidateInputNotChecked(t *testing.T) {
	// A tool used without Check compiles its schema on the spot, and a
	// schema changed after Check is compiled again.
	tool := Tool{Name: "t", Call: noop, Input: json.RawMessage(`{"required":["a"]}`)}
	err := tool.ValidateInput(map[string]any{})
	if got := schemaIssues(t, err, asl.ErrAgentInvalidInput, "t"); !equalIssues(got, []issueKey{{"/a", "required"}}) {
		t.Errorf("ValidateInput({}) issues %v, want /a required", got)
	}
	if err := tool.Check(); err != nil {
		t.Fatal(err)
	}
	tool.Input = json.RawMessage(`{"required":["b"]}`)
	err = tool.ValidateInput(map[string]any{"a": true})
	if got := schemaIssues(t, err, asl.ErrAgentInvalidInput, "t"); !equalIssues(got, []issueKey{{"/b", "required"}}) {
		t.Errorf("ValidateInput after a change: issues %v, want /b required", got)
	}
	tool.Input = json.RawMessage(`{"type":"string"}`)
	err = tool.ValidateInput(map[string]any{})
	var ae *asl.Error
	var ce *CheckError
	if !errors.As(err, &ae) || ae.Name != asl.ErrAgentToolError || !errors.As(err, &ce) || ce.Field != "Input" || ce.Pointer != "/type" {
		t.Errorf("ValidateInput with a bad schema = %v, want Agent.ToolError wrapping Input's problem at /type", err)
	}
}

func TestToolsValidateOutput(t *testing.T) {
	tool := Tool{Name: "stats", Call: noop, Output: json.RawMessage(`{
		"type": "object",
		"properties": {"count": {"type": "integer"}, "items": {"type": "array", "items": {"type": "object", "required": ["id"]}}},
		"required": ["count"]
	}`)}
	if err := tool.Check(); err != nil {
		t.Fatal(err)
	}
	type item struct {
		ID string `json:"id,omitempty"`
	}
	tests := []struct {
		name string
		out  any
		want []issueKey
	}{
		{name: "JSON value", out: map[string]any{"count": json.Number("2"), "items": []any{map[string]any{"id": "a"}}}},
		{name: "Go value", out: map[string]any{"count": 2, "items": []item{{ID: "a"}}}},
		{name: "Go struct", out: struct {
			Count int `json:"count"`
		}{3}},
		{name: "missing", out: map[string]any{}, want: []issueKey{{"/count", "required"}}},
		{name: "not an object", out: "text", want: []issueKey{{"", "type"}}},
		{name: "deep", out: map[string]any{"count": 1.5, "items": []item{{ID: "a"}, {}}}, want: []issueKey{{"/count", "type"}, {"/items/1/id", "required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tool.ValidateOutput(tt.out)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateOutput(%v) = %v, want nil", tt.out, err)
				}
				return
			}
			got := schemaIssues(t, err, asl.ErrAgentInvalidOutput, "stats")
			if !equalIssues(got, tt.want) {
				t.Errorf("ValidateOutput(%v) = %v: issues %v, want %v", tt.out, err, got, tt.want)
			}
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		err := tool.ValidateOutput(map[string]any{"count": math.NaN()})
		var ae *asl.Error
		if !errors.As(err, &ae) || ae.Name != asl.ErrAgentInvalidOutput {
			t.Errorf("ValidateOutput(NaN) = %v, want Agent.InvalidOutput", err)
		}
	})
	t.Run("no output schema", func(t *testing.T) {
		plain := Tool{Name: "plain", Call: noop}
		if err := plain.ValidateOutput(math.NaN()); err != nil {
			t.Errorf("ValidateOutput without an output schema = %v, want nil", err)
		}
	})
}

func TestToolsRun(t *testing.T) {
	base := errors.New("disk full")
	named := asl.Errorf("Custom.Failure", "went wrong")
	tests := []struct {
		name     string
		call     func(context.Context, *agents.Request, map[string]any) (any, error)
		output   string
		in       map[string]any
		cancel   bool
		want     any
		wantName asl.ErrorName
		wantIs   error
	}{
		{name: "result normalised", call: func(context.Context, *agents.Request, map[string]any) (any, error) {
			return map[string]int{"n": 1}, nil
		}, output: `{"type":"object"}`, want: map[string]any{"n": json.Number("1")}},
		{name: "arguments refused", in: map[string]any{"x": true}, wantName: asl.ErrAgentInvalidInput},
		{name: "plain error", call: func(context.Context, *agents.Request, map[string]any) (any, error) {
			return nil, base
		}, wantName: asl.ErrAgentToolError, wantIs: base},
		{name: "named error kept", call: func(context.Context, *agents.Request, map[string]any) (any, error) {
			return nil, named
		}, wantName: "Custom.Failure", wantIs: named},
		{name: "cancelled", cancel: true, call: func(ctx context.Context, _ *agents.Request, _ map[string]any) (any, error) {
			return nil, ctx.Err()
		}, wantIs: context.Canceled},
		{name: "result not JSON", call: func(context.Context, *agents.Request, map[string]any) (any, error) {
			return math.Inf(1), nil
		}, wantName: asl.ErrAgentInvalidOutput},
		{name: "result refused", call: func(context.Context, *agents.Request, map[string]any) (any, error) {
			return "text", nil
		}, output: `{"type":"object"}`, wantName: asl.ErrAgentInvalidOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := Tool{Name: "t", Input: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`), Call: tt.call}
			if tool.Call == nil {
				tool.Call = noop
			}
			if tt.output != "" {
				tool.Output = json.RawMessage(tt.output)
			}
			if err := tool.Check(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			got, err := tool.Run(ctx, &agents.Request{Agent: "caller"}, tt.in)
			if tt.wantName == "" && tt.wantIs == nil {
				if err != nil {
					t.Fatalf("Run() error %v", err)
				}
				if !jsonvalue.Equal(got, tt.want) {
					t.Errorf("Run() = %v, want %v", got, tt.want)
				}
				return
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Run() error %v, want one wrapping %v", err, tt.wantIs)
			}
			var ae *asl.Error
			isASL := errors.As(err, &ae)
			if tt.wantName == "" {
				if isASL {
					t.Errorf("Run() error %v, want the context's error as it is", err)
				}
				return
			}
			if !isASL || ae.Name != tt.wantName {
				t.Errorf("Run() error %v, want %s", err, tt.wantName)
			}
		})
	}
	t.Run("no call", func(t *testing.T) {
		var tool Tool
		_, err := tool.Run(t.Context(), nil, nil)
		var ae *asl.Error
		if !errors.As(err, &ae) || ae.Name != asl.ErrAgentToolError {
			t.Errorf("Run() of a tool without Call = %v, want Agent.ToolError", err)
		}
	})
}
