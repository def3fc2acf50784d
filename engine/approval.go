package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Own history events of Approval states.
const (
	EventApprovalRequested = "ApprovalRequested"
	EventApprovalEscalated = "ApprovalEscalated"
	EventApprovalDecided   = "ApprovalDecided"
	EventApprovalTimedOut  = "ApprovalTimedOut"
)

// WaitingForApproval is the WaitingFor of an execution stopped at an
// Approval.
const WaitingForApproval = "Approval"

// DecisionTimeout is the decision an Approval records when its Timeout
// passes without one.
const DecisionTimeout = "timeout"

// ErrDecisionRefused is returned (wrapped) by Decide when the decision
// cannot be applied: the execution is not waiting at that approval, the
// option is not offered, the digest no longer matches, or an edit is
// outside the Editable fields. The execution stays as it was.
var ErrDecisionRefused = errors.New("decision refused")

// PendingApproval is the durable record of an Approval state waiting for
// a decision: what the approver is shown and what they may answer. It is
// kept with the state's progress, so the process may exit while it waits.
type PendingApproval struct {
	// ID names the approval in its execution: the state's scope key, name
	// and visit ("Review#1", "Batch#1.0/3/Check#1" inside a Map item).
	ID string
	// State is the state's qualified name ("Batch/3/Check").
	State string
	// Prompt is the rendered prompt: a string or a structured object.
	Prompt any
	// Options are the decisions offered.
	Options []string
	// Editable holds the current values of the Editable fields, as a
	// partial document; nil when nothing is editable.
	Editable any
	// Digest is the canonical hash of the state's input and the prompt: a
	// decision that names a digest is refused when it no longer matches.
	Digest string
	// RequestedAt is when the state was entered; Deadline when it times
	// out (zero: never).
	RequestedAt time.Time
	Deadline    time.Time
	// Escalations counts the escalations made, and NextEscalation is when
	// the next one is due (zero: none left).
	Escalations    int
	NextEscalation time.Time
	// Decision is the decision object once one is taken (nil while
	// pending): {"approval", "approver", "timestamp", "comment", "edited"}.
	Decision map[string]any
}

// Decision is what an approver answers to a pending approval.
type Decision struct {
	// Approval is the option chosen; it must be one the approval offers.
	Approval string
	// Approver and Comment are recorded with it.
	Approver string
	Comment  string
	// Edit is the edited content when the state is Editable: an object
	// shaped like the document, holding only values inside the Editable
	// fields (e.g. {"draft": {"text": "…"}} for the field $.draft). It is
	// written to Editable.ResultPath and to the decision's "edited".
	Edit any
	// ApprovalID selects the pending approval (PendingApproval.ID), or a
	// state name; "" is fine when only one approval is pending.
	ApprovalID string
	// Digest, when set, must equal the pending approval's Digest: the
	// approver decided on what they saw.
	Digest string
}

// EscalationNotice is handed to Config.OnEscalation when a pending
// approval escalates.
type EscalationNotice struct {
	Execution string
	Approval  PendingApproval
	// Notify and Message are the Escalation block's; Count numbers the
	// escalation (1 for the first).
	Notify  []string
	Message string
	Count   int
}

// approvalState runs an Approval: on first entry it renders the prompt,
// records a pending approval and parks; entered again (the execution was
// resumed) it escalates or times out when due, or applies the decision
// Decide recorded, then routes like a Choice.
func (h *stateRun) approvalState(ctx context.Context, s *states.Approval, raw any) (stepResult, error) {
	r := h.r
	if !r.x.durable {
		return stepResult{}, h.runtimeError("An Approval state waits for a decision, which needs an executor with a store (engine.Config.Store).")
	}
	var pa *PendingApproval
	if p := h.progress; p != nil && p.Approval != nil {
		pa = p.Approval
	} else {
		var err error
		if pa, err = h.requestApproval(s, raw); err != nil {
			return stepResult{}, err
		}
	}
	if pa.Decision == nil {
		now := time.Now()
		if !pa.Deadline.IsZero() && !now.Before(pa.Deadline) {
			pa.Decision = map[string]any{"approval": DecisionTimeout, "timestamp": formatTime(now)}
			r.ownEvent(Event{Type: EventApprovalTimedOut, State: h.name(), Scope: h.sc.prefix, Document: raw, Detail: map[string]any{"approval": pa.ID}})
		} else {
			h.escalate(ctx, s, pa, now)
			wake := pa.Deadline
			if n := pa.NextEscalation; !n.IsZero() && (wake.IsZero() || n.Before(wake)) {
				wake = n
			}
			return stepResult{}, h.park(ctx, WaitingForApproval, wake, &StepProgress{Visit: h.visit, Approval: pa})
		}
	}
	return h.decided(s, raw, pa)
}

// requestApproval builds the pending approval of a first entry and records
// it in the history.
func (h *stateRun) requestApproval(s *states.Approval, raw any) (*PendingApproval, error) {
	input, err := h.inputPath(raw)
	if err != nil {
		return nil, err
	}
	prompt, err := h.renderPrompt(&s.Prompt, input)
	if err != nil {
		return nil, err
	}
	options := s.Options
	if len(options) == 0 {
		options = []string{"approve", "reject"}
	}
	pa := &PendingApproval{
		ID: h.step(), State: h.qualified(), Prompt: prompt, Options: slices.Clone(options),
		RequestedAt: h.env.entered,
	}
	if s.Timeout > 0 {
		pa.Deadline = h.env.entered.Add(s.Timeout)
	}
	if e := s.Escalation; e != nil {
		pa.NextEscalation = h.env.entered.Add(e.After)
	}
	if s.Editable != nil {
		editable := map[string]any{}
		for _, f := range s.Editable.Fields {
			v, err := h.get(f, input)
			if err != nil {
				return nil, err
			}
			var doc any = editable
			if doc, err = f.Set(doc, v); err != nil {
				return nil, h.runtimeError(fmt.Sprintf("The Editable field %s cannot be shown: %v", f, err))
			}
			editable = doc.(map[string]any)
		}
		pa.Editable = editable
	}
	digest, err := jsonvalue.CanonicalHash(map[string]any{"input": raw, "prompt": prompt})
	if err != nil {
		return nil, h.runtimeError(fmt.Sprintf("The approval's input cannot be hashed: %v", err))
	}
	pa.Digest = digest
	h.r.ownEvent(Event{Type: EventApprovalRequested, State: h.name(), Scope: h.sc.prefix, Document: raw, Detail: pa.detail()})
	return pa, nil
}

// detail is the pending approval as a history event's detail.
func (pa *PendingApproval) detail() map[string]any {
	d := map[string]any{"approval": pa.ID, "prompt": pa.Prompt, "options": stringsJSON(pa.Options), "digest": pa.Digest}
	if !pa.Deadline.IsZero() {
		d["deadline"] = formatTime(pa.Deadline)
	}
	if pa.Editable != nil {
		d["editable"] = pa.Editable
	}
	return d
}

func stringsJSON(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// renderPrompt renders an Approval's prompt on the state's effective input:
// a string with {{$.path}} placeholders, a Prompt.$ expression, or a
// structured object whose strings may hold placeholders too.
func (h *stateRun) renderPrompt(p *states.Prompt, input any) (any, error) {
	switch {
	case p.Expr != nil:
		v, err := p.Expr.Eval(input, h.env)
		if err != nil {
			return nil, h.pathError(err)
		}
		return v, nil
	case p.Template != nil:
		v, err := p.Template.Eval(input, h.env)
		if err != nil {
			return nil, h.pathError(err)
		}
		return h.interpolate(v, input)
	}
	text, err := p.Text.Render(input, h.env)
	if err != nil {
		return nil, h.pathError(err)
	}
	return text, nil
}

// interpolate renders the {{$.path}} placeholders of every string in v.
func (h *stateRun) interpolate(v, input any) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "{{") {
			return x, nil
		}
		t, err := states.ParseText(x)
		if err != nil {
			return nil, h.runtimeError(fmt.Sprintf("The prompt %q: %v", x, err))
		}
		out, err := t.Render(input, h.env)
		if err != nil {
			return nil, h.pathError(err)
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := h.interpolate(e, input)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := h.interpolate(e, input)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// escalate records the escalations due at now and schedules the next.
func (h *stateRun) escalate(ctx context.Context, s *states.Approval, pa *PendingApproval, now time.Time) {
	e := s.Escalation
	for e != nil && !pa.NextEscalation.IsZero() && !now.Before(pa.NextEscalation) {
		pa.Escalations++
		h.r.ownEvent(Event{Type: EventApprovalEscalated, State: h.name(), Scope: h.sc.prefix, Document: h.raw, Detail: map[string]any{
			"approval": pa.ID, "count": jsonvalue.IntNumber(int64(pa.Escalations)), "notify": stringsJSON(e.Notify), "message": e.Message,
		}})
		h.r.x.notifyEscalation(ctx, EscalationNotice{Execution: h.r.exec.ID, Approval: *pa, Notify: e.Notify, Message: e.Message, Count: pa.Escalations})
		switch {
		case e.Repeat.Every <= 0, e.Repeat.MaxTimes > 0 && int64(pa.Escalations) > e.Repeat.MaxTimes:
			// MaxTimes counts the repeats after the first escalation.
			pa.NextEscalation = time.Time{}
		default:
			pa.NextEscalation = pa.NextEscalation.Add(e.Repeat.Every)
		}
		if !pa.Deadline.IsZero() && !pa.NextEscalation.Before(pa.Deadline) {
			pa.NextEscalation = time.Time{}
		}
	}
}

// notifyEscalation hands an escalation to Config.OnEscalation, or logs it.
func (x *Executor) notifyEscalation(ctx context.Context, n EscalationNotice) {
	if x.onEscalation == nil {
		x.log.Warn("approval escalated", "execution", n.Execution, "approval", n.Approval.ID, "count", n.Count,
			"notify", strings.Join(n.Notify, ", "), "message", n.Message)
		return
	}
	if err := x.onEscalation(ctx, n); err != nil {
		x.log.Error("approval escalation hook failed", "execution", n.Execution, "approval", n.Approval.ID, "error", err)
	}
}

// decided applies an Approval's decision: edits go to Editable.ResultPath,
// the decision to ResultPath (or its fields into the document's top
// level), and Choices route on the result; the commit point checks the
// write. A
// timeout without Default is States.Timeout.
func (h *stateRun) decided(s *states.Approval, raw any, pa *PendingApproval) (stepResult, error) {
	decision := pa.Decision
	timedOut := decision["approval"] == DecisionTimeout
	if timedOut && s.Default == "" {
		return stepResult{}, asl.Errorf(asl.ErrTimeout, "the approval %s got no decision within its Timeout (%s)", pa.ID, s.Timeout)
	}
	doc, err := decisionDocument(s, raw, decision)
	if err != nil {
		return stepResult{}, err
	}
	next, assign, matched := s.Next, s.Assign, false
	if timedOut {
		next = s.Default
	}
	for i := 0; !timedOut && i < len(s.Choices); i++ {
		rule := &s.Choices[i]
		ok, err := h.holds(&rule.Condition, doc)
		if err != nil {
			return stepResult{}, err
		}
		if ok {
			next, assign, matched = rule.Next, rule.Assign, true
			break
		}
	}
	if !timedOut && !matched && len(s.Choices) > 0 {
		switch {
		case s.Default != "":
			next = s.Default
		case s.Next == "" && !s.End:
			return stepResult{}, asl.Errorf(asl.ErrNoChoiceMatched, "no Choice of the approval %s matched the decision %q", pa.ID, decision["approval"])
		}
	}
	h.assign = nil
	if err := h.evalAssign(assign, decision); err != nil {
		return stepResult{}, err
	}
	out, err := h.outputPath(doc)
	if err != nil {
		return stepResult{}, err
	}
	size, err := h.settle(out, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	// The commit point checks the write (see run.commit).
	return stepResult{output: out, proposed: doc, next: next, size: size, wrote: true, prev: raw}, nil
}

// decisionDocument is the document an Approval's decision makes of its raw
// input: the edit at Editable.ResultPath, then the decision at ResultPath
// (or its fields merged into the top level).
func decisionDocument(s *states.Approval, raw any, decision map[string]any) (any, error) {
	doc := raw
	var err error
	if edit, ok := decision["edited"]; ok && s.Editable != nil {
		if doc, err = placeResult(states.ResultPath{Path: s.Editable.ResultPath}, doc, edit); err != nil {
			return nil, err
		}
	}
	if s.HasResultPath {
		return placeResult(s.ResultPath, doc, decision)
	}
	return mergeTop(doc, decision)
}

// mergeTop merges the decision's fields into the top level of doc, which
// must be an object.
func mergeTop(doc any, decision map[string]any) (any, error) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, asl.Errorf(asl.ErrReferencePathConflict, "an Approval without ResultPath merges its decision into the document, which must be an object, not %s", jsonvalue.TypeName(doc))
	}
	out := make(map[string]any, len(obj)+len(decision))
	for k, v := range obj {
		out[k] = v
	}
	for k, v := range decision {
		out[k] = v
	}
	return out, nil
}

// Value returns the pending approval as a JSON value, the form stores keep
// (PendingApprovalFromValue reads it back).
func (pa *PendingApproval) Value() map[string]any {
	v := map[string]any{
		"id": pa.ID, "state": pa.State, "prompt": pa.Prompt, "options": stringsJSON(pa.Options),
		"digest": pa.Digest, "requestedAt": pa.RequestedAt.UTC().Format(time.RFC3339Nano),
		"escalations": jsonvalue.IntNumber(int64(pa.Escalations)),
	}
	for k, t := range map[string]time.Time{"deadline": pa.Deadline, "nextEscalation": pa.NextEscalation} {
		if !t.IsZero() {
			v[k] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	if pa.Editable != nil {
		v["editable"] = pa.Editable
	}
	if pa.Decision != nil {
		v["decision"] = pa.Decision
	}
	return v
}

// PendingApprovalFromValue reads what Value wrote.
func PendingApprovalFromValue(v any) (*PendingApproval, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("pending approval is %s, not an object", jsonvalue.TypeName(v))
	}
	pa := &PendingApproval{Prompt: obj["prompt"], Editable: obj["editable"]}
	var bad []string
	str := func(k string) string {
		s, isStr := obj[k].(string)
		if !isStr && obj[k] != nil {
			bad = append(bad, k)
		}
		return s
	}
	when := func(k string) time.Time {
		s := str(k)
		if s == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			bad = append(bad, k)
		}
		return t
	}
	pa.ID, pa.State, pa.Digest = str("id"), str("state"), str("digest")
	pa.RequestedAt, pa.Deadline, pa.NextEscalation = when("requestedAt"), when("deadline"), when("nextEscalation")
	if n, isNum := obj["escalations"].(json.Number); isNum {
		i, isInt := jsonvalue.Int64(n)
		if !isInt {
			bad = append(bad, "escalations")
		}
		pa.Escalations = int(i)
	}
	opts, _ := obj["options"].([]any)
	for _, o := range opts {
		s, isStr := o.(string)
		if !isStr {
			bad = append(bad, "options")
			break
		}
		pa.Options = append(pa.Options, s)
	}
	if d, has := obj["decision"]; has {
		if pa.Decision, ok = d.(map[string]any); !ok {
			bad = append(bad, "decision")
		}
	}
	if pa.ID == "" {
		bad = append(bad, "id")
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("pending approval %q: bad or missing fields: %s", pa.ID, strings.Join(bad, ", "))
	}
	return pa, nil
}
