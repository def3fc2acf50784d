package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

var (
	errTaskTimeout      = errors.New("task timed out")
	errHeartbeatTimeout = errors.New("task heartbeat timed out")
)

// task runs one attempt of a Task state (DESIGN.md §2): InputPath,
// Memory.Read, Guardrails.Input, the Context window, Parameters, the agent
// call (with TimeoutSeconds and HeartbeatSeconds, usage and budgets),
// Guardrails.Output, Reasoning, ResultSelector, ResultPath (through the
// guard), Memory.Write, OutputPath.
func (h *stateRun) task(ctx context.Context, s *states.Task, raw any) (stepResult, error) {
	if s.JSONata() {
		return h.jsonataTask(ctx, s, raw)
	}
	result, size, err := h.taskCall(ctx, s, raw)
	if err != nil {
		return stepResult{}, err
	}
	if s.Reasoning != nil {
		var trace any
		if result, trace, err = reasoning(s.Reasoning, result); err != nil {
			return stepResult{}, err
		}
		h.recordReasoning(s.Reasoning, trace)
		size = unknownSize
	}
	if s.ResultSelector != nil {
		if result, size, err = h.template(s.ResultSelector, result, size); err != nil {
			return stepResult{}, err
		}
	}
	return h.finish(raw, result, size, s.ResultPath)
}

// taskCall runs a Task's call of a JSONPath state up to its checked result:
// InputPath, Memory.Read, Guardrails.Input, the Context window, Parameters,
// the agent call and Guardrails.Output. A callback Task (.waitForTaskToken)
// issues its token before Parameters, calls the agent with it and parks;
// resumed, its result is the answer the token got. A Task of an activity
// schedules its task for the activity's workers after Parameters and parks
// the same way.
func (h *stateRun) taskCall(ctx context.Context, s *states.Task, raw any) (any, int, error) {
	if cb := h.awaiting(); cb != nil && (waitsForToken(s) || isActivity(s)) {
		result, size, err := h.callbackResult(ctx, cb)
		if err != nil {
			return nil, 0, err
		}
		return h.guardOutput(ctx, s, result, size, noRegenerate)
	}
	input, err := h.inputPath(raw)
	if err != nil {
		return nil, 0, err
	}
	inSize := h.inSize
	if s.Metadata != nil {
		if err := h.metadata(s, input); err != nil {
			return nil, 0, err
		}
	}
	if s.Memory != nil && s.Memory.Read != nil {
		if input, err = h.memoryRead(ctx, s.Memory, input); err != nil {
			return nil, 0, err
		}
		inSize = unknownSize
	}
	// The Path forms of the timeouts read the input before guardrails
	// and the context window change it.
	timeout, err := h.seconds("TimeoutSecondsPath", s.TimeoutSeconds, s.TimeoutSecondsPath, input)
	if err != nil {
		return nil, 0, err
	}
	heartbeat, err := h.seconds("HeartbeatSecondsPath", s.HeartbeatSeconds, s.HeartbeatSecondsPath, input)
	if err != nil {
		return nil, 0, err
	}
	if err := h.resolveGeneration(s, func(_ string, path *jsonpath.Expr, _ *jsonata.Template) (any, error) {
		v, err := path.Eval(input, h.env)
		if err != nil {
			return nil, h.pathError(err)
		}
		return v, nil
	}); err != nil {
		return nil, 0, err
	}
	var cb *PendingCallback
	if waitsForToken(s) {
		if cb, err = h.issueToken(timeout, heartbeat); err != nil {
			return nil, 0, err
		}
	}
	if s.Guardrails != nil && s.Guardrails.Input != nil {
		if input, err = h.guardInput(ctx, s, input); err != nil {
			return nil, 0, err
		}
		inSize = unknownSize
	}
	if s.Context != nil {
		if input, err = h.contextWindow(ctx, s, input); err != nil {
			return nil, 0, err
		}
		inSize = unknownSize
	}
	// The agent's input is held to the payload limit after Parameters.
	params := input
	if s.Parameters != nil {
		if params, _, err = h.template(s.Parameters, input, inSize); err != nil {
			return nil, 0, err
		}
	}
	if h.startsExecution(s) {
		return h.startExecution(ctx, s, params, cb)
	}
	if h.toWorkers(s) {
		return nil, 0, h.scheduleActivity(ctx, s, params, timeout, heartbeat)
	}
	if cb != nil {
		if _, _, err := h.submit(ctx, s, params, timeout, heartbeat); err != nil {
			return nil, 0, err
		}
		return nil, 0, h.awaitToken(ctx, cb)
	}
	var tc *taskCache
	if c := s.Cache; c != nil && c.Enabled {
		var cached any
		var hit bool
		if tc, cached, hit, err = h.cacheLookup(ctx, s, input, params, timeout); err != nil {
			return nil, 0, err
		}
		if hit {
			// Nothing is called nor charged; the output guardrails and
			// the write policy still check the result.
			return h.guardOutput(ctx, s, cached, unknownSize, noRegenerate)
		}
		defer tc.release(ctx)
	}
	result, size, err := h.callAgent(ctx, s, "", params, nil, timeout, heartbeat)
	if err != nil {
		return nil, 0, err
	}
	result, size, err = h.guardOutput(ctx, s, result, size, func(ctx context.Context, sub string) (any, int, error) {
		return h.callAgent(ctx, s, sub, params, nil, timeout, heartbeat)
	})
	if err == nil && tc != nil {
		tc.store(ctx, h, s, result)
	}
	return result, size, err
}

// seconds resolves TimeoutSeconds/HeartbeatSeconds or their Path forms.
func (h *stateRun) seconds(field string, fixed int64, path *jsonpath.Path, input any) (time.Duration, error) {
	if path == nil {
		return time.Duration(fixed) * time.Second, nil
	}
	v, err := h.get(path, input)
	if err != nil {
		return 0, err
	}
	n, ok := numberValue(v)
	if !ok || n <= 0 {
		return 0, h.runtimeError(fmt.Sprintf("The %s field refers to value %s which is not a valid positive integer: %s", field, compactJSON(v), path))
	}
	return time.Duration(n) * time.Second, nil
}

// callAgent invokes the named agent once, recording the Task events, and
// returns its normalized result with its size, or the ASL error it failed
// with.
//
// sub names the call within the state when the state makes several (a
// Debate's "round-2/Critic"): it extends the step of the call's
// idempotency key. logged, when not nil, is what the history records as
// the call's input instead of input (a Debate records where its history is,
// not the transcript again).
func (h *stateRun) callAgent(ctx context.Context, s *states.Task, sub string, input, logged any, timeout, heartbeat time.Duration) (any, int, error) {
	r := h.r
	step := h.step()
	if sub != "" {
		step += "/" + sub
	}
	if err := h.workflowBudgetSpent(); err != nil {
		// The agent is not called: nothing is scheduled.
		return nil, 0, err
	}
	creds, err := h.credentials(ctx, s)
	if err != nil {
		return nil, 0, err
	}
	name, agentInput, version, rerr := h.resolveAgent(s, input)
	if rerr == nil {
		// Agents read arrays as []any: a packed one is decoded for them.
		agentInput, rerr = h.sc.plain.expand(agentInput)
	}
	a, ok := r.agents.Lookup(name)
	r.mu.Lock()
	n := r.invocations[name]
	r.invocations[name] = n + 1
	r.mu.Unlock()
	// The call's key, in its history events (an executor without a store
	// keeps no history).
	var key any
	if r.x.durable {
		key = map[string]any{"step": step, "attempt": jsonvalue.IntNumber(int64(h.env.retry)), "invocation": jsonvalue.IntNumber(int64(n))}
	}
	if logged == nil {
		logged = input
	}
	r.event(Event{Type: EventTaskScheduled, State: h.name(), Scope: h.sc.prefix, Input: logged, Document: h.raw, Detail: key})
	if rerr == nil && !ok {
		rerr = asl.Errorf(asl.ErrTaskFailed, "agent %q is not registered", name)
	}
	if rerr != nil {
		err := classify(rerr, timeout, heartbeat)
		r.event(Event{Type: EventTaskFailed, State: h.name(), Scope: h.sc.prefix, Error: string(err.Name), Cause: err.Cause, Document: h.raw, Detail: key})
		return nil, 0, err
	}
	// The request and its usage counter are one allocation.
	call := &struct {
		req   agents.Request
		usage callUsage
	}{req: agents.Request{
		Agent:      name,
		Execution:  r.exec.ID,
		Step:       step,
		State:      h.qualified(),
		Attempt:    h.env.retry,
		Invocation: n,
		Input:      agentInput,
		Violation:  h.violation,
	}}
	req, usage := &call.req, &call.usage
	if s.Resource != nil {
		req.Resource = s.Resource.ARN
	}
	req.Credentials = creds
	req.Workflows = callWorkflows{h}
	req.Tools = h.toolSet(s.Tools, &usage.denied)
	req.OnUsage = usage.report
	if states.State(s) == h.st {
		// The state's own agent keeps a journal (RunJournal); the agents a
		// Debate, guardrails or a context window call for it do not (their
		// steps just run).
		h.stepPrefix = sub
		req.Steps = h
		if s.Guardrails != nil && s.Guardrails.Output != nil {
			req.OnToolResult = h.checkToolResult
		}
		if s.Budget != nil || r.m.Extensions != nil && r.m.Extensions.Budget != nil {
			req.OnBudget = func() error { return h.budgetLeft(s, usage) }
		}
		req.Generation = h.generation
		if m := s.Model; m != nil {
			req.Model = &agents.ModelChoice{Models: m.Models(), FallbackOn: m.FallbackOn}
		}
		if fb := h.budgetFallback(); fb != "" && !keepsModel(s) {
			// The workflow Budget is used up and says UseFallback: the
			// call uses its fallback model, whatever the Task prefers.
			req.Model = &agents.ModelChoice{Models: []string{fb}}
		}
	}
	var stream *taskStream
	if sc := s.Streaming; sc != nil && sc.Enabled && states.State(s) == h.st {
		stream = h.startTaskStream(ctx, sc, req)
	}
	if sp := s.Progress; sp != nil && sp.Enabled && states.State(s) == h.st {
		req.OnProgress = h.progressReporter(sp, req)
	}
	r.event(Event{Type: EventTaskStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw})
	var start time.Time
	if r.x.hooks.AgentCalled != nil {
		start = time.Now()
	}
	p := pauseTurn(ctx) // the agent may take a while: others go on
	result, err := invoke(ctx, a, req, timeout, heartbeat)
	p.resume()
	if stream != nil {
		stream.end(ctx, err)
	}
	if f := r.x.hooks.AgentCalled; f != nil {
		herr := err
		if err != nil && ctx.Err() == nil {
			herr = classify(err, timeout, heartbeat)
		}
		u, _ := usage.get()
		f(ctx, r.exec.ID, name, time.Since(start), u, r.secrets.maskError(herr))
	}
	if ctx.Err() == nil || err == nil {
		// The call completed (not cut short by the run stopping): the
		// commit that makes its outcome durable counts it, and its usage.
		if r.x.durable {
			h.sc.callsMu.Lock()
			if h.sc.calls == nil {
				h.sc.calls = make(map[string]int)
			}
			h.sc.calls[name]++
			h.sc.callsMu.Unlock()
		}
		u, bad := usage.get()
		// Budget errors come before the agent's own: the money is spent
		// whatever the agent made of it.
		if bad != nil {
			result, err = nil, asl.Errorf(asl.ErrTaskFailed, "agent %q reported usage that is negative or not finite: %+v", name, *bad)
		}
		if berr := h.spend(u); berr != nil {
			result, err = nil, berr
		} else if berr := h.checkStateBudget(s.Budget, u); berr != nil {
			result, err = nil, berr
		} else if denied := usage.denied; denied != "" && err == nil {
			// The agent went on after a tool was refused: the call
			// still fails.
			result, err = nil, h.permissionError(denied)
		}
	}
	// The outcome's event says what the call consumed, when its agent
	// reported usage: the execution page shows it per call.
	outcome := key
	if km, ok := key.(map[string]any); ok {
		if used, _ := usage.get(); used != (Usage{}) {
			km = maps.Clone(km)
			km["usage"] = used.json()
			outcome = km
		}
	}
	size := 0
	if err == nil {
		if normal, nerr := jsonvalue.Normalize(result); nerr != nil {
			if err = h.invalidResult(result); err == nil {
				err = asl.Errorf(asl.ErrTaskFailed, "agent %q returned a value that is not JSON: %v", name, nerr)
			}
			result = nil
		} else {
			result = normal
			if version != "" {
				result = lambdaResponse(result, version, req.IdempotencyKey())
			}
			size, err = h.fits(result, unknownSize)
		}
	}
	if err != nil {
		if skip := (*skipNode)(nil); errors.As(err, &skip) {
			// SKIP_NODE dropped the result governance refused.
			r.event(Event{Type: EventTaskFailed, State: h.name(), Scope: h.sc.prefix, Error: string(skip.v.Name), Cause: skip.v.Cause, Document: h.raw, Detail: outcome})
			return nil, 0, err
		}
	}
	if err != nil {
		var ae *asl.Error
		if ctx.Err() != nil && !errors.As(err, &ae) {
			// The execution itself was cancelled: not an outcome of the task.
			return nil, 0, err
		}
		ae = lambdaError(s.Resource, classify(err, timeout, heartbeat))
		typ := EventTaskFailed
		if ae.Name == asl.ErrTimeout || ae.Name == asl.ErrHeartbeatTimeout {
			typ = EventTaskTimedOut
		}
		r.event(Event{Type: typ, State: h.name(), Scope: h.sc.prefix, Error: string(ae.Name), Cause: ae.Cause, Document: h.raw, Detail: outcome})
		return nil, 0, ae
	}
	typ := EventTaskSucceeded
	if h.submitting {
		typ = EventTaskSubmitted
	}
	r.event(Event{Type: typ, State: h.name(), Scope: h.sc.prefix, Output: result, Document: h.raw, Detail: outcome})
	return result, size, nil
}

// callUsage sums what an agent reports consuming during one call
// (agents.Request.OnUsage, which may be called from any goroutine), and
// keeps the first tool it was refused (set by its tool set).
type callUsage struct {
	mu     sync.Mutex
	used   Usage
	bad    *agents.Usage // the first report that is negative or not finite
	denied string
}

func (c *callUsage) report(u agents.Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !u.Valid() {
		if c.bad == nil {
			c.bad = &u
		}
		return
	}
	c.used.add(u)
}

func (c *callUsage) get() (Usage, *agents.Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.bad
}

type invokeResult struct {
	v   any
	err error
}

// invoke calls a.Invoke under the state's deadlines. The call runs in its
// own goroutine so that an agent ignoring its context cannot hold the run
// past its timeout; a panicking agent becomes States.TaskFailed.
func invoke(ctx context.Context, a agents.Agent, req *agents.Request, timeout, heartbeat time.Duration) (any, error) {
	if h, ok := a.(agents.ContextHonouring); ok && heartbeat <= 0 && h.HonoursContext() {
		return invokeDirect(ctx, a, req, timeout)
	}
	// The call's own context is cancelled when a deadline of the state
	// passes; without one the call has the state's context, as a direct
	// call does.
	callCtx, cancel := ctx, func(error) {}
	if timeout > 0 || heartbeat > 0 {
		callCtx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
	}
	var timeoutC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var (
		beats chan struct{}
		hbT   *time.Timer
		hbC   <-chan time.Time
	)
	if heartbeat > 0 {
		beats = make(chan struct{}, 1)
		req.OnHeartbeat = func() {
			select {
			case beats <- struct{}{}:
			default:
			}
		}
		hbT = time.NewTimer(heartbeat)
		defer hbT.Stop()
		hbC = hbT.C
	}
	done := make(chan invokeResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- invokeResult{err: asl.Errorf(asl.ErrTaskFailed, "agent %q panicked: %v", req.Agent, p)}
			}
		}()
		v, err := a.Invoke(callCtx, req)
		done <- invokeResult{v: v, err: err}
	}()
	for {
		select {
		case res := <-done:
			return res.v, res.err
		case <-beats:
			hbT.Reset(heartbeat)
		case <-hbC:
			cancel(errHeartbeatTimeout)
			return nil, errHeartbeatTimeout
		case <-timeoutC:
			cancel(errTaskTimeout)
			return nil, errTaskTimeout
		case <-ctx.Done():
			return nil, ctxError(ctx)
		}
	}
}

// invokeDirect calls an agent that honours its context on this goroutine:
// no goroutine, channel or timer of the call's own (the state's timeout is
// the context's deadline). A call cut short by the timeout is
// errTaskTimeout, by the run's cancellation the run's error.
func invokeDirect(ctx context.Context, a agents.Agent, req *agents.Request, timeout time.Duration) (v any, err error) {
	callCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, timeout, errTaskTimeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, asl.Errorf(asl.ErrTaskFailed, "agent %q panicked: %v", req.Agent, p)
		}
	}()
	v, err = a.Invoke(callCtx, req)
	switch {
	case err == nil:
		return v, nil
	case ctx.Err() != nil:
		return nil, ctxError(ctx)
	case callCtx.Err() != nil && errors.Is(context.Cause(callCtx), errTaskTimeout):
		return nil, errTaskTimeout
	}
	return v, err
}

// classify maps the error of an agent call to its ASL error: an *asl.Error
// is kept, the state's deadlines become States.Timeout and
// States.HeartbeatTimeout, and any other Go error States.TaskFailed.
func classify(err error, timeout, heartbeat time.Duration) *asl.Error {
	var ae *asl.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, errTaskTimeout):
		return asl.Errorf(asl.ErrTimeout, "the agent did not finish within TimeoutSeconds (%s)", timeout)
	case errors.Is(err, errHeartbeatTimeout):
		return asl.Errorf(asl.ErrHeartbeatTimeout, "the agent sent no heartbeat within HeartbeatSeconds (%s)", heartbeat)
	}
	return &asl.Error{Name: asl.ErrTaskFailed, Cause: err.Error(), Err: err}
}

// resolveGeneration evaluates the Task's Generation block for its agent
// call (eval computes a dynamic field) and keeps it for callAgent.
func (h *stateRun) resolveGeneration(s *states.Task, eval states.GenerationEval) error {
	h.generation = nil
	if s.Generation == nil {
		return nil
	}
	v, err := s.Generation.Resolve(eval)
	if err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			return ae
		}
		return h.runtimeError(err.Error())
	}
	g := &agents.Generation{MaxTokens: int(v.MaxTokens), StopSequences: v.StopSequences}
	if v.HasTemperature {
		g.Temperature = &v.Temperature
	}
	if v.HasTopP {
		g.TopP = &v.TopP
	}
	h.generation = g
	return nil
}

// EventStateMetadata records a Task's Metadata, evaluated on its
// effective input.
const EventStateMetadata = "StateMetadata"

// metadata records the Task's Metadata.
func (h *stateRun) metadata(s *states.Task, input any) error {
	v, _, err := h.template(s.Metadata, input, h.inSize)
	if err != nil {
		return err
	}
	h.r.ownEvent(Event{Type: EventStateMetadata, State: h.name(), Scope: h.sc.prefix, Detail: v})
	return nil
}
