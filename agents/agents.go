// Package agents defines what the engine calls from a Task state: the Agent
// interface, the Func and Typed adapters, the Registry that names agents,
// and mocked agents scripted from a mock file.
package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Agent is something a Task state can call. Invoke receives the state's
// effective input in req.Input and returns the result as a JSON value (see
// package jsonpath; other Go values are normalized, and a non-finite float is
// an error). The engine keeps the returned value as part of the execution's
// documents: never modify it, or anything in it, after returning it. To fail with a named ASL error, return an *asl.Error; any other
// error becomes States.TaskFailed.
//
// Invoke must be safe for concurrent use: Map and Parallel call agents from
// several goroutines. It must honour ctx, which carries the state's
// TimeoutSeconds and is cancelled when the execution stops.
type Agent interface {
	Invoke(ctx context.Context, req *Request) (any, error)
}

// Request describes one call of an agent.
type Request struct {
	// Agent is the name the agent is registered under.
	Agent string
	// Resource is the calling Task's Resource ARN as written, or empty
	// when the Task names its Agent.
	Resource string
	// Credentials is the Task's Credentials block evaluated for this call
	// ({"RoleArn": "arn:aws:iam::…"}), or nil when it has none. The engine
	// only hands it over: assuming the role, if anything, is the agent's
	// business. It is shared: never modify it.
	Credentials any
	// Execution is the execution's id.
	Execution string
	// State is the position of the calling state: its name, prefixed inside
	// a Map or Parallel by the enclosing state and item or branch index
	// ("Review/1/Security", "Summaries/42/Summarize").
	State string
	// Step names this visit of the state durably (its scope, name and
	// visit number, like "Summarize#1" or "Batch#1.0/7/Summarize#1"); with
	// Execution and Attempt it makes the idempotency key.
	Step string
	// Attempt is 0 for the first call of this state, then 1, 2, … for retries.
	Attempt int
	// Invocation counts the calls of this agent within the execution,
	// starting at 0 (retries count); mocked agents answer by it.
	Invocation int
	// Input is the state's effective input (after InputPath and Parameters).
	// It is shared: never modify it.
	Input any
	// OnHeartbeat is set by the engine when the state has HeartbeatSeconds;
	// call Heartbeat rather than this field.
	OnHeartbeat func()
	// Violation is set when the state runs again after governance refused
	// what its previous attempt wrote: the refusal, as the history records
	// it (rule, path, old, new, reason), so that the agent can correct
	// itself. It is shared: never modify it.
	Violation map[string]any
	// Tools is the call's effective tool set (the state's Tools block);
	// an agent asks it before using a tool. Nil means every tool.
	Tools *Tools
	// OnUsage is set by the engine; call ReportUsage rather than this field.
	OnUsage func(Usage)
	// Steps is set by the engine; call RunStep or Journal rather than
	// this field.
	Steps StepRunner
	// Workflows is set by the engine: it runs a registered workflow as a
	// child execution of the call's (RunWorkflow); nil where there is none.
	Workflows WorkflowRunner
	// Model is the Task's Model block (the models to try in order and the
	// errors that move on to the next), nil when it has none: it takes
	// the place of the model an agent is configured with. An agent that
	// does not use a model may ignore it.
	Model *ModelChoice
	// Generation is the Task's Generation block, its paths and expressions
	// evaluated for this call; nil when it has none. It takes the place of
	// the agent's own settings, field by field.
	Generation *Generation
	// OnBudget is set by the engine when a Budget applies to the call;
	// call CheckBudget rather than this field.
	OnBudget func() error
	// OnToolResult is set by the engine when the state has output
	// guardrails; call CheckToolResult rather than this field.
	OnToolResult func(ctx context.Context, tool string, result any) (any, error)
	// OnStream is set by the engine when the state streams (its
	// Streaming block); call Stream or StreamText rather than this field.
	OnStream func(turn int, text string)
	// OnProgress is set by the engine when the state follows progress
	// (its Progress block); call ReportProgress rather than this field.
	OnProgress func(report any)
}

// CheckToolResult passes a tool's result through the state's output
// guardrails before the agent uses it (gives it to a model): it returns
// the result as they leave it (a redacting rule may change it), or the
// violation (Agent.GuardrailViolation) of a rule that refuses it. Without
// output guardrails it returns result.
func (r *Request) CheckToolResult(ctx context.Context, tool string, result any) (any, error) {
	if r.OnToolResult == nil {
		return result, nil
	}
	return r.OnToolResult(ctx, tool, result)
}

// CheckBudget reports, before the agent spends more (a model turn), a
// budget the call has already used up: the state's Budget with what this
// call reported so far, or the workflow's (States.BudgetExceeded). An
// agent that spends in steps asks before each, so that a step that would
// pass the budget is not made. Nil without a budget.
func (r *Request) CheckBudget() error {
	if r.OnBudget == nil {
		return nil
	}
	return r.OnBudget()
}

// ModelChoice is a Task's Model block as an agent receives it.
type ModelChoice struct {
	// Models are the models to try, in order: the Preferred, then each
	// Fallback.
	Models []string
	// FallbackOn are the errors (full names, like "States.Timeout") on
	// which the next model is tried.
	FallbackOn []asl.ErrorName
}

// FallsBackOn reports whether an error named name moves on to the next
// model.
func (m *ModelChoice) FallsBackOn(name asl.ErrorName) bool {
	return m != nil && slices.Contains(m.FallbackOn, name)
}

// Generation is a Task's Generation block as an agent receives it: a nil
// pointer or zero value is a setting the Task leaves to the agent.
type Generation struct {
	Temperature   *float64
	TopP          *float64
	MaxTokens     int
	StopSequences []string
}

// WorkflowRunner runs registered workflows as child executions of an agent
// call (a workflow used as a tool); the engine provides it.
type WorkflowRunner interface {
	// RunWorkflow runs workflow name at ref ("" for the latest; a
	// version, an alias, a semver label or constraint) on input as a child
	// execution and returns its output; a child that fails is its error.
	// Within a durable step (Journal) the child is that step's: a call
	// repeated after a crash attaches to it instead of starting another.
	RunWorkflow(ctx context.Context, name, ref string, input any) (any, error)
}

// RunWorkflow runs a registered workflow as a child execution of the call
// (Request.Workflows); an error when the engine gives the call none.
func (r *Request) RunWorkflow(ctx context.Context, name, ref string, input any) (any, error) {
	if r.Workflows == nil {
		return nil, asl.Errorf(asl.ErrTaskFailed, "workflow %s cannot run here: the caller gives no workflow registry", name)
	}
	return r.Workflows.RunWorkflow(ctx, name, ref, input)
}

// StepRunner runs an agent call's durable steps (Request.Journal); the
// engine provides it.
type StepRunner interface {
	RunJournal(ctx context.Context, spec StepSpec, fn func(context.Context) (any, error)) (any, error)
}

// StepSpec describes one durable step of an agent call (Journal).
type StepSpec struct {
	// Name names the step within the call: unique among its steps (a
	// model turn "turn 2", a tool call "turn 2/call_8f1"). A name already
	// recorded in this call's attempt is not run again: its recorded
	// result is returned.
	Name string
	// Kind is the step's family in the history: "ModelTurn" and
	// "ToolCall" record ModelTurnSucceeded/ModelTurnFailed and
	// ToolCallSucceeded/ToolCallFailed events; empty means "Step"
	// (StepSucceeded/StepFailed).
	Kind string
	// Input is what the step works on (a tool's arguments, a turn's
	// messages), shown in its history event and hashed: a step run again
	// after a crash with another input than the one recorded is an error
	// (States.Runtime) rather than a silently different result. Optional.
	Input any
	// Detail is shown in the step's history event beside its name,
	// latency and input hash (the tool's name, the model). Optional.
	Detail map[string]any
}

// RunStep runs fn as a durable step of this call named name (see Journal).
// (Step, the field, names the state's visit; a step of the call is named
// within it.)
func (r *Request) RunStep(ctx context.Context, name string, fn func(context.Context) (any, error)) (any, error) {
	return r.Journal(ctx, StepSpec{Name: name}, fn)
}

// Journal runs fn as a durable step of this call: the engine commits its
// result (a JSON value) or its error before Journal returns, and when the
// execution resumes after a crash or a stop, the call runs again and a
// step already recorded returns its recorded result without running fn.
// A step in flight when the process died is run again (its idempotency
// key, Request.Step and Attempt with spec.Name, is the same). A step cut
// short by the run stopping (ctx ended) is not recorded. Steps may run
// concurrently. Without an engine (Steps nil) Journal just runs fn.
func (r *Request) Journal(ctx context.Context, spec StepSpec, fn func(context.Context) (any, error)) (any, error) {
	if r.Steps == nil {
		return fn(ctx)
	}
	return r.Steps.RunJournal(ctx, spec, fn)
}

// Usage is what an agent call consumed, reported with ReportUsage and
// counted against the state's and the workflow's Budget.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// Tokens is the total; when zero it is InputTokens + OutputTokens.
	Tokens int64
	// Cost is in the workflow Budget's currency.
	Cost float64
}

// Total returns the tokens used: Tokens, or InputTokens + OutputTokens.
func (u Usage) Total() int64 {
	if u.Tokens != 0 {
		return u.Tokens
	}
	return u.InputTokens + u.OutputTokens
}

// Valid reports whether every amount is finite and not negative.
func (u Usage) Valid() bool {
	return u.InputTokens >= 0 && u.OutputTokens >= 0 && u.Tokens >= 0 && u.Cost >= 0 && !math.IsInf(u.Cost, 0)
}

// ReportUsage tells the engine what the call consumed (tokens, cost). It
// may be called several times; the amounts add up. It is safe for
// concurrent use. A report with a negative or non-finite amount fails the
// call with States.TaskFailed.
func (r *Request) ReportUsage(u Usage) {
	if r.OnUsage != nil {
		r.OnUsage(u)
	}
}

// Tools is the effective tool set of one agent call: the tools the state's
// Tools block (and the workflow's ToolCategories and DefaultTools) allow.
// It is safe for concurrent use.
type Tools struct {
	// All is set when every tool is allowed except those Allows refuses.
	All bool
	// Names lists the allowed tools when All is not set.
	Names []string
	// Permits reports whether a tool is allowed; set by the engine.
	Permits func(name string) bool
	// OnUse is set by the engine: it applies rate limits and records a
	// refused tool; call Use rather than this field.
	OnUse func(ctx context.Context, name string) (release func(), err error)
	// OnRun is set by the engine: it runs one tool call under the state's
	// Tools block; call Run rather than this field.
	OnRun func(ctx context.Context, name string, input map[string]any, call ToolCall) (any, error)
}

// ToolCall is the call of one tool with its input.
type ToolCall func(ctx context.Context, input map[string]any) (any, error)

// Run runs one call of the named tool under the state's Tools block: as
// Use, it refuses a tool outside the call's tool set (States.Permissions)
// and applies the rate limits; then the block's Timeout bounds the call
// (States.Timeout naming the tool). Without a Tools block it calls call.
func (t *Tools) Run(ctx context.Context, name string, input map[string]any, call ToolCall) (any, error) {
	if t == nil || t.OnRun == nil {
		return call(ctx, input)
	}
	return t.OnRun(ctx, name, input, call)
}

// Allows reports whether the agent may use the named tool.
func (t *Tools) Allows(name string) bool {
	if t == nil || t.Permits == nil {
		return true
	}
	return t.Permits(name)
}

// Use asks to use the named tool now. It fails with States.Permissions
// when the tool is outside the call's tool set (the engine records it, and
// the call fails even if the agent ignores the error), and applies the
// state's rate limits (waiting, or failing with States.RateLimitExceeded).
// Call release when the tool call is done.
func (t *Tools) Use(ctx context.Context, name string) (release func(), err error) {
	if t == nil || t.OnUse == nil {
		return func() {}, nil
	}
	return t.OnUse(ctx, name)
}

// IdempotencyKey identifies this call: "execution/step/attempt". A resumed
// execution repeating a call that was in flight when its process stopped
// uses the same key; every other call has its own (a state entered again
// in a loop is a new step, a retry a new attempt).
func (r *Request) IdempotencyKey() string {
	step := r.Step
	if step == "" {
		step = r.State
	}
	return r.Execution + "/" + step + "/" + strconv.Itoa(r.Attempt)
}

// Heartbeat tells the engine the agent is still working. Agents of states
// with HeartbeatSeconds must call it at least that often; it is a no-op
// otherwise. It is safe for concurrent use.
func (r *Request) Heartbeat() {
	if r.OnHeartbeat != nil {
		r.OnHeartbeat()
	}
}

// ContextHonouring is implemented by an agent that returns promptly once
// its context is done — every wait of its own selects on ctx — and so may
// be called directly, on the state's goroutine, when HonoursContext says
// so. The engine otherwise runs each call on a goroutine of its own, which
// it can walk away from at the state's TimeoutSeconds or when the
// execution stops, should the agent not return. An agent that can block
// without watching ctx (a call into code that takes none) must not claim
// it. A state with HeartbeatSeconds always gets the goroutine (its timer is
// watched beside the call).
type ContextHonouring interface {
	HonoursContext() bool
}

// Func adapts a function to the Agent interface.
type Func func(ctx context.Context, req *Request) (any, error)

// DirectFunc is a Func that honours its context (ContextHonouring): the
// engine calls it on the state's goroutine.
type DirectFunc func(ctx context.Context, req *Request) (any, error)

// Invoke calls f.
func (f DirectFunc) Invoke(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// HonoursContext reports true: f returns once ctx is done.
func (DirectFunc) HonoursContext() bool { return true }

// Invoke calls f.
func (f Func) Invoke(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

var _ Agent = Func(nil)

// Typed adapts a function over Go types to the Agent interface: the input
// is converted to In through its JSON form, and the Out returned is
// converted back to a JSON value. A conversion failure of the input is an
// error of the call (States.TaskFailed).
func Typed[In, Out any](fn func(ctx context.Context, in In) (Out, error)) Agent {
	return Func(func(ctx context.Context, req *Request) (any, error) {
		data, err := jsonvalue.Marshal(req.Input)
		if err != nil {
			return nil, fmt.Errorf("agent %s: encode input: %w", req.Agent, err)
		}
		var in In
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, fmt.Errorf("agent %s: input does not fit %T: %w", req.Agent, in, err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return jsonvalue.Normalize(out)
	})
}

// ErrDuplicate is returned by Register when the name is taken.
var ErrDuplicate = errors.New("agent already registered")

// Registry maps agent names to agents. The zero value is an empty registry
// ready to use. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	agents    map[string]Agent
	resources map[string]string
	buckets   map[string]itemio.Bucket
	embedder  Embedder
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds a under name. It fails when the name is empty, a is nil, or
// the name is already registered.
func (r *Registry) Register(name string, a Agent) error {
	if name == "" {
		return errors.New("register agent: empty name")
	}
	if a == nil {
		return fmt.Errorf("register agent %q: nil agent", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.agents[name]; ok {
		return fmt.Errorf("register agent %q: %w", name, ErrDuplicate)
	}
	if r.agents == nil {
		r.agents = make(map[string]Agent)
	}
	r.agents[name] = a
	return nil
}

// Lookup returns the agent registered under name.
func (r *Registry) Lookup(name string) (Agent, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[name]
	return a, ok
}

// Names returns the registered names in sorted order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.agents))
	for n := range r.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RegisterResource maps a Task's Resource ARN, or a Lambda function (its
// name or ARN, as lambda:invoke's FunctionName writes it), to the name of
// the agent that runs it. The agent itself may be registered before or
// after. It fails when either is empty or key is already mapped.
func (r *Registry) RegisterResource(key, agent string) error {
	if key == "" || agent == "" {
		return fmt.Errorf("register resource %q: empty resource or agent name", key)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.resources[key]; ok {
		return fmt.Errorf("register resource %q: %w", key, ErrDuplicate)
	}
	if r.resources == nil {
		r.resources = make(map[string]string)
	}
	r.resources[key] = agent
	return nil
}

// MappedResource returns the agent name key is mapped to with
// RegisterResource.
func (r *Registry) MappedResource(key string) (string, bool) {
	if r == nil {
		return "", false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	name, ok := r.resources[key]
	return name, ok
}

// ResolveResource returns the name of the registered agent that runs a
// Task's Resource, trying in order: the agent mapped to function (the
// FunctionName of lambda:invoke, or the Resource of a function ARN), the
// agent mapped to resource, then an agent registered under function
// itself, under fallback (the function's bare name), or under resource
// (an integration's ARN, "arn:aws:states:::dynamodb:putItem"). Empty
// arguments are skipped. ok is false when none of these names a
// registered agent; name is then the mapped name that is not registered,
// if any.
func (r *Registry) ResolveResource(resource, function, fallback string) (name string, ok bool) {
	if r == nil {
		return "", false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, key := range []string{function, resource} {
		if mapped, found := r.resources[key]; found && key != "" {
			_, ok := r.agents[mapped]
			return mapped, ok
		}
	}
	for _, n := range []string{function, fallback, resource} {
		if _, found := r.agents[n]; found && n != "" {
			return n, true
		}
	}
	return "", false
}

// RegisterBucket makes b the bucket a Distributed Map's ItemReader and
// ResultWriter use when their Bucket is name (also written
// "s3://name" or "arn:aws:s3:::name"): a local folder (itemio.Dir) or any
// other implementation of itemio.Bucket. It fails when name is empty, b
// is nil or name is already registered.
func (r *Registry) RegisterBucket(name string, b itemio.Bucket) error {
	if name == "" || b == nil {
		return fmt.Errorf("register bucket %q: empty name or nil bucket", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.buckets[name]; ok {
		return fmt.Errorf("register bucket %q: %w", name, ErrDuplicate)
	}
	if r.buckets == nil {
		r.buckets = make(map[string]itemio.Bucket)
	}
	r.buckets[name] = b
	return nil
}

// Bucket returns the bucket registered under name with RegisterBucket.
func (r *Registry) Bucket(name string) (itemio.Bucket, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.buckets[name]
	return b, ok
}
