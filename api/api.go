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
}

// Workflow is one registered version of a workflow.
type Workflow struct {
	Name       string          `json:"name"`
	Version    int             `json:"version"`
	Hash       string          `json:"hash"`
	CreatedAt  time.Time       `json:"createdAt"`
	Definition json.RawMessage `json:"definition,omitempty"`
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
// workflow (name, and version or 0 for the latest) or an inline
// definition, never both.
type StartExecution struct {
	Workflow   string          `json:"workflow,omitempty"`
	Version    int             `json:"version,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	// Name is the execution's id; empty means a new UUIDv7. Starting
	// the same name with the same workflow and input while it runs
	// returns the execution; anything else with a taken name is a
	// conflict.
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Mock is a mock file's content scripting the agents; without it
	// the server's own agents serve.
	Mock json.RawMessage `json:"mock,omitempty"`
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
