package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

type address struct {
	Street string `json:"street"`
	City   string `json:"city,omitempty" jsonschema:"the city, if known"`
}

type person struct {
	Name     string            `json:"name" jsonschema:"the person's full name"`
	Age      int               `json:"age,omitempty"`
	Score    float64           `json:"score"`
	Small    uint8             `json:"small,omitzero"`
	Home     address           `json:"home"`
	Work     *address          `json:"work"`
	Previous []address         `json:"previous,omitempty"`
	Tags     []string          `json:"tags"`
	Labels   map[string]string `json:"labels,omitempty"`
	Nick     *string           `json:"nick,omitempty"`
	Since    time.Time         `json:"since,omitzero"`
	Secret   string            `json:"-"`
	Renamed  bool              `json:"is_active"`
	Untagged string
	hidden   int
}

type embedded struct {
	address
	Note  string          `json:"note"`
	Pairs [2]int          `json:"pairs"`
	Any   any             `json:"any,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Blob  []byte          `json:"blob,omitempty"`
	Num   json.Number     `json:"num,omitempty"`
}

type result struct {
	OK    bool     `json:"ok"`
	Count int64    `json:"count"`
	Names []string `json:"names,omitempty"`
}

// goldenSchemas compares a tool's schemas with testdata/typed/<name>.json
// (rewritten with -update).
func goldenSchemas(t *testing.T, name string, tool Tool) {
	t.Helper()
	var buf bytes.Buffer
	both := []byte(`{"input":` + string(tool.Input) + `,"output":` + string(tool.Output) + `}`)
	if err := json.Indent(&buf, both, "", "  "); err != nil {
		t.Fatalf("schemas of %s: %v", name, err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "typed", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tools -update to write it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("schemas of %s:\n%s\nwant (%s):\n%s", name, buf.Bytes(), path, want)
	}
}

func TestToolsTypedSchemas(t *testing.T) {
	tests := []struct {
		name string
		make func() (Tool, error)
	}{
		{"person", func() (Tool, error) {
			return Typed("person", "Stores a person.", func(context.Context, person) (result, error) { return result{}, nil })
		}},
		{"embedded", func() (Tool, error) {
			return Typed("embedded", "", func(context.Context, embedded) (*result, error) { return nil, nil })
		}},
		{"map", func() (Tool, error) {
			return Typed("map", "", func(context.Context, map[string]int) ([]string, error) { return nil, nil })
		}},
		{"scalar-out", func() (Tool, error) {
			return Typed("scalar", "", func(context.Context, struct{}) (string, error) { return "", nil })
		}},
		{"any-out", func() (Tool, error) {
			return Typed("any", "", func(context.Context, map[string]any) (any, error) { return nil, nil })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			if tool.schemas == nil || tool.Call == nil {
				t.Error("Typed returned a tool that is not checked")
			}
			goldenSchemas(t, tt.name, tool)
		})
	}
}

func TestToolsTypedRefused(t *testing.T) {
	tests := []struct {
		name  string
		make  func() (Tool, error)
		field string
	}{
		{"bad name", func() (Tool, error) {
			return Typed("a b", "", func(context.Context, person) (int, error) { return 0, nil })
		}, "Name"},
		{"nil func", func() (Tool, error) {
			return Typed[person, int]("t", "", nil)
		}, "Call"},
		{"string input", func() (Tool, error) {
			return Typed("t", "", func(context.Context, string) (int, error) { return 0, nil })
		}, "Input"},
		{"pointer input", func() (Tool, error) {
			return Typed("t", "", func(context.Context, *person) (int, error) { return 0, nil })
		}, "Input"},
		{"slice input", func() (Tool, error) {
			return Typed("t", "", func(context.Context, []person) (int, error) { return 0, nil })
		}, "Input"},
		{"channel field", func() (Tool, error) {
			return Typed("t", "", func(context.Context, struct{ C chan int }) (int, error) { return 0, nil })
		}, "Input"},
		{"func output", func() (Tool, error) {
			return Typed("t", "", func(context.Context, struct{}) (func(), error) { return nil, nil })
		}, "Output"},
		{"int-keyed map output", func() (Tool, error) {
			return Typed("t", "", func(context.Context, struct{}) (map[int]bool, error) { return nil, nil })
		}, "Output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.make()
			problems := checkErrors(t, err)
			if len(problems) == 0 || problems[0].Field != tt.field {
				t.Errorf("Typed() = %v, want a problem with %s", err, tt.field)
			}
		})
	}
}

func TestToolsTypedCall(t *testing.T) {
	var got person
	tool, err := Typed("person", "", func(_ context.Context, p person) (result, error) {
		got = p
		return result{OK: true, Count: int64(p.Age), Names: p.Tags}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	in := decodeObject(t, `{"name":"Ada","age":36,"score":0.1,"home":{"street":"Main"},"work":null,"tags":["a","b"],"is_active":true,"Untagged":"u"}`)
	out, err := tool.Run(t.Context(), nil, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ok": true, "count": json.Number("36"), "names": []any{"a", "b"}}
	if !jsonvalue.Equal(out, want) {
		t.Errorf("Run() = %v, want %v", out, want)
	}
	if got.Name != "Ada" || got.Age != 36 || got.Score != 0.1 || got.Home.Street != "Main" || got.Work != nil || !got.Renamed || got.Untagged != "u" || got.hidden != 0 {
		t.Errorf("the function got %+v", got)
	}

	// Refused by the schema before the call, with the pointer.
	in = decodeObject(t, `{"name":"Ada","score":1,"home":{"street":"Main","zip":"1"},"work":null,"tags":null,"is_active":true,"Untagged":""}`)
	_, err = tool.Run(t.Context(), nil, in)
	if issues := schemaIssues(t, err, asl.ErrAgentInvalidInput, "person"); !equalIssues(issues, []issueKey{{"/home/zip", "additionalProperties"}}) {
		t.Errorf("Run() with an unknown field: issues %v", issues)
	}
}

func TestToolsTypedDecode(t *testing.T) {
	type exact struct {
		Big   int64       `json:"big"`
		Any   any         `json:"any"`
		Num   json.Number `json:"num"`
		Inner *struct {
			N uint8 `json:"n"`
		} `json:"inner"`
	}
	var got exact
	tool, err := Typed("exact", "", func(_ context.Context, in exact) (bool, error) {
		got = in
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Call decodes through JSON: numbers keep their exact value.
	in := decodeObject(t, `{"big":9007199254740993,"any":12345678901234567890.5,"num":1e400,"inner":{"n":255}}`)
	if _, err := tool.Call(t.Context(), nil, in); err != nil {
		t.Fatal(err)
	}
	if got.Big != 9007199254740993 || got.Any != json.Number("12345678901234567890.5") || got.Num != "1e400" || got.Inner == nil || got.Inner.N != 255 {
		t.Errorf("decoded %+v", got)
	}
	// Call on its own (without ValidateInput) still refuses what does not
	// fit, as Agent.InvalidInput.
	for _, bad := range []string{
		`{"big":1.5,"any":1,"num":1,"inner":null}`,
		`{"big":1,"any":1,"num":1,"inner":{"n":256}}`,
		`{"big":1,"any":1,"num":1,"inner":null,"extra":1}`,
		`{"big":"1","any":1,"num":1,"inner":null}`,
	} {
		_, err := tool.Call(t.Context(), nil, decodeObject(t, bad))
		var ae *asl.Error
		if !errors.As(err, &ae) || ae.Name != asl.ErrAgentInvalidInput {
			t.Errorf("Call(%s) = %v, want Agent.InvalidInput", bad, err)
		}
	}
	// The same arguments are refused by the schema first, at their pointer.
	_, err = tool.Run(t.Context(), nil, decodeObject(t, `{"big":1,"any":1,"num":1,"inner":{"n":256}}`))
	if issues := schemaIssues(t, err, asl.ErrAgentInvalidInput, "exact"); !equalIssues(issues, []issueKey{{"/inner/n", "maximum"}}) {
		t.Errorf("Run() issues %v, want /inner/n maximum", issues)
	}
}

func TestToolsTypedErrors(t *testing.T) {
	base := errors.New("not found")
	tests := []struct {
		name     string
		err      error
		out      float64
		wantName asl.ErrorName
	}{
		{"plain", base, 0, asl.ErrAgentToolError},
		{"wrapped asl", errors.Join(asl.Errorf("Lookup.Missing", "no such key"), base), 0, "Lookup.Missing"},
		{"NaN result", nil, nanValue(), asl.ErrAgentInvalidOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := Typed("lookup", "", func(context.Context, struct{}) (float64, error) { return tt.out, tt.err })
			if err != nil {
				t.Fatal(err)
			}
			_, err = tool.Run(t.Context(), nil, nil)
			var ae *asl.Error
			if !errors.As(err, &ae) || ae.Name != tt.wantName {
				t.Errorf("Run() = %v, want %s", err, tt.wantName)
			}
			if tt.err != nil && !errors.Is(err, base) {
				t.Errorf("Run() = %v, want it to wrap %v", err, base)
			}
		})
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestToolsFromAgent(t *testing.T) {
	var got agents.Request
	agent := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		got = *req
		in := req.Input.(map[string]any)
		return map[string]any{"echo": in["q"]}, nil
	})
	tool, err := FromAgent("researcher", "Researches a question.", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`), agent)
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	caller := &agents.Request{
		Agent: "Planner", Execution: "exec-1", State: "Plan", Step: "Plan#1", Attempt: 2, Invocation: 3,
		Input:     "the caller's input",
		Violation: map[string]any{"rule": "r"},
		Steps:     stepRunner{},
		OnUsage:   func(agents.Usage) { used++ },
	}
	out, err := tool.Run(t.Context(), caller, map[string]any{"q": "why"})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonvalue.Equal(out, map[string]any{"echo": "why"}) {
		t.Errorf("Run() = %v", out)
	}
	if got.Agent != "researcher" || got.Step != "Plan#1/tool:researcher" || got.Execution != "exec-1" || got.State != "Plan" || got.Attempt != 2 || got.Invocation != 3 {
		t.Errorf("the agent's request: %+v", got)
	}
	if !jsonvalue.Equal(got.Input, map[string]any{"q": "why"}) {
		t.Errorf("the agent's input = %v, want the arguments", got.Input)
	}
	if got.Violation != nil || got.Steps != nil {
		t.Errorf("the agent's request keeps the caller's Violation %v or Steps %v", got.Violation, got.Steps)
	}
	got.ReportUsage(agents.Usage{Tokens: 1})
	if used != 1 {
		t.Error("the agent's usage is not reported to the caller's request")
	}
	if caller.Agent != "Planner" || caller.Step != "Plan#1" || caller.Violation == nil {
		t.Errorf("the caller's request changed: %+v", caller)
	}

	// Without a calling request, and refused arguments.
	if _, err := tool.Run(t.Context(), nil, map[string]any{"q": "x"}); err != nil {
		t.Errorf("Run(nil request) = %v", err)
	}
	_, err = tool.Run(t.Context(), nil, map[string]any{})
	if issues := schemaIssues(t, err, asl.ErrAgentInvalidInput, "researcher"); !equalIssues(issues, []issueKey{{"/q", "required"}}) {
		t.Errorf("Run({}) issues %v", issues)
	}

	// An agent's plain error names the tool; a named one is kept.
	base := errors.New("boom")
	for _, tt := range []struct {
		err  error
		want asl.ErrorName
	}{{base, asl.ErrAgentToolError}, {asl.Errorf(asl.ErrAgentModelError, "down"), asl.ErrAgentModelError}} {
		failing, err := FromAgent("failing", "", nil, agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, tt.err }))
		if err != nil {
			t.Fatal(err)
		}
		_, err = failing.Run(t.Context(), nil, nil)
		var ae *asl.Error
		if !errors.As(err, &ae) || ae.Name != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("Run() = %v, want %s wrapping %v", err, tt.want, tt.err)
		}
	}

	// Refused at construction.
	if _, err := FromAgent("x", "", nil, nil); len(checkErrors(t, err)) != 1 {
		t.Errorf("FromAgent(nil agent) = %v, want one problem", err)
	}
	if _, err := FromAgent("x", "", json.RawMessage(`{"type":"array"}`), agent); len(checkErrors(t, err)) != 1 {
		t.Errorf("FromAgent(array schema) = %v, want one problem", err)
	}
}

type stepRunner struct{}

func (stepRunner) RunJournal(ctx context.Context, _ agents.StepSpec, fn func(context.Context) (any, error)) (any, error) {
	return fn(ctx)
}
