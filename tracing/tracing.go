// Package tracing exports what executions do as OpenTelemetry traces,
// through engine hooks: an execution is a trace, each state it runs a
// span, and each agent call a child span of its state with the usage and
// cost the agent reported.
//
// An execution's trace context is stored with it (engine.Execution.Trace)
// when it is created: the caller's (StartOptions.TraceParent) or a new
// one. Every state span is a child of that stored span context, or of its
// enclosing Map or Parallel state's span, so that the spans of one
// execution share its trace id across waits, restarts and processes. No
// span stays open across a wait: a state that stops for the execution to
// wait ends its span (with aslrun.waiting set), and runs again under a new
// span when the execution is resumed.
//
// A new execution's own trace context (when the caller gave none) is the
// parent of spans that are never exported: its sampled flag is the
// configured sampler's decision for a root span of its trace id, so that
// a parent-based sampler (the default) samples an execution's spans all
// in or all out, as it decides for a root.
package tracing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/engine"
)

// Tracing makes spans of executions and exports them. A nil *Tracing is
// tracing off: its Hooks change nothing and its Shutdown does nothing. It
// is safe for concurrent use.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	// sampler is the provider's: it decides whether the trace of a new
	// execution (without a caller's trace context) is sampled.
	sampler sdktrace.Sampler
}

// FromEnv returns tracing configured by the standard OpenTelemetry
// environment variables, or nil (tracing off) unless
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (and OTEL_SDK_DISABLED is not "true"). Spans are exported over OTLP/HTTP
// (the other OTEL_EXPORTER_OTLP_* variables apply: headers, timeout,
// compression) in batches, with service.name "aslrun" unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise; the
// sampler follows OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// (samplerFromEnv; default: parent-based, always on), and a value it does
// not know is an error naming the variable.
func FromEnv(ctx context.Context) (*Tracing, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	sampler, err := samplerFromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("aslrun")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return newTracing(sampler, sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}

// samplerFromEnv returns the sampler OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG name (read with getenv), as the OpenTelemetry
// specification defines them: always_on, always_off, traceidratio,
// parentbased_always_on (the default, when it is unset),
// parentbased_always_off and parentbased_traceidratio, whose ratio is the
// argument (default 1). Any other sampler, or a ratio that is not a
// number from 0 to 1, is an error naming the variable.
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q: want a ratio from 0 to 1 for sampler %s", arg, name)
		}
		return sdktrace.TraceIDRatioBased(v), nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		return ratio()
	case "parentbased_traceidratio":
		root, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(root), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER %q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", name)
}

// newTracing returns tracing with a tracer provider made with sampler
// (nil: parent-based, always on) and opts.
func newTracing(sampler sdktrace.Sampler, opts ...sdktrace.TracerProviderOption) *Tracing {
	if sampler == nil {
		sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	p := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSampler(sampler))...)
	return &Tracing{provider: p, tracer: p.Tracer("github.com/aslrun/aslrun/tracing"), sampler: sampler}
}

// Shutdown exports the spans not exported yet and stops exporting; ctx
// bounds how long it waits.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Hooks returns next with the hooks tracing needs added: NewTrace (which
// replaces next's), StateEntered, StateEnded and AgentCalled (which make
// spans, then call next's when it has them). Other hooks are next's. Wrap
// the hooks of others in it, not it in theirs: a wrapper that builds new
// Hooks from the fields it knows drops the tracing hooks.
func (t *Tracing) Hooks(next engine.Hooks) engine.Hooks {
	if t == nil {
		return next
	}
	h := next
	h.NewTrace = t.newTrace
	h.StateEntered = func(ctx context.Context, id, tc, scope, state string) context.Context {
		ctx = t.stateEntered(ctx, id, tc, scope, state)
		if next.StateEntered != nil {
			ctx = next.StateEntered(ctx, id, tc, scope, state)
		}
		return ctx
	}
	h.StateEnded = func(ctx context.Context, id, scope, state string, waiting bool, err error) {
		stateEnded(ctx, waiting, err)
		if next.StateEnded != nil {
			next.StateEnded(ctx, id, scope, state, waiting, err)
		}
	}
	h.AgentCalled = func(ctx context.Context, id, agent string, d time.Duration, u engine.Usage, err error) {
		t.agentCalled(ctx, id, agent, d, u, err)
		if next.AgentCalled != nil {
			next.AgentCalled(ctx, id, agent, d, u, err)
		}
	}
	return h
}

// The attributes of spans.
const (
	attrExecution = attribute.Key("aslrun.execution.id")
	attrState     = attribute.Key("aslrun.state") // qualified: "Map/3/Work"
	attrWaiting   = attribute.Key("aslrun.waiting")
	attrError     = attribute.Key("aslrun.error") // an ASL error name
	attrTokens    = attribute.Key("aslrun.usage.tokens")
	attrCost      = attribute.Key("aslrun.usage.cost")
	// OpenTelemetry's GenAI conventions.
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrAgent        = attribute.Key("gen_ai.agent.name")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
)

// stateEntered starts the span of a state, a child of the span in ctx when
// that belongs to the execution's trace (the enclosing Map or Parallel
// state's), else of the execution's stored span context.
func (t *Tracing) stateEntered(ctx context.Context, id, stored, scope, state string) context.Context {
	root := t.rootOf(id, stored)
	if trace.SpanContextFromContext(ctx).TraceID() != root.TraceID() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, root)
	}
	ctx, _ = t.tracer.Start(ctx, state, trace.WithAttributes(attrExecution.String(id), attrState.String(scope+state)))
	return ctx
}

// stateEnded ends the span of a state that stopped running.
func stateEnded(ctx context.Context, waiting bool, err error) {
	span := trace.SpanFromContext(ctx)
	if waiting {
		span.SetAttributes(attrWaiting.Bool(true))
	}
	recordError(span, err)
	span.End()
}

// agentCalled records an agent call that took d and just ended as a child
// span of its state's.
func (t *Tracing) agentCalled(ctx context.Context, id, agent string, d time.Duration, u engine.Usage, err error) {
	end := time.Now()
	_, span := t.tracer.Start(ctx, "invoke_agent "+agent, trace.WithTimestamp(end.Add(-d)), trace.WithAttributes(
		attrOperation.String("invoke_agent"), attrAgent.String(agent), attrExecution.String(id),
		attrInputTokens.Int64(u.InputTokens), attrOutputTokens.Int64(u.OutputTokens),
		attrTokens.Int64(u.Tokens), attrCost.Float64(u.Cost)))
	recordError(span, err)
	span.End(trace.WithTimestamp(end))
}

// recordError marks span failed with err, if not nil.
func recordError(span trace.Span, err error) {
	if err == nil {
		return
	}
	if ae := (*asl.Error)(nil); errors.As(err, &ae) {
		span.SetAttributes(attrError.String(string(ae.Name)))
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// newTrace is the trace context of a new execution: parent when it is a
// valid traceparent (its sampled flag is the caller's decision), else a
// new trace, sampled when the sampler samples a root span of it.
func (t *Tracing) newTrace(parent string) string {
	if sc := parse(parent); sc.IsValid() {
		return format(sc)
	}
	var c trace.SpanContextConfig
	for !c.TraceID.IsValid() || !c.SpanID.IsValid() {
		rand.Read(c.TraceID[:])
		rand.Read(c.SpanID[:])
	}
	c.TraceFlags = t.rootFlags(c.TraceID)
	return format(trace.NewSpanContext(c))
}

// rootFlags is the sampled flag of a new trace of id with no parent: the
// sampler's decision for a root span of it.
func (t *Tracing) rootFlags(id trace.TraceID) trace.TraceFlags {
	res := t.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: id, Name: "execution", Kind: trace.SpanKindInternal})
	if res.Decision == sdktrace.RecordAndSample {
		return trace.FlagsSampled
	}
	return 0
}

// rootOf is the span context the spans of execution id descend from: its
// stored trace context, or, for an execution stored without a valid one
// (created while tracing was off), one derived from its id, so that its
// spans still share a trace (sampled as newTrace's are).
func (t *Tracing) rootOf(id, stored string) trace.SpanContext {
	if sc := parse(stored); sc.IsValid() {
		return sc
	}
	sum := sha256.Sum256([]byte("aslrun execution " + id))
	var c trace.SpanContextConfig
	copy(c.TraceID[:], sum[:16])
	copy(c.SpanID[:], sum[16:24])
	c.TraceFlags, c.Remote = t.rootFlags(c.TraceID), true
	return trace.NewSpanContext(c)
}

// parse reads a traceparent; the span context is invalid when s is not
// one.
func parse(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	return trace.SpanContextFromContext(ctx)
}

// format writes a span context as a traceparent.
func format(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}
