package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/governance"
)

// EventGovernanceViolation is the own history event of every governance
// refusal: its Detail holds the error, the refused value (rule, path, old,
// new, reason) and what was done about it (action: "fail", "retry" or
// "skip").
const EventGovernanceViolation = "GovernanceViolation"

// The actions a GovernanceViolation event records.
const (
	actionFail  = "fail"
	actionRetry = "retry"
	actionSkip  = "skip"
)

// skipNode unwinds a state whose writes SKIP_NODE dropped; run.step turns
// it into the state's input passed on to its Next.
type skipNode struct{ v *governance.Violation }

func (s *skipNode) Error() string { return "skipped: " + s.v.Error() }

func isSkip(err error) bool {
	var skip *skipNode
	return errors.As(err, &skip)
}

// rules returns the workflow's compiled Governance block, nil without one.
func (r *run) rules() *governance.Rules {
	if e := r.m.Extensions; e != nil {
		return e.Governance
	}
	return nil
}

// governed reports whether anything governs this state's writes: the
// workflow's rules at the top level, the state's own WritePolicy anywhere.
func (h *stateRun) governed() bool {
	return h.st.Base().WritePolicy != nil || h.sc.top && h.r.rules() != nil
}

// invalidResult reports an agent result outside the JSON model (a NaN or
// infinite float, a Go type that has no JSON form) as Governance.InvalidJSON
// when the state is governed; nil otherwise (the caller reports it as
// States.TaskFailed).
func (h *stateRun) invalidResult(result any) error {
	if !h.governed() {
		return nil
	}
	v := governance.InvalidJSON(result)
	if v == nil {
		return nil
	}
	return h.violated(v)
}

// violated records a refusal and returns what the state does about it: a
// *skipNode under SKIP_NODE, else the governance error (which RETRY_ONCE
// may answer by running the state once more, see attempt).
func (h *stateRun) violated(v *governance.Violation) error {
	mode := h.r.rules().OnViolation()
	action := actionFail
	switch {
	case mode == governance.SkipNode:
		action = actionSkip
	case mode == governance.RetryOnce && !h.retriedOnce:
		action = actionRetry
	}
	detail := violationDetail(v)
	h.violation = detail
	event := map[string]any{"error": string(v.Name), "onViolation": mode.String(), "action": action}
	for k, val := range detail {
		event[k] = val
	}
	h.r.ownEvent(Event{Type: EventGovernanceViolation, State: h.name(), Scope: h.sc.prefix, Error: string(v.Name), Cause: v.Cause,
		Document: h.raw, Detail: event})
	if action == actionSkip {
		return &skipNode{v: v}
	}
	h.denied = &asl.Error{Name: v.Name, Cause: v.Cause, Err: v}
	return h.denied
}

// violationDetail is a violation's detail as JSON, with a value outside the
// JSON model (what Governance.InvalidJSON refuses) described in words.
func violationDetail(v *governance.Violation) map[string]any {
	d := v.Detail.JSON()
	for _, k := range []string{"old", "new"} {
		if d[k] != nil && governance.InvalidJSON(d[k]) != nil {
			d[k] = fmt.Sprintf("%v (%T)", d[k], d[k])
		}
	}
	return d
}

// attempt runs one attempt of a state to its commit point (completed):
// under RETRY_ONCE, an attempt that governance refused runs once more (as a
// new attempt, so that the agent gets a new idempotency key and the refusal
// in Request.Violation); a refusal that stands is then an ordinary error for
// Retry and Catch.
func (h *stateRun) attempt(ctx context.Context, run func(context.Context) (stepResult, error)) (stepResult, error) {
	governed := h.governed()
	res, err := h.completed(ctx, run)
	if !governed {
		return res, err
	}
	var ae *asl.Error
	if err == nil || h.retriedOnce || h.denied == nil || !errors.As(err, &ae) || ae != h.denied ||
		h.r.rules().OnViolation() != governance.RetryOnce {
		return res, err
	}
	h.retriedOnce = true
	h.env.retry++
	h.env.ctxObject = nil
	return h.completed(ctx, run)
}
