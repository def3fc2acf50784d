package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// JSONata states (QueryLanguage JSONata) have no InputPath, Parameters,
// ResultSelector, ResultPath or OutputPath: their expressions read the
// state's raw input ($states.input), its result ($states.result), a
// caught error ($states.errorOutput), the context object
// ($states.context) and the workflow variables, which JSONPath and JSONata
// states share. Output is the state's output (default: the result of a
// Task, Map or Parallel, else the input); Assign is evaluated on the same
// $states. A failing expression is States.QueryEvaluationError, which
// Retry and Catch match.

// jsonataScope is what the state's expressions see on raw input.
func (h *stateRun) jsonataScope(raw any) *jsonata.Scope {
	e := h.env
	return &jsonata.Scope{Input: raw, Context: e.Context, Variable: e.Variable, Drew: e.Drew, Limits: h.r.x.jsonataLimits}
}

// queryError is States.QueryEvaluationError with a cause quoting the state,
// as AWS words it.
func (h *stateRun) queryError(msg string) *asl.Error {
	return asl.Errorf(asl.ErrQueryEvaluationError, "An error occurred while executing the state '%s' (entered at the event id #%d). %s", h.name(), h.entered, msg)
}

// evalJSONata evaluates a template of the state's field under ctx and the
// executor's JSONata limits; a failure, a limit passed included, is
// States.QueryEvaluationError, and the end of ctx is the run's own
// (ctxError).
func (h *stateRun) evalJSONata(ctx context.Context, t *jsonata.Template, sc *jsonata.Scope, field string) (any, error) {
	v, err := t.Eval(ctx, sc, field)
	if err != nil {
		if ctx.Err() != nil {
			// The run was stopped, timed out or drained: not an outcome of
			// the expression.
			return nil, ctxError(ctx)
		}
		var je *jsonata.Error
		if errors.As(err, &je) {
			return nil, h.queryError(je.Msg)
		}
		return nil, h.queryError(err.Error())
	}
	return v, nil
}

// jsonataExit evaluates the state's Output (def, of at most defSize bytes,
// when it has none) and Assign, and returns the output with a bound of its
// size.
func (h *stateRun) jsonataExit(ctx context.Context, sc *jsonata.Scope, output, assign *jsonata.Template, def any, defSize int) (any, int, error) {
	out, size := def, defSize
	if output != nil {
		v, err := h.evalJSONata(ctx, output, sc, "Output")
		if err != nil {
			return nil, 0, err
		}
		out, size = v, unknownSize
	}
	size, err := h.settle(out, size)
	if err != nil {
		return nil, 0, err
	}
	if assign != nil {
		v, err := h.evalJSONata(ctx, assign, sc, "Assign")
		if err != nil {
			return nil, 0, err
		}
		h.assign, _ = v.(map[string]any)
	}
	return out, size, nil
}

// jsonataFinish ends a JSONata state that wrote a document (Pass, Task,
// Map, Parallel): Output, else def (the result, or the input), and Assign.
func (h *stateRun) jsonataFinish(ctx context.Context, sc *jsonata.Scope, def any, defSize int) (stepResult, error) {
	c := h.st.Base()
	out, size, err := h.jsonataExit(ctx, sc, c.Output, c.AssignJSONata, def, defSize)
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{output: out, proposed: out, next: c.Next, size: size, wrote: true, prev: h.raw}, nil
}

// jsonataPass runs a JSONata Pass state.
func (h *stateRun) jsonataPass(ctx context.Context, raw any) (stepResult, error) {
	return h.jsonataFinish(ctx, h.jsonataScope(raw), raw, h.inSize)
}

// jsonataPassThrough ends a JSONata Choice rule, Wait or Succeed: its
// output is its input unless Output says otherwise.
func (h *stateRun) jsonataPassThrough(ctx context.Context, sc *jsonata.Scope, output, assign *jsonata.Template, next string) (stepResult, error) {
	raw := h.raw
	out, size, err := h.jsonataExit(ctx, sc, output, assign, raw, h.inSize)
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{output: out, proposed: out, next: next, size: size, wrote: output != nil, prev: raw}, nil
}

// jsonataTask runs one attempt of a JSONata Task: Arguments (default: the
// input) go to the agent, whose result is $states.result.
func (h *stateRun) jsonataTask(ctx context.Context, s *states.Task, raw any) (stepResult, error) {
	if cb := h.awaiting(); cb != nil && (waitsForToken(s) || isActivity(s)) {
		result, size, err := h.callbackResult(ctx, cb)
		if err != nil {
			return stepResult{}, err
		}
		sc := h.jsonataScope(raw)
		sc.Result, sc.HasResult = result, true
		return h.jsonataFinish(ctx, sc, result, size)
	}
	sc := h.jsonataScope(raw)
	timeout, err := h.jsonataSeconds(ctx, s.TimeoutSecondsExpr, "TimeoutSeconds", s.TimeoutSeconds, sc)
	if err != nil {
		return stepResult{}, err
	}
	heartbeat, err := h.jsonataSeconds(ctx, s.HeartbeatSecondsExpr, "HeartbeatSeconds", s.HeartbeatSeconds, sc)
	if err != nil {
		return stepResult{}, err
	}
	if err := h.resolveGeneration(s, func(field string, _ *jsonpath.Expr, expr *jsonata.Template) (any, error) {
		return h.evalJSONata(ctx, expr, sc, "Generation."+field)
	}); err != nil {
		return stepResult{}, err
	}
	if s.MetadataJSONata != nil {
		v, err := h.evalJSONata(ctx, s.MetadataJSONata, sc, "Metadata")
		if err != nil {
			return stepResult{}, err
		}
		h.r.ownEvent(Event{Type: EventStateMetadata, State: h.name(), Scope: h.sc.prefix, Detail: v})
	}
	var cb *PendingCallback
	if waitsForToken(s) {
		// $states.context.Task.Token: the scope is made again with it.
		if cb, err = h.issueToken(timeout, heartbeat); err != nil {
			return stepResult{}, err
		}
		sc = h.jsonataScope(raw)
	}
	args := raw
	if s.Arguments != nil {
		if args, err = h.jsonataArguments(ctx, s.Arguments, sc, timeout); err != nil {
			return stepResult{}, err
		}
		if _, err := h.fits(args, unknownSize); err != nil {
			return stepResult{}, err
		}
	}
	if h.startsExecution(s) {
		result, size, err := h.startExecution(ctx, s, args, cb)
		if err != nil {
			return stepResult{}, err
		}
		sc.Result, sc.HasResult = result, true
		return h.jsonataFinish(ctx, sc, result, size)
	}
	if h.toWorkers(s) {
		return stepResult{}, h.scheduleActivity(ctx, s, args, timeout, heartbeat)
	}
	if cb != nil {
		if _, _, err := h.submit(ctx, s, args, timeout, heartbeat); err != nil {
			return stepResult{}, err
		}
		return stepResult{}, h.awaitToken(ctx, cb)
	}
	if c := s.Cache; c != nil && c.Enabled {
		tc, cached, hit, err := h.cacheLookup(ctx, s, raw, args, timeout)
		if err != nil {
			return stepResult{}, err
		}
		if hit {
			// Nothing is called nor charged; the write policy still
			// checks the result.
			sc.Result, sc.HasResult = cached, true
			return h.jsonataFinish(ctx, sc, cached, unknownSize)
		}
		defer tc.release(ctx)
		result, size, err := h.callAgent(ctx, s, "", args, nil, timeout, heartbeat)
		if err != nil {
			return stepResult{}, err
		}
		tc.store(ctx, h, s, result)
		sc.Result, sc.HasResult = result, true
		return h.jsonataFinish(ctx, sc, result, size)
	}
	result, size, err := h.callAgent(ctx, s, "", args, nil, timeout, heartbeat)
	if err != nil {
		return stepResult{}, err
	}
	sc.Result, sc.HasResult = result, true
	return h.jsonataFinish(ctx, sc, result, size)
}

// jsonataArguments evaluates a JSONata Task's Arguments within the Task's
// TimeoutSeconds (when it has one): an evaluation that outlasts it is
// States.Timeout, as an agent that does is.
func (h *stateRun) jsonataArguments(ctx context.Context, t *jsonata.Template, sc *jsonata.Scope, timeout time.Duration) (any, error) {
	if timeout <= 0 {
		return h.evalJSONata(ctx, t, sc, "Arguments")
	}
	actx, cancel := context.WithTimeoutCause(ctx, timeout, errTaskTimeout)
	defer cancel()
	v, err := h.evalJSONata(actx, t, sc, "Arguments")
	if err != nil && ctx.Err() == nil && context.Cause(actx) == errTaskTimeout {
		return nil, asl.Errorf(asl.ErrTimeout, "the Arguments of the state '%s' were not evaluated within TimeoutSeconds (%s)", h.name(), timeout)
	}
	return v, err
}

// jsonataSeconds resolves a JSONata Task's TimeoutSeconds or
// HeartbeatSeconds: an expression giving a positive integer, or the
// literal fixed.
func (h *stateRun) jsonataSeconds(ctx context.Context, t *jsonata.Template, field string, fixed int64, sc *jsonata.Scope) (time.Duration, error) {
	if t == nil {
		return time.Duration(fixed) * time.Second, nil
	}
	v, err := h.evalJSONata(ctx, t, sc, field)
	if err != nil {
		return 0, err
	}
	n, ok := jsonataInteger(v)
	if !ok || n <= 0 || n > states.MaxTimeoutSeconds {
		return 0, h.queryError(fmt.Sprintf("The %s field must be a positive integer no greater than %d, but was %s", field, states.MaxTimeoutSeconds, compactJSON(v)))
	}
	return time.Duration(n) * time.Second, nil
}

// jsonataInteger reads an integer an expression gave.
func jsonataInteger(v any) (int64, bool) {
	n, ok := numberValue(v)
	if !ok {
		return 0, false
	}
	return n, true
}

// jsonataChoice runs a JSONata Choice state: the first rule whose Condition
// is true gives the next state, the Output and the Assign; otherwise
// Default with the state's own.
func (h *stateRun) jsonataChoice(ctx context.Context, s *states.Choice, raw any) (stepResult, error) {
	sc := h.jsonataScope(raw)
	for i := range s.Choices {
		rule := &s.Choices[i]
		v, err := h.evalJSONata(ctx, rule.ConditionExpr, sc, "Condition")
		if err != nil {
			return stepResult{}, err
		}
		b, ok := v.(bool)
		if !ok {
			return stepResult{}, h.queryError(rule.ConditionExpr.TypeError("Condition", "boolean", v).Msg)
		}
		if b {
			return h.jsonataPassThrough(ctx, sc, rule.Output, rule.AssignJSONata, rule.Next)
		}
	}
	if s.Default == "" {
		return stepResult{}, asl.Errorf(asl.ErrNoChoiceMatched, "No Matches!")
	}
	return h.jsonataPassThrough(ctx, sc, s.Output, s.AssignJSONata, s.Default)
}

// jsonataWaitTime is how long a JSONata Wait waits: Seconds or Timestamp,
// literal or computed.
func (h *stateRun) jsonataWaitTime(ctx context.Context, s *states.Wait, sc *jsonata.Scope) (time.Duration, error) {
	switch {
	case s.SecondsExpr != nil:
		v, err := h.evalJSONata(ctx, s.SecondsExpr, sc, "Seconds")
		if err != nil {
			return 0, err
		}
		n, ok := jsonataInteger(v)
		if !ok || n < 0 || n > states.MaxTimeoutSeconds {
			return 0, h.queryError(fmt.Sprintf("The Seconds field must be a non-negative integer no greater than %d, but was %s", states.MaxTimeoutSeconds, compactJSON(v)))
		}
		return time.Duration(n) * time.Second, nil
	case s.TimestampExpr != nil:
		v, err := h.evalJSONata(ctx, s.TimestampExpr, sc, "Timestamp")
		if err != nil {
			return 0, err
		}
		str, ok := v.(string)
		t, valid := states.ParseTimestamp(str)
		if !ok || !valid {
			return 0, h.queryError("The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: " + plain(v))
		}
		return time.Until(t), nil
	case s.HasSeconds:
		return time.Duration(s.Seconds) * time.Second, nil
	}
	return time.Until(s.Timestamp), nil
}

// jsonataWait runs a JSONata Wait state.
func (h *stateRun) jsonataWait(ctx context.Context, s *states.Wait, raw any) (stepResult, error) {
	sc := h.jsonataScope(raw)
	var d time.Duration
	if p := h.progress; p != nil && !p.WakeAt.IsZero() {
		// Resumed in the middle of this wait: it ends when it was due to.
		d = time.Until(p.WakeAt)
	} else {
		var err error
		if d, err = h.jsonataWaitTime(ctx, s, sc); err != nil {
			return stepResult{}, err
		}
	}
	if err := h.delay(ctx, "Wait", d, &StepProgress{Visit: h.visit}); err != nil {
		return stepResult{}, err
	}
	return h.jsonataPassThrough(ctx, sc, s.Output, s.AssignJSONata, s.Next)
}

// jsonataFail is the error a JSONata Fail state raises.
func (h *stateRun) jsonataFail(ctx context.Context, s *states.Fail, raw any) error {
	sc := h.jsonataScope(raw)
	name, cause := s.Error, s.Cause
	for _, f := range []struct {
		t     *jsonata.Template
		field string
		to    *string
	}{{s.ErrorExpr, "Error", &name}, {s.CauseExpr, "Cause", &cause}} {
		if f.t == nil {
			continue
		}
		v, err := h.evalJSONata(ctx, f.t, sc, f.field)
		if err != nil {
			return err
		}
		str, ok := v.(string)
		if !ok {
			return h.queryError(f.t.TypeError(f.field, "string", v).Msg)
		}
		*f.to = str
	}
	return &asl.Error{Name: asl.ErrorName(name), Cause: cause}
}

// jsonataItems is the array a JSONata Map runs over: Items, else its
// input.
func (h *stateRun) jsonataItems(ctx context.Context, s *states.Map, sc *jsonata.Scope, raw any) ([]any, int, error) {
	if s.Items == nil {
		if p, ok := raw.(*jsonvalue.Packed); ok {
			// JSONata reads arrays as []any: a packed input is decoded.
			arr, err := p.Slice()
			if err != nil {
				return nil, 0, err
			}
			return arr, h.inSize, nil
		}
		arr, ok := raw.([]any)
		if !ok {
			return nil, 0, h.queryError("Map state input must be an array but was: " + compactJSON(raw))
		}
		return arr, h.inSize, nil
	}
	v, err := h.evalJSONata(ctx, s.Items, sc, "Items")
	if err != nil {
		return nil, 0, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, 0, h.queryError(s.Items.TypeError("Items", "array", v).Msg)
	}
	size, err := h.fits(arr, unknownSize)
	return arr, size, err
}

// jsonataMapConfig resolves a JSONata Map's concurrency and tolerance,
// literal or computed.
func (h *stateRun) jsonataMapConfig(ctx context.Context, s *states.Map, sc *jsonata.Scope) (mapConfig, error) {
	cfg := mapConfig{concurrency: int(s.MaxConcurrency), maxFailed: -1, maxPercent: -1}
	if t := s.MaxConcurrencyExpr; t != nil {
		v, err := h.evalJSONata(ctx, t, sc, "MaxConcurrency")
		if err != nil {
			return cfg, err
		}
		n, ok := jsonataInteger(v)
		if !ok || n < 0 || n > 1<<31-1 {
			return cfg, h.queryError(fmt.Sprintf("The MaxConcurrency field must be a non-negative integer, but was %s", compactJSON(v)))
		}
		cfg.concurrency = int(n)
	}
	if s.HasToleratedFailureCount {
		cfg.tolerant, cfg.maxFailed = true, s.ToleratedFailureCount
	}
	if t := s.ToleratedFailureCountExpr; t != nil {
		v, err := h.evalJSONata(ctx, t, sc, "ToleratedFailureCount")
		if err != nil {
			return cfg, err
		}
		n, ok := jsonataInteger(v)
		if !ok || n < 0 {
			return cfg, h.queryError(fmt.Sprintf("The ToleratedFailureCount field must be a non-negative integer, but was %s", compactJSON(v)))
		}
		cfg.tolerant, cfg.maxFailed = true, n
	}
	if s.HasToleratedFailurePercentage {
		cfg.tolerant, cfg.maxPercent = true, s.ToleratedFailurePercentage
	}
	if t := s.ToleratedFailurePercentageExpr; t != nil {
		v, err := h.evalJSONata(ctx, t, sc, "ToleratedFailurePercentage")
		if err != nil {
			return cfg, err
		}
		f, ok := floatValue(v)
		if _, isStr := v.(string); isStr || !ok || f < 0 || f > 100 || math.IsNaN(f) {
			return cfg, h.queryError(fmt.Sprintf("The ToleratedFailurePercentage field must be a number between 0 and 100, but was %s", compactJSON(v)))
		}
		cfg.tolerant, cfg.maxPercent = true, f
	}
	return cfg, nil
}

// jsonataMap runs one attempt of a JSONata Map state.
func (h *stateRun) jsonataMap(ctx context.Context, s *states.Map, raw any) (stepResult, error) {
	sc := h.jsonataScope(raw)
	arr, itemSize, err := h.jsonataItems(ctx, s, sc, raw)
	if err != nil {
		return stepResult{}, err
	}
	cfg, err := h.jsonataMapConfig(ctx, s, sc)
	if err != nil {
		return stepResult{}, err
	}
	h.r.event(Event{Type: EventMapStateStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw})
	results, _, err := h.runItems(ctx, s, raw, mapItems{arr: arr}, itemSize, cfg)
	return h.collected(ctx, raw, results, err, EventMapStateSucceeded, EventMapStateFailed, nil, states.ResultPath{})
}

// jsonataItem builds the input of Map item mi with ItemSelector, which sees
// the Map's input as $states.input and the item in
// $states.context.Map.Item.
func (h *stateRun) jsonataItem(ctx context.Context, s *states.Map, raw any, mi *mapItem) (any, int, error) {
	e := &env{r: h.r, sc: h.sc, state: h.name(), entered: h.env.entered, retry: h.env.retry, item: mi}
	sc := &jsonata.Scope{Input: raw, Context: e.Context, Variable: e.Variable, Drew: e.Drew, Limits: h.r.x.jsonataLimits}
	v, err := h.evalJSONata(ctx, s.ItemSelectorJSONata, sc, "ItemSelector")
	if err != nil {
		return nil, 0, err
	}
	size, err := h.fits(v, unknownSize)
	return v, size, err
}

// jsonataParallel runs one attempt of a JSONata Parallel state: every
// branch gets Arguments (default: the input).
func (h *stateRun) jsonataParallelInput(ctx context.Context, s *states.Parallel, raw any) (any, int, error) {
	if s.Arguments == nil {
		return raw, h.inSize, nil
	}
	v, err := h.evalJSONata(ctx, s.Arguments, h.jsonataScope(raw), "Arguments")
	if err != nil {
		return nil, 0, err
	}
	size, err := h.fits(v, unknownSize)
	return v, size, err
}

// jsonataCollected ends a JSONata Map or Parallel: its result is the array
// of item or branch outputs.
func (h *stateRun) jsonataCollected(ctx context.Context, raw any, results []any) (stepResult, error) {
	var result any = results
	size, err := h.fits(result, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	sc := h.jsonataScope(raw)
	sc.Result, sc.HasResult = result, true
	return h.jsonataFinish(ctx, sc, result, size)
}

// jsonataCaught applies a JSONata catcher: its Output (default: the error
// output) is the state's output, and its Assign sees $states.errorOutput.
func (h *stateRun) jsonataCaught(ctx context.Context, c *states.Catcher, raw any, ae *asl.Error) (stepResult, error) {
	errOut := errorOutput(ae)
	sc := h.jsonataScope(raw)
	sc.ErrorOutput, sc.HasErrorOutput = errOut, true
	h.assign = nil
	out, size, err := h.jsonataExit(ctx, sc, c.Output, c.AssignJSONata, errOut, jsonvalue.Size(errOut))
	if err != nil {
		return stepResult{}, err
	}
	res := stepResult{output: out, proposed: out, next: c.Next, size: size, wrote: true, prev: raw}
	if err := h.complete(ctx, &res); err != nil {
		return stepResult{}, err
	}
	return res, nil
}
