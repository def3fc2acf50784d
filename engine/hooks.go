package engine

import (
	"context"
	"time"
)

// Hooks are told what executions do, for metrics and tracing. Every field
// may be nil. They are called synchronously from the run, possibly from
// several goroutines at once (Map items, Parallel branches, executions):
// they must be fast and safe for concurrent use, and must not block.
type Hooks struct {
	// Emitted is called for each event an execution emits to one of its
	// workflow's Events channels (by the channel's name and type), when
	// it is emitted (for a webhook, before its commit): the server
	// counts a prometheus channel's events with it.
	Emitted func(workflow, channel, channelType, eventType string)
	// PartsMoved is called when a Map item or a Parallel branch of an
	// execution of workflow starts (running +1) or ends (running -1, and
	// completed or failed +1), for progress gauges per workflow.
	PartsMoved func(workflow string, running, completed, failed int64)
	// ExecutionStarted is called when a new execution was created (Run,
	// Fork), with a store once the store created it, before its first
	// state runs. A resumed, rolled back or decided execution is not new.
	ExecutionStarted func(id string)
	// ExecutionFinished is called when an execution ended (SUCCEEDED,
	// FAILED, TIMED_OUT, ABORTED), once its end is committed. An execution
	// that stops to wait (WAITING) has not ended.
	ExecutionFinished func(id string, status Status)
	// StateExited is called when a state completed (a state transition) at
	// any nesting level, its completion accepted by the commit point: a
	// state inside a Map item or a Parallel branch is named with its
	// scope's prefix ("Map/3/Work"). A state that fails (a Fail state, an
	// error no Catch handles) or that a governance rule refuses does not
	// exit.
	StateExited func(id, state string)
	// Committed is called after one Store.Commit call with how long it took
	// and its error. An executor without a store commits nothing.
	Committed func(d time.Duration, err error)
	// AgentCalled is called after one agent invocation (Agent.Invoke) with
	// the context of the state that called it (see StateEntered), how
	// long it took, the usage the agent reported (tokens, cost) and how it
	// failed: the agent's error, a deadline (States.Timeout,
	// States.HeartbeatTimeout, as *asl.Error) or the run's cancellation;
	// nil when the agent returned a result. A Task whose agent is not
	// registered invokes nothing.
	AgentCalled func(ctx context.Context, id, agent string, d time.Duration, u Usage, err error)

	// NewTrace is called when a new execution is created (Run, Fork) with
	// the W3C trace context its caller gave (StartOptions.TraceParent, ""
	// for none); what it returns is stored as Execution.Trace. Nil stores
	// no trace context.
	NewTrace func(parent string) string
	// StateEntered is called when a state starts running at any nesting
	// level (again when a resumed execution runs it again), with the
	// context the state runs in, the execution's stored trace context
	// (Execution.Trace), the state's scope prefix ("" at the top level,
	// "Map/3/" in a Map item) and its name. It returns the context to run
	// the state in: ctx or one derived from it (carrying a span), which
	// the state's agents, its nested states, AgentCalled and StateEnded
	// receive.
	StateEntered func(ctx context.Context, id, trace, scope, state string) context.Context
	// StateEnded is called when a state StateEntered was called for stops
	// running, with the context StateEntered returned: err is nil when it
	// completed (an error its Catch handled included), waiting is set when
	// it stopped for the execution to wait (it runs again on Resume), and
	// err is the failure otherwise.
	StateEnded func(ctx context.Context, id, scope, state string, waiting bool, err error)
	// StateAudited is called when a state with an Audit block stops
	// running (after StateEnded), with what it did and which measures it
	// exports (Audit.Metrics), for metrics per state.
	StateAudited func(ctx context.Context, a AuditRecord)
}

func (h *Hooks) executionStarted(id string) {
	if h.ExecutionStarted != nil {
		h.ExecutionStarted(id)
	}
}

func (h *Hooks) executionFinished(id string, status Status) {
	if h.ExecutionFinished != nil {
		h.ExecutionFinished(id, status)
	}
}
