package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// The journal: durable steps inside one agent call (agents.Request.Journal).
// Each step's outcome is committed, with its history event, as the
// state's progress (StepProgress.Journal, the steps of the attempt under
// way) before the agent goes on; a call run again after a crash gets the
// recorded outcome of every step it had finished. A new attempt (a Retry)
// starts with an empty journal: its steps run again.

// Journal event families: Kind + "Succeeded" / "Failed".
const (
	StepKindStep      = "Step"
	StepKindModelTurn = "ModelTurn"
	StepKindToolCall  = "ToolCall"
)

// maxStepName bounds a step's name.
const maxStepName = 256

// journal is the steps of one agent call's attempt.
type journal struct {
	h       *stateRun
	attempt int
	// mu orders the steps' commits: each commits the whole journal, so
	// two steps ending at once must not commit out of order.
	mu      sync.Mutex
	entries []any // map[string]any, as StepProgress.Journal holds them
	byName  map[string]map[string]any
}

// newJournal returns the journal of h's attempt under way, with the steps
// recorded for it when the state was resumed in the middle of it.
func (h *stateRun) newJournal() *journal {
	j := &journal{h: h, attempt: h.env.retry, byName: make(map[string]map[string]any)}
	if p := h.progress; p != nil && p.Attempt == h.env.retry {
		if list, ok := p.Journal.([]any); ok {
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					if name, ok := m["name"].(string); ok {
						j.entries = append(j.entries, m)
						j.byName[name] = m
					}
				}
			}
		}
	}
	return j
}

// RunJournal is agents.StepRunner: the steps of the state's agent call.
func (h *stateRun) RunJournal(ctx context.Context, spec agents.StepSpec, fn func(context.Context) (any, error)) (any, error) {
	h.journalMu.Lock()
	if h.journal == nil || h.journal.attempt != h.env.retry {
		h.journal = h.newJournal()
	}
	j := h.journal
	if h.stepPrefix != "" {
		spec.Name = h.stepPrefix + "/" + spec.Name
	}
	h.journalMu.Unlock()
	return j.step(ctx, spec, fn)
}

// step runs one step of j.
func (j *journal) step(ctx context.Context, spec agents.StepSpec, fn func(context.Context) (any, error)) (any, error) {
	h := j.h
	kind := spec.Kind
	switch kind {
	case "":
		kind = StepKindStep
	case StepKindStep, StepKindModelTurn, StepKindToolCall:
	default:
		return nil, asl.Errorf(asl.ErrRuntime, "state %q: step %q: kind %q: want %s, %s or %s", h.name(), spec.Name, spec.Kind, StepKindStep, StepKindModelTurn, StepKindToolCall)
	}
	if spec.Name == "" || len(spec.Name) > maxStepName {
		return nil, asl.Errorf(asl.ErrRuntime, "state %q: a step's name must be 1 to %d bytes, not %d", h.name(), maxStepName, len(spec.Name))
	}
	var input any
	inputHash := ""
	if spec.Input != nil {
		v, err := jsonvalue.Normalize(spec.Input)
		if err != nil {
			return nil, asl.Errorf(asl.ErrRuntime, "state %q: step %q: its input is not JSON: %v", h.name(), spec.Name, err)
		}
		if inputHash, err = jsonvalue.CanonicalHash(v); err != nil {
			return nil, asl.Errorf(asl.ErrRuntime, "state %q: step %q: %v", h.name(), spec.Name, err)
		}
		input = v
	}
	if out, err, ok := j.recorded(spec.Name, inputHash); ok {
		return out, err
	}
	start := time.Now()
	out, err := fn(context.WithValue(ctx, journalStepKey{}, spec.Name))
	elapsed := time.Since(start)
	if err != nil && ctx.Err() != nil {
		// Cut short by the run stopping: run again when it resumes.
		return out, err
	}
	entry := map[string]any{"name": spec.Name, "kind": kind, "millis": jsonvalue.IntNumber(elapsed.Milliseconds())}
	if inputHash != "" {
		entry["inputHash"] = inputHash
	}
	var stepErr *asl.Error
	if err != nil {
		if !errors.As(err, &stepErr) {
			stepErr = &asl.Error{Name: asl.ErrTaskFailed, Cause: err.Error()}
		}
		entry["error"], entry["cause"] = string(stepErr.Name), stepErr.Cause
	} else {
		v, nerr := jsonvalue.Normalize(out)
		if nerr != nil {
			return nil, asl.Errorf(asl.ErrAgentInvalidOutput, "state %q: step %q: its result is not JSON: %v", h.name(), spec.Name, nerr)
		}
		entry["output"], out = v, v
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if prev, ok := j.byName[spec.Name]; ok {
		// The same name ended meanwhile on another goroutine: the first
		// recorded wins, as it would after a crash.
		return entryResult(prev)
	}
	j.entries = append(j.entries, entry)
	j.byName[spec.Name] = entry
	detail := map[string]any{"name": spec.Name, "millis": entry["millis"]}
	for k, v := range spec.Detail {
		if _, taken := detail[k]; !taken {
			if nv, err := jsonvalue.Normalize(v); err == nil {
				detail[k] = nv
			}
		}
	}
	if inputHash != "" {
		detail["inputHash"] = inputHash
	}
	ev := Event{State: h.name(), Scope: h.sc.prefix, Input: input, Document: h.raw, Detail: detail}
	if stepErr != nil {
		ev.Type, ev.Error, ev.Cause = kind+"Failed", string(stepErr.Name), stepErr.Cause
	} else {
		ev.Type, ev.Output = kind+"Succeeded", out
	}
	h.r.ownEvent(ev)
	if h.r.x.durable {
		p := &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: h.retries, Journal: append([]any(nil), j.entries...), Entered: h.entered}
		c := &Commit{Scopes: map[string]*Scope{h.sc.key: h.sc.positionBefore(h.name(), h.raw, p)}, journalStep: true}
		if cerr := h.r.commit(ctx, nil, h.sc.settle(c)); cerr != nil {
			return nil, cerr
		}
	}
	if stepErr != nil {
		return nil, stepErr
	}
	return out, nil
}

// recorded returns the recorded outcome of step name, if there is one.
func (j *journal) recorded(name, inputHash string) (any, error, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.byName[name]
	if !ok {
		return nil, nil, false
	}
	if was, _ := e["inputHash"].(string); was != inputHash {
		return nil, asl.Errorf(asl.ErrRuntime, "state %q: step %q ran again with another input than the one recorded (%s, now %s): the agent must give a step the same input when it runs again", j.h.name(), name, orNone(was), orNone(inputHash)), true
	}
	out, err := entryResult(e)
	return out, err, true
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// entryResult is a recorded step's outcome.
func entryResult(e map[string]any) (any, error) {
	if name, ok := e["error"].(string); ok {
		cause, _ := e["cause"].(string)
		return nil, &asl.Error{Name: asl.ErrorName(name), Cause: cause}
	}
	return jsonvalue.Clone(e["output"]), nil
}
