package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
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

// Ended reports whether s is a final status.
func (s Status) Ended() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusTimedOut, StatusAborted:
		return true
	}
	return false
}

// DefaultMaxPayloadSize is AWS's limit on a state's input, output or
// result, in bytes; a larger one raises States.DataLimitExceeded.
const DefaultMaxPayloadSize = 262144

// DefaultParkAfter is how long a top-level Wait or Retry delay must be for
// a durable execution to stop and wait as WAITING rather than sleep.
const DefaultParkAfter = 5 * time.Second

// defaultMaxConcurrency is how many Map items run at once when
// MaxConcurrency is 0 ("unlimited"): enough to keep any realistic set of
// agents busy without a goroutine per item on very large arrays.
const defaultMaxConcurrency = 256

// Config configures an Executor. The zero value works: no agents, no store
// (executions run in memory only), the default logger.
type Config struct {
	// Agents resolves the Agent names of Task states; nil means none are
	// registered (a Task then fails with States.TaskFailed). StartOptions
	// and ResumeOptions may give other agents for one execution.
	Agents *agents.Registry
	// AgentsFor, when set, gives the agents of an execution the executor
	// resumes on its own (Serve): typically built from Execution.Agents, the
	// mock or agents file it was started with. Nil means Agents.
	AgentsFor func(e *Execution) (*agents.Registry, error)
	// Store keeps executions durably; nil means none: executions run in
	// memory only and cannot be resumed.
	Store Store
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// MaxPayloadSize is the largest execution input, state result or
	// output in bytes; 0 means DefaultMaxPayloadSize (AWS's limit) and a
	// negative value means no limit (for large local batches). It is the
	// limit of the executions that have none of their own
	// (StartOptions.MaxPayloadSize, Execution.MaxPayload).
	MaxPayloadSize int
	// ParkAfter is how long a top-level Wait or Retry delay must be for a
	// durable execution to stop as WAITING (to be woken by Serve) instead
	// of sleeping; 0 means DefaultParkAfter. Without a store executions
	// always sleep.
	ParkAfter time.Duration
	// OnEscalation is called when a pending approval escalates
	// (Escalation.After, Repeat); nil logs it as a warning. Its error is
	// logged, never raised.
	OnEscalation func(ctx context.Context, n EscalationNotice) error
	// Hooks are told what executions do (for metrics and tracing); the
	// zero value tells nobody.
	Hooks Hooks
	// Durability is the durability of the executions that do not choose
	// their own (StartOptions.Durability): "" is DurabilityStrict.
	// DurabilityNone is an executor without a Store; with a Store it is
	// DurabilityStrict.
	Durability Durability
	// BatchWindow is how long the commits of a batched execution may wait
	// to be written; 0 means DefaultBatchWindow.
	BatchWindow time.Duration
	// JSONataLimits bound each evaluation of a JSONata field of a state
	// (its steps and the bytes of the values it builds); the zero value
	// is jsonata.DefaultSteps and jsonata.DefaultMemory, and a negative
	// field means no limit. An evaluation past a limit fails the state
	// with States.QueryEvaluationError.
	JSONataLimits jsonata.Limits
	// JSONPathBounds bound each evaluation of a JSONPath path or intrinsic
	// function call of a state (the values an indefinite path visits, the
	// bytes intrinsic calls build); a zero field is
	// jsonpath.DefaultPathSteps or jsonpath.DefaultIntrinsicBytes. An
	// evaluation past a bound fails the state with States.Runtime.
	JSONPathBounds jsonpath.Bounds
	// Buckets says which buckets Distributed Maps may name beyond those of
	// the agents registry, and how much of an object they hold at once;
	// the zero value refuses "file://" buckets and has the default limits.
	Buckets BucketAccess
	// EventsOut is where the stdout channels of workflows' Events write,
	// one event per line; nil means os.Stdout.
	EventsOut io.Writer
	// CacheLimits bound the result cache of Tasks (Cache, Idempotent) in
	// the store; zero fields mean DefaultCacheLimits'.
	CacheLimits CacheLimits
	// Embedder turns texts into vectors for semantic memory, semantic
	// context and their queries (embed.go); nil means the offline
	// embedder of package models/localembed (384 dimensions). Vectors are
	// cached by model and text either way.
	Embedder Embedder
	// RedactKey is the owner's key (at least MinRedactKey bytes; see
	// ReadRedactKey) with which the values Audit.Redact paths select are
	// sealed in the store and marked by a keyed hash everywhere else. A
	// durable executor without one refuses executions that redact; one
	// without a store uses a random key of its own.
	RedactKey []byte
	// Workflows resolves the workflows Workflow states run as child
	// executions (the store's registry); nil refuses them (the state
	// fails with States.TaskFailed saying so).
	Workflows WorkflowSource
	// ChildPoll is how long a parent waiting for a child (one that waits,
	// or that another process runs) sleeps before it looks at the child
	// again when no end of the child woke it; 0 means a minute.
	ChildPoll time.Duration
	// KeepChildHistory keeps the full history of every Distributed Map
	// child execution. False (the default), as AWS keeps a map run's
	// summary rather than each child's history, a child's history is
	// dropped once it succeeded (its head stays: input, output, status),
	// and an EXPRESS child's (ProcessorConfig ExecutionType) with every
	// commit; children that fail, time out, are aborted or wait keep
	// theirs.
	KeepChildHistory bool
}

// Executor runs executions of state machines. It is safe for concurrent
// use.
type Executor struct {
	// machines are the definitions of the executions it loaded, parsed.
	machines   states.Cache
	agents     *agents.Registry
	agentsFor  func(e *Execution) (*agents.Registry, error)
	store      Store
	durable    bool
	log        *slog.Logger
	maxPayload int // < 0: no limit
	parkAfter  time.Duration
	// onEscalation is Config.OnEscalation.
	onEscalation func(ctx context.Context, n EscalationNotice) error
	hooks        Hooks
	// buckets is Config.Buckets.
	buckets BucketAccess
	// durability is the mode of executions without their own, and
	// batchWindow how long a batched execution's commits may wait.
	durability  Durability
	batchWindow time.Duration
	// jsonataLimits is Config.JSONataLimits.
	jsonataLimits jsonata.Limits
	// pathBounds is Config.JSONPathBounds.
	pathBounds jsonpath.Bounds

	// live holds the executions' live feeds of streamed text (live.go).
	live liveHub
	// eventsOut is Config.EventsOut.
	eventsOut io.Writer
	// embedder is Config.Embedder, cached (embed.go).
	embedder Embedder
	// redactor seals secrets (nil without a key, redactErr when the key
	// was refused).
	redactor  *Redactor
	redactErr error
	// workflows is Config.Workflows.
	workflows WorkflowSource
	// childPoll is Config.ChildPoll (child.go).
	childPoll time.Duration
	// keepChildHistory is Config.KeepChildHistory (commit.go).
	keepChildHistory bool
	// detached are the child executions started without waiting for them
	// (child_resource.go).
	detached sync.WaitGroup
	// vectors are the semantic memory collections' indexes (semantic.go).
	vectors vectorCache
	// localCache is the result cache of an executor without a store;
	// cacheLimits is Config.CacheLimits (task_cache.go).
	localCache  localCache
	cacheLimits CacheLimits

	mu     sync.Mutex
	active map[string]*held // executions held in this process (stop.go)
	// slots are Serve's while it serves a Dispatcher store (serve.go).
	slots *slots
	// draining is set by Drain: runs stop at their next state boundary.
	draining atomic.Bool
	// limiters count tool uses under the RateLimits of each workflow's
	// states, across the executions of this process.
	limiters map[string]*limiter
	// local is the agent memory of an executor without a store.
	local localMemory
	// acts knows where tasks of activities wait for workers (activity.go).
	acts activityBoard
	// fair hands turns to the fan-out of every execution (fair.go).
	fair *fairShare
}

// New returns an Executor configured by cfg.
func New(cfg Config) *Executor {
	x := &Executor{
		agents: cfg.Agents, agentsFor: cfg.AgentsFor, store: cfg.Store, log: cfg.Logger,
		maxPayload: cfg.MaxPayloadSize, parkAfter: cfg.ParkAfter, active: make(map[string]*held), onEscalation: cfg.OnEscalation,
		hooks: cfg.Hooks, jsonataLimits: cfg.JSONataLimits, pathBounds: cfg.JSONPathBounds,
		fair: newFairShare(0, fairQuantum),
	}
	if x.maxPayload == 0 {
		x.maxPayload = DefaultMaxPayloadSize
	}
	if x.parkAfter == 0 {
		x.parkAfter = DefaultParkAfter
	}
	if x.agents == nil {
		x.agents = agents.NewRegistry()
	}
	x.durable = x.store != nil
	if x.store == nil {
		x.store = volatileStore{}
	}
	switch {
	case !x.durable:
		x.durability = DurabilityNone
	case cfg.Durability == DurabilityBatched:
		x.durability = DurabilityBatched
	default:
		x.durability = DurabilityStrict
	}
	x.batchWindow = cfg.BatchWindow
	x.buckets = cfg.Buckets
	x.embedder = newEmbedder(cfg.Embedder)
	x.workflows = cfg.Workflows
	x.childPoll = cfg.ChildPoll
	x.keepChildHistory = cfg.KeepChildHistory
	if x.childPoll <= 0 {
		x.childPoll = defaultChildPoll
	}
	switch {
	case len(cfg.RedactKey) > 0:
		x.redactor, x.redactErr = NewRedactor(cfg.RedactKey)
	case !x.durable:
		x.redactor = newEphemeralRedactor()
	}
	x.cacheLimits = cfg.CacheLimits
	if x.batchWindow <= 0 {
		x.batchWindow = DefaultBatchWindow
	}
	x.eventsOut = cfg.EventsOut
	if x.eventsOut == nil {
		x.eventsOut = os.Stdout
	}
	if x.log == nil {
		x.log = slog.Default()
	}
	return x
}

// StartOptions are the per-execution settings of Run.
type StartOptions struct {
	// ID is the execution's id; empty means a new UUIDv7. An id that is
	// taken fails with ErrExists.
	ID string
	// MachineName names the state machine in the context object
	// ($$.StateMachine.Name); empty means "StateMachine".
	MachineName string
	// Agents, when set, are the agents of this execution instead of the
	// executor's.
	Agents *agents.Registry
	// AgentsFile and AgentsKind are stored with the execution (the content
	// of the mock or agents file it runs with, and "mock" or "agents"), so
	// that resuming it later can rebuild the same agents.
	AgentsFile []byte
	AgentsKind string
	// MaxPayloadSize is the execution's payload limit in bytes, stored
	// with it so that every later run of it (Resume, Decide, Serve, in
	// any process) keeps it: 0 means none of its own (the limit of the
	// executor running it, Config.MaxPayloadSize) and a negative value
	// means no limit.
	MaxPayloadSize int
	// TraceParent is the W3C trace context of the caller (an incoming
	// traceparent header) the execution's trace continues; empty means a
	// new trace. It is used only when tracing is on (Hooks.NewTrace).
	TraceParent string
	// Durability is the execution's durability, stored with it so that
	// every later run of it keeps it: "" means the executor's
	// (Config.Durability). DurabilityNone is refused by an executor with a
	// store (its executions are all kept), as DurabilityStrict and
	// DurabilityBatched are by one without.
	Durability Durability
	// Registry names the registered workflow the execution runs
	// ("name@version"), stored with it so that every later run of it
	// keeps it; empty means an unregistered definition (an inline one, a
	// file), whose Tasks may not cache with Scope global: Run refuses
	// them.
	Registry string
	// Created, when set, is called with the execution's id once it exists
	// (its input accepted and, with a store, its record created), before
	// its first state runs.
	Created func(id string)
	// Started, when set, is called just before Created with a copy of the
	// execution as it was created (RUNNING, nothing run yet): what a
	// Load would read then, without reading it. The copy shares the
	// execution's input, which must not be modified.
	Started func(e *Execution)
	// parent is the execution whose Distributed Map starts this one (a
	// child execution), stored as its Parent; express is set when that
	// Map runs its children as EXPRESS executions whose history is not
	// kept (the execution starts HistoryDropped).
	parent  string
	express bool
}

// Result is where an execution stands when Run, Resume or Fork returns.
type Result struct {
	// ID is the execution's id.
	ID string
	// Status is SUCCEEDED, FAILED, TIMED_OUT, ABORTED (Stop), or WAITING
	// when the execution stopped to wait (it is resumed later, e.g. by
	// Serve).
	Status Status
	// Output is the final document when the execution succeeded.
	Output any
	// Error and Cause describe the failure ("" when absent).
	Error string
	Cause string
	// State, WaitingFor and WakeAt say where a WAITING execution waits
	// (the first state that stopped), for what ("Wait", "Retry",
	// "Approval", or several joined by ", ") and until when (zero: until a
	// decision). Approvals are the approvals waiting for a decision.
	State      string
	WaitingFor string
	WakeAt     time.Time
	Approvals  []PendingApproval
	// Payload, for an execution that failed with States.DataLimitExceeded,
	// says which document passed which limit (its cause, AWS's, does not).
	Payload *PayloadError
}

// Errors returned by the executor.
var (
	// ErrInvalidInput is returned (wrapped) when the execution input cannot
	// be used.
	ErrInvalidInput = errors.New("invalid execution input")
	// ErrEnded is returned (wrapped) when resuming an execution that has
	// already ended.
	ErrEnded = errors.New("execution has ended")
	// ErrBusy is returned (wrapped) when an execution is already running in
	// this executor.
	ErrBusy = errors.New("execution is running")
	// ErrLeaseLost is returned (wrapped) by a run that stopped because
	// another process took its execution's lease over (Leaser): the
	// execution is that process's now, and this run's commits were refused.
	ErrLeaseLost = errors.New("the execution's lease was lost")
	// ErrNotDurable is returned (wrapped) by Resume, Rollback and Fork on an
	// executor without a store.
	ErrNotDurable = errors.New("the executor has no store")
)

// Run starts an execution of m on input and runs it until it ends or stops
// to wait, and returns where it stands. While the executor serves a
// Dispatcher store with no slot free (see Serve), Run creates the
// execution and returns it RUNNING, left to the process that claims it. input is a JSON value (see package
// jsonpath); it is normalized first. The returned error reports a problem
// of the engine (invalid input, a failing store, a cancelled ctx — the
// execution then stays RUNNING and can be resumed); an execution that fails
// is a Result with Status FAILED.
func (x *Executor) Run(ctx context.Context, m *states.Machine, input any, opts StartOptions) (*Result, error) {
	input, err := jsonvalue.Normalize(input)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	own := opts.MaxPayloadSize
	if own < 0 {
		own = -1
	}
	size := 0
	if limit := x.limitOf(own); limit >= 0 {
		n, ok := jsonvalue.SizeWithin(input, limit)
		if !ok {
			return nil, fmt.Errorf("%w: %w", ErrInvalidInput, &PayloadError{Size: jsonvalue.Size(input), Limit: limit})
		}
		size = n
	}
	if err := checkInput(m, input); err != nil {
		return nil, err
	}
	reg := opts.Agents
	if reg == nil {
		reg = x.agents
	}
	durability, err := x.durabilityOf(m, opts.Durability, reg)
	if err != nil {
		return nil, err
	}
	if err := checkSandboxes(m, reg); err != nil {
		return nil, err
	}
	if err := x.checkChannels(m); err != nil {
		return nil, err
	}
	if err := checkCacheScopes(m, opts.Registry); err != nil {
		return nil, err
	}
	if err := x.canRedact(m); err != nil {
		return nil, err
	}
	e := &Execution{
		ID: opts.ID, MachineName: opts.MachineName, Input: input, Status: StatusRunning,
		StartedAt: time.Now().UTC(), Agents: opts.AgentsFile, AgentsKind: opts.AgentsKind,
		MaxPayload: own, Durability: durability, Parent: opts.parent, Registry: opts.Registry,
		HistoryDropped: opts.express,
	}
	e.secrets = x.secretsOf(m)
	if e.ID == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new execution id: %w", err)
		}
		e.ID = u.String()
	}
	if e.MachineName == "" {
		e.MachineName = "StateMachine"
	}
	if f := x.hooks.NewTrace; f != nil {
		e.Trace = f(opts.TraceParent)
	}
	// While the executor serves a store other processes share, it runs
	// the execution only with a slot free; otherwise it leaves it to the
	// process that claims it.
	var queued *slots
	if s := x.dispatching(); s != nil {
		if s.take() {
			defer s.give()
		} else {
			queued = s
		}
	}
	// Hold the id before the execution exists, so that nothing (a Stop)
	// can come between its creation and its run.
	ctx, ok := x.acquireRun(ctx, e.ID)
	if !ok {
		return nil, fmt.Errorf("execution %s: %w (it is held by this executor)", e.ID, ErrExists)
	}
	defer x.release(e.ID)
	if queued != nil {
		return x.createQueued(ctx, m, e, opts, queued, size)
	}
	// An id another process holds is an execution that exists: Run does
	// not wait for it.
	if _, err := x.lease(ctx, e.ID, false); errors.Is(err, ErrBusy) {
		return nil, fmt.Errorf("%w (%w: another process runs it)", err, ErrExists)
	} else if err != nil {
		return nil, err
	}
	if x.durable {
		if e.Definition, e.DefinitionHash, err = definitionOf(m); err != nil {
			return nil, err
		}
		if err := x.create(ctx, m, e); err != nil {
			return nil, fmt.Errorf("execution %s: %w", e.ID, err)
		}
	}
	x.hooks.executionStarted(e.ID)
	opts.created(e)
	r := x.newRun(m, e, opts.Agents)
	r.inputSize = size
	r.event(Event{Type: EventExecutionStarted, Input: input, Document: input})
	return r.execute(ctx, &Scope{Next: m.StartAt, Doc: input})
}

// createQueued creates execution e of m without running it (Run with no
// slot of s free while the executor serves a Dispatcher store): created
// without a lease, it is claimed by a process with room, which the store
// wakes; on a StartClaimer store, this executor remembers it, to run it
// itself when a slot frees unless another process claimed it first.
func (x *Executor) createQueued(ctx context.Context, m *states.Machine, e *Execution, opts StartOptions, s *slots, inputSize int) (*Result, error) {
	var err error
	if e.Definition, e.DefinitionHash, err = definitionOf(m); err != nil {
		return nil, err
	}
	if err := x.create(ctx, m, e); err != nil {
		return nil, fmt.Errorf("execution %s: %w", e.ID, err)
	}
	x.hooks.executionStarted(e.ID)
	opts.created(e)
	if _, ok := x.store.(StartClaimer); ok {
		q := &queuedStart{m: m, e: e, reg: opts.Agents, inputSize: inputSize, bytes: inputSize}
		if x.limitOf(e.MaxPayload) < 0 {
			// Run did not measure it: no limit.
			q.bytes = jsonvalue.Size(e.Input)
		}
		s.remember(q)
	}
	return &Result{ID: e.ID, Status: StatusRunning}, nil
}

// runQueued runs a start createQueued queued, once Serve claimed it back
// (StartClaimer): as Run would have run it with a slot free. The claim
// took its lease from the queue, so nothing has run, stopped or ended it.
func (x *Executor) runQueued(ctx context.Context, q *queuedStart, c *Claimed) (_ *Result, err error) {
	id := q.e.ID
	ctx, release, err := x.holdClaimed(ctx, c)
	if err != nil {
		return nil, err
	}
	defer release()
	defer func() { x.noteFailure(ctx, id, err) }()
	defer func() { err = stopped(ctx, id, err) }()
	r := x.newRun(q.m, q.e, q.reg)
	r.inputSize = q.inputSize
	r.event(Event{Type: EventExecutionStarted, Input: q.e.Input, Document: q.e.Input})
	return r.execute(ctx, &Scope{Next: q.m.StartAt, Doc: q.e.Input})
}

// created tells Started and Created that e exists.
func (opts *StartOptions) created(e *Execution) {
	if opts.Started != nil {
		c := *e
		c.Input = e.secrets.stored(e.Input)
		opts.Started(&c)
	}
	if opts.Created != nil {
		opts.Created(e.ID)
	}
}

// definitionOf returns a machine's definition as stored: compact JSON and
// the hash of its canonical form.
func definitionOf(m *states.Machine) ([]byte, string, error) {
	if m.Definition == nil {
		return nil, "", errors.New("the machine has no definition to store (parse it with states.Parse)")
	}
	text, err := jsonvalue.Marshal(m.Definition)
	if err != nil {
		return nil, "", fmt.Errorf("store the definition: %w", err)
	}
	hash, err := jsonvalue.CanonicalHash(m.Definition)
	if err != nil {
		return nil, "", fmt.Errorf("store the definition: %w", err)
	}
	return text, hash, nil
}

func (x *Executor) newRun(m *states.Machine, e *Execution, reg *agents.Registry) *run {
	if reg == nil {
		reg = x.agents
	}
	r := &run{x: x, m: m, exec: e, agents: reg, invocations: make(map[string]int), maxPayload: x.limitOf(e.MaxPayload)}
	r.secrets = e.secrets
	if r.secrets == nil {
		r.secrets = x.secretsOf(m)
	}
	r.batched = x.durable && (e.Durability == DurabilityBatched || e.Durability == "" && x.durability == DurabilityBatched)
	if r.maxPayload >= 0 {
		if n, ok := jsonvalue.SizeWithin(e.Input, r.maxPayload); ok {
			r.inputSize = n
		}
	}
	return r
}

// MaxPayloadSize returns the payload limit of the executions that have
// none of their own: Config.MaxPayloadSize, DefaultMaxPayloadSize for 0;
// negative means no limit.
func (x *Executor) MaxPayloadSize() int { return x.maxPayload }

// limitOf returns the payload limit of an execution whose own limit
// (Execution.MaxPayload) is own: its own when it has one, else the
// executor's; negative means no limit.
func (x *Executor) limitOf(own int) int {
	switch {
	case own < 0:
		return -1
	case own > 0:
		return own
	}
	return x.maxPayload
}
