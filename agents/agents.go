// Package agents defines what the engine calls from a Task state: the Agent
// interface, the Func and Typed adapters, the Registry that names agents,
// and mocked agents scripted from a mock file.
package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/aslrun/aslrun/jsonpath"
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

// Func adapts a function to the Agent interface.
type Func func(ctx context.Context, req *Request) (any, error)

// Invoke calls f.
func (f Func) Invoke(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

var _ Agent = Func(nil)

// Typed adapts a function over Go types to the Agent interface: the input
// is converted to In through its JSON form, and the Out returned is
// converted back to a JSON value. A conversion failure of the input is an
// error of the call (States.TaskFailed).
func Typed[In, Out any](fn func(ctx context.Context, in In) (Out, error)) Agent {
	return Func(func(ctx context.Context, req *Request) (any, error) {
		data, err := jsonpath.Marshal(req.Input)
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
		return jsonpath.Normalize(out)
	})
}

// ErrDuplicate is returned by Register when the name is taken.
var ErrDuplicate = errors.New("agent already registered")

// Registry maps agent names to agents. The zero value is an empty registry
// ready to use. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	agents map[string]Agent
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
