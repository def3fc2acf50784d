package engine

import (
	"context"
	"errors"
	"strconv"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/contextwin"
	"github.com/aslrun/aslrun/guardrails"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// History events of the Task agent blocks (own events).
const (
	// EventGuardrail records what a Guardrails set found (never the raw
	// text: excerpts are masked) and what came of it.
	EventGuardrail = "GuardrailChecked"
	// EventReasoning records an agent's reasoning trace.
	EventReasoning = "ReasoningRecorded"
)

// guardInput applies Guardrails.Input to the effective input: it returns
// the input as the redact and mask rules left it, or the violation.
func (h *stateRun) guardInput(ctx context.Context, s *states.Task, input any) (any, error) {
	if s.Guardrails == nil || s.Guardrails.Input == nil {
		return input, nil
	}
	res, err := guardrails.Check(ctx, s.Guardrails.Input, guardrails.Input, input, h.validator("guardrails-input"))
	if err != nil {
		return nil, err
	}
	h.guardEvent(guardrails.Input, res, "")
	if res.Violation != nil {
		return nil, res.Violation
	}
	return res.Content, nil
}

// guardOutput applies Guardrails.Output to the agent's result. When a
// retry rule fails, the agent is asked again (a call of its own, told what
// was refused in Request.Violation) up to MaxRetries times; call makes
// that call.
func (h *stateRun) guardOutput(ctx context.Context, s *states.Task, result any, size int, call func(ctx context.Context, sub string) (any, int, error)) (any, int, error) {
	if s.Guardrails == nil || s.Guardrails.Output == nil {
		return result, size, nil
	}
	set := s.Guardrails.Output
	for regen := int64(0); ; regen++ {
		res, err := guardrails.Check(ctx, set, guardrails.Output, result, h.validator("guardrails-output-"+strconv.FormatInt(regen, 10)))
		if err != nil {
			return nil, 0, err
		}
		retry := res.Retry && regen < set.MaxRetries
		outcome := ""
		if retry {
			outcome = "regenerate"
		}
		h.guardEvent(guardrails.Output, res, outcome)
		if retry {
			prev := h.violation
			h.violation = guardViolation(res)
			result, size, err = call(ctx, "regenerate-"+strconv.FormatInt(regen+1, 10))
			h.violation = prev
			if err != nil {
				return nil, 0, err
			}
			continue
		}
		if res.Violation != nil {
			return nil, 0, res.Violation
		}
		if len(res.Findings) > 0 {
			// A redact or mask rule may have changed it.
			size = unknownSize
		}
		return res.Content, size, nil
	}
}

// guardViolation is what an agent asked to regenerate its output is told.
func guardViolation(res *guardrails.Result) map[string]any {
	findings := make([]any, 0, len(res.Findings))
	for _, f := range res.Findings {
		findings = append(findings, f.JSON())
	}
	d := map[string]any{"guardrail": "Output", "findings": findings}
	if res.Violation != nil {
		d["error"], d["reason"] = string(res.Violation.Name), res.Violation.Cause
	}
	return d
}

// guardEvent records a guardrail check that found something.
func (h *stateRun) guardEvent(stage guardrails.Stage, res *guardrails.Result, outcome string) {
	if len(res.Findings) == 0 {
		return
	}
	findings := make([]any, len(res.Findings))
	for i, f := range res.Findings {
		findings[i] = f.JSON()
	}
	d := map[string]any{"stage": stage.String(), "findings": findings}
	ev := Event{Type: EventGuardrail, State: h.name(), Scope: h.sc.prefix, Document: h.raw, Detail: d}
	switch {
	case outcome != "":
		d["outcome"] = outcome
	case res.Violation != nil:
		d["outcome"] = "violation"
		ev.Error, ev.Cause = string(res.Violation.Name), res.Violation.Cause
	default:
		d["outcome"] = "passed"
	}
	h.r.ownEvent(ev)
}

// validator calls a validating agent (a custom rule's or a set's
// Validator) on the content; sub names the calls of one check.
func (h *stateRun) validator(sub string) guardrails.Validator {
	return func(ctx context.Context, agent string, content any) (guardrails.Verdict, error) {
		out, _, err := h.callAgent(ctx, &states.Task{Agent: agent}, sub+"/"+agent, content, nil, 0, 0)
		if err != nil {
			return guardrails.Verdict{}, err
		}
		return guardrails.ParseVerdict(out)
	}
}

// reasoning splits an agent's output of the shape {result, reasoning}
// under a Reasoning block: it returns the result and the reasoning trace
// (nil when there is none and none is Required), or Agent.InvalidOutput.
//
// Every Format but free_form wants the trace as an object with a "steps"
// array, each step a string or an object with a string "thought";
// reflection also wants a "reflection" field. free_form takes any trace
// that is not null; its steps are counted when it has a "steps" array.
// MinSteps and MaxSteps bound the number of steps.
func reasoning(cfg *states.ReasoningConfig, out any) (result, trace any, err error) {
	if cfg == nil {
		return out, nil, nil
	}
	invalid := func(format string, args ...any) error {
		return asl.Errorf(asl.ErrAgentInvalidOutput, "Reasoning: "+format, args...)
	}
	obj, isObj := out.(map[string]any)
	tr, hasTrace := obj["reasoning"]
	res, hasResult := obj["result"]
	switch {
	case isObj && hasTrace && hasResult:
		if len(obj) > 2 {
			return nil, nil, invalid("the output has fields besides result and reasoning")
		}
	case isObj && hasTrace:
		return nil, nil, invalid("the output has reasoning but no result")
	case cfg.Required:
		return nil, nil, invalid("the output is not {\"result\": …, \"reasoning\": …}, and reasoning is Required")
	default:
		return out, nil, nil
	}
	if tr == nil {
		return nil, nil, invalid("reasoning is null")
	}
	format := cfg.Format
	if format == "" {
		format = "free_form"
	}
	steps, hasSteps := stepsOf(tr)
	if format != "free_form" {
		if !hasSteps {
			return nil, nil, invalid("a %s trace needs a \"steps\" array", format)
		}
		for i, st := range steps {
			if _, ok := st.(string); ok {
				continue
			}
			if o, ok := st.(map[string]any); ok {
				if _, ok := o["thought"].(string); ok {
					continue
				}
			}
			return nil, nil, invalid("step %d is neither a string nor an object with a string \"thought\"", i)
		}
		if format == "reflection" {
			if o := tr.(map[string]any); o["reflection"] == nil {
				return nil, nil, invalid("a reflection trace needs a \"reflection\" field")
			}
		}
	}
	n := int64(len(steps))
	switch {
	case cfg.MinSteps > 0 && n < cfg.MinSteps:
		return nil, nil, invalid("%d reasoning steps, fewer than MinSteps %d", n, cfg.MinSteps)
	case cfg.MaxSteps > 0 && n > cfg.MaxSteps:
		return nil, nil, invalid("%d reasoning steps, more than MaxSteps %d", n, cfg.MaxSteps)
	}
	return res, tr, nil
}

// stepsOf returns a trace's "steps" array.
func stepsOf(trace any) ([]any, bool) {
	o, ok := trace.(map[string]any)
	if !ok {
		return nil, false
	}
	steps, ok := o["steps"].([]any)
	return steps, ok
}

// recordReasoning keeps a trace for the state's completion: in the history
// now, and at Reasoning.Store in the document (see finish).
func (h *stateRun) recordReasoning(cfg *states.ReasoningConfig, trace any) {
	h.trace = nil
	if trace == nil {
		return
	}
	steps, _ := stepsOf(trace)
	h.r.ownEvent(Event{Type: EventReasoning, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
		Detail: map[string]any{"format": cfg.Format, "steps": jsonvalue.IntNumber(int64(len(steps))), "reasoning": trace}})
	if cfg.Store != nil {
		h.trace = &storedTrace{path: cfg.Store, value: trace}
	}
}

// storedTrace is a reasoning trace to write at Reasoning.Store.
type storedTrace struct {
	path  *jsonpath.Path
	value any
}

// EventContext records how a Task's context window was built (its
// estimate, what was dropped and summarized; not its content).
const EventContext = "ContextBuilt"

// contextWindow cuts the effective input down to the Task's Context block
// (package contextwin): Exclude, Summarize through the named agent (its
// calls are the state's: their usage counts in the execution's totals and
// the workflow Budget, and each is held to the state's Budget as the
// state's own agent call is), the picking of Strategy
// "semantic" with the executor's embedder, the strategy, or
// Agent.ContextOverflow. The ContextBuilt event records the window (and,
// for Strategy "semantic", the candidates picked and their scores).
func (h *stateRun) contextWindow(ctx context.Context, s *states.Task, input any) (any, error) {
	// The window is cut from arrays as []any: packed ones are decoded.
	input, err := jsonvalue.Expand(input)
	if err != nil {
		return nil, err
	}
	calls := 0
	summarize := func(ctx context.Context, agent string, content any, target int64) (any, error) {
		calls++
		in := map[string]any{"content": content, "targetTokens": jsonvalue.IntNumber(target)}
		out, _, err := h.callAgent(ctx, &states.Task{Agent: agent, Budget: s.Budget}, "context-summary-"+strconv.Itoa(calls)+"/"+agent, in, nil, 0, 0)
		return out, err
	}
	fns := contextwin.Funcs{Summarize: summarize}
	if s.Context != nil && s.Context.Strategy == "semantic" {
		query, err := h.contextQuery(s.Context, input)
		if err != nil {
			return nil, err
		}
		fns.Query = query
		fns.Embed = func(ctx context.Context, texts []string) ([][]float32, error) {
			return h.embed(ctx, "Context", texts)
		}
	}
	w, err := contextwin.BuildWith(ctx, s.Context, input, fns)
	if err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, h.runtimeError("Context: " + err.Error())
	}
	h.r.ownEvent(Event{Type: EventContext, State: h.name(), Scope: h.sc.prefix, Document: h.raw, Detail: w.JSON()})
	return w.Content, nil
}

// contextQuery computes the query of a Context of Strategy "semantic" on
// the effective input: Query with its placeholders filled in, or the
// value of Query.$, which must be a string. A path that fails, or a value
// that is not a string, is States.Runtime.
func (h *stateRun) contextQuery(c *states.ContextConfig, input any) (string, error) {
	if c.QueryExpr == nil {
		q, err := c.Query.Render(input, h.env)
		if err != nil {
			return "", h.runtimeError("Context.Query: " + err.Error())
		}
		return q, nil
	}
	v, err := c.QueryExpr.Eval(input, h.env)
	if err != nil {
		return "", h.runtimeError("Context.Query.$: " + err.Error())
	}
	q, ok := v.(string)
	if !ok {
		return "", h.runtimeError("Context.Query.$ gives " + jsonvalue.TypeName(v) + ", not a string: the query of Strategy \"semantic\" is text")
	}
	return q, nil
}

// checkToolResult passes a tool's result through the Task's output
// guardrails (agents.Request.CheckToolResult): what the rules leave of
// it, or the violation; findings are recorded as the output's are.
func (h *stateRun) checkToolResult(ctx context.Context, tool string, result any) (any, error) {
	s, ok := h.st.(*states.Task)
	if !ok || s.Guardrails == nil || s.Guardrails.Output == nil {
		return result, nil
	}
	v, err := jsonvalue.Normalize(result)
	if err != nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "the result of tool %q is not JSON: %v", tool, err)
	}
	res, err := guardrails.Check(ctx, s.Guardrails.Output, guardrails.Output, v, h.validator("guardrails-tool-"+tool))
	if err != nil {
		return nil, err
	}
	h.guardEvent(guardrails.Output, res, "tool "+tool)
	if res.Violation != nil {
		return nil, res.Violation
	}
	return res.Content, nil
}
