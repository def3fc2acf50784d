package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
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
	lastErr   error      // error of the newest written commit
	errorGens map[uint64]error
}

// commit is the single commit point: every change of an execution's
// documents passes here, and the run advances only after it returns nil.
// (The machine's governance is applied here too, once it exists.)
//
// c's Scopes, DropScopes, Checkpoint, status and transition are applied
// with the events recorded so far and the current counters.
func (r *run) commit(ctx context.Context, c *Commit) error {
	if !r.x.durable {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commitLocked(ctx, c)
}

// commitLocked commits with r.mu held (it releases it while writing).
func (r *run) commitLocked(ctx context.Context, c *Commit) error {
	q := &r.queue
	if q.cond == nil {
		q.cond = sync.NewCond(&r.mu)
	}
	if c.Checkpoint != nil {
		c.Checkpoint.LastEvent, c.Checkpoint.LastOwnEvent = r.lastEvent, r.lastOwn
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
		next.Events = r.events
		next.LastEvent, next.LastOwnEvent = r.lastEvent, r.lastOwn
		r.events = nil
		r.mu.Unlock()
		err := r.x.store.Commit(ctx, next)
		r.mu.Lock()
		if err != nil {
			// Nothing of it was written: keep its history for the next
			// commit (the one that records how the execution stopped).
			r.events = append(next.Events, r.events...)
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
	if c.Transition != nil {
		pending.Transition = c.Transition
	}
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
