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

// Event is one entry of an execution's history. IDs are numbered from 1 in
// the order AWS Step Functions numbers its history, so that causes quoting
// "the event id #N" match AWS.
type Event struct {
	ID        int64
	Type      string
	Timestamp time.Time
	// State is the state the event belongs to, "" for execution events.
	State string
	// Scope locates State inside Map items and Parallel branches, like
	// "Review/1/" ("" for top-level states).
	Scope string
	// Input, Output, Error and Cause are set where the event carries them.
	Input  any
	Output any
	Error  string
	Cause  string
}

// event appends e to the history, numbering and timestamping it, and
// returns its id.
func (r *run) event(e Event) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastEvent++
	e.ID = r.lastEvent
	e.Timestamp = time.Now().UTC()
	r.events = append(r.events, e)
	return e.ID
}
