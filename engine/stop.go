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
	// leaving is set once the hold is letting go (its lease given up).
	leaving bool
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
// done. An execution another process asked to stop (StopRequester) is
// ended as ABORTED here, and hold fails with a *StoppedError.
func (x *Executor) hold(ctx context.Context, id string, wait bool) (_ context.Context, release func(), err error) {
	if !x.durable {
		return ctx, nil, fmt.Errorf("execution %s: %w", id, ErrNotDurable)
	}
	ctx, ok := x.acquireNext(ctx, id)
	if !ok {
		return ctx, nil, fmt.Errorf("execution %s: %w", id, ErrBusy)
	}
	stop, err := x.lease(ctx, id, wait)
	if err != nil {
		x.release(id)
		return ctx, nil, err
	}
	return x.held(ctx, id, stop)
}

// holdClaimed is hold for an execution whose lease Serve claimed
// (Dispatcher.Claim): it holds it in this process, or gives the lease
// back and fails with ErrBusy when this process holds it otherwise.
func (x *Executor) holdClaimed(ctx context.Context, c *Claimed) (_ context.Context, release func(), err error) {
	ctx, ok := x.acquireClaimed(ctx, c.Execution)
	if !ok {
		c.Release()
		return ctx, nil, fmt.Errorf("execution %s: %w (in this process)", c.Execution, ErrBusy)
	}
	return x.held(ctx, c.Execution, x.attach(c.Execution, c.Lost, c.Release))
}

// held finishes hold once the execution is held with its lease: a stop
// request found with the lease is carried out at once.
func (x *Executor) held(ctx context.Context, id string, stop *StopRequest) (context.Context, func(), error) {
	if stop == nil {
		return ctx, func() { x.release(id) }, nil
	}
	defer x.release(id)
	res, err := x.abortHeld(ctx, id, &stopRequest{errName: stop.ErrName, cause: stop.Cause})
	if err != nil {
		return ctx, nil, err
	}
	return ctx, nil, &StoppedError{Result: res}
}

// StoppedError is the error of what continues an execution (Resume,
// Decide, …) that found a stop requested for it by another process
// (StopRequester) when it took the execution's lease: it ended the
// execution as ABORTED instead, as Result says. It wraps ErrEnded.
type StoppedError struct {
	Result *Result
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("execution %s was stopped (%s) on a request from another process", e.Result.ID, e.Result.Status)
}

// Unwrap makes errors.Is(err, ErrEnded) true.
func (e *StoppedError) Unwrap() error { return ErrEnded }

// acquireClaimed is acquireRun for an execution Serve claimed: a hold
// that is letting go of the execution (its lease released already) is
// waited for; any other is left alone (it may be waiting for the lease
// the claim holds).
func (x *Executor) acquireClaimed(ctx context.Context, id string) (context.Context, bool) {
	return x.acquireAfter(ctx, id, func(h *held) bool { return h.leaving })
}

// acquireNext is acquireRun for what continues an execution (a decision,
// a resume): when the run holding it has settled, it waits for the run to
// let go, then holds it.
func (x *Executor) acquireNext(ctx context.Context, id string) (context.Context, bool) {
	return x.acquireAfter(ctx, id, func(h *held) bool { return h.settled })
}

// acquireAfter is acquireRun once the hold of id, if any, is not one to
// wait for: while wait(hold) is true it waits for the hold to end (false
// when ctx ends first). wait runs with x.mu held.
func (x *Executor) acquireAfter(ctx context.Context, id string, wait func(*held) bool) (context.Context, bool) {
	for {
		x.mu.Lock()
		h := x.active[id]
		if h == nil || !wait(h) {
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
// execution is cancelled with an error wrapping ErrLeaseLost; when another
// process asks for the execution to be stopped, with that stop. It
// returns the stop request found with the lease, if any.
func (x *Executor) lease(ctx context.Context, id string, wait bool) (*StopRequest, error) {
	l, ok := x.store.(Leaser)
	if !ok {
		return nil, nil
	}
	lost, unlease, err := l.Lease(ctx, id, wait)
	if err != nil {
		return nil, fmt.Errorf("execution %s: %w", id, err)
	}
	return x.attach(id, lost, unlease), nil
}

// attach makes a lease taken for execution id (Lease, Claim) the lease of
// its hold, and returns the stop request the store delivered with it, if
// any: one recorded before the lease was taken.
func (x *Executor) attach(id string, lost <-chan error, unlease func()) *StopRequest {
	x.mu.Lock()
	h := x.active[id]
	h.unlease = unlease
	x.mu.Unlock()
	var pending *StopRequest
	select {
	case err, ok := <-lost:
		if !ok {
			// Released already: nothing to watch.
			return nil
		}
		if !errors.As(err, &pending) {
			// Lost as soon as taken: the run stops at once.
			go h.lost(id, err)
			return nil
		}
	default:
	}
	go func() {
		for {
			select {
			case err, ok := <-lost:
				if !ok {
					return
				}
				var stop *StopRequest
				if errors.As(err, &stop) {
					if h.cancel != nil {
						h.cancel(&stopRequest{errName: stop.ErrName, cause: stop.Cause})
					}
					continue
				}
				h.lost(id, err)
				return
			case <-h.done:
				return
			}
		}
	}()
	return pending
}

// lost cancels the run holding h, whose lease another process took over.
func (h *held) lost(id string, err error) {
	if h.cancel != nil {
		h.cancel(fmt.Errorf("execution %s: %w: %w", id, ErrLeaseLost, err))
	}
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
	h.leaving = true
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
// On a store that other processes share (a Leaser), an execution another
// process runs is stopped by that process: when the store is a
// StopRequester, Stop records the request (which the holder learns at
// once where it listens, else at its next lease renewal), and waits,
// until ctx ends, for the holder to end the execution and let go; if the
// holder dies instead, whoever takes the lease over carries the request
// out (Stop itself, when it gets the lease first). The request stays
// recorded when ctx ends first. Without a StopRequester, Stop waits for
// the holder's run to end and then ends the execution.
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

// abort ends an execution no run of this process holds as ABORTED; Stop
// holds it, and abort releases it.
func (x *Executor) abort(ctx context.Context, id string, req *stopRequest) (*Result, error) {
	defer x.release(id)
	_, err := x.lease(ctx, id, false)
	requested := false
	if errors.Is(err, ErrBusy) {
		// Another process holds it: ask it to stop the execution, then
		// wait for the lease (it ends the execution and lets go, or dies
		// and its lease expires).
		if sr, ok := x.store.(StopRequester); ok {
			if err := sr.RequestStop(ctx, id, req.errName, req.cause); err != nil {
				return nil, err
			}
			requested = true
		}
		_, err = x.lease(ctx, id, true)
	}
	if err != nil {
		return nil, err
	}
	if requested {
		e, err := x.store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		if e.Status == StatusAborted && e.Error == req.errName && e.Cause == req.cause {
			// The holder (or whoever took its lease over) carried the
			// request out.
			return &Result{ID: id, Status: StatusAborted, Error: e.Error, Cause: e.Cause}, nil
		}
	}
	return x.abortHeld(ctx, id, req)
}

// abortHeld ends an execution this process holds, with its lease, as
// ABORTED.
func (x *Executor) abortHeld(ctx context.Context, id string, req *stopRequest) (*Result, error) {
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
	} else if e.Progress.LastEvent == 0 {
		// Created, and nothing of it written yet (a run stopped before
		// its first commit may have written its ExecutionStarted).
		r.event(Event{Type: EventExecutionStarted, Input: e.Input, Document: e.Input})
	}
	res := &Result{ID: id, Status: StatusAborted, Error: req.errName, Cause: req.cause}
	c := abortCommit(res)
	if err := x.abortMapRuns(ctx, r, e, c); err != nil {
		return nil, err
	}
	x.stopChildren(ctx, e, req)
	r.event(Event{Type: EventExecutionAborted, Error: res.Error, Cause: res.Cause, Document: doc})
	r.emitEnd(res)
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	x.hooks.executionFinished(id, StatusAborted)
	return res, nil
}

// StopRequester is implemented by stores several processes share (the
// PostgreSQL store, a Leaser) through which Stop reaches the process that
// holds an execution's lease. It is safe for concurrent use.
type StopRequester interface {
	// RequestStop records that execution is to be stopped with errName
	// and cause, replacing an earlier request, and tells the process
	// holding its lease: its Lease's lost channel then receives a
	// *StopRequest (promptly where the store can notify, at the lease's
	// next renewal otherwise), as does the lost channel of every later
	// lease of the execution, from the moment it is taken, until a commit
	// ends the execution, which removes the request. It fails with
	// ErrNotFound when there is no such execution, and ErrEnded when it
	// has ended.
	RequestStop(ctx context.Context, execution, errName, cause string) error
}

// StopRequest is what a lease's lost channel (Leaser) receives when
// another process asked for the execution to be stopped
// (StopRequester): the run holding the lease ends the execution as
// ABORTED with ErrName and Cause. Unlike a loss, it does not end the
// lease.
type StopRequest struct {
	Execution      string
	ErrName, Cause string
}

func (s *StopRequest) Error() string {
	return fmt.Sprintf("execution %s: another process asked for it to be stopped", s.Execution)
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
