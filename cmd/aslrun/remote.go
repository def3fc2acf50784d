package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// The commands' remote halves: what they do through the API of the process
// holding their database (see open). They print as the local halves do.

// waitEvery is how often a command polls an execution it waits for.
const waitEvery = 25 * time.Millisecond

// remoteError turns an API error into the exit it deserves: a problem the
// server answered is a usage error with its detail and located fields
// (engine.ErrDecisionRefused for a refused decision); anything else says
// which socket failed.
func remoteError(h *handle, err error) error {
	var e *client.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("the API at %s (pid %d, %s): %w", h.sock, h.holder.PID, h.holder.Command, err)
	}
	msg := e.Problem.Detail
	if msg == "" {
		msg = e.Problem.Title
	}
	for _, fe := range e.Problem.Errors {
		if fe.Detail == e.Problem.Detail {
			continue
		}
		where := fe.Pointer
		if fe.State != "" {
			where += " (state " + fe.State + ")"
		}
		msg += "\n" + where + ": " + fe.Detail
	}
	if e.Problem.Type == api.ProblemType+"decision-refused" {
		return fmt.Errorf("%s: %w", msg, engine.ErrDecisionRefused)
	}
	return &exitError{code: exitUsage, msg: msg}
}

// notThroughAPI refuses flags that set what only the server decides.
func notThroughAPI(h *handle, fs *flag.FlagSet, cmd string, names ...string) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				set = append(set, "--"+n)
			}
		}
	})
	if len(set) == 0 {
		return nil
	}
	return usageErrorf("%s: %s cannot be used through the API of %s (pid %d) at %s: agents and limits are the server's own configuration (`aslrun serve --agents FILE --max-payload BYTES`), and a run's socket serves reads and decisions only",
		cmd, strings.Join(set, ", "), h.holder.Command, h.holder.PID, h.sock)
}

// remoteInterrupted is interrupted for a command that waited for an
// execution the server goes on running.
func remoteInterrupted(ctx context.Context, id string) error {
	var s *signalled
	if !errors.As(context.Cause(ctx), &s) {
		return nil
	}
	return &exitError{code: exitSignalBase + int(s.sig), msg: fmt.Sprintf("%s: stopped waiting; execution %s goes on in the server (`aslrun status %s`)", s, id, id)}
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// decodeRaw decodes a document the API sent; nil when absent.
func decodeRaw(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return jsonvalue.Decode(raw)
}

// pendingOf is an API approval as the engine describes it.
func pendingOf(a api.Approval) (engine.PendingApproval, error) {
	prompt, err := decodeRaw(a.Prompt)
	if err != nil {
		return engine.PendingApproval{}, fmt.Errorf("approval %s: prompt: %w", a.Approval, err)
	}
	editable, err := decodeRaw(a.Editable)
	if err != nil {
		return engine.PendingApproval{}, fmt.Errorf("approval %s: editable: %w", a.Approval, err)
	}
	return engine.PendingApproval{ID: a.Approval, State: a.State, Prompt: prompt, Options: a.Options, Editable: editable, Digest: a.Digest,
		Deadline: timeOf(a.Deadline), NextEscalation: timeOf(a.EscalatesAt)}, nil
}

// resultOf is an API execution as the engine's result of running it.
func resultOf(e api.Execution) (*engine.Result, error) {
	out, err := decodeRaw(e.Output)
	if err != nil {
		return nil, fmt.Errorf("execution %s: output: %w", e.ID, err)
	}
	res := &engine.Result{ID: e.ID, Status: engine.Status(e.Status), Output: out, Error: e.Error, Cause: e.Cause, State: e.State,
		WaitingFor: e.WaitingFor, WakeAt: timeOf(e.WakeAt)}
	for _, a := range e.Approvals {
		pa, err := pendingOf(a)
		if err != nil {
			return nil, err
		}
		res.Approvals = append(res.Approvals, pa)
	}
	return res, nil
}

// remoteList lists executions through the API: limit 0 (all) and limits
// above a page are one page of the API's largest size.
func remoteList(ctx context.Context, c *cmdContext, h *handle, status string, limit int) ([]store.Summary, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	l, err := h.api.Executions(ctx, status, limit)
	if err != nil {
		return nil, remoteError(h, err)
	}
	if l.Next != "" {
		fmt.Fprintf(c.stderr, "aslrun: the first %d executions; the API pages the rest (docs/api.md)\n", limit)
	}
	list := make([]store.Summary, len(l.Executions))
	for i, e := range l.Executions {
		list[i] = store.Summary{ID: e.ID, MachineName: e.Workflow, DefinitionHash: e.Hash, Status: engine.Status(e.Status), StartedAt: e.StartedAt,
			StoppedAt: timeOf(e.StoppedAt), Error: e.Error, Parent: e.Parent, WaitingFor: e.WaitingFor, WakeAt: timeOf(e.WakeAt)}
	}
	return list, nil
}

// remoteStatus describes an execution through the API (without usage,
// which the API does not show).
func remoteStatus(ctx context.Context, h *handle, id string) (statusView, error) {
	e, err := h.api.Execution(ctx, id)
	if err != nil {
		return statusView{}, remoteError(h, err)
	}
	res, err := resultOf(e)
	if err != nil {
		return statusView{}, err
	}
	return statusView{ID: e.ID, MachineName: e.Workflow, DefinitionHash: e.Hash, Status: res.Status, State: e.State, WaitingFor: e.WaitingFor,
		WakeAt: res.WakeAt, StartedAt: e.StartedAt, StoppedAt: timeOf(e.StoppedAt), Approvals: res.Approvals, Parent: e.Parent,
		Error: e.Error, Cause: e.Cause, Output: res.Output, HistoryDropped: e.HistoryDropped}, nil
}

// remoteHistory reads an execution's history through the API; with
// verify, tampered is the server's reason when the chain does not verify.
func remoteHistory(ctx context.Context, h *handle, id string, verify bool) (events []engine.Event, tampered, err error) {
	list, err := h.api.History(ctx, id, verify)
	if err != nil {
		var ce *client.Error
		if verify && errors.As(err, &ce) && ce.Problem.Type == api.ProblemType+"tampered" {
			return nil, errors.New(ce.Problem.Detail), nil
		}
		return nil, nil, remoteError(h, err)
	}
	events = make([]engine.Event, len(list))
	for i, e := range list {
		detail, err := decodeRaw(e.Detail)
		if err != nil {
			return nil, nil, fmt.Errorf("event %d: detail: %w", e.Seq, err)
		}
		events[i] = engine.Event{ID: e.ID, Own: e.Own, Type: e.Type, Timestamp: e.Timestamp, State: e.State, Scope: e.Scope, Error: e.Error, Cause: e.Cause,
			Detail: detail, DocHash: e.DocHash, Hash: e.Hash, Superseded: e.Superseded}
	}
	return events, nil, nil
}

// wait waits until the execution id is no longer RUNNING and returns it
// as a result.
func (h *handle) wait(ctx context.Context, id string) (*engine.Result, error) {
	e, err := h.api.Wait(ctx, id, waitEvery)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, remoteError(h, err)
	}
	return resultOf(e)
}

// remoteDecide decides one of an execution's pending approvals through the
// API, chosen as the engine chooses (Decision.ApprovalID: the approval's id
// or its state's name, or the only one pending), and waits until the
// execution is no longer RUNNING. d.Approver, when set, is sent as the
// one the local admin decides on behalf of.
func remoteDecide(ctx context.Context, h *handle, id string, d engine.Decision) (*engine.Result, error) {
	e, err := h.api.Execution(ctx, id)
	if err != nil {
		return nil, remoteError(h, err)
	}
	var ids []string
	var match []api.Approval
	for _, a := range e.Approvals {
		ids = append(ids, a.Approval)
		if d.ApprovalID == "" || d.ApprovalID == a.Approval || d.ApprovalID == a.State || d.ApprovalID == stateOfApproval(a.Approval) {
			match = append(match, a)
		}
	}
	switch {
	case len(e.Approvals) == 0:
		return nil, fmt.Errorf("execution %s is %s, not waiting for a decision: %w", id, e.Status, engine.ErrDecisionRefused)
	case len(match) == 0:
		return nil, fmt.Errorf("execution %s has no pending approval %q; pending: %s: %w", id, d.ApprovalID, strings.Join(ids, ", "), engine.ErrDecisionRefused)
	case len(match) > 1:
		return nil, fmt.Errorf("execution %s waits on %d approvals (%s): say which with --approval: %w", id, len(match), strings.Join(ids, ", "), engine.ErrDecisionRefused)
	}
	req := api.Decision{Option: d.Approval, Comment: d.Comment, Digest: d.Digest, OnBehalfOf: d.Approver}
	if d.Edit != nil {
		if req.Edit, err = jsonvalue.Marshal(d.Edit); err != nil {
			return nil, err
		}
	}
	if _, err := h.api.Decide(ctx, match[0].ID, req); err != nil {
		return nil, remoteError(h, err)
	}
	return h.wait(ctx, id)
}

// stateOfApproval is the state name in a pending approval's id ("Review"
// in "Batch#1.0/3/Review#1").
func stateOfApproval(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	if i := strings.LastIndex(id, "#"); i >= 0 {
		id = id[:i]
	}
	return id
}

// remoteCheckpoints lists an execution's checkpoints through the API.
func remoteCheckpoints(ctx context.Context, h *handle, id string) ([]*engine.Checkpoint, error) {
	l, err := h.api.Checkpoints(ctx, id)
	if err != nil {
		return nil, remoteError(h, err)
	}
	list := make([]*engine.Checkpoint, len(l.Checkpoints))
	for i, cp := range l.Checkpoints {
		list[i] = &engine.Checkpoint{Name: cp.Name, State: cp.State, Next: cp.Next, CreatedAt: cp.CreatedAt, ExpiresAt: timeOf(cp.ExpiresAt)}
	}
	return list, nil
}

// remoteMemory lists agent memory through the API: namespace ns, or every
// namespace with live entries when ns is empty, by namespace and key.
func remoteMemory(ctx context.Context, h *handle, ns string) ([]*engine.MemoryEntry, error) {
	names := []string{ns}
	if ns == "" {
		list, err := h.api.MemoryNamespaces(ctx)
		if err != nil {
			return nil, remoteError(h, err)
		}
		names = names[:0]
		for _, n := range list {
			names = append(names, n.Namespace)
		}
	}
	var out []*engine.MemoryEntry
	for _, n := range names {
		entries, err := h.api.Memory(ctx, n)
		if err != nil {
			return nil, remoteError(h, err)
		}
		for _, e := range entries {
			v, err := decodeRaw(e.Value)
			if err != nil {
				return nil, fmt.Errorf("memory %s/%s: value: %w", n, e.Key, err)
			}
			out = append(out, &engine.MemoryEntry{Namespace: n, Key: e.Key, Value: v, UpdatedAt: e.UpdatedAt, ExpiresAt: timeOf(e.ExpiresAt), Execution: e.Execution})
		}
	}
	return out, nil
}
