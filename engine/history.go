package engine

import (
	"time"
)

// The history event types the engine records, with AWS Step Functions'
// names. State events are named after the state type: "PassStateEntered",
// "TaskStateExited", and so on.
const (
	EventExecutionStarted   = "ExecutionStarted"
	EventExecutionSucceeded = "ExecutionSucceeded"
	EventExecutionFailed    = "ExecutionFailed"
	EventExecutionTimedOut  = "ExecutionTimedOut"
	EventExecutionAborted   = "ExecutionAborted"
	EventTaskScheduled      = "TaskScheduled"
	EventTaskStarted        = "TaskStarted"
	EventTaskSucceeded      = "TaskSucceeded"
	EventTaskFailed         = "TaskFailed"
	EventTaskTimedOut       = "TaskTimedOut"
	EventMapStateStarted    = "MapStateStarted"
	EventMapStateSucceeded  = "MapStateSucceeded"
	EventMapStateFailed     = "MapStateFailed"
	EventMapIterationStart  = "MapIterationStarted"
	EventMapIterationOK     = "MapIterationSucceeded"
	EventMapIterationFailed = "MapIterationFailed"
	EventParallelStarted    = "ParallelStateStarted"
	EventParallelSucceeded  = "ParallelStateSucceeded"
	EventParallelFailed     = "ParallelStateFailed"
)

// Event is one entry of an execution's history. Events of the kinds AWS
// Step Functions records are numbered by ID from 1 in AWS's order, so that
// causes quoting "the event id #N" match AWS; the engine's own events
// (checkpoints, rollbacks, forks, …) have ID 0 and are numbered apart by
// Own, so that they never shift AWS's numbers.
type Event struct {
	ID        int64
	Own       int64
	Type      string
	Timestamp time.Time
	// State is the state the event belongs to, "" for execution events.
	State string
	// Scope locates State inside Map items and Parallel branches, like
	// "Review/1/" ("" for top-level states).
	Scope string
	// Input, Output, Error and Cause are set where the event carries them;
	// Detail holds the structured detail of the engine's own events.
	Input  any
	Output any
	Error  string
	Cause  string
	Detail any
	// Document is the document of the state's machine after the event (the
	// state's input until it has produced its output).
	Document any

	// Set by the store: DocHash is the hex SHA-256 of Document's canonical
	// form (the state's identity); PrevHash is the previous event's Hash and
	// Hash this event's, chaining the history so that it can be verified;
	// Superseded marks events an operator rolled back over.
	DocHash    string
	PrevHash   string
	Hash       string
	Superseded bool
}

// eventType returns the name of a state's entered or exited event, like
// "PassStateEntered".
func eventType(stateType string, entered bool) string {
	i := 1
	if entered {
		i = 0
	}
	if names, ok := stateEventNames[stateType]; ok {
		return names[i]
	}
	if entered {
		return stateType + "StateEntered"
	}
	return stateType + "StateExited"
}

// stateEventNames spells the state events of the known state types once.
var stateEventNames = func() map[string][2]string {
	m := make(map[string][2]string)
	for _, t := range []string{"Pass", "Task", "Choice", "Wait", "Succeed", "Fail", "Map", "Parallel", "Approval", "Debate", "Checkpoint"} {
		m[t] = [2]string{t + "StateEntered", t + "StateExited"}
	}
	return m
}()

// event appends e to the history, numbering and timestamping it, and
// returns its id. Without a store it only numbers it (see eventAt): no
// clock is read.
func (r *run) event(e Event) int64 {
	if !r.x.durable {
		return r.numberEvent()
	}
	e.Timestamp = time.Now().UTC()
	return r.eventAt(e)
}

// numberEvent numbers an event that is not kept (an executor without a
// store keeps no history) and returns its id.
func (r *run) numberEvent() int64 {
	return r.lastEvent.Add(1)
}

// eventAt appends e, already timestamped, to the history and returns its id.
// Without a store there is no history to keep: events are only numbered.
func (r *run) eventAt(e Event) int64 {
	r.mu.Lock()
	e.ID = r.lastEvent.Add(1)
	if !r.x.durable {
		r.mu.Unlock()
		return e.ID
	}
	r.events = append(r.events, e)
	r.mu.Unlock()
	return e.ID
}

// ownEvent appends one of the engine's own events (numbered apart from
// AWS's) to the history and returns its number.
func (r *run) ownEvent(e Event) int64 {
	e.Timestamp = time.Now().UTC()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastOwn++
	e.ID, e.Own = 0, r.lastOwn
	if r.x.durable {
		r.events = append(r.events, e)
	}
	return e.Own
}
