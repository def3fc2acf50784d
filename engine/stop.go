package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// stopRequest is the cause a run is cancelled with when Stop ends its
// execution: run.execute recognises it and ends the execution as ABORTED
// with its error and cause, and leaves the result in res for Stop.
type stopRequest struct {
	errName, cause string
	// res is set by the run that ended the execution as ABORTED, before it
	// releases the execution.
	res *Result
}

func (s *stopRequest) Error() string { return "the execution was stopped" }

// held is an execution held by this executor: a run (Run, Resume, Decide,
// Rollback, Fork) or Stop works on it, and nothing else may.
type held struct {
	// cancel cancels the run's context with a cause; nil when no run holds
	// it (Stop itself).
	cancel context.CancelCauseFunc
	// done is closed when the execution is released.
	done chan struct{}
	// settled is set once the run has committed how it ended or where it
	// waits: what comes next for the execution need only wait for done.
	settled bool
	// unlease gives up the execution's lease (Leaser); nil when there is
	// none.
	unlease func()
}

// settled marks the run holding id as done with the execution (its last
// commit is written), so that a decision or a resume arriving before the
// run lets go waits for it rather than being refused as busy.
func (x *Executor) settled(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if h := x.active[id]; h != nil {
		h.settled = true
	}
}

// hold holds execution id for what continues it (a resume, a decision, an
// answer to a task token, a rollback, a redrive): in this process
// (acquireNext) and, on a store that leases executions, across processes
// (waiting for the lease when wait is set). The caller calls release once
// done.
func (x *Executor) hold(ctx context.Context, id string, wait bool) (_ context.Context, release func(), err error) {
	if !x.durable {
		return ctx, nil, fmt.Errorf("execution %s: %w", id, ErrNotDurable)
	}
	ctx, ok := x.acquireNext(ctx, id)
	if !ok {
		return ctx, nil, fmt.Errorf("execution %s: %w", id, ErrBusy)
	}
	if err := x.lease(ctx, id, wait); err != nil {
		x.release(id)
		return ctx, nil, err
	}
	return ctx, func() { x.release(id) }, nil
}

// acquireNext is acquireRun for what continues an execution (a decision,
// a resume): when the run holding it has settled, it waits for the run to
// let go, then holds it.
func (x *Executor) acquireNext(ctx context.Context, id string) (context.Context, bool) {
	for {
		x.mu.Lock()
		h := x.active[id]
		if h == nil || !h.settled {
			x.mu.Unlock()
			return x.acquireRun(ctx, id)
		}
		x.mu.Unlock()
		select {
		case <-h.done:
		case <-ctx.Done():
			return ctx, false
		}
	}
}

// acquireRun holds an execution for a run and returns the run's context,
// which Stop cancels; false when the execution is held already.
func (x *Executor) acquireRun(ctx context.Context, id string) (context.Context, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.active[id] != nil {
		return ctx, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	x.active[id] = &held{cancel: cancel, done: make(chan struct{})}
	return ctx, true
}

// lease takes the lease of an execution this executor holds (acquireRun,
// Stop), when the store is a Leaser, waiting while another process holds
// it if wait is set (else failing with ErrBusy); release gives it up. When the lease is lost, the run holding the
// execution is cancelled with an error wrapping ErrLeaseLost.
func (x *Executor) lease(ctx context.Context, id string, wait bool) error {
	l, ok := x.store.(Leaser)
	if !ok {
		return nil
	}
	lost, unlease, err := l.Lease(ctx, id, wait)
	if err != nil {
		return fmt.Errorf("execution %s: %w", id, err)
	}
	x.mu.Lock()
	h := x.active[id]
	h.unlease = unlease
	x.mu.Unlock()
	go func() {
		select {
		case err, ok := <-lost:
			if ok && h.cancel != nil {
				h.cancel(fmt.Errorf("execution %s: %w: %w", id, ErrLeaseLost, err))
			}
		case <-h.done:
		}
	}()
	return nil
}

// release lets go of an execution held by acquireRun or Stop, and of its
// lease.
func (x *Executor) release(id string) {
	x.mu.Lock()
	h := x.active[id]
	if h == nil {
		x.mu.Unlock()
		return
	}
	unlease := h.unlease
	h.unlease = nil
	x.mu.Unlock()
	// The lease is given up before the execution is: what waits for it
	// in this process (acquireNext) can then take the lease at once.
	if unlease != nil {
		unlease()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if h.cancel != nil {
		h.cancel(nil)
	}
	close(h.done)
	delete(x.active, id)
}

// Stop ends an execution as ABORTED, as Step Functions' StopExecution
// does, recording an ExecutionAborted event with errName and cause (both
// may be empty), and returns how it ended. A run of it in this executor
// is cancelled first, agent calls in flight included, and ends the
// execution itself once it has unwound; a WAITING execution, or a RUNNING
// one no run of this process holds (left by a crash), is ended directly.
// Its pending approvals are then gone, and Resume and Decide refuse it.
// An execution that has ended fails with ErrEnded (so does the second of
// two Stops); one that does not exist with ErrNotFound.
func (x *Executor) Stop(ctx context.Context, id string, errName, cause string) (*Result, error) {
	req := &stopRequest{errName: errName, cause: cause}
	for {
		x.mu.Lock()
		h := x.active[id]
		if h == nil {
			x.active[id] = &held{done: make(chan struct{})}
			x.mu.Unlock()
			return x.abort(ctx, id, req)
		}
		if h.cancel != nil {
			h.cancel(req)
		}
		x.mu.Unlock()
		select {
		case <-h.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("execution %s: stop: %w", id, context.Cause(ctx))
		}
		if req.res != nil {
			return req.res, nil
		}
		// The run ended otherwise (it finished first, parked before it
		// noticed, failed on the store, or another Stop's request won):
		// look again.
	}
}

// abort ends an execution no run holds as ABORTED; Stop holds it, and
// abort releases it.
func (x *Executor) abort(ctx context.Context, id string, req *stopRequest) (*Result, error) {
	defer x.release(id)
	if err := x.lease(ctx, id, true); err != nil {
		return nil, err
	}
	e, err := x.store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Status.Ended() {
		return nil, fmt.Errorf("execution %s: %w (%s)", id, ErrEnded, e.Status)
	}
	// No state runs: the run only records the end (its definition is not
	// needed, so an execution whose stored definition no longer parses can
	// be stopped too).
	r := x.resumed(nil, e, x.agents)
	doc := e.Input
	if top := e.Progress.Scopes[""]; top != nil {
		doc = top.Doc
	} else {
		// Created, but the first commit never happened.
		r.event(Event{Type: EventExecutionStarted, Input: e.Input, Document: e.Input})
	}
	res := &Result{ID: id, Status: StatusAborted, Error: req.errName, Cause: req.cause}
	c := abortCommit(res)
	if err := x.abortMapRuns(ctx, r, e, c); err != nil {
		return nil, err
	}
	r.event(Event{Type: EventExecutionAborted, Error: res.Error, Cause: res.Cause, Document: doc})
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	x.hooks.executionFinished(id, StatusAborted)
	return res, nil
}

// abortCommit is the commit that ends an execution as ABORTED: every
// scope, pending approvals included, is dropped.
func abortCommit(res *Result) *Commit {
	return &Commit{
		Status: StatusAborted, Error: res.Error, Cause: res.Cause, StoppedAt: time.Now().UTC(),
		Scopes:     map[string]*Scope{"": {Done: true, Failed: true, Error: res.Error, Cause: res.Cause}},
		DropScopes: []string{""},
		Transition: &Transition{Status: StatusAborted, Error: res.Error, Cause: res.Cause},
	}
}

// stopped returns err, or, when err is what a Stop cancelling ctx made of
// the work of Resume or Decide (before the run could end the execution
// itself), an error saying so that wraps ErrEnded.
func stopped(ctx context.Context, id string, err error) error {
	var req *stopRequest
	if err != nil && errors.As(context.Cause(ctx), &req) {
		return fmt.Errorf("execution %s is being stopped: %w", id, ErrEnded)
	}
	return err
}
