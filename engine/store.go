package engine

import (
	"context"
	"errors"
	"time"
)

// Store persists executions: it is where the commit point writes. The store
// package has the implementations (bbolt and memory, both passing
// storetest.Run).
//
// Implementations must be safe for concurrent use. Commit must be atomic
// (all of a commit or nothing) and durable when it returns nil; several
// executions' commits may share one transaction (group commit). The engine
// reuses a Commit and everything it points to once Commit returns: a store
// that keeps any of it must copy it (or, as the real stores do, encode it).
type Store interface {
	// Create records a new execution. It fails with ErrExists when the id
	// is taken.
	Create(ctx context.Context, e *Execution) error
	// Commit applies one step of an execution.
	Commit(ctx context.Context, c *Commit) error
	// Load returns an execution as last committed, its progress included;
	// ErrNotFound when there is none.
	Load(ctx context.Context, id string) (*Execution, error)
}

// Errors of stores and executors.
var (
	// ErrNotFound reports an execution (or checkpoint) that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists reports an execution id that is already taken.
	ErrExists = errors.New("already exists")
)

// Execution is an execution as the store keeps it.
type Execution struct {
	// ID is the execution's id.
	ID string
	// MachineName names the state machine ($$.StateMachine.Name).
	MachineName string
	// Definition is the definition's JSON text and DefinitionHash the hex
	// SHA-256 of its canonical form. Stores keep each definition once.
	Definition     []byte
	DefinitionHash string
	// Input is the execution input.
	Input any
	// Status, Output, Error and Cause are where the execution stands.
	Status Status
	Output any
	Error  string
	Cause  string
	// StartedAt and StoppedAt (zero while it runs or waits).
	StartedAt time.Time
	StoppedAt time.Time
	// Parent and ParentCheckpoint link an execution forked from a
	// checkpoint to where it came from; empty otherwise.
	Parent           string
	ParentCheckpoint string
	// Agents is the content of the mock or agents file the execution was
	// started with, and AgentsKind says which ("mock", "agents" or "").
	// Resuming reuses it unless told otherwise.
	Agents     []byte
	AgentsKind string
	// Trace is the execution's W3C trace context (a traceparent,
	// "00-<trace-id>-<span-id>-<flags>"), set when it is created
	// (Hooks.NewTrace) so that its spans share one trace id across waits
	// and restarts; empty when tracing was off.
	Trace string
	// MaxPayload is the execution's own payload limit in bytes
	// (StartOptions.MaxPayloadSize): 0 means none (the limit of the
	// executor running it) and -1 no limit.
	MaxPayload int
	// Durability is the execution's own durability mode
	// (StartOptions.Durability); "" means the executor's.
	Durability Durability
	// Registry is the registered workflow the execution runs,
	// "name@version" (StartOptions.Registry); "" for an unregistered
	// definition, whose Tasks may not cache with Scope global.
	Registry string
	// WakeAt is when a WAITING execution is due; zero when it waits for
	// something else than time. WaitingFor says what ("Wait", "Retry", …).
	WakeAt     time.Time
	WaitingFor string
	// RedriveCount counts the times the execution was redriven, the last
	// at RedrivenAt (zero when never): its TimeoutSeconds run from then.
	RedriveCount int
	RedrivenAt   time.Time
	// Progress is where the run is, enough to resume it.
	Progress Progress
	// Seq counts the commits of the execution.
	Seq int64
	// HistoryDropped is set once a commit dropped the execution's history
	// (Commit.DropHistory): the store keeps its head (input, output,
	// status, progress) and no events; History returns none.
	HistoryDropped bool

	// secrets are the secrets of an execution loaded with sealed values
	// (the run that continues it keeps them); nil otherwise.
	secrets *secrets
}

// Progress is the resumable position of an execution: the progress of its
// top-level machine and of every nested machine (Map item, Parallel branch)
// that has started and not yet been collected by its Map or Parallel.
type Progress struct {
	// Scopes maps a scope key ("" for the top-level machine) to its state.
	Scopes map[string]*Scope
	// Invocations counts the calls of each agent so far (mocked agents
	// answer by it).
	Invocations map[string]int
	// Usage totals what the execution's agents reported consuming (in
	// calls whose results are committed); Notices are the one-time budget
	// notices already given (alerts), so that none is repeated.
	Usage   Usage
	Notices []string
	// Namespaces are the agent memory namespaces the execution has used,
	// sorted (its checkpoints snapshot them).
	Namespaces []string
	// LastEvent and LastOwnEvent are the ids of the last history events
	// recorded: AWS-numbered events, and the engine's own events (numbered
	// apart so that they never shift AWS's ids).
	LastEvent    int64
	LastOwnEvent int64
}

// Usage is what an execution's agents reported consuming, summed: tokens
// in, out and in all (the total a call reported, or in + out), and cost in
// the workflow Budget's currency.
type Usage struct {
	InputTokens  int64   `json:"inputTokens,omitempty"`
	OutputTokens int64   `json:"outputTokens,omitempty"`
	Tokens       int64   `json:"tokens,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
}

// Scope is the progress of one machine: where it is, or how it ended.
//
// A scope key names a nested machine by its path: the enclosing scope's
// key, the Map or Parallel state's name, its visit and attempt, and the
// item or branch index, as in "Review#1.0/2/" (branch 2 of the first visit
// of Review, attempt 0) or "Batch#1.0/7/Summarize#2.1/0/".
type Scope struct {
	// Next is the state to run, with Doc its raw input.
	Next string
	Doc  any
	// Vars are the variables assigned in this scope.
	Vars map[string]any
	// Visits counts how many times each state of this machine was entered.
	Visits map[string]int
	// Step is the progress of state Next when it has some (retries made, a
	// delay under way); nil when it starts afresh.
	Step *StepProgress
	// Done is set when the machine ended: with Output, or with Error and
	// Cause when Failed.
	Done   bool
	Failed bool
	Output any
	Error  string
	Cause  string
}

// StepProgress is the durable progress of one state while it runs.
type StepProgress struct {
	// Visit is the state's visit number (its entry count in its scope).
	Visit int
	// Entered is the id of the state's entered event: a resumed state is
	// not entered again, and its runtime causes quote this id.
	Entered int64
	// Attempt is the attempt under way (0 first, then one per retry) and
	// Retries the retries made per retrier.
	Attempt int
	Retries []int64
	// WakeAt ends a delay (a Wait, or a Retry interval) under way.
	WakeAt time.Time
	// Approval is the pending approval of an Approval state (with the
	// decision once Decide has recorded it); nil for other states.
	Approval *PendingApproval
	// Debate holds the turns of a Debate's finished rounds (a JSON list of
	// {round, agent, response}); nil for other states.
	Debate any
	// Callback is the pending task token of a .waitForTaskToken Task (with
	// the answer once one is sent); nil for other states.
	Callback *PendingCallback
	// Feedback is the wait of a Task whose Feedback block waits (Wait
	// true) once the Task completed (with the feedback once given); nil
	// for other states.
	Feedback *PendingFeedback
	// Journal holds the steps an agent call of the attempt under way has
	// finished (a JSON list of {name, kind, output | error and cause,
	// inputHash, millis}; agents.Request.Journal); nil when none.
	Journal any
}

// Commit is one step of an execution, applied atomically by the store.
type Commit struct {
	// Execution is the execution's id; Seq numbers its commits from 1.
	Execution string
	Seq       int64
	// Status is the execution's status after the commit; "" leaves it, and
	// Output, Error, Cause, StoppedAt, WakeAt and WaitingFor, as they are.
	// A commit with a Status replaces all of them (Output, Error, Cause and
	// StoppedAt are set when it ended).
	Status    Status
	Output    any
	Error     string
	Cause     string
	StoppedAt time.Time
	// WakeAt and WaitingFor are set when the execution is WAITING.
	WakeAt     time.Time
	WaitingFor string
	// Scopes are the scopes this commit changes (replacing what the store
	// has under those keys); DropScopes lists key prefixes whose scopes are
	// removed first (the items of a Map that finished).
	Scopes     map[string]*Scope
	DropScopes []string
	// Invocations replace the execution's agent call counters when not nil
	// (a rollback); AddInvocations are then added to them: the calls whose
	// results this commit makes durable. LastEvent and LastOwnEvent replace
	// the event counters (which never go backwards).
	Invocations    map[string]int
	AddInvocations map[string]int
	// Usage replaces the execution's usage totals when not nil (a fork);
	// AddUsage is then added to them, and Notices to its notices.
	Usage        *Usage
	AddUsage     *Usage
	Notices      []string
	LastEvent    int64
	LastOwnEvent int64
	// Events are the history events recorded since the previous commit, in
	// order. A commit may carry events only (a long state hands its history
	// over in batches).
	Events []Event
	// AddNamespaces are memory namespaces the execution used, added to
	// its set.
	AddNamespaces []string
	// Memory are agent memory writes, applied in order (a store that keeps
	// memory implements MemoryStore; see ApplyMemoryWrite).
	Memory []MemoryWrite
	// Outbox are events to deliver to the workflow's webhook channels,
	// written with the commit (a store that keeps them implements
	// OutboxStore; one that does not refuses a commit carrying any).
	Outbox []OutboxEntry
	// Checkpoint is a named snapshot written by this commit, if any.
	Checkpoint *Checkpoint
	// Rollback marks history superseded (a rollback to a checkpoint).
	Rollback *Rollback
	// Redriven, when not zero, is when the execution was redriven: the
	// store sets RedrivenAt to it and counts one more redrive.
	Redriven time.Time
	// Transition is what the commit point checked (nil for history-only
	// commits); stores need not keep it.
	Transition *Transition
	// DropHistory drops the execution's history in the same transaction:
	// its events (this commit's Events are not kept either), its
	// checkpoints and what only they reference; the head is kept and
	// marked HistoryDropped, its event count and last hash reset so that
	// the empty history verifies. The engine sets it on the commit that
	// ends a Distributed Map child that succeeded, and on every commit of
	// an EXPRESS child.
	DropHistory bool

	// nestedEnd marks the commit of a nested machine's end, which may wait
	// for the next commit (run.deferrable).
	nestedEnd bool
	// journalStep marks the commit of an agent call's durable step, which
	// under batched durability may wait for the batch (as a state's
	// completion does).
	journalStep bool
}

// Checkpoint is a named snapshot of an execution, written by a Checkpoint
// state, from which the execution can be rolled back or forked.
type Checkpoint struct {
	// Execution and Name identify it; a later Checkpoint state with the same
	// name replaces it.
	Execution string
	Name      string
	// State is the Checkpoint state's name and Next the state after it
	// ("" when the Checkpoint state ends the execution).
	State string
	Next  string
	// Document is the checkpoint's document (the Checkpoint state's output)
	// and Variables the top-level variables at that point.
	Document  any
	Variables map[string]any
	// Context is the context object at that point; Memory and Budget are
	// the agent memory of the namespaces the execution used
	// ({namespaces, entries}, nil when it used none) and the budget totals.
	Context any
	Memory  any
	Budget  any
	// Visits, Invocations, LastEvent and LastOwnEvent are the execution's
	// counters at that point.
	Visits       map[string]int
	Invocations  map[string]int
	LastEvent    int64
	LastOwnEvent int64
	// CreatedAt and ExpiresAt (zero: never expires).
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Rollback marks the history an operator went back over: every event of
// the execution numbered after ToEvent (AWS-numbered) or ToOwnEvent (own
// events) that is not superseded yet becomes superseded. It is kept, not
// deleted.
type Rollback struct {
	ToEvent    int64
	ToOwnEvent int64
}

// Checkpoints is implemented by stores that keep checkpoints (both of the
// store package's): the executor needs it to roll back or fork.
type Checkpoints interface {
	// Checkpoint returns the named checkpoint of an execution, verified
	// and migrated to the current format; ErrNotFound when there is none.
	Checkpoint(ctx context.Context, execution, name string) (*Checkpoint, error)
	// ListCheckpoints returns an execution's checkpoints (documents not
	// loaded), oldest first.
	ListCheckpoints(ctx context.Context, execution string) ([]*Checkpoint, error)
}

// Leaser is implemented by stores that several processes share (the
// PostgreSQL store): the executor leases every execution it works on (a
// run, a resume, a decision, a rollback, a redrive, a fork, a stop) for as
// long as it holds it, so that one process at a time runs an execution,
// and one that lost its lease can never commit to it again.
type Leaser interface {
	// Lease takes the lease of an execution for this process. While
	// another process holds it, Lease fails with an error wrapping ErrBusy
	// unless wait is set: then it waits (until the holder releases it, or
	// stops renewing it and it expires), until ctx ends (an error that
	// wraps context.Cause(ctx) then). Until release is
	// called, the store keeps it renewed and checks it in every commit of
	// the execution: once another process has taken it over, commits fail
	// (and write nothing), and lost receives the error that says so. The
	// executor then stops the run at once. release gives the lease up,
	// after which lost is closed (with nothing received); it is called
	// once, with no commit of the execution in flight.
	Lease(ctx context.Context, execution string, wait bool) (lost <-chan error, release func(), err error)
}

// Scheduler is implemented by stores that can find executions to wake or
// recover; Executor.Serve needs it.
type Scheduler interface {
	// Due returns the WAITING executions whose WakeAt is at or before now,
	// earliest first.
	Due(ctx context.Context, now time.Time) ([]string, error)
	// Unfinished returns the RUNNING executions; a store that is also a
	// Leaser leaves out those that a live process holds.
	Unfinished(ctx context.Context) ([]string, error)
}
