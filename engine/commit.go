package engine

import (
	"context"
	"fmt"
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

// Commit is what the store persists for one transition, atomically: the
// execution head and the history events recorded since the last commit.
type Commit struct {
	// Execution is the execution's id.
	Execution string
	// Seq numbers the commits of an execution from 1.
	Seq int64
	// Transition is the step being committed; nil when the commit only
	// appends history (a long state hands its events over in batches).
	Transition *Transition
	// Events are the history events since the previous commit, in order.
	Events []Event
}

// Store persists executions. Implementations must be safe for concurrent
// use; Commit must be atomic (all of a commit or nothing) and durable when
// it returns nil. The engine reuses the Commit and its Events slice after
// Commit returns: a store that keeps them must copy them.
type Store interface {
	Commit(ctx context.Context, c *Commit) error
}

// commit is the single commit point: every transition of an execution's
// document passes here, and the run advances only after it returns nil.
// (The machine's governance is applied here too, once it exists.)
func (r *run) commit(ctx context.Context, t *Transition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.flushErr; err != nil {
		return err
	}
	return r.commitLocked(ctx, t)
}

// commitLocked commits with r.mu held.
func (r *run) commitLocked(ctx context.Context, t *Transition) error {
	r.seq++
	r.pending = Commit{Execution: r.id, Seq: r.seq, Transition: t, Events: r.events}
	err := r.x.store.Commit(ctx, &r.pending)
	r.events = r.events[:0]
	r.pending = Commit{}
	if err != nil {
		return fmt.Errorf("commit execution %s step %d: %w", r.id, r.seq, err)
	}
	return nil
}

// memoryStore keeps the latest commit of each running execution in memory
// and forgets executions once they end; it is the default store and
// persists nothing beyond the process.
type memoryStore struct {
	mu    sync.Mutex
	heads map[string]*Transition
}

func newMemoryStore() *memoryStore { return &memoryStore{heads: make(map[string]*Transition)} }

func (s *memoryStore) Commit(_ context.Context, c *Commit) error {
	if c.Transition == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c.Transition.Status {
	case StatusRunning, StatusWaiting:
		s.heads[c.Execution] = c.Transition
	default:
		delete(s.heads, c.Execution)
	}
	return nil
}

var _ Store = (*memoryStore)(nil)
