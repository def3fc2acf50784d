// Package api holds the wire types of aslrun's HTTP API (/v1) and its
// OpenAPI 3.1 document. Documents (definitions, inputs, outputs, edits)
// travel as JSON text in json.RawMessage fields: the server decodes them
// with the engine's strict decoder, so that a duplicate key or a NaN is
// refused with its location as it is everywhere else.
package api

import (
	_ "embed"
	"encoding/json"
	"time"
)

// OpenAPI is the API's OpenAPI 3.1 document, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// ProblemType is the prefix of every problem type URI.
const ProblemType = "https://aslrun.dev/problems/"

// Problem is an RFC 9457 problem document (application/problem+json).
type Problem struct {
	// Type is ProblemType plus a short name ("invalid-definition",
	// "not-found", "forbidden", …).
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Errors locate each problem: the JSON Pointer of the field at fault
	// in the request body (for a definition, inside "definition").
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one problem at a JSON Pointer.
type FieldError struct {
	Pointer string `json:"pointer"`
	// State is the state the pointer is in, when it is in one.
	State  string `json:"state,omitempty"`
	Detail string `json:"detail"`
}

// RegisterWorkflow is the body of POST /v1/workflows.
type RegisterWorkflow struct {
	Name       string          `json:"name"`
	Definition json.RawMessage `json:"definition"`
	// Label is the version's semver label (1.2.0), unique among the
	// workflow's versions; optional.
	Label string `json:"label,omitempty"`
	// Lock maps the definition's imports to the versions they resolve to,
	// "name@N", kept in the version's record (not in the definition, so
	// its hash does not change); optional.
	Lock map[string]string `json:"lock,omitempty"`
}

// Workflow is one registered version of a workflow.
type Workflow struct {
	Name       string          `json:"name"`
	Version    int             `json:"version"`
	Hash       string          `json:"hash"`
	CreatedAt  time.Time       `json:"createdAt"`
	Definition json.RawMessage `json:"definition,omitempty"`
	// Label is the version's semver label; "" for none.
	Label string `json:"label,omitempty"`
	// Lock maps the definition's imports to versions, "name@N".
	Lock map[string]string `json:"lock,omitempty"`
	// Aliases are the aliases that point to this version (in the
	// versions list and GET /v1/workflows/{name}).
	Aliases []string `json:"aliases,omitempty"`
}

// WorkflowAlias is an alias of a workflow: a name that points to one of
// its versions.
type WorkflowAlias struct {
	Name      string    `json:"name"`
	Alias     string    `json:"alias"`
	Version   int       `json:"version"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// AliasList is the answer of GET /v1/workflows/{name}/aliases.
type AliasList struct {
	Aliases []WorkflowAlias `json:"aliases"`
}

// SetAlias is the body of PUT /v1/workflows/{name}/aliases/{alias}.
type SetAlias struct {
	Version int `json:"version"`
}

// WorkflowList is the answer of GET /v1/workflows.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
}

// Validate is the body of POST /v1/workflows/validate.
type Validate struct {
	Definition json.RawMessage `json:"definition"`
}

// Validation says whether a definition is valid, with every problem.
type Validation struct {
	Valid    bool         `json:"valid"`
	Problems []FieldError `json:"problems"`
}

// StartExecution is the body of POST /v1/executions: a registered
// workflow (name, and version or 0 for the latest, or an alias, or a
// reference) or an inline definition, never both.
type StartExecution struct {
	Workflow string `json:"workflow,omitempty"`
	Version  int    `json:"version,omitempty"`
	// Alias names the version of Workflow by one of its aliases (prod).
	Alias string `json:"alias,omitempty"`
	// Ref names the version of Workflow by a reference: latest, a number,
	// an alias, a semver label (1.2.0) or constraint (^1.0.0). At most one
	// of Version, Alias and Ref is given; none means latest.
	Ref        string          `json:"ref,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	// MachineName names an inline definition: the execution's workflow in
	// lists and $$.StateMachine.Name, 1 to 128 ASCII letters, digits, '-',
	// '_' and '.'; empty means "StateMachine". A registered workflow is
	// named by Workflow, so the two are never given together.
	MachineName string `json:"machineName,omitempty"`
	// Name is the execution's id; empty means a new UUIDv7. Starting
	// the same name with the same workflow and input while it runs
	// returns the execution; anything else with a taken name is a
	// conflict.
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Mock is a mock file's content scripting the agents; without it
	// the server's own agents serve.
	Mock json.RawMessage `json:"mock,omitempty"`
	// MaxPayload is the execution's payload limit in bytes (the largest
	// input, state result or output), stored with it for every later run
	// of it: 0 or absent means the server's limit, -1 no limit.
	MaxPayload int `json:"maxPayload,omitempty"`
	// Durability is the execution's durability, stored with it: "strict"
	// or "batched"; empty means the server's. ("none" is a server without
	// a database, which aslrun serve is not.)
	Durability string `json:"durability,omitempty"`
}

// Execution is where an execution stands.
type Execution struct {
	ID         string          `json:"id"`
	Workflow   string          `json:"workflow"`
	Hash       string          `json:"definitionHash"`
	Status     string          `json:"status"`
	StartedAt  time.Time       `json:"startedAt"`
	StoppedAt  *time.Time      `json:"stoppedAt,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Cause      string          `json:"cause,omitempty"`
	State      string          `json:"state,omitempty"`
	WaitingFor string          `json:"waitingFor,omitempty"`
	WakeAt     *time.Time      `json:"wakeAt,omitempty"`
	Parent     string          `json:"parent,omitempty"`
	Approvals  []Approval      `json:"approvals"`
	// MaxPayload is the execution's own payload limit in bytes (-1: no
	// limit), absent when it has none and runs with the server's.
	MaxPayload int `json:"maxPayload,omitempty"`
	// Durability is the execution's own durability, absent when it runs
	// with the server's.
	Durability string `json:"durability,omitempty"`
	// Progress is how far the execution is, as its history shows: only
	// on GET /v1/executions/{id}, and only when its workflow has an
	// enabled top-level Progress block (it costs a read of the history).
	Progress *ExecutionProgress `json:"progress,omitempty"`
	// HistoryDropped is set when the execution's history was dropped (a
	// Distributed Map child that succeeded, or an EXPRESS one): its
	// history lists no events, and what it keeps is shown here.
	HistoryDropped bool `json:"historyDropped,omitempty"`
}

// ExecutionProgress is how far an execution is: the distinct top-level
// states completed (Completed) over the workflow's Progress TotalStates or
// its top-level states (Total), as a Percentage from 0 to 100 (by the
// states' WeightedProgress when given; 100 once it succeeded).
type ExecutionProgress struct {
	Percentage float64 `json:"percentage"`
	Completed  int     `json:"completed"`
	Total      int     `json:"total"`
}

// ExecutionList is a page of GET /v1/executions; Next, when set, is the
// cursor of the next page (?after=).
type ExecutionList struct {
	Executions []Execution `json:"executions"`
	Next       string      `json:"next,omitempty"`
}

// Event is one history event.
type Event struct {
	// Seq numbers the execution's events from 1, AWS-numbered and own
	// ones in one sequence; it never changes once committed.
	Seq        int64           `json:"seq"`
	ID         int64           `json:"id,omitempty"`
	Own        int64           `json:"own,omitempty"`
	Type       string          `json:"type"`
	Timestamp  time.Time       `json:"timestamp"`
	State      string          `json:"state,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Cause      string          `json:"cause,omitempty"`
	Detail     json.RawMessage `json:"detail,omitempty"`
	DocHash    string          `json:"docHash,omitempty"`
	Hash       string          `json:"hash,omitempty"`
	Superseded bool            `json:"superseded,omitempty"`
}

// History is a page of GET /v1/executions/{id}/history. Verified is set
// when ?verify=true asked for the hash chain to be checked (a chain that
// does not verify is a problem, not a false).
type History struct {
	Events   []Event `json:"events"`
	Next     string  `json:"next,omitempty"`
	Verified bool    `json:"verified,omitempty"`
}

// Approval is a pending approval. ID is opaque: it names the execution
// and the approval in it.
type Approval struct {
	ID          string          `json:"id"`
	Execution   string          `json:"execution"`
	Approval    string          `json:"approval"`
	State       string          `json:"state"`
	Prompt      json.RawMessage `json:"prompt"`
	Options     []string        `json:"options"`
	Deadline    *time.Time      `json:"deadline,omitempty"`
	EscalatesAt *time.Time      `json:"escalatesAt,omitempty"`
	Digest      string          `json:"digest"`
	Editable    json.RawMessage `json:"editable,omitempty"`
}

// ApprovalList is the inbox.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// Decision is the body of POST /v1/approvals/{id}/decision and of
// /check. The approver is the authenticated caller, never a field;
// OnBehalfOf names someone else and is only accepted from the local
// admin on the unix socket.
type Decision struct {
	Option     string          `json:"option"`
	Comment    string          `json:"comment,omitempty"`
	Edit       json.RawMessage `json:"edit,omitempty"`
	Digest     string          `json:"digest,omitempty"`
	OnBehalfOf string          `json:"onBehalfOf,omitempty"`
}

// Check is the answer of POST /v1/approvals/{id}/check: whether the
// decision would be accepted, and if not why (the governance violation,
// or the reason it is refused).
type Check struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
	Cause     string `json:"cause,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Path      string `json:"path,omitempty"`
	Refused   string `json:"refused,omitempty"`
	Execution string `json:"execution"`
}

// Checkpoint is a named snapshot of an execution, written by a Checkpoint
// state, from which it can be rolled back or forked. Next is the state
// after it (absent when the Checkpoint state ends the execution). A list
// has no documents; one checkpoint has its document and its top-level
// variables.
type Checkpoint struct {
	Name      string          `json:"name"`
	State     string          `json:"state"`
	Next      string          `json:"next,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	ExpiresAt *time.Time      `json:"expiresAt,omitempty"`
	Expired   bool            `json:"expired"`
	Document  json.RawMessage `json:"document,omitempty"`
	Variables json.RawMessage `json:"variables,omitempty"`
}

// CheckpointList is the answer of GET /v1/executions/{id}/checkpoints,
// oldest first.
type CheckpointList struct {
	Execution   string       `json:"execution"`
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// PatchOp is one operation of an RFC 6902 JSON Patch: the answer of
// GET /v1/executions/{id}/checkpoints/{name}/diff is a list of them. Path
// and From are JSON Pointers (RFC 6901); Value is there for "add" and
// "replace".
type PatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Rollback is the body of POST /v1/executions/{id}/rollback. Restore is
// "both" (the default), "document" or "memory".
type Rollback struct {
	Checkpoint string `json:"checkpoint"`
	Restore    string `json:"restore,omitempty"`
}

// Fork is the body of POST /v1/executions/{id}/fork: Name is the new
// execution's id (empty: a new UUIDv7).
type Fork struct {
	Checkpoint string `json:"checkpoint"`
	Restore    string `json:"restore,omitempty"`
	Name       string `json:"name,omitempty"`
}

// MemoryNamespace is an agent memory namespace with live entries: how
// many, and when the last was written.
type MemoryNamespace struct {
	// Namespace is the namespace as stored: for a collection of semantic
	// or episodic memory, Of, U+001F, Type, U+001F and Collection (give
	// it, escaped, to GET /v1/memory/{namespace}).
	Namespace string `json:"namespace"`
	// Of, Type ("semantic" or "episodic") and Collection are set for a
	// collection: the namespace a definition named, the memory's type
	// and the collection's name.
	Of         string    `json:"of,omitempty"`
	Type       string    `json:"type,omitempty"`
	Collection string    `json:"collection,omitempty"`
	Keys       int       `json:"keys"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// MemoryNamespaceList is the answer of GET /v1/memory, by name.
type MemoryNamespaceList struct {
	Namespaces []MemoryNamespace `json:"namespaces"`
}

// MemoryEntry is a live value of agent memory, with the execution that
// last wrote it.
type MemoryEntry struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt time.Time       `json:"updatedAt"`
	ExpiresAt *time.Time      `json:"expiresAt,omitempty"`
	Execution string          `json:"execution,omitempty"`
}

// MemoryEntryList is the answer of GET /v1/memory/{namespace}, by key.
type MemoryEntryList struct {
	Namespace string        `json:"namespace"`
	Entries   []MemoryEntry `json:"entries"`
}

// ApprovalGone is the data of a `gone` event of GET
// /v1/approvals/events: the approval left the inbox (it was decided, it
// timed out, or its execution ended).
type ApprovalGone struct {
	ID        string `json:"id"`
	Execution string `json:"execution"`
	Approval  string `json:"approval"`
}

// InboxReset is the data of a `reset` event of GET /v1/approvals/events:
// the stream could not resume where the client left off, and the whole
// inbox follows as Pending `pending` events; the client drops what it
// holds.
type InboxReset struct {
	Pending int `json:"pending"`
}

// Redrive is the body of POST /v1/executions/{id}/redrive (optional):
// Patch, when given, is an RFC 6902 JSON Patch applied to the input of the
// state that failed before it runs again.
type Redrive struct {
	Patch json.RawMessage `json:"patch,omitempty"`
}

// Stop is the optional body of POST /v1/executions/{id}/stop, as Step
// Functions' StopExecution takes it: the error (at most MaxStopError
// characters) and cause (at most MaxStopCause) the execution's
// ExecutionAborted event and its description record.
type Stop struct {
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
}

// The bounds of a Stop's fields in characters, Step Functions' own.
const (
	MaxStopError = 256
	MaxStopCause = 32768
)

// TaskSuccess is the body of POST /v1/task-tokens/success: a task token
// (the callback pattern, .waitForTaskToken) and the Task's result, any
// JSON value.
type TaskSuccess struct {
	Token  string          `json:"token"`
	Output json.RawMessage `json:"output"`
}

// TaskFailure is the body of POST /v1/task-tokens/failure: the Task fails
// with Error (States.TaskFailed when empty) and Cause.
type TaskFailure struct {
	Token string `json:"token"`
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
}

// TaskHeartbeat is the body of POST /v1/task-tokens/heartbeat.
type TaskHeartbeat struct {
	Token string `json:"token"`
}

// ActivityPoll is the body of POST /v1/activities/{name}/poll: the
// worker's name, recorded in the ActivityStarted event of the task it
// gets (at most 80 characters, no control characters; may be empty).
type ActivityPoll struct {
	WorkerName string `json:"workerName,omitempty"`
}

// ActivityTask is the answer of POST /v1/activities/{name}/poll when a
// task was handed to the worker: its task token (answered through
// /v1/task-tokens), its input (the Task state's effective input, a JSON
// value), the execution and the state (qualified by its scope, like
// "Map/3/Work").
type ActivityTask struct {
	TaskToken string          `json:"taskToken"`
	Input     json.RawMessage `json:"input"`
	Execution string          `json:"execution"`
	State     string          `json:"state"`
}

// Activity is one activity of GET /v1/activities: how many of its tasks
// wait for a worker (pending) and how many workers hold (started).
type Activity struct {
	Name    string `json:"name"`
	Pending int    `json:"pending"`
	Started int    `json:"started"`
}

// ActivityList is the answer of GET /v1/activities, by name.
type ActivityList struct {
	Activities []Activity `json:"activities"`
}

// WorkflowDiff is the answer of GET /v1/workflows/{name}/diff: what
// changed from one version of a workflow to another. States are compared
// by name at the top level (a nested Parallel branch or Map processor
// shows as changes of its state's fields); pointers are JSON Pointers
// into the definitions.
type WorkflowDiff struct {
	Name string `json:"name"`
	From int    `json:"from"`
	To   int    `json:"to"`
	// FromLabel and ToLabel are the versions' semver labels, if any.
	FromLabel string `json:"fromLabel,omitempty"`
	ToLabel   string `json:"toLabel,omitempty"`
	// Added and Removed name the states only To or only From has.
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	// Changed lists the states both have that differ, by name.
	Changed []StateChange `json:"changed"`
	// Fields are the changes of the top-level fields other than States
	// (StartAt, Comment, TimeoutSeconds, …).
	Fields []FieldChange `json:"fields"`
	// AddedEdges and RemovedEdges are the transitions only To or only
	// From has (Next, Default, a Choice rule's Next, a Catch's Next).
	AddedEdges   []Edge `json:"addedEdges"`
	RemovedEdges []Edge `json:"removedEdges"`
}

// StateChange is a state that differs between two versions.
type StateChange struct {
	State   string        `json:"state"`
	Changes []FieldChange `json:"changes"`
}

// FieldChange is one value that differs: its JSON Pointer, and its value
// before and after (absent when the field was added or removed).
type FieldChange struct {
	Pointer string          `json:"pointer"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
}

// Edge is a transition between two top-level states; Kind is next,
// default, choice or catch.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}
