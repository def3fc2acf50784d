package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// EventExecutionRedriven is the own history event of a redrive: its detail
// says from which status, at which state, and the patch applied.
const EventExecutionRedriven = "ExecutionRedriven"

// ErrNotRedrivable is returned (wrapped, with the reason) by Redrive for an
// execution that cannot be redriven: one that has not failed or timed out,
// or whose failed position was not kept.
var ErrNotRedrivable = errors.New("execution cannot be redriven")

// RedriveOptions are the settings of Redrive.
type RedriveOptions struct {
	// Patch, when not empty, is applied to the failed state's input before
	// it runs again; the workflow's guard and write policy check the change.
	Patch Patch
	// Agents, when set, are the agents to run with; otherwise as Resume.
	Agents *agents.Registry
	// RecordOnly makes Redrive record the redrive and return with the
	// execution RUNNING at the failed state, without running it: the caller
	// continues it (Resume), e.g. in the background.
	RecordOnly bool
}

// Redrive restarts a FAILED or TIMED_OUT execution from the top-level state
// that failed (as Step Functions' RedriveExecution), in place: its history
// is kept and the redriven run's events follow, agent invocation numbers
// continue, and its TimeoutSeconds run from the redrive. A failure inside a
// Map or Parallel re-runs that Map or Parallel state from its start. A
// Distributed Map that failed (at the top level) redrives its map run, as
// Step Functions does: the children that succeeded are kept, with their
// outputs, and only those that failed, timed out, were aborted or never
// started run again (each failed child redriven from the state it failed
// in).
//
// opts.Patch, an RFC 6902 JSON Patch, is applied to the failed state's
// input first; the change from the original input to the patched one is
// checked like a state's write, against the workflow's guard (strict JSON,
// schema, transition rules) and write policy. A patch that does not apply
// is a *PatchError and one governance refuses a *GovernanceError: nothing
// changes. An execution in another status is ErrNotRedrivable (or
// ErrNotFound).
func (x *Executor) Redrive(ctx context.Context, id string, opts RedriveOptions) (*Result, error) {
	return x.redrive(ctx, id, opts, false)
}

// redrive is Redrive; child is set for a Distributed Map's child execution
// redriven with its map run, which may also have been ABORTED, and which
// runs again from its first state on its input when its failed position
// was not kept or it is an EXPRESS child (its history dropped).
func (x *Executor) redrive(ctx context.Context, id string, opts RedriveOptions, child bool) (*Result, error) {
	ctx, release, err := x.hold(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer release()
	e, m, err := x.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Status != StatusFailed && e.Status != StatusTimedOut && !(child && e.Status == StatusAborted) {
		why := "it has not ended"
		if e.Status.Ended() {
			why = "only FAILED and TIMED_OUT executions are redriven"
		}
		return nil, fmt.Errorf("execution %s is %s: %w: %s", id, e.Status, ErrNotRedrivable, why)
	}
	top := e.Progress.Scopes[""]
	if child && (top == nil || !top.Done || top.Next == "" || e.HistoryDropped) {
		// A child aborted before it recorded where it failed, or an
		// EXPRESS child (its history dropped, as AWS keeps none), runs
		// again from its start: AWS restarts failed EXPRESS children of a
		// redriven map run rather than redriving them.
		top = &Scope{Done: true, Next: m.StartAt, Doc: e.Input}
	}
	if top == nil || !top.Done || top.Next == "" {
		return nil, fmt.Errorf("execution %s: %w: the state it failed in was not recorded (it ended before redrive was supported)", id, ErrNotRedrivable)
	}
	doc := top.Doc
	if len(opts.Patch) > 0 {
		if doc, err = opts.Patch.Apply(top.Doc); err != nil {
			return nil, fmt.Errorf("execution %s: %w", id, err)
		}
		if limit := x.limitOf(e.MaxPayload); limit >= 0 && jsonvalue.SizeExceeds(doc, limit) {
			return nil, fmt.Errorf("execution %s: the patched input of state %q: %w: %w", id, top.Next, ErrInvalidInput, &PayloadError{State: top.Next, Size: jsonvalue.Size(doc), Limit: limit})
		}
		if ext := m.Extensions; ext != nil {
			if v := ext.Governance.Check(top.Doc, doc, top.Next); v != nil {
				return nil, fmt.Errorf("execution %s: the patched input of state %q does not pass the workflow's governance: %w", id, top.Next, &GovernanceError{Violation: v})
			}
		}
	}
	reg, err := x.agentsOf(e, ResumeOptions{Agents: opts.Agents})
	if err != nil {
		return nil, err
	}
	r := x.resumed(m, e, reg)
	now := time.Now().UTC()
	// The records of the execution's map runs stay, the one of a
	// Distributed Map that failed marked to be redriven (distmap.go).
	r.loaded = redriveMapRuns(m, e.Progress.Scopes, top, now)
	r.exec.RedrivenAt = now
	pos := &Scope{Next: top.Next, Doc: doc, Vars: top.Vars, Visits: maps.Clone(top.Visits)}
	detail := map[string]any{"from": string(e.Status), "state": top.Next, "error": e.Error}
	if len(opts.Patch) > 0 {
		detail["patch"] = opts.Patch.Value()
	}
	r.ownEvent(Event{Type: EventExecutionRedriven, State: top.Next, Input: doc, Document: doc, Detail: detail})
	c := &Commit{Status: StatusRunning, Scopes: map[string]*Scope{"": pos}, DropScopes: []string{""}, Redriven: now}
	maps.Copy(c.Scopes, r.loaded)
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	if opts.RecordOnly {
		return &Result{ID: id, Status: StatusRunning, State: top.Next}, nil
	}
	return r.execute(ctx, pos)
}

// keepFailed records the top-level machine's position at state next on
// doc (its input) when it fails there: Redrive runs it again from it. The
// visit is kept counted, so that the state runs again as a new visit (a new
// idempotency key).
func (s *scope) keepFailed(r *run, next string, doc any) {
	if s.top {
		r.failedAt = &Scope{Next: next, Doc: doc, Vars: s.vars, Visits: maps.Clone(s.visits)}
	}
}

// keepFailedPosition adds the failed position to the final record of a
// top-level machine that did not succeed.
func keepFailedPosition(end, at *Scope) {
	if end == nil || at == nil {
		return
	}
	end.Next, end.Doc, end.Vars, end.Visits = at.Next, at.Doc, at.Vars, at.Visits
}

// timeoutFrom is when an execution's TimeoutSeconds start: its start, or
// its last redrive.
func timeoutFrom(e *Execution) time.Time {
	if e.RedrivenAt.After(e.StartedAt) {
		return e.RedrivenAt
	}
	return e.StartedAt
}
