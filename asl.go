// Package asl holds the error vocabulary of Agent State Language: the error
// names that states raise and that Retry and Catch match, and the Error type
// that carries a name and a cause through the engine.
package asl

import "fmt"

// ErrorName is the name of an ASL error, as it appears in ErrorEquals, in a
// Fail state's Error field and in an execution's failure.
type ErrorName string

// The error names the engine raises. Names from Amazon States Language keep
// their AWS spelling; the Agent.* names come from the ASL specification.
const (
	// ErrAll matches every error in ErrorEquals, except ErrRuntime.
	ErrAll ErrorName = "States.ALL"
	// ErrRuntime is a runtime error of the definition itself (a path that does
	// not resolve, a bad Wait or Map configuration value). No Retry or Catch
	// matches it, as in AWS.
	ErrRuntime ErrorName = "States.Runtime"
	// ErrQueryEvaluationError is the failure of a JSONata expression at
	// run time (it threw, gave nothing, or gave a value of the wrong type),
	// as AWS names it. Unlike ErrRuntime, Retry and Catch match it.
	ErrQueryEvaluationError ErrorName = "States.QueryEvaluationError"
	// ErrTaskFailed is the failure of an agent call that carries no name of its own.
	ErrTaskFailed ErrorName = "States.TaskFailed"
	// ErrTimeout is raised when a Task exceeds TimeoutSeconds or an execution
	// exceeds its TimeoutSeconds.
	ErrTimeout ErrorName = "States.Timeout"
	// ErrHeartbeatTimeout is raised when an agent misses a heartbeat.
	ErrHeartbeatTimeout ErrorName = "States.HeartbeatTimeout"
	// ErrResultPathMatchFailure is the name the ASL documents give to a
	// ResultPath that cannot be applied; AWS raises ErrReferencePathConflict
	// for it, and so does this engine.
	ErrResultPathMatchFailure ErrorName = "States.ResultPathMatchFailure"
	// ErrReferencePathConflict is raised when a ResultPath cannot be applied
	// to a state's input (a name through something that is not an object).
	ErrReferencePathConflict ErrorName = "States.ReferencePathConflict"
	// ErrParameterPathFailure is raised when a path in a payload template does not resolve.
	ErrParameterPathFailure ErrorName = "States.ParameterPathFailure"
	// ErrIntrinsicFailure is raised when an intrinsic function fails.
	ErrIntrinsicFailure ErrorName = "States.IntrinsicFailure"
	// ErrNoChoiceMatched is raised by a Choice state with no matching rule and no Default.
	ErrNoChoiceMatched ErrorName = "States.NoChoiceMatched"
	// ErrBranchFailed is raised when a Parallel branch or Map iteration fails.
	ErrBranchFailed ErrorName = "States.BranchFailed"
	// ErrExceedToleratedFailureThreshold is raised by a Map whose failed items
	// exceed ToleratedFailureCount or ToleratedFailurePercentage.
	ErrExceedToleratedFailureThreshold ErrorName = "States.ExceedToleratedFailureThreshold"
	// ErrDataLimitExceeded is raised when a state's input, output or result
	// exceeds 262,144 bytes.
	ErrDataLimitExceeded ErrorName = "States.DataLimitExceeded"
	// ErrItemReaderFailed is raised by a Distributed Map whose ItemReader
	// cannot read its items (a missing object, a malformed CSV row).
	ErrItemReaderFailed ErrorName = "States.ItemReaderFailed"
	// ErrResultWriterFailed is raised by a Distributed Map whose
	// ResultWriter cannot write its results.
	ErrResultWriterFailed ErrorName = "States.ResultWriterFailed"
	// ErrPermissions is raised when an agent calls a tool outside its tool
	// set, or reaches a host the server's owner did not allow (package
	// egress).
	ErrPermissions ErrorName = "States.Permissions"
	// ErrBudgetExceeded is raised when a token or cost budget is exceeded.
	ErrBudgetExceeded ErrorName = "States.BudgetExceeded"
	// ErrRateLimitExceeded is raised when a rate limit is hit.
	ErrRateLimitExceeded ErrorName = "States.RateLimitExceeded"
	// ErrNotImplemented is raised when a definition uses a feature that
	// validates but does not run yet.
	ErrNotImplemented ErrorName = "States.NotImplemented"

	// ErrAgentInvalidInput is raised when an input guardrail rejects the agent's input.
	ErrAgentInvalidInput ErrorName = "Agent.InvalidInput"
	// ErrAgentInvalidOutput is raised when an agent's output fails validation.
	ErrAgentInvalidOutput ErrorName = "Agent.InvalidOutput"
	// ErrAgentContextOverflow is raised when an agent's context does not fit MaxTokens.
	ErrAgentContextOverflow ErrorName = "Agent.ContextOverflow"
	// ErrAgentModelError is raised when a model endpoint returns an error.
	ErrAgentModelError ErrorName = "Agent.ModelError"
	// ErrAgentToolError is raised when a tool call fails.
	ErrAgentToolError ErrorName = "Agent.ToolError"
	// ErrAgentGuardrailViolation is raised when a guardrail blocks content.
	ErrAgentGuardrailViolation ErrorName = "Agent.GuardrailViolation"
	// ErrAgentNoConsensus is raised by a Debate that requires consensus and
	// reaches none without an arbiter.
	ErrAgentNoConsensus ErrorName = "Agent.NoConsensus"

	// ErrGovernanceSchemaViolation is raised when a document does not match
	// the workflow's Governance.Guard.Schema.
	ErrGovernanceSchemaViolation ErrorName = "Governance.SchemaViolation"
	// ErrGovernanceTransitionViolation is raised when a state's write breaks
	// a rule of Governance.Guard.Transitions.
	ErrGovernanceTransitionViolation ErrorName = "Governance.TransitionViolation"
	// ErrGovernanceWriteDenied is raised when a write policy (the
	// workflow's or the state's) denies one of a state's writes.
	ErrGovernanceWriteDenied ErrorName = "Governance.WriteDenied"
	// ErrGovernanceInvalidJSON is raised when a governed state writes a
	// value outside the JSON model (a NaN or infinite float from a Go agent).
	ErrGovernanceInvalidJSON ErrorName = "Governance.InvalidJSON"
)

// Error is an ASL error: a name that Retry and Catch match, a human-readable
// cause, and optionally the Go error it came from.
type Error struct {
	Name  ErrorName
	Cause string
	// Err is the underlying Go error, if any; it is not part of the ASL error.
	Err error
}

// Error returns "Name: Cause", or the name alone when there is no cause.
func (e *Error) Error() string {
	if e.Cause == "" {
		return string(e.Name)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Cause)
}

// Unwrap returns the underlying Go error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given name and a formatted cause.
func Errorf(name ErrorName, format string, args ...any) *Error {
	return &Error{Name: name, Cause: fmt.Sprintf(format, args...)}
}
