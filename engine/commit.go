package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/states"
)

// Transition is one step of an execution handed to the commit point: the
// state that ran, its raw input (previous document), the document after
// ResultPath (proposed), the output handed to the next state, and where the
// run goes next. Execution start and end are transitions too.
type Transition struct {
	// State is the state that produced this transition, "" for the
	// execution's start and end.
	State string
	// Next is the state to run next, "" when the execution ends.
	Next string
	// Previous is the state's raw input; Proposed the document after
	// ResultPath, before OutputPath; Output the document after OutputPath.
	Previous any
	Proposed any
	Output   any
	// Variables are the execution's top-level variables after the step.
	Variables map[string]any
	// Status is the execution's status after the step.
	Status Status
	// Error and Cause are set when the execution failed.
	Error string
	Cause string
}

// commitQueue orders the commits of one execution: commits made while one
// is being written are merged into the next, so the goroutines of a Map or
// Parallel share transactions (and the store may batch them with other
// executions'), while every commit still reaches the store in order.
type commitQueue struct {
	cond      *sync.Cond // on run.mu
	writing   bool       // a commit is being written
	pending   *Commit    // merged commits waiting to be written
	queued    uint64     // generation of the newest merged commit
	written   uint64     // generation of the newest written commit
	errorGens map[uint64]error
}

// commit is the single commit point: every change of an execution passes
// here — a state's completion, its progress between attempts, a parked
// Wait or Approval, a checkpoint, a decision, a rollback, the execution's
// end — and the run advances only after it returns nil. In this order:
//
//  1. The guard. A state that wrote its document (e is its completion, with
//     res.wrote) has the change from its raw input to the proposed document
//     checked at the top level against the workflow's Guard: strict JSON,
//     the JSON Schema, the transition rules.
//  2. The write policy: the workflow's WritePolicy at the top level, then
//     the state's own WritePolicy at any level (inside a Map item or a
//     Parallel branch only the latter: the workflow's rules apply when the
//     Map or Parallel result is written into the execution's document).
//     Steps 1 and 2 are one pass of governance.Rules.Check over the
//     document's changes. A refusal records a GovernanceViolation event and
//     returns the governance error (or a *skipNode under SKIP_NODE):
//     nothing of the state's completion is applied or written, and the
//     state's Retry, Catch or the workflow's OnViolation decide what follows.
//  3. The state exits: its Assign, its memory writes and its Exited event
//     are applied, and its new position (the next state, its input, the
//     variables) is added to c.
//  4. The store: c is written in one transaction, with the history events
//     recorded since the last commit and the calls, usage and memory writes
//     the scope made since (merged with the other commits of the execution
//     made meanwhile, see commitLocked). An executor without a store keeps
//     nothing; a completion that ends its machine writes nothing either (the
//     caller commits how the machine ended).
//
// Two other changes of the document are checked by the guard before they
// reach this point, since nothing of them exists to commit until they pass:
// the execution's input (checkInput, before the execution is created) and
// the document a rollback or a fork starts from (checkTarget).
//
// c's Scopes, DropScopes, Checkpoint, status and transition are applied
// with the events recorded so far and the current counters.
func (r *run) commit(ctx context.Context, e *stateExit, c *Commit) error {
	if e != nil {
		if err := e.h.check(e.res); err != nil {
			return err
		}
		if !e.h.exit(e.res, c) {
			return nil
		}
	}
	if !r.x.durable {
		return nil
	}
	// The queue keeps a copy: c itself stays the caller's (and on its
	// stack when it can).
	queued := new(Commit)
	*queued = *c
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deferrable(e, c) {
		return r.deferLocked(ctx, queued)
	}
	return r.commitLocked(ctx, queued)
}

// maxDeferredEvents bounds the history a run keeps unwritten: a long run of
// pure states (a Map of many pure items) is written in batches of about
// this many events, so that its memory does not grow with its length.
const maxDeferredEvents = 512

// deferrable reports whether commit c (of completion e, nil for other
// commits) may wait for the next commit instead of being written now.
//
// Under every durable mode, the completion of a state without effects —
// Pass (without agent memory), Choice, Succeed, a Wait that did not park —
// that read nothing that could differ on another run (the context object,
// a random draw) waits:
// a resumed execution runs it again from the last commit and gets the same
// result. So does a nested machine's end (its Map item's or Parallel
// branch's output), which running its pure states again gives back. Under
// DurabilityBatched the completion of any state waits too, up to the batch
// window (flushBatch). How an execution ends or parks, a checkpoint, a
// rollback, a redrive and a state's progress between attempts are written
// at once in every mode.
func (r *run) deferrable(e *stateExit, c *Commit) bool {
	if c.Status != "" && c.Status != StatusRunning || c.Checkpoint != nil || c.Rollback != nil || !c.Redriven.IsZero() {
		return false
	}
	if e == nil {
		return c.nestedEnd || c.journalStep && r.batched
	}
	if r.batched {
		return true
	}
	if e.h.envData.chance || len(c.Memory) > 0 || len(c.AddNamespaces) > 0 {
		return false
	}
	switch s := e.h.st.(type) {
	case *states.Pass:
		// Agent memory is shared with other executions: reading it is
		// not the same on another run, and writing it is an effect.
		return s.Memory == nil
	case *states.Choice, *states.Succeed, *states.Wait:
		return true
	}
	return false
}

// deferLocked adds c to the commits waiting to be written with r.mu held.
// c's scopes are the scopes' positions now: the visits they count are
// copied, since their scopes go on counting in place.
func (r *run) deferLocked(ctx context.Context, c *Commit) error {
	for _, s := range c.Scopes {
		if s.Visits != nil {
			s.Visits = maps.Clone(s.Visits)
		}
	}
	if err := r.batchErr; err != nil {
		return err
	}
	r.queue.pending = mergeCommit(r.queue.pending, c)
	if len(r.events) >= maxDeferredEvents {
		return r.commitLocked(ctx, &Commit{})
	}
	if r.batched && r.batchTimer == nil {
		r.batchTimer = time.AfterFunc(r.x.batchWindow, r.flushBatch)
	}
	return nil
}

// flushBatch writes the commits of a batched run that waited for the batch
// window. A failure is kept and returned by the run's next commit. A run
// that has returned (endWrites) writes nothing more.
func (r *run) flushBatch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batchTimer = nil
	if r.returned || r.queue.pending == nil && len(r.events) == 0 {
		return
	}
	if err := r.commitLocked(context.Background(), &Commit{}); err != nil && r.batchErr == nil {
		r.batchErr = err
	}
}

// endWrites ends the writes of a run that returns: the batch window's
// timer is stopped and a write in flight is waited for, so that no commit
// of the run reaches the store after it returned. What waits unwritten
// then (the commits a failed commit kept) is lost, as in a process that
// died: the execution resumes from its last commit, and a later write
// would land behind the back of whoever runs it next (a Resume, another
// server that took it over), over commits of theirs.
func (r *run) endWrites() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.returned = true
	if r.batchTimer != nil {
		r.batchTimer.Stop()
		r.batchTimer = nil
	}
	for r.queue.writing {
		r.queue.cond.Wait()
	}
}

// flush writes whatever waits to be written: a run that stops without
// ending (its context cancelled, the executor drained) keeps all it did.
// Its error is the store's, already logged by the caller's path.
func (r *run) flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queue.pending == nil && len(r.events) == 0 {
		return nil
	}
	return r.commitLocked(ctx, &Commit{})
}

// flushMemory writes the run's deferred commits when they hold memory
// writes (batched durability defers them), so that the execution's
// memory reads see its own writes.
func (r *run) flushMemory(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.returned || r.queue.pending == nil || len(r.queue.pending.Memory) == 0 {
		return nil
	}
	return r.commitLocked(ctx, &Commit{})
}

// stateExit is a state's completion handed to the commit point.
type stateExit struct {
	h   *stateRun
	res *stepResult
}

// complete commits the completion of the state's attempt: res is what it
// produced. It returns the commit point's refusal, if any.
func (h *stateRun) complete(ctx context.Context, res *stepResult) error {
	return h.r.commit(ctx, &stateExit{h: h, res: res}, &Commit{})
}

// check is the guard and the write policy of the commit point (steps 1
// and 2 of commit) for the state's result res. It returns nil, the
// governance error, or a *skipNode under SKIP_NODE.
func (h *stateRun) check(res *stepResult) error {
	if !res.wrote || !h.governed() {
		return nil
	}
	var v *governance.Violation
	if h.sc.top {
		// The workflow's Guard (schema, transition rules), then its
		// WritePolicy.
		v = h.r.rules().Check(res.prev, res.proposed, h.name())
	}
	if own := h.st.Base().WritePolicy; v == nil && own != nil {
		v = own.Check(res.prev, res.proposed, h.name())
	}
	if v == nil {
		return nil
	}
	return h.violated(v)
}

// exit applies an accepted completion (step 3 of commit): the state's
// variables, memory writes and Exited event, and adds the scope's new
// position to c. It reports whether c has anything to store.
func (h *stateRun) exit(res *stepResult, c *Commit) bool {
	r, sc := h.r, h.sc
	if h.assign != nil {
		sc.assign(h.assign)
		h.assign = nil
	}
	h.commitMemory()
	if r.x.durable {
		r.event(Event{Type: eventType(h.st.Base().Type, false), State: h.name(), Scope: sc.prefix, Output: res.output, Document: res.output})
	} else {
		r.numberEvent()
	}
	h.feedbackRequested(res.output)
	r.emitState("exited", h.st.Base(), sc.prefix, res.output)
	if f := r.x.hooks.StateExited; f != nil {
		f(r.exec.ID, h.qualified())
	}
	res.drop = append(res.drop, h.drop...)
	if res.checkpoint != nil {
		sc.checkpointDone(res.checkpoint)
	}
	if res.next == "" || !r.x.durable {
		return false
	}
	c.Scopes = map[string]*Scope{sc.key: sc.position(res.next, res.output, nil)}
	if pf := h.feedbackWait(res); pf != nil {
		// A Task that waits for feedback stays where it is, waiting, in
		// the commit of its completion: a crash right after it resumes
		// the wait, never the states after the Task.
		c.Scopes[sc.key] = sc.positionBefore(h.name(), h.raw, &StepProgress{Visit: h.visit, Entered: h.entered, Feedback: pf})
	}
	c.DropScopes, c.Checkpoint = res.drop, res.checkpoint
	sc.settle(c)
	if sc.top {
		c.Status = StatusRunning
		c.Transition = &Transition{Status: StatusRunning, State: h.name(), Next: res.next, Previous: h.raw, Proposed: res.proposed, Output: res.output, Variables: sc.vars}
	}
	return true
}

// checkInput is the guard of an execution's input, before the execution is
// created: an input the workflow's schema refuses is an error wrapping
// ErrInvalidInput and a *GovernanceError, and no execution exists.
func checkInput(m *states.Machine, input any) error {
	var rules *governance.Rules
	if e := m.Extensions; e != nil {
		rules = e.Governance
	}
	if v := rules.CheckDocument(input); v != nil {
		return fmt.Errorf("%w: %w", ErrInvalidInput, &GovernanceError{Violation: v})
	}
	return nil
}

// checkTarget is the guard of the document a rollback or a fork starts
// from: the workflow's schema (the transition rules need a previous
// document, which a restored one does not have).
func checkTarget(rules *governance.Rules, id, checkpoint string, doc any) error {
	if v := rules.CheckDocument(doc); v != nil {
		return fmt.Errorf("execution %s checkpoint %q: its document does not pass the workflow's guard: %w", id, checkpoint, &GovernanceError{Violation: v})
	}
	return nil
}

// GovernanceError is a document the workflow's governance refused outside a
// state (an execution's input, a checkpoint's document to roll back to).
type GovernanceError struct {
	Violation *governance.Violation
}

func (e *GovernanceError) Error() string {
	return fmt.Sprintf("%s: %s", e.Violation.Name, e.Violation.Cause)
}

// commitLocked commits with r.mu held (it releases it while writing).
func (r *run) commitLocked(ctx context.Context, c *Commit) error {
	q := &r.queue
	if q.cond == nil {
		q.cond = sync.NewCond(&r.mu)
	}
	if c.Checkpoint != nil {
		c.Checkpoint.LastEvent, c.Checkpoint.LastOwnEvent = r.lastEvent.Load(), r.lastOwn
		c.Checkpoint.Invocations = maps.Clone(r.invocations)
		c.Checkpoint.Budget = checkpointBudget(r.usage, slices.Sorted(maps.Keys(r.notices)))
	}
	q.pending = mergeCommit(q.pending, c)
	q.queued++
	gen := q.queued
	for q.writing && q.written < gen {
		q.cond.Wait()
	}
	if q.written >= gen {
		return q.errorOf(gen)
	}
	// This goroutine writes everything merged so far.
	q.writing = true
	for q.written < q.queued {
		next := q.pending
		upTo := q.queued
		q.pending = nil
		r.seq++
		next.Execution, next.Seq = r.exec.ID, r.seq
		next.Events, next.Outbox = r.events, r.outbox
		next.LastEvent, next.LastOwnEvent = r.lastEvent.Load(), r.lastOwn
		if r.dropsHistory(next) {
			next.DropHistory = true
		}
		r.events, r.outbox = nil, nil
		r.mu.Unlock()
		err := r.storeCommit(ctx, next)
		r.mu.Lock()
		if err != nil {
			// Nothing of it was written: keep all of it, its history and
			// the scopes it moves, for the next commit (the one that
			// records how the execution stopped, or another branch's).
			// Its history alone would record a completion whose scope
			// does not move past it: a resume would run the state again.
			r.events = append(next.Events, r.events...)
			r.outbox = append(next.Outbox, r.outbox...)
			next.Events, next.Outbox = nil, nil
			if q.pending == nil {
				q.pending = next
			} else {
				q.pending = mergeCommit(next, q.pending)
			}
			err = fmt.Errorf("commit execution %s step %d: %w", r.exec.ID, next.Seq, err)
			if q.errorGens == nil {
				q.errorGens = make(map[uint64]error)
			}
			for g := q.written + 1; g <= upTo; g++ {
				q.errorGens[g] = err
			}
		}
		q.written = upTo
		q.cond.Broadcast()
	}
	q.writing = false
	return q.errorOf(gen)
}

// dropsHistory reports whether commit c drops the execution's history
// (Commit.DropHistory): never when the executor keeps children's histories
// (Config.KeepChildHistory); with every commit of an execution that
// started without one or whose history was dropped already (an EXPRESS
// child of a Distributed Map, which keeps none); with the commit that ends
// a Distributed Map's STANDARD child SUCCEEDED. A child that fails, times
// out, is aborted or waits keeps its history, for its redrive and its
// diagnosis.
func (r *run) dropsHistory(c *Commit) bool {
	if r.x.keepChildHistory {
		return false
	}
	if r.exec.HistoryDropped {
		return true
	}
	if c.Status != StatusSucceeded {
		return false
	}
	_, child := MapRunOf(r.exec.ID, r.exec.Parent)
	return child
}

// storeCommit writes c to the store, timed for the Committed hook.
func (r *run) storeCommit(ctx context.Context, c *Commit) error {
	f := r.x.hooks.Committed
	start := time.Now()
	err := r.x.store.Commit(ctx, r.secrets.commit(c))
	if f != nil {
		f(time.Since(start), err)
	}
	if err == nil {
		r.x.vectors.committed(c.Memory)
	}
	return err
}

func (q *commitQueue) errorOf(gen uint64) error {
	err, ok := q.errorGens[gen]
	if ok {
		delete(q.errorGens, gen)
	}
	return err
}

// mergeCommit folds c into pending (which comes first) and returns the
// merged commit.
func mergeCommit(pending, c *Commit) *Commit {
	if pending == nil {
		// c was made for this commit and is not used after it: keep it,
		// making sure later merges cannot write into what it shares.
		c.DropScopes = c.DropScopes[:len(c.DropScopes):len(c.DropScopes)]
		c.AddInvocations = maps.Clone(c.AddInvocations)
		c.Notices = c.Notices[:len(c.Notices):len(c.Notices)]
		c.Memory = c.Memory[:len(c.Memory):len(c.Memory)]
		c.AddNamespaces = c.AddNamespaces[:len(c.AddNamespaces):len(c.AddNamespaces)]
		return c
	}
	for _, prefix := range c.DropScopes {
		for k := range pending.Scopes {
			if strings.HasPrefix(k, prefix) {
				delete(pending.Scopes, k)
			}
		}
		pending.DropScopes = append(pending.DropScopes, prefix)
	}
	if len(c.Scopes) > 0 {
		if pending.Scopes == nil {
			pending.Scopes = make(map[string]*Scope, len(c.Scopes))
		}
		maps.Copy(pending.Scopes, c.Scopes)
	}
	for agent, n := range c.AddInvocations {
		if pending.AddInvocations == nil {
			pending.AddInvocations = make(map[string]int)
		}
		pending.AddInvocations[agent] += n
	}
	if c.Invocations != nil {
		pending.Invocations = c.Invocations
	}
	if c.Usage != nil {
		pending.Usage = c.Usage
	}
	if c.AddUsage != nil {
		sum := *c.AddUsage
		sum.Add(pending.AddUsage)
		pending.AddUsage = &sum
	}
	pending.Notices = append(pending.Notices, c.Notices...)
	pending.Memory = append(pending.Memory, c.Memory...)
	pending.AddNamespaces = append(pending.AddNamespaces, c.AddNamespaces...)
	if c.Status != "" {
		pending.Status, pending.Output, pending.Error, pending.Cause, pending.StoppedAt = c.Status, c.Output, c.Error, c.Cause, c.StoppedAt
		pending.WakeAt, pending.WaitingFor = c.WakeAt, c.WaitingFor
	}
	if c.Checkpoint != nil {
		pending.Checkpoint = c.Checkpoint
	}
	if c.Rollback != nil {
		pending.Rollback = c.Rollback
	}
	if !c.Redriven.IsZero() {
		pending.Redriven = c.Redriven
	}
	if c.Transition != nil {
		pending.Transition = c.Transition
	}
	// The merged commit drops the history when one of its parts did (a
	// failed write's commit kept for the next).
	pending.DropHistory = pending.DropHistory || c.DropHistory
	return pending
}

// volatileStore is the default store: it keeps nothing, so executions run
// in memory only and cannot be resumed.
type volatileStore struct{}

func (volatileStore) Create(context.Context, *Execution) error { return nil }
func (volatileStore) Commit(context.Context, *Commit) error    { return nil }
func (volatileStore) Load(_ context.Context, id string) (*Execution, error) {
	return nil, fmt.Errorf("execution %s: %w (the executor has no store)", id, ErrNotFound)
}

var _ Store = volatileStore{}
