package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// traced runs a Task (whose agent fails once, then reports its usage), a
// Map of two items and a long Wait that parks.
const traced = `{"StartAt":"Ask","States":{
	"Ask":{"Type":"Task","Agent":"llm","ResultPath":"$.answer","Retry":[{"ErrorEquals":["States.ALL"],"IntervalSeconds":1}],"Next":"Each"},
	"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.done","ItemProcessor":{"StartAt":"Work","States":{
		"Work":{"Type":"Pass","End":true}}},"Next":"Sleep"},
	"Sleep":{"Type":"Wait","Seconds":3600,"Next":"Done"},
	"Done":{"Type":"Succeed"}}}`

// newAgents returns the agent llm, which fails its first call and reports
// 12 tokens costing 0.5 on each later one.
func newAgents(t *testing.T) *agents.Registry {
	t.Helper()
	var mu sync.Mutex
	calls := 0
	reg := agents.NewRegistry()
	err := reg.Register("llm", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			return nil, errors.New("overloaded")
		}
		req.ReportUsage(agents.Usage{InputTokens: 10, OutputTokens: 2, Cost: 0.5})
		return "42", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestExecutionTrace: the spans of an execution that waits and is resumed
// by another executor (as after a restart) share its stored trace id;
// states are spans named after them, under the caller's span or their Map's;
// agent calls are child spans of their state with usage, cost and errors.
func TestExecutionTrace(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name        string
		traceParent string
	}{
		{"new trace", ""},
		{"caller's trace", parent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				testExecutionTrace(t, tt.traceParent)
			})
		})
	}
}

func testExecutionTrace(t *testing.T, traceParent string) {
	m, err := states.Parse([]byte(traced))
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	st := store.NewMemory()
	reg := newAgents(t)
	newExecutor := func() *engine.Executor {
		tr := newTracing(nil, sdktrace.WithSyncer(exp))
		t.Cleanup(func() { tr.Shutdown(context.Background()) })
		return engine.New(engine.Config{Agents: reg, Store: st, Hooks: tr.Hooks(engine.Hooks{})})
	}
	res, err := newExecutor().Run(t.Context(), m, map[string]any{"items": []any{1, 2}}, engine.StartOptions{ID: "e", TraceParent: traceParent})
	if err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Run = %+v, %v; want WAITING", res, err)
	}
	e, err := st.Load(t.Context(), "e")
	if err != nil {
		t.Fatal(err)
	}
	root := parse(e.Trace)
	if !root.IsValid() {
		t.Fatalf("stored trace %q is not a valid traceparent", e.Trace)
	}
	if traceParent != "" && e.Trace != traceParent {
		t.Errorf("stored trace = %q, want the caller's %q", e.Trace, traceParent)
	}
	time.Sleep(time.Hour)
	if res, err = newExecutor().Resume(t.Context(), "e", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Resume = %+v, %v; want SUCCEEDED", res, err)
	}

	spans := exp.GetSpans().Snapshots()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	var names []string
	for _, s := range spans {
		if got := s.SpanContext().TraceID(); got != root.TraceID() {
			t.Errorf("span %s: trace id %s, want the stored %s", s.Name(), got, root.TraceID())
		}
		byName[s.Name()] = append(byName[s.Name()], s)
		names = append(names, s.Name())
	}
	slices.Sort(names)
	wantNames := []string{"Ask", "Done", "Each", "Sleep", "Sleep", "Work", "Work", "invoke_agent llm", "invoke_agent llm"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("spans %q, want %q", names, wantNames)
	}
	for _, name := range []string{"Ask", "Each", "Sleep", "Done"} {
		for _, s := range byName[name] {
			if s.Parent().SpanID() != root.SpanID() {
				t.Errorf("span %s: parent %s, want the stored span %s", name, s.Parent().SpanID(), root.SpanID())
			}
		}
	}
	each := byName["Each"][0].SpanContext().SpanID()
	for _, s := range byName["Work"] {
		if s.Parent().SpanID() != each {
			t.Errorf("span Work: parent %s, want Each's %s", s.Parent().SpanID(), each)
		}
		if v, _ := attr(s, attrState); v.AsString() != "Each/0/Work" && v.AsString() != "Each/1/Work" {
			t.Errorf("span Work: %s = %q, want Each/<item>/Work", attrState, v.AsString())
		}
	}
	ask := byName["Ask"][0]
	if ask.Status().Code == codes.Error {
		t.Errorf("span Ask: status %v, want not an error (its retry succeeded)", ask.Status())
	}
	var failed, succeeded int
	for _, s := range byName["invoke_agent llm"] {
		if s.Parent().SpanID() != ask.SpanContext().SpanID() {
			t.Errorf("agent span: parent %s, want Ask's %s", s.Parent().SpanID(), ask.SpanContext().SpanID())
		}
		if s.StartTime().After(s.EndTime()) || s.StartTime().Before(ask.StartTime()) || s.EndTime().After(ask.EndTime()) {
			t.Errorf("agent span: %v to %v, want within Ask's %v to %v", s.StartTime(), s.EndTime(), ask.StartTime(), ask.EndTime())
		}
		if v, _ := attr(s, attrAgent); v.AsString() != "llm" {
			t.Errorf("agent span: %s = %q, want llm", attrAgent, v.AsString())
		}
		if s.Status().Code == codes.Error {
			failed++
			if v, _ := attr(s, attrError); v.AsString() != string(asl.ErrTaskFailed) {
				t.Errorf("failed agent span: %s = %q, want %s", attrError, v.AsString(), asl.ErrTaskFailed)
			}
			if len(s.Events()) == 0 {
				t.Errorf("failed agent span: no exception event recorded")
			}
			continue
		}
		succeeded++
		for key, want := range map[attribute.Key]attribute.Value{
			attrInputTokens: attribute.Int64Value(10), attrOutputTokens: attribute.Int64Value(2),
			attrTokens: attribute.Int64Value(12), attrCost: attribute.Float64Value(0.5),
		} {
			if got, _ := attr(s, key); got != want {
				t.Errorf("agent span: %s = %v, want %v", key, got.String(), want.String())
			}
		}
	}
	if failed != 1 || succeeded != 1 {
		t.Errorf("agent spans: %d failed and %d succeeded, want 1 and 1", failed, succeeded)
	}
	// The Wait's span ended when the execution parked, and again after
	// the resume.
	var waiting []bool
	for _, s := range byName["Sleep"] {
		v, _ := attr(s, attrWaiting)
		waiting = append(waiting, v.AsBool())
	}
	if want := []bool{true, false}; !slices.Equal(waiting, want) {
		t.Errorf("Sleep spans waiting = %v, want %v", waiting, want)
	}
}

// TestOldExecutionTrace: an execution stored without a trace context gets
// one trace derived from its id, the same in every process.
func TestOldExecutionTrace(t *testing.T) {
	tr := newTracing(nil)
	a, b := tr.rootOf("old", ""), tr.rootOf("old", "not a traceparent")
	if !a.IsValid() || a.TraceID() != b.TraceID() || a.SpanID() != b.SpanID() {
		t.Errorf("rootOf(old) = %v and %v, want one valid span context", a, b)
	}
	if other := tr.rootOf("other", ""); other.TraceID() == a.TraceID() {
		t.Errorf("rootOf(other) has the trace id of rootOf(old): %s", a.TraceID())
	}
}

func TestNewTrace(t *testing.T) {
	tr := newTracing(nil)
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		parent string
		keep   bool
	}{
		{valid, true},
		{"", false},
		{"garbage", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
	}
	for _, tt := range tests {
		t.Run(tt.parent, func(t *testing.T) {
			got := tr.newTrace(tt.parent)
			sc := parse(got)
			if !sc.IsValid() || !sc.IsSampled() {
				t.Fatalf("newTrace(%q) = %q, want a valid sampled traceparent", tt.parent, got)
			}
			if (got == tt.parent) != tt.keep {
				t.Errorf("newTrace(%q) = %q, want the parent kept: %t", tt.parent, got, tt.keep)
			}
		})
	}
	if a, b := tr.newTrace(""), tr.newTrace(""); a == b {
		t.Errorf("newTrace twice = %q, want two traces", a)
	}
}

func unsetEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
}

func TestFromEnvOff(t *testing.T) {
	unsetEnv(t)
	tr, err := FromEnv(t.Context())
	if tr != nil || err != nil {
		t.Fatalf("FromEnv() with no endpoint = %v, %v; want nil, nil", tr, err)
	}
	// Tracing off changes no hooks and shuts down.
	if h := tr.Hooks(engine.Hooks{}); h.StateEntered != nil || h.NewTrace != nil {
		t.Errorf("nil Tracing's Hooks set tracing hooks")
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Errorf("nil Tracing's Shutdown = %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if tr, err := FromEnv(t.Context()); tr != nil || err != nil {
		t.Errorf("FromEnv() disabled = %v, %v; want nil, nil", tr, err)
	}
}

// TestFromEnvExports: with OTEL_EXPORTER_OTLP_ENDPOINT set, the spans of
// an execution reach the collector over OTLP/HTTP by Shutdown.
func TestFromEnvExports(t *testing.T) {
	type post struct {
		path string
		size int
	}
	var (
		mu    sync.Mutex
		posts []post
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, post{r.Method + " " + r.URL.Path, len(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	unsetEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tr, err := FromEnv(t.Context())
	if err != nil || tr == nil {
		t.Fatalf("FromEnv() = %v, %v; want tracing", tr, err)
	}
	m, err := states.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	x := engine.New(engine.Config{Hooks: tr.Hooks(engine.Hooks{})})
	if _, err := x.Run(t.Context(), m, map[string]any{}, engine.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) == 0 {
		t.Fatal("no request reached the collector")
	}
	for _, p := range posts {
		if p.path != "POST /v1/traces" || p.size == 0 {
			t.Errorf("collector got %q with %d bytes, want POST /v1/traces with a body", p.path, p.size)
		}
	}
}

// TestSampling: the configured sampler decides for the trace of a new
// execution, and its spans follow, all in or all out: a ratio of 0 records
// none, a ratio of 1 all, parent-based or not, for a new execution and for
// one stored without a trace (whose trace is derived from its id). A
// caller's trace context decides for a parent-based sampler.
func TestSampling(t *testing.T) {
	const (
		sampledParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		unsampledParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	)
	m, err := states.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		sampler sdktrace.Sampler
		parent  string
		stored  bool // the execution is stored with its trace context
		spans   int
	}{
		{"parentbased_traceidratio 0", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)), "", true, 0},
		{"parentbased_traceidratio 1", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(1)), "", true, 2},
		{"traceidratio 0", sdktrace.TraceIDRatioBased(0), "", true, 0},
		{"traceidratio 1", sdktrace.TraceIDRatioBased(1), "", true, 2},
		{"parentbased_always_off", sdktrace.ParentBased(sdktrace.NeverSample()), "", true, 0},
		{"default", nil, "", true, 2},
		{"parentbased_traceidratio 0, stored without a trace", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)), "", false, 0},
		{"parentbased_traceidratio 1, stored without a trace", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(1)), "", false, 2},
		{"parentbased_traceidratio 0, caller sampled", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)), sampledParent, true, 2},
		{"parentbased_always_on, caller not sampled", nil, unsampledParent, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := newTracing(tt.sampler, sdktrace.WithSyncer(exp))
			defer tr.Shutdown(context.Background())
			hooks := tr.Hooks(engine.Hooks{})
			if !tt.stored {
				// As an executor without tracing creates it.
				hooks.NewTrace = func(string) string { return "" }
			}
			st := store.NewMemory()
			x := engine.New(engine.Config{Store: st, Hooks: hooks})
			if _, err := x.Run(t.Context(), m, map[string]any{}, engine.StartOptions{ID: "e", TraceParent: tt.parent}); err != nil {
				t.Fatal(err)
			}
			if got := len(exp.GetSpans()); got != tt.spans {
				t.Errorf("%d spans recorded, want %d", got, tt.spans)
			}
			e, err := st.Load(t.Context(), "e")
			if err != nil {
				t.Fatal(err)
			}
			if sc := parse(e.Trace); tt.stored && sc.IsSampled() != (tt.spans > 0) {
				t.Errorf("stored trace %q sampled = %t, want %t", e.Trace, sc.IsSampled(), tt.spans > 0)
			}
		})
	}
}

// TestSamplerFromEnv: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// name the sampler; what is not one is an error naming the variable.
func TestSamplerFromEnv(t *testing.T) {
	for _, tt := range []struct {
		sampler, arg string
		want         sdktrace.Sampler // nil: an error naming wantErr
		wantErr      string
	}{
		{"", "", sdktrace.ParentBased(sdktrace.AlwaysSample()), ""},
		{"parentbased_always_on", "", sdktrace.ParentBased(sdktrace.AlwaysSample()), ""},
		{"always_on", "", sdktrace.AlwaysSample(), ""},
		{"always_off", "", sdktrace.NeverSample(), ""},
		{"parentbased_always_off", "", sdktrace.ParentBased(sdktrace.NeverSample()), ""},
		{"traceidratio", "", sdktrace.TraceIDRatioBased(1), ""},
		{"traceidratio", "0.25", sdktrace.TraceIDRatioBased(0.25), ""},
		{" ParentBased_TraceIDRatio ", " 0 ", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)), ""},
		{"parentbased_traceidratio", "", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(1)), ""},
		{"parentbased_traceidratio", "1.5", nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"parentbased_traceidratio", "-0.1", nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"traceidratio", "half", nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"traceidratio", "NaN", nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"jaeger_remote", "", nil, "OTEL_TRACES_SAMPLER"},
		{"sometimes", "", nil, "OTEL_TRACES_SAMPLER"},
	} {
		t.Run(tt.sampler+" "+tt.arg, func(t *testing.T) {
			env := map[string]string{"OTEL_TRACES_SAMPLER": tt.sampler, "OTEL_TRACES_SAMPLER_ARG": tt.arg}
			got, err := samplerFromEnv(func(k string) string { return env[k] })
			if tt.want == nil {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr+" ") {
					t.Errorf("samplerFromEnv() = %v, %v; want an error naming %s", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Description() != tt.want.Description() {
				t.Errorf("samplerFromEnv() = %v, %v; want %s", got, err, tt.want.Description())
			}
		})
	}
}

// TestFromEnvBadSampler: FromEnv refuses a sampler it does not know
// rather than tracing everything by default.
func TestFromEnvBadSampler(t *testing.T) {
	unsetEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "ten percent")
	if tr, err := FromEnv(t.Context()); tr != nil || err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER_ARG") {
		t.Errorf("FromEnv() = %v, %v; want an error naming OTEL_TRACES_SAMPLER_ARG", tr, err)
	}
}
