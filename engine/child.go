package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// A Workflow state runs another workflow of the registry as a child
// execution: stored as an execution of its own whose Parent is the
// state's execution and whose id names the state's visit and attempt
// (ChildWorkflowID), so that a parent resumed after a crash finds the
// child it started — running, waiting or ended — and never starts a
// second one.

// WorkflowSource resolves the workflows Workflow states run (the
// registry of a store, through the server or the CLI).
type WorkflowSource interface {
	// ResolveWorkflow returns the definition of workflow name at ref ("" or
	// "latest": the latest version; a version number; an alias; a semver
	// label or constraint) and the registry reference it resolved to
	// ("name@N"). An error names what is missing.
	ResolveWorkflow(ctx context.Context, name, ref string) (definition []byte, registry string, err error)
}

// WaitingForChild is what an execution waits for when the child execution
// of one of its Workflow states waits (a long Wait, an Approval).
const WaitingForChild = "Workflow"

// Own history events of a Workflow state.
const (
	// EventChildStarted records the child a Workflow state started: its
	// detail names the child execution and the registry version.
	EventChildStarted = "ChildExecutionStarted"
	// EventChildEnded records how it ended (its status, error and cause).
	EventChildEnded = "ChildExecutionEnded"
	// EventChildStopped records a child stopped because its parent rolled
	// back to a checkpoint taken before the child started.
	EventChildStopped = "ChildExecutionStopped"
)

// ErrParentRolledBack is the error a child ends ABORTED with when its
// parent rolled back past its start: a parent that enters the state again
// starts a new child ("<id>~2", "<id>~3", …) instead of reading this one.
const ErrParentRolledBack = "States.ParentRolledBack"

// Bounds of child executions: how deep children may nest (a child's child
// is depth 2), and how many one run of an execution may start.
const (
	MaxChildDepth = 8
	MaxChildren   = 1000
)

// defaultChildPoll bounds how long a parent waiting for a child sleeps
// before it looks at the child again (a child's end wakes it at once when
// both run in one process): Config.ChildPoll's default.
const defaultChildPoll = time.Minute

// ChildWorkflowID is the id of the child execution a Workflow state starts
// in execution parent, at its visit step ("Research#1", qualified inside
// Map items and Parallel branches) and attempt: "<parent>/<step>.<attempt>".
func ChildWorkflowID(parent, step string, attempt int) string {
	return parent + "/" + step + "." + itoa(attempt)
}

// IsWorkflowChild reports whether execution id, whose Parent is parent, is
// the child of a Workflow state of parent (not a Distributed Map's child,
// not a fork).
func IsWorkflowChild(id, parent string) bool {
	if parent == "" || !strings.HasPrefix(id, parent+"/") {
		return false
	}
	_, mapChild := MapRunOf(id, parent)
	return !mapChild
}

// workflowState runs a Workflow state: its child execution on the state's
// input (Input built from it), whose output goes to ResultPath.
func (h *stateRun) workflowState(ctx context.Context, s *states.Workflow, raw any) (stepResult, error) {
	var input any
	var err error
	if s.JSONata() {
		input = raw
		if s.Arguments != nil {
			if input, err = h.evalJSONata(ctx, s.Arguments, h.jsonataScope(raw), "Arguments"); err != nil {
				return stepResult{}, err
			}
		}
	} else if input, err = h.inputPath(raw); err != nil {
		return stepResult{}, err
	} else if s.Input != nil {
		if input, _, err = h.template(s.Input, input, h.inSize); err != nil {
			return stepResult{}, err
		}
	}
	id, err := h.childID(ctx, ChildWorkflowID(h.r.exec.ID, h.step(), h.env.retry))
	if err != nil {
		return stepResult{}, err
	}
	res, err := h.runChild(ctx, id, s.Name, s.Ref, input, s.Timeout)
	if err != nil {
		return stepResult{}, err
	}
	if res.Status != StatusSucceeded {
		return stepResult{}, childError(res, s.WorkflowID, s.Timeout)
	}
	size, err := h.fits(res.Output, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	if s.JSONata() {
		sc := h.jsonataScope(raw)
		sc.Result, sc.HasResult = res.Output, true
		return h.jsonataFinish(ctx, sc, res.Output, size)
	}
	return h.finish(raw, res.Output, size, s.ResultPath)
}

// childID is the id of the state's child: id, unless a rollback of the
// parent stopped the child of that id (ErrParentRolledBack), then the
// first of id~2, id~3, … that is not such a child.
func (h *stateRun) childID(ctx context.Context, id string) (string, error) {
	x := h.r.x
	if !x.durable {
		return id, nil
	}
	for n, try := 2, id; ; n++ {
		e, err := x.store.Load(ctx, try)
		switch {
		case errors.Is(err, ErrNotFound):
			return try, nil
		case err != nil:
			return "", err
		case e.Status != StatusAborted || e.Error != ErrParentRolledBack:
			return try, nil
		}
		try = id + "~" + itoa(n)
	}
}

// historyReader is a store that reads an execution's history (every real
// store).
type historyReader interface {
	History(ctx context.Context, id string) ([]Event, error)
}

// stopRolledBackChildren stops the running children of e started after
// checkpoint cp (their ChildExecutionStarted events come after it): a
// rollback of e to cp goes back to before they were started. Each is
// recorded as a ChildExecutionStopped event of r.
func (x *Executor) stopRolledBackChildren(ctx context.Context, r *run, e *Execution, cp *Checkpoint) error {
	hr, ok := x.store.(historyReader)
	if !ok {
		return nil
	}
	events, err := hr.History(ctx, e.ID)
	if err != nil {
		return fmt.Errorf("execution %s: history: %w", e.ID, err)
	}
	for _, ev := range events {
		if ev.Type != EventChildStarted || ev.Superseded || ev.Own <= cp.LastOwnEvent {
			continue
		}
		d, _ := ev.Detail.(map[string]any)
		id, _ := d["execution"].(string)
		if id == "" {
			continue
		}
		ce, err := x.store.Load(ctx, id)
		if err != nil || ce.Status.Ended() {
			continue
		}
		if _, err := x.Stop(ctx, id, ErrParentRolledBack, fmt.Sprintf("its parent %s rolled back to checkpoint %q, taken before the child started", e.ID, cp.Name)); err != nil && !errors.Is(err, ErrEnded) {
			return fmt.Errorf("execution %s: stop child %s: %w", e.ID, id, err)
		}
		r.ownEvent(Event{Type: EventChildStopped, State: ev.State, Scope: ev.Scope, Detail: map[string]any{"execution": id, "checkpoint": cp.Name}})
	}
	return nil
}

// childError is the state's error for a child that did not succeed: the
// child's own error (for Retry and Catch to match), with a cause naming
// the child.
func childError(res *Result, workflow string, timeout time.Duration) error {
	name, cause := res.Error, res.Cause
	switch {
	case res.Status == StatusAborted && name == string(asl.ErrTimeout):
		return asl.Errorf(asl.ErrTimeout, "child execution %s of workflow %s did not end within the state's Timeout (%s) and was stopped", res.ID, workflow, timeout)
	case res.Status == StatusTimedOut:
		name = string(asl.ErrTimeout)
	case name == "":
		name = string(asl.ErrTaskFailed)
	}
	return asl.Errorf(asl.ErrorName(name), "child execution %s of workflow %s %s: %s", res.ID, workflow, strings.ToLower(string(res.Status)), cause)
}

// runChild starts the state's child execution id of workflow name at ref
// on input, or, when it exists (a resumed parent), attaches to it; it
// returns how the child ended, or parks the parent while the child waits.
func (h *stateRun) runChild(ctx context.Context, id, name, ref string, input any, timeout time.Duration) (*Result, error) {
	r, x := h.r, h.r.x
	var res *Result
	var err error
	if e, lerr := x.store.Load(ctx, id); lerr == nil && x.durable {
		if e.Parent != r.exec.ID {
			// A startExecution Name may name any execution: only its own
			// child is attached to, never another's read.
			return nil, asl.Errorf(asl.ErrTaskFailed, "StepFunctions.ExecutionAlreadyExistsException: an execution named %s exists, not started by this state", id)
		}
		res, err = h.attachChild(ctx, e, timeout)
	} else if lerr != nil && !errors.Is(lerr, ErrNotFound) {
		return nil, lerr
	} else {
		res, err = h.startChild(ctx, id, name, ref, input, timeout, false)
	}
	if err != nil {
		return nil, err
	}
	if res.Status == StatusRunning && x.durable {
		// Another process took it, and may have finished it already
		// (its end found this parent still running, and woke nothing).
		if e, err := x.store.Load(ctx, id); err == nil && e.Status.Ended() {
			res = &Result{ID: id, Status: e.Status, Output: e.Output, Error: e.Error, Cause: e.Cause}
		}
	}
	if res.Status == StatusWaiting || res.Status == StatusRunning {
		// The child waits, or runs in another process (a server with
		// room took it): the parent waits for it without holding a
		// slot; the child's end wakes it, or the parent looks again
		// within Config.ChildPoll (an end that came while it was parking).
		wake := time.Now().Add(x.childPoll)
		if !res.WakeAt.IsZero() && res.WakeAt.Before(wake) {
			wake = res.WakeAt
		}
		if timeout > 0 {
			// Be back when the state's Timeout passes, to stop the child.
			if e, err := x.store.Load(ctx, id); err == nil && e.StartedAt.Add(timeout).Before(wake) {
				wake = e.StartedAt.Add(timeout)
			}
		}
		r.mu.Lock()
		r.waitingChildren = append(r.waitingChildren, id)
		r.mu.Unlock()
		return nil, h.park(ctx, WaitingForChild, wake, &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: h.retries})
	}
	r.ownEvent(Event{Type: EventChildEnded, State: h.name(), Scope: h.sc.prefix, Document: h.raw, Error: res.Error, Cause: res.Cause,
		Detail: map[string]any{"execution": id, "status": string(res.Status)}})
	return res, nil
}

// startChild starts child id of workflow name at ref, and runs it in this
// process until it ends or waits.
//
// inCall is set for a child an agent call starts (RunWorkflow): the call's
// durable step is its start, so nothing is committed here.
func (h *stateRun) startChild(ctx context.Context, id, name, ref string, input any, timeout time.Duration, inCall bool) (*Result, error) {
	r, x := h.r, h.r.x
	if x.workflows == nil {
		return nil, asl.Errorf(asl.ErrTaskFailed, "state %s: workflow %s cannot be resolved: this executor has no workflow registry (engine.Config.Workflows)", h.name(), name)
	}
	def, registry, err := x.workflows.ResolveWorkflow(ctx, name, ref)
	if err != nil {
		return nil, asl.Errorf(asl.ErrTaskFailed, "state %s: %v", h.name(), err)
	}
	m, err := x.machines.Parse(def)
	if err != nil {
		return nil, asl.Errorf(asl.ErrTaskFailed, "state %s: workflow %s no longer parses: %v", h.name(), registry, err)
	}
	if depth, err := x.childDepth(ctx, r.exec); err != nil {
		return nil, err
	} else if depth >= MaxChildDepth {
		return nil, asl.Errorf(asl.ErrTaskFailed, "state %s: workflow %s would nest %d deep, past the limit of %d child executions within each other", h.name(), registry, depth+1, MaxChildDepth)
	}
	r.mu.Lock()
	r.children++
	n := r.children
	r.mu.Unlock()
	if n > MaxChildren {
		return nil, asl.Errorf(asl.ErrTaskFailed, "state %s: the execution started more than %d child executions", h.name(), MaxChildren)
	}
	// The start is a committed step: a parent that dies after it finds
	// its child, and records its start once (a parent that died between
	// the two starts it, its start already recorded).
	switch p := h.progress; {
	case inCall:
		r.ownEvent(Event{Type: EventChildStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
			Detail: map[string]any{"execution": id, "workflow": registry}})
	case p == nil || p.Attempt != h.env.retry:
		r.ownEvent(Event{Type: EventChildStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
			Detail: map[string]any{"execution": id, "workflow": registry}})
		if err := h.saveProgress(ctx, &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: h.retries}); err != nil {
			return nil, err
		}
	}
	cctx, release := h.childContext(ctx, id, time.Now(), timeout)
	defer release()
	res, err := x.Run(cctx, m, input, StartOptions{
		ID: id, MachineName: name, Registry: registry, parent: r.exec.ID,
		Agents: r.agents, AgentsFile: r.exec.Agents, AgentsKind: r.exec.AgentsKind,
		MaxPayloadSize: r.exec.MaxPayload, Durability: r.exec.Durability,
	})
	if errors.Is(err, ErrExists) && x.durable {
		e, lerr := x.store.Load(ctx, id)
		if lerr != nil {
			return nil, lerr
		}
		return h.attachChild(ctx, e, timeout)
	}
	return res, err
}

// journalStepKey is the context key of the durable step (Journal) an
// agent call runs in, for RunWorkflow.
type journalStepKey struct{}

// callWorkflows runs workflows for the agent calls of a state
// (agents.Request.Workflows).
type callWorkflows struct{ h *stateRun }

// RunWorkflow runs workflow name at ref on input as a child of the call:
// "<state's child id>/<journal step>" (or "/call" outside a step), started
// once and attached to when the step runs again after a crash. A child
// that waits (an Approval) is stopped and the call fails: a workflow run
// for a call must end without waiting.
func (c callWorkflows) RunWorkflow(ctx context.Context, name, ref string, input any) (any, error) {
	h := c.h
	x := h.r.x
	input, err := jsonvalue.Normalize(input)
	if err != nil {
		return nil, asl.Errorf(asl.ErrTaskFailed, "workflow %s: its input is not JSON: %v", name, err)
	}
	key, _ := ctx.Value(journalStepKey{}).(string)
	if key == "" {
		key = "call"
	}
	id, err := h.childID(ctx, ChildWorkflowID(h.r.exec.ID, h.step(), h.env.retry)+"/"+strings.ReplaceAll(key, " ", "_"))
	if err != nil {
		return nil, err
	}
	var res *Result
	if e, lerr := x.store.Load(ctx, id); lerr == nil && x.durable {
		res, err = h.attachChild(ctx, e, 0)
	} else if lerr != nil && !errors.Is(lerr, ErrNotFound) {
		return nil, lerr
	} else {
		res, err = h.startChild(ctx, id, name, ref, input, 0, true)
	}
	if err != nil {
		return nil, err
	}
	// A child another process took (a server with room) is waited for
	// here: the call needs its output.
	for wait := 20 * time.Millisecond; res.Status == StatusRunning; wait = min(2*wait, time.Second) {
		select {
		case <-ctx.Done():
			return nil, ctxError(ctx)
		case <-time.After(wait):
		}
		e, err := x.store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		res = &Result{ID: id, Status: e.Status, Output: e.Output, Error: e.Error, Cause: e.Cause, WaitingFor: e.WaitingFor}
	}
	switch res.Status {
	case StatusSucceeded:
		return res.Output, nil
	case StatusWaiting:
		if _, err := x.Stop(context.WithoutCancel(ctx), id, string(asl.ErrTaskFailed), "it waited, and a workflow run for an agent's call must end without waiting"); err != nil && !errors.Is(err, ErrEnded) {
			return nil, err
		}
		return nil, asl.Errorf(asl.ErrTaskFailed, "workflow %s (child execution %s) waited for %s: a workflow run for an agent's call must end without waiting, and was stopped", name, id, res.WaitingFor)
	}
	return nil, childError(res, name, 0)
}

// attachChild continues child e, which exists: an ended child is read (it
// never runs again), an unfinished one resumed (or waited for, when
// another process runs it).
func (h *stateRun) attachChild(ctx context.Context, e *Execution, timeout time.Duration) (*Result, error) {
	x := h.r.x
	id := e.ID
	for {
		if e.Status.Ended() {
			return &Result{ID: id, Status: e.Status, Output: e.Output, Error: e.Error, Cause: e.Cause}, nil
		}
		if timeout > 0 && !time.Now().Before(e.StartedAt.Add(timeout)) {
			// The state's Timeout passed while the parent was away.
			res, err := x.Stop(ctx, id, string(asl.ErrTimeout), fmt.Sprintf("the Workflow state's Timeout (%s) passed", timeout))
			if err == nil {
				return res, nil
			}
			if !errors.Is(err, ErrEnded) {
				return nil, err
			}
			if e, err = x.store.Load(ctx, id); err != nil {
				return nil, err
			}
			continue
		}
		cctx, release := h.childContext(ctx, id, e.StartedAt, timeout)
		res, err := x.Resume(cctx, id, ResumeOptions{Agents: h.r.agents})
		release()
		switch {
		case errors.Is(err, ErrBusy):
			// Another process (Serve recovering it) runs it: wait for it.
			select {
			case <-ctx.Done():
				return nil, ctxError(ctx)
			case <-time.After(50 * time.Millisecond):
			}
		case errors.Is(err, ErrEnded):
		default:
			return res, err
		}
		var lerr error
		if e, lerr = x.store.Load(ctx, id); lerr != nil {
			return nil, lerr
		}
	}
}

// childContext is the context child id runs in: a Stop of the parent
// stops it (childContext of the Distributed Map), and so does the state's
// Timeout, counted from when the child started, as a stop with
// States.Timeout.
func (h *stateRun) childContext(ctx context.Context, id string, started time.Time, timeout time.Duration) (context.Context, func()) {
	cctx, _, release := childContext(ctx)
	if timeout <= 0 {
		return cctx, release
	}
	tctx, cancel := context.WithCancelCause(cctx)
	t := time.AfterFunc(time.Until(started.Add(timeout)), func() {
		cancel(&stopRequest{errName: string(asl.ErrTimeout), cause: fmt.Sprintf("the Workflow state's Timeout (%s) passed", timeout)})
	})
	return tctx, func() {
		t.Stop()
		cancel(nil)
		release()
	}
}

// childDepth is how deep e is among Workflow children: 0 for an execution
// no Workflow state started.
func (x *Executor) childDepth(ctx context.Context, e *Execution) (int, error) {
	depth := 0
	for id, parent := e.ID, e.Parent; IsWorkflowChild(id, parent); depth++ {
		if depth > MaxChildDepth || !x.durable {
			// Its ids say enough: each level adds a "/" part.
			return max(depth, strings.Count(id, "/")), nil
		}
		p, err := x.store.Load(ctx, parent)
		if errors.Is(err, ErrNotFound) {
			return depth + 1, nil
		}
		if err != nil {
			return 0, err
		}
		id, parent = p.ID, p.Parent
	}
	return depth, nil
}

// wakeParent continues the parent of child e, which just ended, when the
// parent waits for it (it parked while the child waited): in this process,
// at once, rather than at the parent's next look (Config.ChildPoll).
//
// A Distributed Map's child wakes its parent the same way when the parent
// waits for its map run.
func (x *Executor) wakeParent(ctx context.Context, e *Execution) {
	if !x.durable {
		return
	}
	waitingFor := WaitingForChild
	if _, mapChild := MapRunOf(e.ID, e.Parent); mapChild {
		waitingFor = WaitingForMapRun
	} else if !IsWorkflowChild(e.ID, e.Parent) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	p, err := x.store.Load(ctx, e.Parent)
	if err != nil || p.Status != StatusWaiting || p.WaitingFor != waitingFor {
		return
	}
	if _, err := x.Resume(ctx, p.ID, ResumeOptions{woken: true}); err != nil && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrEnded) {
		x.log.Warn("the parent of an ended child execution could not be continued; it continues at its next look", "execution", p.ID, "child", e.ID, "error", err)
	}
}

// stopChildren stops the running children of the Workflow states e waits
// at (a Stop of a parked parent).
func (x *Executor) stopChildren(ctx context.Context, e *Execution, req *stopRequest) {
	for key, sc := range e.Progress.Scopes {
		if sc == nil || sc.Step == nil || sc.Next == "" {
			continue
		}
		id := ChildWorkflowID(e.ID, key+sc.Next+"#"+itoa(sc.Step.Visit), sc.Step.Attempt)
		ce, err := x.store.Load(ctx, id)
		if err != nil || ce.Parent != e.ID || ce.Status.Ended() {
			continue
		}
		if _, err := x.Stop(ctx, id, req.errName, req.cause); err != nil && !errors.Is(err, ErrEnded) {
			x.log.Warn("a child execution of a stopped execution could not be stopped", "execution", e.ID, "child", id, "error", err)
		}
	}
}

// recheckChildren looks, once execution r parked, at the children its
// Workflow states wait for: a child that ended meanwhile — before the
// parent was WAITING, so its end woke nothing — continues the parent now,
// in the background of this process (WaitDetached), once the run that
// parked it lets go of it.
func (x *Executor) recheckChildren(ctx context.Context, r *run) {
	r.mu.Lock()
	ids := r.waitingChildren
	r.waitingChildren = nil
	r.mu.Unlock()
	if !x.durable {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, id := range ids {
		e, err := x.store.Load(ctx, id)
		if err != nil || !e.Status.Ended() {
			continue
		}
		parent := r.exec.ID
		x.detached.Add(1)
		go func() {
			defer x.detached.Done()
			if _, err := x.Resume(ctx, parent, ResumeOptions{woken: true}); err != nil && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrEnded) {
				x.log.Warn("an execution whose child ended as it parked could not be continued; it continues at its next look", "execution", parent, "child", id, "error", err)
			}
		}()
		return
	}
}
