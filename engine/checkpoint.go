package engine

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/aslrun/aslrun/states"
)

// Own history events (numbered apart from AWS's).
const (
	EventCheckpointSaved     = "CheckpointSaved"
	EventExecutionRolledBack = "ExecutionRolledBack"
	EventExecutionForked     = "ExecutionForked"
	EventForkedTo            = "ExecutionForkedTo"
	EventExecutionResumed    = "ExecutionResumed"
)

// checkpoint runs a Checkpoint state: it passes its input on and saves a
// named snapshot of the execution with its output as the document and the
// state after it as the position (written with the state's commit). Without
// a store there is nothing to save the snapshot in: the state only passes
// its input on.
func (h *stateRun) checkpoint(ctx context.Context, s *states.Checkpoint, raw any) (stepResult, error) {
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	out, err := h.outputPath(input)
	if err != nil {
		return stepResult{}, err
	}
	if err := h.evalAssign(s.Assign, input); err != nil {
		return stepResult{}, err
	}
	res := stepResult{output: out, proposed: input, next: s.Next, size: h.inSize}
	if s.JSONata() {
		if res, err = h.jsonataPassThrough(ctx, h.jsonataScope(raw), s.Output, s.AssignJSONata, s.Next); err != nil {
			return stepResult{}, err
		}
		out = res.output
	}
	if !h.r.x.durable {
		return res, nil
	}
	now := time.Now().UTC()
	cp := &Checkpoint{
		Execution: h.r.exec.ID,
		Name:      s.CheckpointName,
		State:     h.name(),
		Next:      s.Next,
		Document:  out,
		Context:   h.env.Context(),
		CreatedAt: now,
	}
	if !s.TTL.Never {
		cp.ExpiresAt = now.Add(s.TTL.Duration)
	}
	if cp.Memory, err = h.r.memorySnapshot(ctx); err != nil {
		return stepResult{}, fmt.Errorf("state %s: %w", h.name(), err)
	}
	// The variables and visits are those after the state: they are set in
	// step, before the commit, by checkpointDone.
	h.r.ownEvent(Event{Type: EventCheckpointSaved, State: h.name(), Document: out, Detail: map[string]any{
		"name": s.CheckpointName, "expiresAt": formatOptionalTime(cp.ExpiresAt),
	}})
	res.checkpoint = cp
	return res, nil
}

// checkpointDone completes a Checkpoint state's snapshot with the scope's
// variables and visits once the state has exited.
func (s *scope) checkpointDone(cp *Checkpoint) {
	cp.Variables = s.vars
	cp.Visits = maps.Clone(s.visits)
}

// formatOptionalTime writes t, or null when it is zero.
func formatOptionalTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}
