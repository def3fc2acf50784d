package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// ResumeOptions are the settings of Resume, Rollback and Fork.
type ResumeOptions struct {
	// Agents, when set, are the agents to run with; otherwise Config.AgentsFor
	// builds them from the execution (when set), else Config.Agents serve.
	Agents *agents.Registry
	// Restore says what Rollback and Fork take from the checkpoint; the zero
	// value is RestoreAll.
	Restore Restore
	// ForkID is the id of the execution Fork starts; empty means a new
	// UUIDv7.
	ForkID string
	// Created, when set, is called with the id of the execution Fork
	// starts, once it exists and before it runs.
	Created func(id string)
	// RecordOnly makes Decide record the decision, and Rollback the
	// rollback, and return with the execution RUNNING, without continuing
	// it: the caller continues it (Resume), e.g. in the background.
	RecordOnly bool
	// noWait makes Resume fail with ErrBusy, rather than wait, when
	// another process holds the execution's lease (Serve: another server
	// runs it).
	noWait bool
	// claimed is the lease Serve claimed for the execution, with a slot
	// (Dispatcher).
	claimed *Claimed
	// woken is set when what the execution waits for happened (the child
	// execution a Workflow state waits on ended): it runs though its
	// wake-up time has not come.
	woken bool
}

// Restore selects what a rollback or fork takes from a checkpoint.
type Restore int

const (
	// RestoreAll takes the position and document and the agent memory.
	RestoreAll Restore = iota
	// RestoreDocument takes the position, document and variables only.
	RestoreDocument
	// RestoreMemory takes the agent memory only; the execution stays where
	// it is.
	RestoreMemory
)

// String names r as the CLI spells it.
func (r Restore) String() string {
	switch r {
	case RestoreDocument:
		return "document"
	case RestoreMemory:
		return "memory"
	}
	return "both"
}

// ParseRestore reads "document", "memory" or "both".
func ParseRestore(s string) (Restore, error) {
	switch s {
	case "both", "":
		return RestoreAll, nil
	case "document":
		return RestoreDocument, nil
	case "memory":
		return RestoreMemory, nil
	}
	return 0, fmt.Errorf("restore %q: want document, memory or both", s)
}

// load reads an execution and parses its definition.
func (x *Executor) load(ctx context.Context, id string) (*Execution, *states.Machine, error) {
	if !x.durable {
		return nil, nil, fmt.Errorf("execution %s: %w", id, ErrNotDurable)
	}
	e, err := x.store.Load(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	m, err := x.machines.Parse(e.Definition)
	if err != nil {
		return nil, nil, fmt.Errorf("execution %s: its stored definition no longer parses: %w", id, err)
	}
	if err := x.unsealLoaded(m, e); err != nil {
		return nil, nil, err
	}
	return e, m, nil
}

// agentsOf returns the agents an execution runs with.
func (x *Executor) agentsOf(e *Execution, opts ResumeOptions) (*agents.Registry, error) {
	if opts.Agents != nil {
		return opts.Agents, nil
	}
	if x.agentsFor != nil {
		reg, err := x.agentsFor(e)
		if err != nil {
			return nil, fmt.Errorf("execution %s: agents: %w", e.ID, err)
		}
		return reg, nil
	}
	return x.agents, nil
}

// resumed returns a run that continues e from its committed progress.
func (x *Executor) resumed(m *states.Machine, e *Execution, reg *agents.Registry) *run {
	r := x.newRun(m, e, reg)
	p := e.Progress
	r.lastEvent.Store(p.LastEvent)
	r.lastOwn, r.seq = p.LastOwnEvent, e.Seq
	if p.Invocations != nil {
		r.invocations = maps.Clone(p.Invocations)
	}
	r.usage = p.Usage
	for _, n := range p.Notices {
		r.notice(n)
	}
	for _, ns := range p.Namespaces {
		r.useNamespace(ns)
	}
	r.loaded = p.Scopes
	return r
}

// Resume continues an execution from its last commit, after its process
// stopped (a crash, a cancelled context) or when it waited (a long Wait or
// Retry delay: a resume before it is due goes on waiting). At most the
// agent call that was in flight is made again, with the same idempotency
// key and invocation number. Resuming an execution that has ended fails
// with ErrEnded.
func (x *Executor) Resume(ctx context.Context, id string, opts ResumeOptions) (_ *Result, err error) {
	var release func()
	if opts.claimed != nil {
		ctx, release, err = x.holdClaimed(ctx, opts.claimed)
	} else {
		if s := x.dispatching(); s != nil {
			// Serving a store other processes share: run it here only
			// with a slot free, and never wait for another process
			// that runs it.
			if !s.take() {
				return x.leftToClaim(ctx, id)
			}
			defer s.give()
			opts.noWait = true
		}
		// Hold the execution before reading it, so that what it is read
		// as stays true (a Stop or a decision cannot come in between).
		ctx, release, err = x.hold(ctx, id, !opts.noWait)
	}
	if err != nil {
		return nil, err
	}
	defer release()
	if opts.claimed != nil {
		defer func() { x.noteFailure(ctx, id, err) }()
	}
	defer func() { err = stopped(ctx, id, err) }()
	e, m, err := x.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Status.Ended() {
		return nil, fmt.Errorf("execution %s: %w (%s)", id, ErrEnded, e.Status)
	}
	if e.Status == StatusWaiting && !opts.woken && (e.WakeAt.IsZero() || time.Now().Before(e.WakeAt)) {
		// Nothing it waits for is due: resuming it changes nothing.
		return waitingResult(e), nil
	}
	reg, err := x.agentsOf(e, opts)
	if err != nil {
		return nil, err
	}
	r := x.resumed(m, e, reg)
	top := e.Progress.Scopes[""]
	if top == nil {
		// Created, but the first commit never happened: start afresh.
		// A run stopped before it (cancelled, drained) may have written
		// its ExecutionStarted already, which is recorded once.
		if e.Progress.LastEvent == 0 {
			r.event(Event{Type: EventExecutionStarted, Input: e.Input, Document: e.Input})
		}
		top = &Scope{Next: m.StartAt, Doc: e.Input}
		if opts.claimed != nil {
			// A start left to whichever process claims it (or one whose
			// process died first), claimed here: the claim took its
			// lease, so nothing else can run, stop or end it unseen
			// (a stop comes on the lease); it starts as Run starts it,
			// the commit of its first state its first.
			return r.execute(ctx, top)
		}
	}
	r.ownEvent(Event{Type: EventExecutionResumed, State: top.Next, Document: top.Doc, Detail: map[string]any{"from": string(e.Status)}})
	if err := r.commit(ctx, nil, &Commit{Status: StatusRunning}); err != nil {
		return nil, err
	}
	return r.execute(ctx, top)
}

// leftToClaim is the result of a Resume left to the process that claims
// the execution (Serve on a Dispatcher store, with no slot free): where it
// stands, as stored.
func (x *Executor) leftToClaim(ctx context.Context, id string) (*Result, error) {
	e, err := x.store.Load(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case e.Status.Ended():
		return nil, fmt.Errorf("execution %s: %w (%s)", id, ErrEnded, e.Status)
	case e.Status == StatusWaiting:
		return waitingResult(e), nil
	}
	return &Result{ID: id, Status: StatusRunning}, nil
}

// waitingResult is where a WAITING execution stands, as stored.
func waitingResult(e *Execution) *Result {
	res := &Result{ID: e.ID, Status: StatusWaiting, WaitingFor: e.WaitingFor, WakeAt: e.WakeAt, Approvals: PendingOf(e)}
	if top := e.Progress.Scopes[""]; top != nil {
		res.State = top.Next
	}
	return res
}

// CheckpointNames lists checkpoints by name for a message saying which
// there are: the live ones, then the expired ones at now, or "none".
func CheckpointNames(list []*Checkpoint, now time.Time) string {
	var live, expired []string
	for _, c := range list {
		if c.ExpiresAt.IsZero() || c.ExpiresAt.After(now) {
			live = append(live, c.Name)
		} else {
			expired = append(expired, c.Name)
		}
	}
	sort.Strings(live)
	sort.Strings(expired)
	names := "none"
	if len(live) > 0 {
		names = strings.Join(live, ", ")
	}
	if len(expired) > 0 {
		names += " (expired: " + strings.Join(expired, ", ") + ")"
	}
	return names
}

// checkpointOf loads an execution's named checkpoint, or says which ones
// there are.
func (x *Executor) checkpointOf(ctx context.Context, e *Execution, name string) (*Checkpoint, error) {
	cs, ok := x.store.(Checkpoints)
	if !ok {
		return nil, fmt.Errorf("execution %s: the store keeps no checkpoints", e.ID)
	}
	cp, err := cs.Checkpoint(ctx, e.ID, name)
	now := time.Now()
	if err == nil && (cp.ExpiresAt.IsZero() || cp.ExpiresAt.After(now)) {
		return cp, nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("execution %s: checkpoint %q: %w", e.ID, name, err)
	}
	list, lerr := cs.ListCheckpoints(ctx, e.ID)
	if lerr != nil {
		return nil, fmt.Errorf("execution %s: checkpoints: %w", e.ID, lerr)
	}
	avail := CheckpointNames(list, now)
	if err == nil {
		return nil, fmt.Errorf("execution %s: checkpoint %q expired at %s; available: %s: %w", e.ID, name, cp.ExpiresAt.Format(time.RFC3339), avail, ErrNotFound)
	}
	return nil, fmt.Errorf("execution %s has no checkpoint %q; available: %s: %w", e.ID, name, avail, ErrNotFound)
}

// fromCheckpoint loads an execution, its machine, its named checkpoint and
// its agents, for Rollback and Fork.
func (x *Executor) fromCheckpoint(ctx context.Context, id, name string, opts ResumeOptions) (*Execution, *states.Machine, *Checkpoint, *agents.Registry, error) {
	e, m, err := x.load(ctx, id)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cp, err := x.checkpointOf(ctx, e, name)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := e.secrets.unsealCheckpoint(cp); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("execution %s: checkpoint %q: %w", id, name, err)
	}
	reg, err := x.agentsOf(e, opts)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if opts.Restore != RestoreMemory && m.Extensions != nil {
		if err := checkTarget(m.Extensions.Governance, id, name, cp.Document); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return e, m, cp, reg, nil
}

// Rollback moves an execution back to a named checkpoint, in place, and
// runs it from there: the history after the checkpoint is kept and marked
// superseded, later checkpoints stay usable, and the rollback is a history
// event. It works on running, waiting and ended executions. opts.Restore
// selects what is restored: RestoreMemory leaves the position and document
// where they are (and needs an execution that has not ended).
func (x *Executor) Rollback(ctx context.Context, id, checkpoint string, opts ResumeOptions) (*Result, error) {
	// Hold the execution before reading it, as Resume does.
	ctx, release, err := x.hold(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer release()
	e, m, cp, reg, err := x.fromCheckpoint(ctx, id, checkpoint, opts)
	if err != nil {
		return nil, err
	}
	r := x.resumed(m, e, reg)
	top := e.Progress.Scopes[""]
	c := &Commit{Status: StatusRunning}
	if opts.Restore == RestoreMemory {
		if e.Status.Ended() || top == nil || top.Done {
			return nil, fmt.Errorf("execution %s has ended (%s): restoring the memory alone leaves nothing to run; restore the document too: %w", id, e.Status, ErrEnded)
		}
	} else {
		top = &Scope{Next: cp.Next, Doc: cp.Document, Vars: cp.Variables, Visits: cp.Visits}
		r.loaded = nil
		if cp.Invocations != nil {
			r.invocations = maps.Clone(cp.Invocations)
		}
		c.DropScopes = []string{""}
		c.Scopes = map[string]*Scope{"": top}
		c.Invocations = maps.Clone(r.invocations)
		c.Rollback = &Rollback{ToEvent: cp.LastEvent, ToOwnEvent: cp.LastOwnEvent}
	}
	if opts.Restore != RestoreDocument {
		if c.Memory, err = x.restoreMemory(ctx, cp.Memory, id); err != nil {
			return nil, fmt.Errorf("execution %s checkpoint %q: %w", id, cp.Name, err)
		}
	}
	if opts.Restore != RestoreMemory {
		if err := x.stopRolledBackChildren(ctx, r, e, cp); err != nil {
			return nil, err
		}
	}
	r.ownEvent(Event{Type: EventExecutionRolledBack, State: cp.State, Document: top.Doc, Detail: map[string]any{
		"checkpoint": cp.Name, "restore": opts.Restore.String(), "from": string(e.Status), "memoryWrites": jsonvalue.IntNumber(int64(len(c.Memory))),
	}})
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	if opts.RecordOnly {
		return &Result{ID: id, Status: StatusRunning}, nil
	}
	return r.execute(ctx, top)
}

// Fork starts a new execution from a named checkpoint of another one (its
// parent, to which it is linked) and runs it. The parent is not changed
// beyond a history event saying it was forked.
func (x *Executor) Fork(ctx context.Context, id, checkpoint string, opts ResumeOptions) (*Result, error) {
	parent, m, cp, reg, err := x.fromCheckpoint(ctx, id, checkpoint, opts)
	if err != nil {
		return nil, err
	}
	spent, notices, err := budgetFromCheckpoint(cp.Budget)
	if err != nil {
		return nil, fmt.Errorf("execution %s checkpoint %q: %w", parent.ID, cp.Name, err)
	}
	var memory []MemoryWrite
	if opts.Restore != RestoreDocument {
		if memory, err = x.restoreMemory(ctx, cp.Memory, parent.ID); err != nil {
			return nil, fmt.Errorf("execution %s checkpoint %q: %w", parent.ID, cp.Name, err)
		}
	}
	e := &Execution{
		ID: opts.ForkID, MachineName: parent.MachineName, Definition: parent.Definition,
		DefinitionHash: parent.DefinitionHash, Input: parent.Input, Status: StatusRunning,
		StartedAt: time.Now().UTC(), Parent: parent.ID, ParentCheckpoint: cp.Name,
		Agents: parent.Agents, AgentsKind: parent.AgentsKind, MaxPayload: parent.MaxPayload, Registry: parent.Registry,
	}
	if e.ID == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new execution id: %w", err)
		}
		e.ID = u.String()
	}
	if f := x.hooks.NewTrace; f != nil {
		// A fork is a new execution: a new trace.
		e.Trace = f("")
	}
	// Hold the fork, and its lease, before it exists: on a store other
	// processes share, an unleased RUNNING execution is theirs to take.
	rctx, ok := x.acquireRun(ctx, e.ID)
	if !ok {
		return nil, fmt.Errorf("execution %s: %w", e.ID, ErrBusy)
	}
	defer x.release(e.ID)
	if _, err := x.lease(rctx, e.ID, false); errors.Is(err, ErrBusy) {
		return nil, fmt.Errorf("%w (%w: another process runs it)", err, ErrExists)
	} else if err != nil {
		return nil, err
	}
	e.secrets = parent.secrets
	if err := x.create(ctx, m, e); err != nil {
		return nil, fmt.Errorf("execution %s: %w", e.ID, err)
	}
	x.hooks.executionStarted(e.ID)
	if opts.Created != nil {
		opts.Created(e.ID)
	}
	// The parent's history says it was forked.
	pr := x.resumed(m, parent, reg)
	pr.ownEvent(Event{Type: EventForkedTo, Detail: map[string]any{"execution": e.ID, "checkpoint": cp.Name}})
	if err := pr.commit(ctx, nil, &Commit{}); err != nil {
		return nil, err
	}
	ctx = rctx
	r := x.newRun(m, e, reg)
	var usage *Usage
	if opts.Restore != RestoreMemory {
		if cp.Invocations != nil {
			r.invocations = maps.Clone(cp.Invocations)
		}
		// The fork continues the parent from the checkpoint: it has spent
		// what the parent had spent there.
		r.usage, usage = spent, &spent
		for _, n := range notices {
			r.notice(n)
		}
	}
	r.event(Event{Type: EventExecutionStarted, Input: e.Input, Document: cp.Document})
	r.ownEvent(Event{Type: EventExecutionForked, State: cp.State, Document: cp.Document, Detail: map[string]any{
		"parent": parent.ID, "checkpoint": cp.Name, "restore": opts.Restore.String(),
	}})
	top := &Scope{Next: cp.Next, Doc: cp.Document, Vars: cp.Variables, Visits: cp.Visits}
	if opts.Restore == RestoreMemory {
		// Only the memory comes from the checkpoint: the fork starts from
		// the beginning.
		top = &Scope{Next: m.StartAt, Doc: e.Input}
	}
	c := &Commit{Status: StatusRunning, Scopes: map[string]*Scope{"": top}, Invocations: maps.Clone(r.invocations), Usage: usage, Memory: memory}
	// The fork has used the namespaces its parent had used by the
	// checkpoint: its own checkpoints snapshot them too.
	for _, ns := range snapshotNamespaces(cp.Memory) {
		if r.useNamespace(ns) {
			c.AddNamespaces = append(c.AddNamespaces, ns)
		}
	}
	if usage != nil {
		c.Notices = slices.Sorted(maps.Keys(r.notices))
	}
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	return r.execute(ctx, top)
}
