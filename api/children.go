package api

import "time"

// ChildExecution is a child execution that a Workflow state or a
// states:startExecution Task of an execution started, as GET
// /v1/executions/{id}/children lists it.
type ChildExecution struct {
	// ID is the child's execution id: "<parent>/<step>.<attempt>" (and
	// "~N" after it for a child started again after a rollback of the
	// parent), or the Name a startExecution Task gave it.
	ID string `json:"id"`
	// State is the step of the parent that started it: the state's name
	// and visit ("Research#1"), qualified inside Map items and Parallel
	// branches ("Each/2/Research#1"); the state's qualified name alone
	// for a child named by its Task.
	State string `json:"state"`
	// Workflow is the registry version it runs, "name@N".
	Workflow string `json:"workflow"`
	// Status is the child's status; absent while its record is not
	// stored yet (just started).
	Status    string     `json:"status,omitempty"`
	Error     string     `json:"error,omitempty"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	StoppedAt *time.Time `json:"stoppedAt,omitempty"`
	// Detached is true for a child the parent does not wait for
	// (startExecution without .sync, .waitForTaskToken).
	Detached bool `json:"detached,omitempty"`
	// Superseded is true when a rollback of the parent superseded the
	// event that started it.
	Superseded bool `json:"superseded,omitempty"`
}

// ChildExecutionList is the answer of GET /v1/executions/{id}/children:
// the children of Execution in the order they were started.
type ChildExecutionList struct {
	Execution string           `json:"execution"`
	Children  []ChildExecution `json:"children"`
}
