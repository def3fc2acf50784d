package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// run drives one execution, started afresh or resumed from its last
// commit. Fields below mu are shared by the goroutines of Map items and
// Parallel branches.
type run struct {
	x      *Executor
	m      *states.Machine
	exec   *Execution // the durable record: id, input, start time, agents
	agents *agents.Registry
	// secrets are what the execution keeps out of what it writes (nil
	// when its machine redacts nothing).
	secrets *secrets
	// children counts the child executions this run started (Workflow
	// states), guarded by mu.
	children int
	// waitingChildren are the children the run's Workflow states parked
	// waiting for (recheckChildren), guarded by mu.
	waitingChildren []string
	// maxPayload is the execution's payload limit in bytes (its own, else
	// the executor's); negative means none.
	maxPayload int
	// inputSize is the execution input's size in bytes (0 without a limit).
	inputSize int
	// loaded holds the scopes found when resuming, by key; each is taken by
	// the machine it belongs to when that machine starts again.
	loaded map[string]*Scope

	mu     sync.Mutex
	events []Event // recorded since the last commit
	// outbox are the webhook events emitted since the last commit
	// (events.go), written with the next.
	outbox []OutboxEntry
	// lastEvent is the id of the last AWS-numbered event: an executor
	// with a store adds to it with mu held, as it records the event.
	lastEvent   atomic.Int64
	lastOwn     int64 // number of the last own event
	invocations map[string]int
	seq         int64
	queue       commitQueue
	// parked lists why machines stopped without ending (a long Wait or
	// Retry delay at the top level, a pending Approval anywhere); the
	// execution is then WAITING.
	parked []parking
	// usage totals the execution's usage so far (committed or not) and
	// notices the one-time budget notices given.
	usage   Usage
	notices map[string]bool
	// namespaces are the memory namespaces the execution has used.
	namespaces map[string]bool
	// lastCheckpoint is the checkpoint of a Checkpoint state that ended
	// the execution, written with its end.
	lastCheckpoint *Checkpoint
	// batched is set when the execution's durability is
	// DurabilityBatched; batchTimer then writes the commits that wait
	// (flushBatch), and batchErr keeps the failure of such a write.
	batched    bool
	batchTimer *time.Timer
	batchErr   error
	// returned is set once execute returned (endWrites): the run writes
	// nothing more.
	returned bool
	// mapRuns are the records of the map runs of the execution's
	// Distributed Maps written by this run, by scope key (distmap.go),
	// kept when the execution ends.
	mapRuns map[string]*Scope
	// failedAt is the top-level machine's position at the state that
	// failed (or was running when the execution timed out), kept in the
	// final commit for Redrive.
	failedAt *Scope
}

// parking is why the top-level machine stopped without ending: it waits
// for a timer (a long Wait or Retry delay) and its position is committed.
type parking struct {
	state string
	what  string
	wake  time.Time
	// approval is the pending Approval, if that is what it waits for.
	approval *PendingApproval
	// activity names the activity whose task it waits for, if any.
	activity string
}

// errParked unwinds the run when the execution stops to wait.
var errParked = errors.New("execution parked")

// scope is one machine being run: the top-level machine, a Map item or a
// Parallel branch. Variables assigned in a scope are visible to it and the
// scopes it encloses; an inner scope reads outer variables but its own
// assignments stay inside it.
type scope struct {
	parent *scope
	// key names the scope durably (see Scope); "" for the top level.
	key string
	// prefix qualifies state names for agents and history ("Map/3/").
	prefix string
	vars   map[string]any
	visits map[string]int
	// item is the Map item being processed, nil outside a Map.
	item *mapItem
	// agg, on a Map item's or a Parallel branch's scope, is the counts of
	// its Map or Parallel, and slot its index there: the progress its
	// agents report goes there (progress.go).
	agg  *counts
	slot int
	// top is true for the execution's own machine.
	top bool
	// discard is set on the items of a Map that keeps no results: their
	// outputs are not recorded when they end.
	discard bool
	// resume is the step progress loaded for the first state to run, if
	// the scope was resumed in the middle of a state.
	resume *StepProgress
	// callsMu guards calls, usage and notices while a simultaneous Debate round's
	// calls end together.
	callsMu sync.Mutex
	// calls counts, per agent, the calls this scope made whose results are
	// not committed yet: the commit that makes a result durable adds its
	// call to the execution's counters, so that a call repeated after a
	// crash keeps its invocation number.
	calls map[string]int
	// usage and notices are the uncommitted usage of those calls and the
	// budget notices they gave, committed with them.
	usage   *Usage
	notices []string
	// memory are the memory writes of the states completed since the
	// scope's last commit, committed with their completion; namespaces
	// the memory namespaces first used since.
	memory     []MemoryWrite
	namespaces []string
	// sizes remembers the sizes of large parts of this scope's documents;
	// sizesMu guards it, as the scope's documents may be measured by
	// several goroutines at once (a Map's items, a simultaneous Debate
	// round's agents): use sizeWithin.
	sizesMu sync.Mutex
	sizes   jsonvalue.SizeCache
	// plain remembers the parts of this scope's documents that hold no
	// packed array, for the agents it calls.
	plain plainCache
	// spare is the stateRun of the scope's last state, when nothing holds
	// it any more (see reusable): the next state runs with it.
	spare *stateRun
}

// sizeWithin measures v against limit through the scope's size cache
// (jsonvalue.SizeCache.Within); safe for concurrent use.
func (sc *scope) sizeWithin(v any, limit int) (int, bool) {
	sc.sizesMu.Lock()
	defer sc.sizesMu.Unlock()
	return sc.sizes.Within(v, limit)
}

// settle hands the scope's uncommitted calls, usage, budget notices and
// memory writes to
// a commit it makes (the commit that makes the calls' outcomes durable),
// and forgets them. It returns c.
func (s *scope) settle(c *Commit) *Commit {
	c.AddInvocations, c.AddUsage, c.Notices, c.Memory, c.AddNamespaces = s.calls, s.usage, s.notices, s.memory, s.namespaces
	s.calls, s.usage, s.notices, s.memory, s.namespaces = nil, nil, nil, nil, nil
	return c
}

type mapItem struct {
	index int
	value any
}

func (s *scope) lookup(name string) (any, bool) {
	for sc := s; sc != nil; sc = sc.parent {
		if v, ok := sc.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// assign sets variables in this scope. Values are computed by the caller
// before any is set, so a state's assignments all see the values from its
// entry. The map is replaced, never modified, so a committed set of
// variables stays as it was.
func (s *scope) assign(values map[string]any) {
	if len(values) == 0 {
		return
	}
	vars := make(map[string]any, len(s.vars)+len(values))
	maps.Copy(vars, s.vars)
	maps.Copy(vars, values)
	s.vars = vars
}

// visit counts an entry into state name and returns its visit number.
// (The map is modified in place: commits encode it before they return.)
func (s *scope) visit(name string) int {
	if s.visits == nil {
		s.visits = make(map[string]int)
	}
	s.visits[name]++
	return s.visits[name]
}

// position is the durable record of the scope about to run state next on
// doc.
func (s *scope) position(next string, doc any, step *StepProgress) *Scope {
	return &Scope{Next: next, Doc: doc, Vars: s.vars, Visits: s.visits, Step: step}
}

// env is what paths and templates see while one state runs: the context
// object and the variables. It implements jsonpath.Env.
type env struct {
	r         *run
	sc        *scope
	state     string
	entered   time.Time
	retry     int
	item      *mapItem
	ctxObject map[string]any
	// token is the task token of a .waitForTaskToken Task's attempt
	// ($$.Task.Token); empty for other states.
	token string
	// chance is set when the state read something that could differ on
	// another run of it: the context object, or a random draw.
	chance bool
}

// Drew implements jsonpath.Chance.
func (e *env) Drew() { e.chance = true }

// Bounds implements jsonpath.Bounded: the executor's Config.JSONPathBounds.
func (e *env) Bounds() jsonpath.Bounds { return e.r.x.pathBounds }

func (e *env) Variable(name string) (any, bool) { return e.sc.lookup(name) }

func (e *env) Context() any {
	e.chance = true
	if e.ctxObject != nil {
		return e.ctxObject
	}
	x := e.r.exec
	e.r.mu.Lock()
	usage := e.r.usage
	e.r.mu.Unlock()
	obj := map[string]any{
		"Execution": map[string]any{
			"Id":         x.ID,
			"Name":       x.ID,
			"Input":      x.Input,
			"StartTime":  formatTime(x.StartedAt),
			"Cost":       jsonvalue.FloatNumber(usage.Cost),
			"TokensUsed": jsonvalue.IntNumber(usage.Tokens),
		},
		"StateMachine": map[string]any{
			"Id":   x.MachineName,
			"Name": x.MachineName,
		},
		"State": map[string]any{
			"Name":        e.state,
			"EnteredTime": formatTime(e.entered),
			"RetryCount":  jsonvalue.IntNumber(int64(e.retry)),
		},
	}
	if e.token != "" {
		obj["Task"] = map[string]any{"Token": e.token}
	}
	if e.item != nil {
		obj["Map"] = map[string]any{
			"Item": map[string]any{
				"Index": jsonvalue.IntNumber(int64(e.item.index)),
				"Value": e.item.value,
			},
		}
	}
	e.ctxObject = obj
	return obj
}

var _ jsonpath.Env = (*env)(nil)

// formatTime writes t as AWS writes context-object times.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

var errExecutionTimeout = errors.New("execution timed out")

// execute runs the top-level machine from top (its position: the start, or
// where the execution was last committed) until it ends or parks.
func (r *run) execute(ctx context.Context, top *Scope) (*Result, error) {
	defer r.endWrites()
	if r.m.TimeoutSeconds > 0 {
		deadline := timeoutFrom(r.exec).Add(time.Duration(r.m.TimeoutSeconds) * time.Second)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, errExecutionTimeout)
		defer cancel()
	}
	sc := &scope{top: true, vars: top.Vars, visits: top.Visits, resume: top.Step}
	var (
		out any
		err error
	)
	switch {
	case top.Next == "":
		// Nothing left to run (a rollback to a checkpoint that ended it).
		out = top.Doc
	default:
		out, err = r.machine(ctx, r.m, sc, top.Next, top.Doc, unknownSize)
	}
	res := &Result{ID: r.exec.ID}
	var stop *stopRequest
	switch {
	case err != nil && errors.As(context.Cause(ctx), &stop):
		// Stopped (Executor.Stop): whatever the run was doing, parked
		// machines included, the execution ends as ABORTED.
		res.Status, res.Error, res.Cause = StatusAborted, stop.errName, stop.cause
		r.event(Event{Type: EventExecutionAborted, Error: res.Error, Cause: res.Cause, Document: top.Doc})
		r.emitEnd(res)
	case errors.Is(err, errParked):
		res, err := r.parkExecution(ctx, res)
		if err == nil {
			r.x.recheckChildren(ctx, r)
		}
		return res, err
	case err == nil:
		res.Status, res.Output = StatusSucceeded, out
		r.event(Event{Type: EventExecutionSucceeded, Output: out, Document: out})
		r.emitEnd(res)
	case errors.Is(context.Cause(ctx), errExecutionTimeout):
		res.Status, res.Error, res.Cause = StatusTimedOut, string(asl.ErrTimeout), "the execution timed out"
		r.event(Event{Type: EventExecutionTimedOut, Error: res.Error, Cause: res.Cause, Document: top.Doc})
		r.emitEnd(res)
	default:
		var ae *asl.Error
		if !errors.As(err, &ae) {
			// An engine failure (store, cancelled context): not an outcome of
			// the execution, which stays RUNNING and can be resumed. A run
			// stopped on purpose (cancelled, drained) writes the commits
			// still waiting, so that it resumes from all it did; one whose
			// lease was lost writes nothing more (it would be refused).
			lost := errors.Is(context.Cause(ctx), ErrLeaseLost)
			if (ctx.Err() != nil || errors.Is(err, ErrDrained)) && !lost {
				if ferr := r.flush(context.WithoutCancel(ctx)); ferr != nil {
					r.x.log.Warn("the commits of a run that stopped could not be written: it resumes from its last commit", "execution", r.exec.ID, "error", ferr)
				}
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				if lost {
					// Another process runs the execution now.
					return nil, context.Cause(ctx)
				}
				return nil, fmt.Errorf("execution %s: %w", r.exec.ID, ctxErr)
			}
			return nil, fmt.Errorf("execution %s: %w", r.exec.ID, err)
		}
		res.Status, res.Error, res.Cause = StatusFailed, string(ae.Name), ae.Cause
		e := Event{Type: EventExecutionFailed, Error: res.Error, Cause: res.Cause, Document: top.Doc}
		if errors.As(ae, &res.Payload) {
			e.Detail = map[string]any{"state": res.Payload.State, "size": jsonvalue.IntNumber(int64(res.Payload.Size)), "limit": jsonvalue.IntNumber(int64(res.Payload.Limit))}
		}
		r.event(e)
		r.emitEnd(res)
	}
	c := &Commit{
		Status: res.Status, Output: res.Output, Error: res.Error, Cause: res.Cause, StoppedAt: time.Now().UTC(),
		Scopes:     map[string]*Scope{"": {Done: true, Failed: res.Status != StatusSucceeded, Output: res.Output, Error: res.Error, Cause: res.Cause}},
		DropScopes: []string{""},
		Transition: &Transition{Status: res.Status, Output: res.Output, Error: res.Error, Cause: res.Cause},
	}
	r.keepMapRuns(c)
	if res.Status == StatusSucceeded {
		c.Checkpoint = r.lastCheckpoint
	} else {
		keepFailedPosition(c.Scopes[""], r.failedAt)
	}
	if err := r.commit(context.WithoutCancel(ctx), nil, sc.settle(c)); err != nil {
		return nil, err
	}
	r.x.settled(r.exec.ID)
	r.x.hooks.executionFinished(r.exec.ID, res.Status)
	r.x.wakeParent(ctx, r.exec)
	if r.secrets != nil {
		// What the run returns leaves the engine as the store has it.
		res.Output, res.Error, res.Cause = r.secrets.stored(res.Output), r.secrets.text(res.Error), r.secrets.text(res.Cause)
	}
	if stop != nil {
		stop.res = res
	}
	return res, nil
}

// machine runs a (possibly nested) machine in scope sc from state next on
// doc, and returns its output or the *asl.Error it failed with. Every state
// that completes commits the scope's new position, so that a resumed
// execution continues after it.
//
// size is an upper bound of doc's size in bytes of compact JSON; each state
// passes on a bound of its output and measures a document only when its
// bound passes the payload limit (see size.go).
func (r *run) machine(ctx context.Context, m *states.Machine, sc *scope, next string, doc any, size int) (any, error) {
	if size == unknownSize && r.maxPayload >= 0 {
		n, ok := sc.sizeWithin(doc, r.maxPayload)
		if !ok {
			n = r.maxPayload
		}
		size = n
	}
	for {
		if err := context.Cause(ctx); err != nil {
			sc.keepFailed(r, next, doc)
			return nil, err
		}
		if r.x.draining.Load() {
			// Stop at this boundary, as a process that stops here would:
			// the execution stays at its last commit.
			return nil, ErrDrained
		}
		st := m.States[next]
		s, err := r.step(ctx, st, doc, size, sc)
		if err != nil {
			sc.keepFailed(r, next, doc)
			return nil, err
		}
		if s.next == "" {
			// The caller commits how the machine ended (with the
			// checkpoint of a Checkpoint state that ends it).
			if sc.top {
				r.lastCheckpoint = s.checkpoint
			}
			return s.output, nil
		}
		next, doc, size = s.next, s.output, s.size
	}
}

// stepResult is what running one state produced.
type stepResult struct {
	// output is the state's output: the next state's input.
	output any
	// proposed is the document after ResultPath, before OutputPath.
	proposed any
	// next is the state to run next, "" when the machine ends.
	next string
	// size bounds the output's size (see run.machine).
	size int
	// drop lists the scope prefixes of nested machines this state ran,
	// removed when its completion is committed.
	drop []string
	// checkpoint is the snapshot a Checkpoint state writes.
	checkpoint *Checkpoint
	// wrote is set when the state wrote its document (ResultPath, a
	// Catch's ResultPath, an Approval's decision): the commit point then
	// checks the change from prev (its raw input) to proposed.
	wrote bool
	prev  any
}

// step runs one state: it records its entry, runs it (with Retry and
// Catch), applies its Assign, and records its exit.
func (r *run) step(ctx context.Context, st states.State, input any, size int, sc *scope) (stepResult, error) {
	c := st.Base()
	audit := auditOf(st)
	traced := audit.Traced()
	if f := r.x.hooks.StateEntered; f != nil && traced {
		ctx = f(ctx, r.exec.ID, r.exec.Trace, sc.prefix, c.Name)
	}
	visit := sc.visit(c.Name)
	var progress *StepProgress
	if p := sc.resume; p != nil {
		sc.resume = nil
		if p.Visit == visit {
			progress = p
		}
	}
	now := time.Now().UTC()
	var entered int64
	if progress != nil && progress.Entered > 0 {
		// Resumed in the middle of the state: it was entered before.
		entered = progress.Entered
	} else {
		if r.x.durable {
			entered = r.eventAt(Event{Type: eventType(c.Type, true), Timestamp: now, State: c.Name, Scope: sc.prefix, Input: input, Document: input})
		} else {
			entered = r.numberEvent()
		}
		r.emitState("entered", c, sc.prefix, input)
	}
	h := sc.newStateRun()
	h.r, h.ctx, h.sc, h.entered, h.st, h.inSize, h.visit, h.progress, h.raw = r, ctx, sc, entered, st, size, visit, progress, input
	h.envData.r, h.envData.sc, h.envData.state, h.envData.entered, h.envData.item = r, sc, c.Name, now, sc.item
	h.auditEntered(audit, input)
	h.env = &h.envData
	if progress != nil {
		h.env.retry = progress.Attempt
	}
	// Every way a state completes ends at the commit point (completed),
	// inside the Retry and Catch of the states that have them, so that a
	// write governance refuses is an error of the attempt. (The functions
	// below are called, not kept: they stay on the stack.)
	var (
		res stepResult
		err error
	)
	switch s := st.(type) {
	case *states.Pass:
		res, err = h.attempt(ctx, func(ctx context.Context) (stepResult, error) { return h.pass(ctx, s, input) })
	case *states.Task:
		res, err = h.feedbackGate(ctx, s, func(ctx context.Context) (stepResult, error) {
			return h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) {
				return h.attempt(ctx, func(ctx context.Context) (stepResult, error) { return h.task(ctx, s, input) })
			})
		})
	case *states.Choice:
		res, err = h.completed(ctx, func(ctx context.Context) (stepResult, error) { return h.choice(ctx, s, input) })
	case *states.Wait:
		res, err = h.completed(ctx, func(ctx context.Context) (stepResult, error) { return h.wait(ctx, s, input) })
	case *states.Succeed:
		res, err = h.completed(ctx, func(ctx context.Context) (stepResult, error) { return h.succeed(ctx, s, input) })
	case *states.Fail:
		err = h.fail(ctx, s, input)
	case *states.Map:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) {
			return h.attempt(ctx, func(ctx context.Context) (stepResult, error) { return h.mapState(ctx, s, input) })
		})
	case *states.Parallel:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) {
			return h.attempt(ctx, func(ctx context.Context) (stepResult, error) { return h.parallel(ctx, s, input) })
		})
	case *states.Checkpoint:
		res, err = h.completed(ctx, func(ctx context.Context) (stepResult, error) { return h.checkpoint(ctx, s, input) })
	case *states.Debate:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) {
			return h.attempt(ctx, func(ctx context.Context) (stepResult, error) { return h.debate(ctx, s, input) })
		})
	case *states.Approval:
		res, err = h.withRetry(ctx, input, nil, s.Catch, func(ctx context.Context) (stepResult, error) {
			return h.completed(ctx, func(ctx context.Context) (stepResult, error) { return h.approvalState(ctx, s, input) })
		})
	case *states.Workflow:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) {
			return h.attempt(ctx, func(ctx context.Context) (stepResult, error) { return h.workflowState(ctx, s, input) })
		})
	default:
		err = asl.Errorf(asl.ErrNotImplemented, "state %q: %s states are not implemented yet", c.Name, c.Type)
	}
	if err != nil && isSkip(err) {
		// SKIP_NODE: none of the state's writes, its variables included;
		// its input goes on to its Next unchanged.
		h.assign, h.memWrites = nil, nil
		res = stepResult{output: input, proposed: input, next: c.Next, size: size}
		err = h.complete(ctx, &res)
	}
	if err != nil && ctx.Err() == nil {
		// Declared here: errors.As makes it escape, and a state that
		// succeeds allocates nothing for it.
		var ae *asl.Error
		if errors.As(err, &ae) {
			r.emitState("failed", c, sc.prefix, map[string]any{"Error": string(ae.Name), "Cause": ae.Cause})
		}
	}
	if f := r.x.hooks.StateEnded; f != nil && traced {
		waiting, failed := errors.Is(err, errParked), err
		if waiting {
			failed = nil
		}
		f(ctx, r.exec.ID, sc.prefix, c.Name, waiting, r.secrets.maskError(failed))
	}
	h.auditEnded(ctx, audit, now, input, &res, err)
	if err != nil {
		return stepResult{}, err
	}
	if reusable(st) {
		sc.spare = h
	}
	return res, nil
}

// completed runs one attempt of a state and, when it succeeds, the commit
// point of its completion.
func (h *stateRun) completed(ctx context.Context, run func(context.Context) (stepResult, error)) (stepResult, error) {
	res, err := run(ctx)
	if err != nil {
		return stepResult{}, err
	}
	return res, h.complete(ctx, &res)
}

// newStateRun returns the scope's spare stateRun (see reusable), or a new
// one.
func (s *scope) newStateRun() *stateRun {
	if h := s.spare; h != nil {
		s.spare = nil
		h.clear()
		return h
	}
	return new(stateRun)
}

// reusable reports whether the stateRun of a state of st's kind that
// succeeded can run the scope's next state: nothing holds it once the
// state ended. A state that calls agents (which may keep their request,
// and through it the stateRun), runs nested machines, waits, reads agent
// memory or evaluates JSONata does not give its stateRun back.
func reusable(st states.State) bool {
	switch s := st.(type) {
	case *states.Pass:
		return !s.JSONata() && s.Memory == nil
	case *states.Choice:
		return !s.JSONata()
	case *states.Succeed:
		return !s.JSONata()
	}
	return false
}

// park commits the machine's position with the state's progress (a delay
// until wake, a pending Approval) and unwinds the machine: a Map or a
// Parallel lets its other items and branches go on, then unwinds too, and
// the execution stops as WAITING (parkExecution). wake is when to be
// woken, zero for never (an Approval without Timeout).
func (h *stateRun) park(ctx context.Context, what string, wake time.Time, progress *StepProgress) error {
	r := h.r
	if d, ok := ctx.Deadline(); ok && (wake.IsZero() || d.Before(wake)) {
		// The execution times out before the wait ends: be woken then.
		wake = d
	}
	progress.Entered = h.entered
	c := &Commit{Scopes: map[string]*Scope{h.sc.key: h.sc.positionBefore(h.name(), h.raw, progress)}}
	if err := r.commit(ctx, nil, h.sc.settle(c)); err != nil {
		return err
	}
	r.mu.Lock()
	p := parking{state: h.qualified(), what: what, wake: wake, approval: progress.Approval}
	if cb := progress.Callback; cb != nil && cb.StartedAt.IsZero() {
		p.activity = cb.Activity
	}
	r.parked = append(r.parked, p)
	r.mu.Unlock()
	h.parkedSelf = true
	return errParked
}

// parkExecution commits the execution as WAITING for what its machines
// parked on, to be woken at the earliest of their wake-up times.
func (r *run) parkExecution(ctx context.Context, res *Result) (*Result, error) {
	res.Status = StatusWaiting
	var whats []string
	for _, p := range r.parked {
		if res.State == "" {
			res.State = p.state
		}
		if !slices.Contains(whats, p.what) {
			whats = append(whats, p.what)
		}
		if !p.wake.IsZero() && (res.WakeAt.IsZero() || p.wake.Before(res.WakeAt)) {
			res.WakeAt = p.wake
		}
		if p.approval != nil {
			res.Approvals = append(res.Approvals, *p.approval)
		}
	}
	res.WaitingFor = strings.Join(whats, ", ")
	c := &Commit{Status: StatusWaiting, WakeAt: res.WakeAt, WaitingFor: res.WaitingFor}
	if err := r.commit(context.WithoutCancel(ctx), nil, c); err != nil {
		return nil, err
	}
	r.x.settled(r.exec.ID)
	var activities []string
	for _, p := range r.parked {
		if p.activity != "" {
			activities = append(activities, p.activity)
		}
	}
	r.x.acts.parked(r.exec.ID, activities)
	return res, nil
}

// positionBefore is the durable record of the scope while state name runs
// on raw with progress: the visit being run is not counted yet, so that
// resuming enters the state again with the same visit number.
func (s *scope) positionBefore(name string, raw any, progress *StepProgress) *Scope {
	visits := maps.Clone(s.visits)
	if visits[name] > 0 {
		visits[name]--
	}
	return &Scope{Next: name, Doc: raw, Vars: s.vars, Visits: visits, Step: progress}
}
