package engine

import (
	"context"
	"errors"
	"regexp"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Step Functions' way of calling another state machine,
// arn:aws:states:::states:startExecution (and .sync, .sync:2,
// .waitForTaskToken), starts a child execution of a registered workflow
// when no agent (a mock, an agents file's Resources) is mapped to the ARN:
// its StateMachineArn names the workflow,
// arn:PARTITION:states:REGION:ACCOUNT:stateMachine:NAME[:VERSION|ALIAS].

// stateMachineARN matches a StateMachineArn: partition, region, account,
// name and the optional version or alias.
var stateMachineARN = regexp.MustCompile(`^arn:(aws|aws-cn|aws-us-gov):states:([a-z0-9-]*):([0-9]*):stateMachine:([A-Za-z0-9_.-]{1,128})(?::([A-Za-z0-9_.-]{1,128}))?$`)

// startsExecution reports whether Task s starts a child execution: its
// Resource is states:startExecution and no agent is mapped to it.
func (h *stateRun) startsExecution(s *states.Task) bool {
	r := s.Resource
	if !r.StartsExecution() {
		return false
	}
	// An entry mapped to an agent that is not registered is that
	// agent's error, not a child.
	agent, mapped := h.r.agents.ResolveResource(r.ARN, "", "")
	return !mapped && agent == ""
}

// startExecution runs a states:startExecution Task whose parameters are
// params ({StateMachineArn, Input, Name}): it starts the child and, by the
// Resource's pattern, returns at once (StartExecution's response), waits
// for it (.sync, .sync:2: DescribeExecution's), or waits for the task token
// the child is given in its Input (.waitForTaskToken; cb is the pending
// callback).
func (h *stateRun) startExecution(ctx context.Context, s *states.Task, params any, cb *PendingCallback) (any, int, error) {
	r := s.Resource
	p, ok := params.(map[string]any)
	if !ok {
		return nil, 0, asl.Errorf(asl.ErrTaskFailed, "%s: the parameters must be an object with StateMachineArn and Input, not %s", r.ARN, jsonvalue.TypeName(params))
	}
	arn, _ := p["StateMachineArn"].(string)
	m := stateMachineARN.FindStringSubmatch(arn)
	if m == nil {
		return nil, 0, asl.Errorf(asl.ErrTaskFailed, "%s: StateMachineArn %q is not arn:aws:states:REGION:ACCOUNT:stateMachine:NAME[:VERSION|ALIAS]", r.ARN, arn)
	}
	name, ref := m[4], m[5]
	input, err := childInput(p["Input"])
	if err != nil {
		return nil, 0, asl.Errorf(asl.ErrTaskFailed, "%s: Input: %v", r.ARN, err)
	}
	id, err := h.childID(ctx, ChildWorkflowID(h.r.exec.ID, h.step(), h.env.retry))
	if err != nil {
		return nil, 0, err
	}
	if n, has := p["Name"]; has {
		given, isStr := n.(string)
		if !isStr || !validExecutionName(given) {
			return nil, 0, asl.Errorf(asl.ErrTaskFailed, "%s: Name must be 1 to 80 letters, digits, '-' and '_', not %s", r.ARN, compactJSON(n))
		}
		id = given
	}
	execARN := "arn:" + m[1] + ":states:" + m[2] + ":" + m[3] + ":execution:" + name + ":" + id
	switch r.Pattern {
	case states.PatternSync, states.PatternSync2:
		res, err := h.runChild(ctx, id, name, ref, input, 0)
		if err != nil {
			return nil, 0, err
		}
		out := describeExecution(ctx, h.r.x, res, execARN, arn, input, r.Pattern == states.PatternSync2)
		if res.Status != StatusSucceeded {
			cause, _ := jsonvalue.Marshal(out)
			return nil, 0, asl.Errorf(asl.ErrTaskFailed, "%s", cause)
		}
		size, err := h.fits(out, unknownSize)
		return out, size, err
	}
	started, err := h.startDetached(ctx, id, name, ref, input)
	if err != nil {
		return nil, 0, err
	}
	if cb != nil {
		return nil, 0, h.awaitToken(ctx, cb)
	}
	out := map[string]any{"ExecutionArn": execARN, "StartDate": started.UTC().Format(time.RFC3339Nano)}
	return out, jsonvalue.Size(out), nil
}

// childInput is a StartExecution Input: JSON text (as AWS takes it) or a
// JSON value (what Input.$ gives); none is {}.
func childInput(v any) (any, error) {
	switch t := v.(type) {
	case nil:
		return map[string]any{}, nil
	case string:
		in, err := jsonvalue.Decode([]byte(t))
		if err != nil {
			return nil, errors.New("a string Input must hold JSON text")
		}
		return in, nil
	}
	return v, nil
}

// validExecutionName reports whether s can name an execution as AWS's
// StartExecution Name does.
func validExecutionName(s string) bool {
	return executionName.MatchString(s)
}

var executionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// startDetached starts child id of workflow name at ref on input, without
// waiting for it (StartExecution, .waitForTaskToken): it runs in the
// background of this process (Executor.WaitDetached), and a process that
// dies leaves it RUNNING for Serve to take over. A child that exists (the
// parent was resumed) is not started again. It returns when the child
// started.
func (h *stateRun) startDetached(ctx context.Context, id, name, ref string, input any) (time.Time, error) {
	r, x := h.r, h.r.x
	if e, err := x.store.Load(ctx, id); err == nil && x.durable {
		if e.Parent != r.exec.ID {
			return time.Time{}, asl.Errorf(asl.ErrTaskFailed, "StepFunctions.ExecutionAlreadyExistsException: an execution named %s exists, not started by this state", id)
		}
		return e.StartedAt, nil
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return time.Time{}, err
	}
	if x.workflows == nil {
		return time.Time{}, asl.Errorf(asl.ErrTaskFailed, "state %s: workflow %s cannot be resolved: this executor has no workflow registry (engine.Config.Workflows)", h.name(), name)
	}
	def, registry, err := x.workflows.ResolveWorkflow(ctx, name, ref)
	if err != nil {
		return time.Time{}, asl.Errorf(asl.ErrTaskFailed, "state %s: %v", h.name(), err)
	}
	m, err := x.machines.Parse(def)
	if err != nil {
		return time.Time{}, asl.Errorf(asl.ErrTaskFailed, "state %s: workflow %s no longer parses: %v", h.name(), registry, err)
	}
	if depth, err := x.childDepth(ctx, r.exec); err != nil {
		return time.Time{}, err
	} else if depth >= MaxChildDepth {
		return time.Time{}, asl.Errorf(asl.ErrTaskFailed, "state %s: workflow %s would nest %d deep, past the limit of %d child executions within each other", h.name(), registry, depth+1, MaxChildDepth)
	}
	if p := h.progress; p == nil || p.Attempt != h.env.retry {
		r.ownEvent(Event{Type: EventChildStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
			Detail: map[string]any{"execution": id, "workflow": registry, "detached": true}})
		if err := h.saveProgress(ctx, &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: h.retries}); err != nil {
			return time.Time{}, err
		}
	}
	created := make(chan time.Time, 1)
	opts := StartOptions{
		ID: id, MachineName: name, Registry: registry, parent: r.exec.ID,
		Agents: r.agents, AgentsFile: r.exec.Agents, AgentsKind: r.exec.AgentsKind,
		MaxPayloadSize: r.exec.MaxPayload, Durability: r.exec.Durability,
		Started: func(e *Execution) { created <- e.StartedAt },
	}
	errs := make(chan error, 1)
	x.detached.Add(1)
	go func() {
		defer x.detached.Done()
		_, err := x.Run(context.WithoutCancel(ctx), m, input, opts)
		errs <- err
	}()
	select {
	case t := <-created:
		return t, nil
	case err := <-errs:
		if errors.Is(err, ErrExists) {
			return time.Now().UTC(), nil
		}
		if err == nil {
			return time.Now().UTC(), nil
		}
		return time.Time{}, asl.Errorf(asl.ErrTaskFailed, "state %s: starting workflow %s: %v", h.name(), registry, err)
	}
}

// WaitDetached waits for the child executions this executor started
// without waiting for them (StartExecution, .waitForTaskToken) to end or
// wait: a command that exits after its execution calls it first.
func (x *Executor) WaitDetached() { x.detached.Wait() }

// describeExecution is DescribeExecution's response for child res:
// Input and Output as JSON text, or (.sync:2) as JSON values.
func describeExecution(ctx context.Context, x *Executor, res *Result, execARN, smARN string, input any, asJSON bool) map[string]any {
	out := map[string]any{
		"ExecutionArn": execARN, "StateMachineArn": smARN, "Name": res.ID, "Status": string(res.Status),
		"InputDetails": map[string]any{"Included": true},
	}
	if e, err := x.store.Load(ctx, res.ID); err == nil {
		out["StartDate"] = e.StartedAt.UTC().Format(time.RFC3339Nano)
		if !e.StoppedAt.IsZero() {
			out["StopDate"] = e.StoppedAt.UTC().Format(time.RFC3339Nano)
		}
	}
	text := func(v any) any {
		if asJSON {
			return v
		}
		b, _ := jsonvalue.Marshal(v)
		return string(b)
	}
	out["Input"] = text(input)
	if res.Status == StatusSucceeded {
		out["Output"] = text(res.Output)
		out["OutputDetails"] = map[string]any{"Included": true}
	} else {
		out["Error"], out["Cause"] = res.Error, res.Cause
	}
	return out
}
