package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestParseMockToolCallErrors(t *testing.T) {
	cases := []struct {
		name, tools string
		ptr, msg    string
	}{
		{"entry a number", `[3]`, "/A/0/Tools/0", "a tool must be a tool name or a tool call object with Name, not number"},
		{"entry null", `["a", null]`, "/A/0/Tools/1", "a tool must be a tool name or a tool call object with Name, not null"},
		{"empty name", `["a", ""]`, "/A/0/Tools/1", "a tool name must not be empty"},
		{"no name", `[{"Output": 1}]`, "/A/0/Tools/0", "a tool call needs a Name"},
		{"empty Name", `[{"Name": ""}]`, "/A/0/Tools/0/Name", `Name must be a non-empty string, not ""`},
		{"Name a number", `[{"Name": 1}]`, "/A/0/Tools/0/Name", "Name must be a non-empty string, not number"},
		{"Input an array", `[{"Name": "s", "Input": [1]}]`, "/A/0/Tools/0/Input", "Input must be an object (the tool's arguments), not array"},
		{"Input null", `[{"Name": "s", "Input": null}]`, "/A/0/Tools/0/Input", "Input must be an object (the tool's arguments), not null"},
		{"unknown field", `[{"Name": "s", "Result": 1}]`, "/A/0/Tools/0/Result", `unknown field "Result" (a tool call has Name, and optionally Input, Output or Throw, DelaySeconds and Comment)`},
		{"Output and Throw", `[{"Name": "s", "Output": 1, "Throw": {"Error": "E"}}]`, "/A/0/Tools/0", "a tool call has Output or Throw, not both"},
		{"Throw a string", `[{"Name": "s", "Throw": "E"}]`, "/A/0/Tools/0/Throw", "Throw must be an object with Error and Cause, not string"},
		{"Throw without Error", `[{"Name": "s", "Throw": {"Cause": "c"}}]`, "/A/0/Tools/0/Throw", "missing Error"},
		{"Throw unknown field", `[{"Name": "s", "Throw": {"Error": "E", "Code": 1}}]`, "/A/0/Tools/0/Throw/Code", `unknown field "Code" (Throw has Error and Cause)`},
		{"Throw Cause a number", `[{"Name": "s", "Throw": {"Error": "E", "Cause": 1}}]`, "/A/0/Tools/0/Throw/Cause", "Cause must be a string, not number"},
		{"negative delay", `[{"Name": "s", "DelaySeconds": -1}]`, "/A/0/Tools/0/DelaySeconds", "DelaySeconds must be a number of seconds between 0 and 86400, not number"},
		{"delay a string", `[{"Name": "s", "DelaySeconds": "1"}]`, "/A/0/Tools/0/DelaySeconds", "DelaySeconds must be a number of seconds between 0 and 86400, not string"},
		{"Comment a number", `[{"Name": "s", "Comment": 1}]`, "/A/0/Tools/0/Comment", "Comment must be a string, not number"},
		{"Tools an object", `{"Name": "s"}`, "/A/0/Tools", "Tools must be an array of tool names or tool calls, not object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mock := `{"A": {"0": {"Return": 1, "Tools": ` + tc.tools + `}}}`
			_, err := ParseMocks([]byte(mock))
			var me *MockError
			if !errors.As(err, &me) || me.Pointer != tc.ptr || me.Msg != tc.msg {
				t.Errorf("ParseMocks(%s) = %v, want a MockError at %s: %s", mock, err, tc.ptr, tc.msg)
			}
		})
	}
}

// toolLog is a Tools that records each use and call, runs calls, and
// refuses the tool named refused (States.Permissions).
type toolLog struct {
	refused string
	log     []string
	outputs []any
	errs    []error
}

func (l *toolLog) tools() *Tools {
	return &Tools{
		OnUse: func(_ context.Context, name string) (func(), error) {
			l.log = append(l.log, "use "+name)
			if name == l.refused {
				return nil, asl.Errorf(asl.ErrPermissions, "no %s", name)
			}
			return func() {}, nil
		},
		OnRun: func(ctx context.Context, name string, input map[string]any, call ToolCall) (any, error) {
			in, _ := jsonvalue.Marshal(input)
			l.log = append(l.log, "run "+name+" "+string(in))
			if name == l.refused {
				return nil, asl.Errorf(asl.ErrPermissions, "no %s", name)
			}
			out, err := call(ctx, input)
			l.outputs = append(l.outputs, out)
			l.errs = append(l.errs, err)
			return out, err
		},
	}
}

func TestMockToolCalls(t *testing.T) {
	ms, err := ParseMocks([]byte(`{"R": {
		"0": {"Return": "ok", "Usage": {"Tokens": 5}, "Tools": [
			"fetch",
			{"Name": "search", "Input": {"q": "go"}, "Output": {"hits": 2}, "Comment": "the first search"},
			{"Name": "clock"}
		]},
		"1": {"Return": "ok", "Usage": {"Tokens": 5}, "Tools": [
			{"Name": "search", "Throw": {"Error": "Search.Down", "Cause": "503"}},
			"fetch"
		]},
		"2": {"Return": "ok", "Tools": [{"Name": "shell", "Input": {"cmd": "rm"}}, "fetch"]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ms.Agent("R")
	for _, tc := range []struct {
		n       int
		log     []string
		outputs []string // JSON of each call's output
		err     asl.ErrorName
		usage   int64
	}{
		{0, []string{"use fetch", `run search {"q":"go"}`, "run clock {}"}, []string{`{"hits":2}`, "null"}, "", 5},
		// A call that fails fails the agent, before its usage and later tools.
		{1, []string{"run search {}"}, []string{"null"}, "Search.Down", 0},
		// A call the Tools block refuses fails the agent with that error.
		{2, []string{`run shell {"cmd":"rm"}`}, nil, asl.ErrPermissions, 0},
	} {
		l := &toolLog{refused: "shell"}
		var usage int64
		req := &Request{Invocation: tc.n, Tools: l.tools(), OnUsage: func(u Usage) { usage += u.Tokens }}
		got, err := m.Invoke(context.Background(), req)
		var ae *asl.Error
		switch {
		case tc.err == "" && (err != nil || got != "ok"):
			t.Errorf("invocation %d = %v, %v; want ok", tc.n, got, err)
		case tc.err != "" && (!errors.As(err, &ae) || ae.Name != tc.err):
			t.Errorf("invocation %d: error %v, want %s", tc.n, err, tc.err)
		}
		var outs []string
		for _, o := range l.outputs {
			b, _ := jsonvalue.Marshal(o)
			outs = append(outs, string(b))
		}
		if !slices.Equal(l.log, tc.log) || !slices.Equal(outs, tc.outputs) || usage != tc.usage {
			t.Errorf("invocation %d: tools %q with outputs %q, usage %d; want %q with %q, usage %d", tc.n, l.log, outs, usage, tc.log, tc.outputs, tc.usage)
		}
	}
}

func TestMockToolCallThrowsAnASLError(t *testing.T) {
	ms, err := ParseMocks([]byte(`{"R": {"0-1": {"Return": "ok", "Tools": [{"Name": "s", "Throw": {"Error": "Agent.ToolError", "Cause": "boom"}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ms.Agent("R")
	// Without a Tools block, Run calls the tool directly.
	_, err = m.Invoke(context.Background(), &Request{Invocation: 0})
	var ae *asl.Error
	if !errors.As(err, &ae) || ae.Name != asl.ErrAgentToolError || ae.Cause != "boom" {
		t.Fatalf("Invoke = %v, want Agent.ToolError: boom", err)
	}
	// Each call gets its own error value: changing one does not change the script.
	ae.Cause = "changed"
	_, err = m.Invoke(context.Background(), &Request{Invocation: 1})
	if !errors.As(err, &ae) || ae.Cause != "boom" {
		t.Errorf("second Invoke = %v, want the scripted cause boom", err)
	}
}

func TestMockToolCallDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, err := ParseMocks([]byte(`{"Slow": {"0": {"Return": "done", "DelaySeconds": 2, "HeartbeatSeconds": 3, "Tools": [
			{"Name": "a", "DelaySeconds": 4, "Output": 1},
			{"Name": "b", "DelaySeconds": 1.5, "Output": 2}
		]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ms.Agent("Slow")
		var beats atomic.Int32
		var ends []time.Duration
		start := time.Now()
		tools := &Tools{OnRun: func(ctx context.Context, name string, input map[string]any, call ToolCall) (any, error) {
			out, err := call(ctx, input)
			ends = append(ends, time.Since(start))
			return out, err
		}}
		got, err := m.Invoke(context.Background(), &Request{Tools: tools, OnHeartbeat: func() { beats.Add(1) }})
		if err != nil || got != "done" {
			t.Fatalf("Invoke = %v, %v; want done", got, err)
		}
		if want := []time.Duration{4 * time.Second, 5500 * time.Millisecond}; !slices.Equal(ends, want) {
			t.Errorf("tool calls ended at %v, want %v", ends, want)
		}
		if d := time.Since(start); d != 7500*time.Millisecond {
			t.Errorf("answered after %v, want 7.5s (the tools' 5.5s, then the response's 2s)", d)
		}
		// Heartbeats every 3s of each wait: at 3s of a's 4s; none in b's
		// 1.5s; none in the response's 2s.
		if b := beats.Load(); b != 1 {
			t.Errorf("heartbeats = %d, want 1", b)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := m.Invoke(ctx, &Request{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Invoke cancelled during a tool call = %v, want DeadlineExceeded", err)
		}
	})
}

// ExampleMocks_toolCalls scripts an agent that calls a tool through the
// state's Tools block (here a stand-in that only prints the call).
func ExampleMocks_toolCalls() {
	ms, err := ParseMocks([]byte(`{"Researcher": {"0": {
		"Tools": [{"Name": "search", "Input": {"q": "aslrun"}, "Output": {"hits": 3}}],
		"Return": {"answer": 42}}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	m, _ := ms.Agent("Researcher")
	tools := &Tools{OnRun: func(ctx context.Context, name string, input map[string]any, call ToolCall) (any, error) {
		out, err := call(ctx, input)
		b, _ := jsonvalue.Marshal(out)
		fmt.Printf("%s(%v) = %s\n", name, input["q"], b)
		return out, err
	}}
	got, err := m.Invoke(context.Background(), &Request{Agent: "Researcher", Tools: tools})
	fmt.Println(got, err)
	// Output:
	// search(aslrun) = {"hits":3}
	// map[answer:42] <nil>
}
