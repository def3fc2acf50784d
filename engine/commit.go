package engine

import (
	"context"
	"fmt"
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
	r.pending = Commit{Execution: r.id, Seq: r.seq, Transition: t, Events: r.events, Status: StatusRunning}
	if t != nil && t.Status != "" {
		r.pending.Status, r.pending.Output, r.pending.Error, r.pending.Cause = t.Status, t.Output, t.Error, t.Cause
	}
	err := r.x.store.Commit(ctx, &r.pending)
	r.events = r.events[:0]
	r.pending = Commit{}
	if err != nil {
		return fmt.Errorf("commit execution %s step %d: %w", r.id, r.seq, err)
	}
	return nil
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
