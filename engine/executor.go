package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/states"
)

// Status is an execution's status, spelled as in AWS Step Functions.
type Status string

// The statuses of an execution.
const (
	StatusRunning   Status = "RUNNING"
	StatusWaiting   Status = "WAITING"
	StatusSucceeded Status = "SUCCEEDED"
	StatusFailed    Status = "FAILED"
	StatusTimedOut  Status = "TIMED_OUT"
	StatusAborted   Status = "ABORTED"
)

// DefaultMaxPayloadSize is AWS's limit on a state's input, output or
// result, in bytes; a larger one raises States.DataLimitExceeded.
const DefaultMaxPayloadSize = 262144

// defaultMaxConcurrency is how many Map items run at once when
// MaxConcurrency is 0 ("unlimited"): enough to keep any realistic set of
// agents busy without a goroutine per item on very large arrays.
const defaultMaxConcurrency = 256

// Config configures an Executor. The zero value works: no agents, an
// in-memory store, the default logger.
type Config struct {
	// Agents resolves the Agent names of Task states; nil means none are
	// registered (a Task then fails with States.TaskFailed).
	Agents *agents.Registry
	// Store receives every commit; nil means an in-memory store that keeps
	// nothing beyond the process.
	Store Store
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// MaxPayloadSize is the largest execution input, state result or
	// output in bytes; 0 means DefaultMaxPayloadSize (AWS's limit) and a
	// negative value means no limit (for large local batches).
	MaxPayloadSize int
}

// Executor runs executions of state machines. It is safe for concurrent use.
type Executor struct {
	agents     *agents.Registry
	store      Store
	log        *slog.Logger
	maxPayload int // < 0: no limit
}

// New returns an Executor configured by cfg.
func New(cfg Config) *Executor {
	x := &Executor{agents: cfg.Agents, store: cfg.Store, log: cfg.Logger, maxPayload: cfg.MaxPayloadSize}
	if x.maxPayload == 0 {
		x.maxPayload = DefaultMaxPayloadSize
	}
	if x.agents == nil {
		x.agents = agents.NewRegistry()
	}
	if x.store == nil {
		x.store = volatileStore{}
	}
	if x.log == nil {
		x.log = slog.Default()
	}
	return x
}

// StartOptions are the per-execution settings of Run.
type StartOptions struct {
	// ID is the execution's id; empty means a new UUIDv7.
	ID string
	// MachineName names the state machine in the context object
	// ($$.StateMachine.Name); empty means "StateMachine".
	MachineName string
}

// Result is how an execution ended.
type Result struct {
	// ID is the execution's id.
	ID string
	// Status is SUCCEEDED, FAILED or TIMED_OUT.
	Status Status
	// Output is the final document when the execution succeeded.
	Output any
	// Error and Cause describe the failure ("" when absent).
	Error string
	Cause string
}

// ErrInvalidInput is returned (wrapped) by Run when the execution input
// cannot be used.
var ErrInvalidInput = errors.New("invalid execution input")

// Run executes m on input until it ends and returns how it ended. input is
// a JSON value (see package jsonpath); it is normalized first. The returned
// error reports a problem of the engine (invalid input, a failing store);
// an execution that fails is a Result with Status FAILED.
func (x *Executor) Run(ctx context.Context, m *states.Machine, input any, opts StartOptions) (*Result, error) {
	input, err := jsonpath.Normalize(input)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	size := 0
	if x.maxPayload >= 0 {
		n, ok := jsonpath.SizeWithin(input, x.maxPayload)
		if !ok {
			return nil, fmt.Errorf("%w: input exceeds %d bytes", ErrInvalidInput, x.maxPayload)
		}
		size = n
	}
	id := opts.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new execution id: %w", err)
		}
		id = u.String()
	}
	name := opts.MachineName
	if name == "" {
		name = "StateMachine"
	}
	r := newRun(x, m, id, name, input, time.Now().UTC())
	r.inputSize = size
	return r.execute(ctx)
}
