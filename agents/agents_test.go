package agents

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestRegistry(t *testing.T) {
	var r Registry // the zero value is ready to use
	echo := Func(func(_ context.Context, req *Request) (any, error) { return req.Input, nil })
	if err := r.Register("Echo", echo); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("Echo", echo); !errors.Is(err, ErrDuplicate) {
		t.Errorf("second Register = %v, want ErrDuplicate", err)
	}
	if err := r.Register("", echo); err == nil {
		t.Error("Register with an empty name succeeded")
	}
	if err := r.Register("Nil", nil); err == nil {
		t.Error("Register of a nil agent succeeded")
	}
	if _, ok := r.Lookup("Echo"); !ok {
		t.Error("Lookup(Echo) found nothing")
	}
	if _, ok := r.Lookup("Other"); ok {
		t.Error("Lookup(Other) found an agent")
	}
	if got := strings.Join(r.Names(), ","); got != "Echo" {
		t.Errorf("Names() = %q, want Echo", got)
	}
}

func TestRequestKeyAndHeartbeat(t *testing.T) {
	var beats atomic.Int32
	req := &Request{Execution: "e1", State: "Map/3/Summarize", Attempt: 2, OnHeartbeat: func() { beats.Add(1) }}
	if got := req.IdempotencyKey(); got != "e1/Map/3/Summarize/2" {
		t.Errorf("IdempotencyKey() = %q, want e1/Map/3/Summarize/2", got)
	}
	req.Heartbeat()
	(&Request{}).Heartbeat() // no OnHeartbeat: a no-op
	if beats.Load() != 1 {
		t.Errorf("heartbeats = %d, want 1", beats.Load())
	}
}

type order struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

type invoice struct {
	Order string  `json:"order"`
	Tax   float64 `json:"tax"`
}

func TestTyped(t *testing.T) {
	a := Typed(func(_ context.Context, o order) (invoice, error) {
		return invoice{Order: o.ID, Tax: o.Total / 10}, nil
	})
	in, _ := jsonvalue.Decode([]byte(`{"id":"o-7","total":250}`))
	got, err := a.Invoke(context.Background(), &Request{Agent: "Invoicer", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := jsonvalue.Decode([]byte(`{"order":"o-7","tax":25}`))
	if !jsonvalue.Equal(got, want) {
		t.Errorf("Invoke = %v, want %v", got, want)
	}
	bad, _ := jsonvalue.Decode([]byte(`{"id":5}`))
	var te *json.UnmarshalTypeError
	if _, err := a.Invoke(context.Background(), &Request{Agent: "Invoicer", Input: bad}); !errors.As(err, &te) || te.Field != "id" {
		t.Errorf("Invoke with a mistyped input = %v, want a *json.UnmarshalTypeError for id", err)
	}
}

func TestParseMocksErrors(t *testing.T) {
	cases := []struct {
		name, mock, want string
		// ptr is the MockError's pointer; "" for a file that is not
		// strict JSON (a *jsonvalue.JSONError).
		ptr string
	}{
		{"not an object", `[]`, "mocks must be an object", "/"},
		{"agent not an object", `{"A":1}`, `responses of agent "A"`, "/A"},
		{"bad key", `{"A":{"x":{"Return":1}}}`, `invocation key "x"`, "/A/x"},
		{"reversed range", `{"A":{"3-1":{"Return":1}}}`, `invocation key "3-1"`, "/A/3-1"},
		{"leading zero", `{"A":{"01":{"Return":1}}}`, `invocation key "01"`, "/A/01"},
		{"overlap", `{"A":{"0-2":{"Return":1},"2":{"Return":2}}}`, "invocation 2 has two responses", "/A"},
		{"both", `{"A":{"0":{"Return":1,"Throw":{"Error":"E"}}}}`, "exactly one of Return or Throw", "/A/0"},
		{"neither", `{"A":{"0":{}}}`, "exactly one of Return or Throw", "/A/0"},
		{"unknown field", `{"A":{"0":{"Return":1,"Sleep":2}}}`, `unknown field "Sleep"`, "/A/0/Sleep"},
		{"throw not object", `{"A":{"0":{"Throw":"E"}}}`, "Throw must be an object", "/A/0/Throw"},
		{"throw without error", `{"A":{"0":{"Throw":{"Cause":"c"}}}}`, "missing Error", "/A/0/Throw"},
		{"throw bad field", `{"A":{"0":{"Throw":{"Error":"E","Code":1}}}}`, `unknown field "Code"`, "/A/0/Throw/Code"},
		{"cause not string", `{"A":{"0":{"Throw":{"Error":"E","Cause":1}}}}`, "Cause must be a string", "/A/0/Throw/Cause"},
		{"negative delay", `{"A":{"0":{"Return":1,"DelaySeconds":-1}}}`, "DelaySeconds must be", "/A/0/DelaySeconds"},
		{"zero heartbeat", `{"A":{"0":{"Return":1,"HeartbeatSeconds":0}}}`, "HeartbeatSeconds must be greater than 0", "/A/0/HeartbeatSeconds"},
		{"duplicate key", `{"A":{"0":{"Return":1}},"A":{}}`, "duplicate", ""},
		{"usage not object", `{"A":{"0":{"Return":1,"Usage":5}}}`, "/A/0/Usage: Usage must be an object", "/A/0/Usage"},
		{"usage unknown field", `{"A":{"0":{"Return":1,"Usage":{"Money":1}}}}`, `/A/0/Usage/Money: unknown field "Money"`, "/A/0/Usage/Money"},
		{"usage fractional tokens", `{"A":{"0":{"Return":1,"Usage":{"Tokens":1.5}}}}`, "Tokens must be an integer ≥ 0", "/A/0/Usage/Tokens"},
		{"usage negative cost", `{"A":{"0":{"Return":1,"Usage":{"Cost":-1}}}}`, "Cost must be a number ≥ 0", "/A/0/Usage/Cost"},
		{"usage string", `{"A":{"0":{"Return":1,"Usage":{"InputTokens":"3"}}}}`, "InputTokens must be a number, not string", "/A/0/Usage/InputTokens"},
		{"tools not array", `{"A":{"0":{"Return":1,"Tools":"search"}}}`, "Tools must be an array", "/A/0/Tools"},
		{"tool name empty", `{"A":{"0":{"Return":1,"Tools":["a",""]}}}`, "/A/0/Tools/1: a tool name must be a non-empty string", "/A/0/Tools/1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMocks([]byte(tc.mock))
			var me *MockError
			var je *jsonvalue.JSONError
			switch {
			case tc.ptr == "" && !errors.As(err, &je):
				t.Errorf("ParseMocks(%s) = %v, want a *jsonvalue.JSONError (%s)", tc.mock, err, tc.want)
			case tc.ptr != "" && (!errors.As(err, &me) || me.Pointer != tc.ptr):
				t.Errorf("ParseMocks(%s) = %v, want a MockError at %s (%s)", tc.mock, err, tc.ptr, tc.want)
			}
		})
	}
}

func TestMockResponses(t *testing.T) {
	ms, err := ParseMocks([]byte(`{"Classifier":{
		"0":{"Return":{"intent":"refund"}},
		"1-2":{"Throw":{"Error":"Agent.ModelError","Cause":"overloaded"}},
		"4":{"Return":null}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ms.Agent("Classifier")
	if !ok {
		t.Fatal("no mock for Classifier")
	}
	cases := []struct {
		n       int
		result  string
		errName asl.ErrorName
	}{
		{0, `{"intent":"refund"}`, ""},
		{1, "", asl.ErrAgentModelError},
		{2, "", asl.ErrAgentModelError},
		{3, "", asl.ErrTaskFailed},
		{4, `null`, ""},
		{5, "", asl.ErrTaskFailed},
	}
	for _, tc := range cases {
		got, err := m.Invoke(context.Background(), &Request{Agent: "Classifier", Invocation: tc.n})
		var ae *asl.Error
		switch {
		case tc.errName != "":
			if !errors.As(err, &ae) || ae.Name != tc.errName {
				t.Errorf("invocation %d: error %v, want %s", tc.n, err, tc.errName)
			}
		case err != nil:
			t.Errorf("invocation %d: error %v", tc.n, err)
		default:
			want, _ := jsonvalue.Decode([]byte(tc.result))
			if !jsonvalue.Equal(got, want) {
				t.Errorf("invocation %d = %v, want %s", tc.n, got, tc.result)
			}
		}
	}
}

func TestMockDelayAndHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, err := ParseMocks([]byte(`{"Slow":{"0":{"Return":"done","DelaySeconds":10,"HeartbeatSeconds":3}}}`))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ms.Agent("Slow")
		var beats atomic.Int32
		start := time.Now()
		got, err := m.Invoke(context.Background(), &Request{OnHeartbeat: func() { beats.Add(1) }})
		if err != nil || got != "done" {
			t.Fatalf("Invoke = %v, %v; want done", got, err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("answered after %v, want 10s", d)
		}
		if b := beats.Load(); b != 3 {
			t.Errorf("heartbeats = %d, want 3 (at 3s, 6s and 9s)", b)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		if _, err := m.Invoke(ctx, &Request{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled Invoke = %v, want DeadlineExceeded", err)
		}
	})
}

func TestMockUsageAndTools(t *testing.T) {
	ms, err := ParseMocks([]byte(`{"R":{"0":{"Return":"ok","Usage":{"InputTokens":3,"OutputTokens":4,"Cost":0.5},"Tools":["search","fetch"]},
		"1":{"Throw":{"Error":"E"},"Usage":{"Tokens":9},"Tools":["shell","search"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ms.Agent("R")
	for _, tc := range []struct {
		n     int
		usage Usage
		used  []string
		err   bool
	}{
		{0, Usage{InputTokens: 3, OutputTokens: 4, Cost: 0.5}, []string{"search", "fetch"}, false},
		// The refused tool stops the mock before it reports usage.
		{1, Usage{}, []string{"shell"}, true},
	} {
		var got Usage
		var used []string
		req := &Request{Invocation: tc.n, OnUsage: func(u Usage) { got = u },
			Tools: &Tools{OnUse: func(_ context.Context, name string) (func(), error) {
				used = append(used, name)
				if name == "shell" {
					return nil, asl.Errorf(asl.ErrPermissions, "no shell")
				}
				return func() {}, nil
			}}}
		_, err := m.Invoke(context.Background(), req)
		if (err != nil) != tc.err || got != tc.usage || !slices.Equal(used, tc.used) {
			t.Errorf("invocation %d: err %v, usage %+v, tools %v; want error %v, usage %+v, tools %v", tc.n, err, got, used, tc.err, tc.usage, tc.used)
		}
	}
	if total := (Usage{InputTokens: 3, OutputTokens: 4}).Total(); total != 7 {
		t.Errorf("Total = %d, want 7", total)
	}
	if total := (Usage{InputTokens: 3, OutputTokens: 4, Tokens: 10}).Total(); total != 10 {
		t.Errorf("Total with Tokens = %d, want 10", total)
	}
}

func TestResolveResource(t *testing.T) {
	r := NewRegistry()
	echo := Func(func(_ context.Context, req *Request) (any, error) { return req.Input, nil })
	for _, name := range []string{"classify", "Mapped", "arn:aws:lambda:us-east-1:123456789012:function:tagged:prod", "arn:aws:states:::sqs:sendMessage", "Gateway"} {
		if err := r.Register(name, echo); err != nil {
			t.Fatal(err)
		}
	}
	for key, agent := range map[string]string{
		"arn:aws:lambda:us-east-1:123456789012:function:mapped": "Mapped",
		"score":                             "Mapped",
		"arn:aws:states:::lambda:invoke":    "Gateway",
		"arn:aws:states:::dynamodb:putItem": "Missing",
	} {
		if err := r.RegisterResource(key, agent); err != nil {
			t.Fatal(err)
		}
	}
	const fn = "arn:aws:lambda:us-east-1:123456789012:function:"
	tests := []struct {
		name                         string
		resource, function, fallback string
		want                         string
		ok                           bool
	}{
		{"function name", fn + "classify", fn + "classify", "classify", "classify", true},
		{"function mapped", fn + "mapped", fn + "mapped", "mapped", "Mapped", true},
		{"function registered by ARN", fn + "tagged:prod", fn + "tagged:prod", "tagged", "arn:aws:lambda:us-east-1:123456789012:function:tagged:prod", true},
		{"function unknown", fn + "other", fn + "other", "other", "", false},
		{"invoke by FunctionName map", "arn:aws:states:::lambda:invoke", "score", "score", "Mapped", true},
		{"the integration's map before the function's name", "arn:aws:states:::lambda:invoke", "classify", "classify", "Gateway", true},
		{"invoke falls back to the integration map", "arn:aws:states:::lambda:invoke", "nobody", "nobody", "Gateway", true},
		{"integration registered by ARN", "arn:aws:states:::sqs:sendMessage", "", "", "arn:aws:states:::sqs:sendMessage", true},
		{"integration mapped to a missing agent", "arn:aws:states:::dynamodb:putItem", "", "", "Missing", false},
		{"integration unknown", "arn:aws:states:::sns:publish", "", "", "", false},
	}
	for _, tt := range tests {
		got, ok := r.ResolveResource(tt.resource, tt.function, tt.fallback)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ResolveResource(%q, %q, %q) = %q, %v, want %q, %v", tt.name, tt.resource, tt.function, tt.fallback, got, ok, tt.want, tt.ok)
		}
	}
	if err := r.RegisterResource("score", "Other"); !errors.Is(err, ErrDuplicate) {
		t.Errorf("RegisterResource twice: %v, want ErrDuplicate", err)
	}
	for _, kv := range [][2]string{{"", "A"}, {"k", ""}} {
		if err := r.RegisterResource(kv[0], kv[1]); err == nil {
			t.Errorf("RegisterResource(%q, %q) accepted", kv[0], kv[1])
		}
	}
	if name, ok := r.MappedResource("score"); name != "Mapped" || !ok {
		t.Errorf("MappedResource(score) = %q, %v", name, ok)
	}
	if _, ok := r.MappedResource("classify"); ok {
		t.Error("MappedResource(classify): an agent name is no mapping")
	}
	var nilReg *Registry
	if _, ok := nilReg.ResolveResource("a", "b", "c"); ok {
		t.Error("nil registry resolved a resource")
	}
}
