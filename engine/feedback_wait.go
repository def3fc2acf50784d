package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// A Task whose Feedback block waits (Wait true) parks once it completed
// — its output committed through the commit point, its FeedbackRequested
// event recorded — as an Approval parks: the execution is WAITING for
// "Feedback" until feedback for that visit is given (GiveFeedback), or
// the block's Timeout passes, then goes on to the Task's Next (or ends)
// with the Task's output as it was.

// WaitingForFeedback is the WaitingFor of an execution stopped at a Task
// that waits for feedback.
const WaitingForFeedback = "Feedback"

// Own history events of a Task that waits for feedback.
const (
	// EventFeedbackReceived records that feedback ended the wait: its
	// detail names the visit ("step"), the feedback's id and who gave it
	// (the value stays out of the history, as all feedback does).
	EventFeedbackReceived = "FeedbackReceived"
	// EventFeedbackTimedOut records that the block's Timeout passed
	// without feedback: the execution went on without it.
	EventFeedbackTimedOut = "FeedbackTimedOut"
)

// ErrNotWaitingForFeedback is returned (wrapped) by GiveFeedback when the
// execution is not waiting for feedback on that visit: feedback for it is
// then stored as for any completed state, and wakes nothing.
var ErrNotWaitingForFeedback = errors.New("not waiting for feedback")

// PendingFeedback is the durable record of a Task waiting for feedback on
// its output, kept with the state's progress so that the process may exit
// while it waits.
type PendingFeedback struct {
	// ID names the visit, as Feedback.Step does ("Answer#1",
	// "Batch#1.0/3/Answer#1" inside a Map item).
	ID string
	// State is the state's qualified name ("Batch/3/Answer").
	State string
	// Output is the Task's output and Next the state it goes on to (""
	// when it ends its machine), as its completion committed them.
	Output any
	Next   string
	// RequestedAt is when the wait began; Deadline when it times out
	// (zero: never).
	RequestedAt time.Time
	Deadline    time.Time
	// Given is the feedback that ended the wait (its Output left nil: it
	// is Output above); nil while waiting.
	Given *Feedback
}

// feedbackGate runs a Task's attempts (attempt: its Retry and Catch
// included) and, when its Feedback block waits, parks the execution once
// the Task completed. Entered again with the wait in its progress (the
// execution was resumed), it goes on with the Task's committed output when
// feedback was given or the Timeout passed, and parks again otherwise.
func (h *stateRun) feedbackGate(ctx context.Context, s *states.Task, attempt func(context.Context) (stepResult, error)) (stepResult, error) {
	fb := s.Feedback
	if fb == nil || !fb.Collect || !fb.Wait {
		return attempt(ctx)
	}
	if p := h.progress; p != nil && p.Feedback != nil {
		return h.feedbackWaited(ctx, p.Feedback)
	}
	if !h.r.x.durable {
		return stepResult{}, h.runtimeError("A Task whose Feedback block waits (Wait true) needs an executor with a store (engine.Config.Store).")
	}
	res, err := attempt(ctx)
	if err != nil {
		return res, err
	}
	pf := h.waiting
	if pf == nil {
		// The completion ended the machine (nothing was committed of it).
		pf = h.feedbackWait(&res)
	}
	return stepResult{}, h.park(ctx, WaitingForFeedback, pf.Deadline, &StepProgress{Visit: h.visit, Feedback: pf})
}

// feedbackWait returns the wait a Task's completion res begins when its
// Feedback block waits, made once per visit (h.waiting), nil for any other
// state or when the visit already waited.
func (h *stateRun) feedbackWait(res *stepResult) *PendingFeedback {
	s, ok := h.st.(*states.Task)
	if !ok || s.Feedback == nil || !s.Feedback.Collect || !s.Feedback.Wait || !h.r.x.durable || h.progress != nil && h.progress.Feedback != nil {
		return nil
	}
	if h.waiting == nil {
		now := time.Now()
		h.waiting = &PendingFeedback{ID: h.step(), State: h.qualified(), Output: res.output, Next: res.next, RequestedAt: now}
		if s.Feedback.Timeout > 0 {
			h.waiting.Deadline = now.Add(s.Feedback.Timeout)
		}
	}
	return h.waiting
}

// feedbackWaited continues a Task that waits for feedback, entered again.
func (h *stateRun) feedbackWaited(ctx context.Context, pf *PendingFeedback) (stepResult, error) {
	switch {
	case pf.Given != nil:
		// GiveFeedback committed the feedback with the wake-up; storing
		// it again is a no-op, and stores it when the process stopped
		// between the two.
		if fs, ok := h.r.x.store.(FeedbackStore); ok {
			f := *pf.Given
			// The feedback store is the store: the output goes as the
			// history has it.
			f.Output = h.r.secrets.stored(pf.Output)
			f.Value, f.Comment = h.r.secrets.stored(f.Value), h.r.secrets.text(f.Comment)
			if err := fs.AddFeedback(ctx, &f); err != nil && !errors.Is(err, ErrExists) {
				return stepResult{}, fmt.Errorf("state %s: storing the feedback %s that ended its wait: %w", pf.State, f.ID, err)
			}
		}
	case !pf.Deadline.IsZero() && !time.Now().Before(pf.Deadline):
		h.r.ownEvent(Event{Type: EventFeedbackTimedOut, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
			Detail: map[string]any{"step": pf.ID, "deadline": formatTime(pf.Deadline)}})
	default:
		return stepResult{}, h.park(ctx, WaitingForFeedback, pf.Deadline, &StepProgress{Visit: h.visit, Feedback: pf})
	}
	size, err := h.settle(pf.Output, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{output: pf.Output, proposed: pf.Output, next: pf.Next, size: size}, nil
}

// GiveFeedback ends the wait of a Task of execution id waiting for
// feedback on the visit f.Step: it commits f with the wake-up (the
// execution RUNNING, a FeedbackReceived event) and continues the
// execution in this process, as Decide does (opts.RecordOnly: it returns
// RUNNING and the caller continues it). The run stores f in the
// FeedbackStore when the Task goes on (a no-op when the caller stored it
// already). An execution not waiting for feedback on that visit is
// ErrNotWaitingForFeedback, and nothing changes.
func (x *Executor) GiveFeedback(ctx context.Context, id string, f *Feedback, opts ResumeOptions) (_ *Result, err error) {
	ctx, release, err := x.hold(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer release()
	defer func() { err = stopped(ctx, id, err) }()
	e, m, err := x.load(ctx, id)
	if err != nil {
		return nil, err
	}
	key, found := "", false
	for _, k := range waitingFeedbackKeys(e) {
		if e.Progress.Scopes[k].Step.Feedback.ID == f.Step {
			key, found = k, true
		}
	}
	if !found {
		return nil, fmt.Errorf("execution %s is %s, not waiting for feedback on %s: %w", id, e.Status, f.Step, ErrNotWaitingForFeedback)
	}
	reg, err := x.agentsOf(e, opts)
	if err != nil {
		return nil, err
	}
	given := *f
	given.Output = nil
	scope := *e.Progress.Scopes[key]
	step := *scope.Step
	pf := *step.Feedback
	pf.Given = &given
	step.Feedback = &pf
	scope.Step = &step
	e.Progress.Scopes[key] = &scope

	r := x.resumed(m, e, reg)
	r.ownEvent(Event{Type: EventFeedbackReceived, State: pf.State, Document: scope.Doc, Detail: map[string]any{"step": pf.ID, "feedback": f.ID, "by": f.By}})
	if err := r.commit(ctx, nil, &Commit{Status: StatusRunning, Scopes: map[string]*Scope{key: &scope}}); err != nil {
		return nil, err
	}
	if opts.RecordOnly {
		return &Result{ID: id, Status: StatusRunning}, nil
	}
	return r.execute(ctx, e.Progress.Scopes[""])
}

// WaitingFeedbackOf returns the visits a loaded execution waits for
// feedback on, by scope.
func WaitingFeedbackOf(e *Execution) []PendingFeedback {
	var out []PendingFeedback
	for _, k := range waitingFeedbackKeys(e) {
		out = append(out, *e.Progress.Scopes[k].Step.Feedback)
	}
	return out
}

// waitingFeedbackKeys lists the scopes of e waiting for feedback, sorted.
func waitingFeedbackKeys(e *Execution) []string {
	return waitingKeys(e, func(st *StepProgress) bool { return st.Feedback != nil && st.Feedback.Given == nil })
}

// Value returns the wait as a JSON value, the form stores keep
// (PendingFeedbackFromValue reads it back).
func (pf *PendingFeedback) Value() map[string]any {
	v := map[string]any{"id": pf.ID, "state": pf.State, "output": pf.Output, "next": pf.Next,
		"requestedAt": pf.RequestedAt.UTC().Format(time.RFC3339Nano)}
	if !pf.Deadline.IsZero() {
		v["deadline"] = pf.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if f := pf.Given; f != nil {
		g := map[string]any{"id": f.ID, "execution": f.Execution, "workflow": f.Workflow, "state": f.State, "step": f.Step,
			"by": f.By, "role": f.Role, "type": f.Type, "value": f.Value, "createdAt": f.CreatedAt.UTC().Format(time.RFC3339Nano)}
		if f.Comment != "" {
			g["comment"] = f.Comment
		}
		v["given"] = g
	}
	return v
}

// PendingFeedbackFromValue reads what Value wrote.
func PendingFeedbackFromValue(v any) (*PendingFeedback, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("feedback wait is %s, not an object", jsonvalue.TypeName(v))
	}
	var bad []string
	str := func(o map[string]any, k string) string {
		s, isStr := o[k].(string)
		if !isStr && o[k] != nil {
			bad = append(bad, k)
		}
		return s
	}
	when := func(o map[string]any, k string) time.Time {
		s := str(o, k)
		if s == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			bad = append(bad, k)
		}
		return t
	}
	pf := &PendingFeedback{ID: str(obj, "id"), State: str(obj, "state"), Output: obj["output"], Next: str(obj, "next"),
		RequestedAt: when(obj, "requestedAt"), Deadline: when(obj, "deadline")}
	if g, has := obj["given"]; has {
		gv, isObj := g.(map[string]any)
		if !isObj {
			bad = append(bad, "given")
		} else {
			pf.Given = &Feedback{ID: str(gv, "id"), Execution: str(gv, "execution"), Workflow: str(gv, "workflow"), State: str(gv, "state"),
				Step: str(gv, "step"), By: str(gv, "by"), Role: str(gv, "role"), Type: str(gv, "type"), Value: gv["value"],
				Comment: str(gv, "comment"), CreatedAt: when(gv, "createdAt")}
			if pf.Given.ID == "" {
				bad = append(bad, "given.id")
			}
		}
	}
	if pf.ID == "" {
		bad = append(bad, "id")
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("feedback wait %q: bad or missing fields: %v", pf.ID, bad)
	}
	return pf, nil
}
