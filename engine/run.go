package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/states"
)

// run drives one execution. Fields below mu are shared by the goroutines
// of Map items and Parallel branches.
type run struct {
	x           *Executor
	m           *states.Machine
	id          string
	machineName string
	input       any
	inputSize   int // the input's size in bytes (0 without a payload limit)
	started     time.Time

	mu          sync.Mutex
	events      []Event // recorded since the last commit
	lastEvent   int64   // id of the last event recorded
	invocations map[string]int
	seq         int64
	pending     Commit // reused by commit
	flushErr    error  // a failed history-only commit, reported at the next commit
}

func newRun(x *Executor, m *states.Machine, id, machineName string, input any, started time.Time) *run {
	return &run{
		x:           x,
		m:           m,
		id:          id,
		machineName: machineName,
		input:       input,
		started:     started,
		invocations: make(map[string]int),
	}
}

// scope is one level of nesting: the top-level machine, a Map item or a
// Parallel branch. Variables assigned in a scope are visible to it and the
// scopes it encloses; an inner scope reads outer variables but its own
// assignments stay inside it.
type scope struct {
	parent *scope
	vars   map[string]any
	// prefix qualifies state names for agents ("Map/3/"), "" at top level.
	prefix string
	// item is the Map item being processed, nil outside a Map.
	item *mapItem
	// top is true for the execution's own machine: its steps are committed.
	top bool
	// sizes remembers the sizes of large parts of this scope's documents.
	sizes jsonpath.SizeCache
}

type mapItem struct {
	index int
	value any
}

func (s *scope) lookup(name string) (any, bool) {
	for sc := s; sc != nil; sc = sc.parent {
		if v, ok := sc.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// assign sets variables in this scope. Values are computed by the caller
// before any is set, so a state's assignments all see the values from its
// entry. The map is replaced, never modified, so a committed set of
// variables stays as it was.
func (s *scope) assign(values map[string]any) {
	if len(values) == 0 {
		return
	}
	vars := make(map[string]any, len(s.vars)+len(values))
	for k, v := range s.vars {
		vars[k] = v
	}
	for k, v := range values {
		vars[k] = v
	}
	s.vars = vars
}

// env is what paths and templates see while one state runs: the context
// object and the variables. It implements jsonpath.Env.
type env struct {
	r         *run
	sc        *scope
	state     string
	entered   time.Time
	retry     int
	item      *mapItem
	ctxObject map[string]any
}

func (e *env) Variable(name string) (any, bool) { return e.sc.lookup(name) }

func (e *env) Context() any {
	if e.ctxObject != nil {
		return e.ctxObject
	}
	obj := map[string]any{
		"Execution": map[string]any{
			"Id":        e.r.id,
			"Name":      e.r.id,
			"Input":     e.r.input,
			"StartTime": formatTime(e.r.started),
		},
		"StateMachine": map[string]any{
			"Id":   e.r.machineName,
			"Name": e.r.machineName,
		},
		"State": map[string]any{
			"Name":        e.state,
			"EnteredTime": formatTime(e.entered),
			"RetryCount":  jsonpath.IntNumber(int64(e.retry)),
		},
	}
	if e.item != nil {
		obj["Map"] = map[string]any{
			"Item": map[string]any{
				"Index": jsonpath.IntNumber(int64(e.item.index)),
				"Value": e.item.value,
			},
		}
	}
	e.ctxObject = obj
	return obj
}

var _ jsonpath.Env = (*env)(nil)

// formatTime writes t as AWS writes context-object times.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// execute runs the top-level machine to its end.
func (r *run) execute(ctx context.Context) (*Result, error) {
	if r.m.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(r.m.TimeoutSeconds)*time.Second, errExecutionTimeout)
		defer cancel()
	}
	r.event(Event{Type: EventExecutionStarted, Input: r.input})
	if err := r.commit(ctx, &Transition{Status: StatusRunning, Next: r.m.StartAt, Output: r.input}); err != nil {
		return nil, err
	}
	sc := &scope{top: true}
	var out any
	err := workflowFeatures(r.m)
	if err == nil {
		out, err = r.machine(ctx, r.m, r.input, r.inputSize, sc)
	}
	res := &Result{ID: r.id}
	switch {
	case err == nil:
		res.Status, res.Output = StatusSucceeded, out
		r.event(Event{Type: EventExecutionSucceeded, Output: out})
	case errors.Is(context.Cause(ctx), errExecutionTimeout):
		res.Status, res.Error, res.Cause = StatusTimedOut, string(asl.ErrTimeout), "the execution timed out"
		r.event(Event{Type: EventExecutionTimedOut, Error: res.Error, Cause: res.Cause})
	default:
		var ae *asl.Error
		if !errors.As(err, &ae) {
			// An engine failure (store, cancelled context): not an execution outcome.
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("execution %s: %w", r.id, ctxErr)
			}
			return nil, fmt.Errorf("execution %s: %w", r.id, err)
		}
		res.Status, res.Error, res.Cause = StatusFailed, string(ae.Name), ae.Cause
		r.event(Event{Type: EventExecutionFailed, Error: res.Error, Cause: res.Cause})
	}
	final := &Transition{Status: res.Status, Output: res.Output, Error: res.Error, Cause: res.Cause}
	if err := r.commit(context.WithoutCancel(ctx), final); err != nil {
		return nil, err
	}
	return res, nil
}

var errExecutionTimeout = errors.New("execution timed out")

// workflowFeatures fails a workflow whose top-level agent-native blocks do
// not run yet: they validate, but running without them would silently drop
// their guarantees.
func workflowFeatures(m *states.Machine) error {
	e := m.Extensions
	if e == nil {
		return nil
	}
	var feature string
	switch {
	case e.Governance != nil:
		feature = "Governance"
	case e.Budget != nil:
		feature = "Budget"
	case e.Memory != nil:
		feature = "Memory"
	default:
		return nil
	}
	return asl.Errorf(asl.ErrNotImplemented, "the workflow's top-level %s block is not implemented yet", feature)
}

// machine runs a (possibly nested) machine from its StartAt on input and
// returns its output, or the *asl.Error it failed with.
//
// size is an upper bound of the input's size in bytes of compact JSON, at
// most the payload limit; each state passes on a bound of its output, and
// measures a document only when its bound passes the limit (see size.go).
func (r *run) machine(ctx context.Context, m *states.Machine, input any, size int, sc *scope) (any, error) {
	name := m.StartAt
	doc := input
	for {
		if err := context.Cause(ctx); err != nil {
			if errors.Is(err, errExecutionTimeout) {
				return nil, asl.Errorf(asl.ErrTimeout, "the execution timed out")
			}
			return nil, err
		}
		st := m.States[name]
		s, err := r.step(ctx, st, doc, size, sc)
		if err != nil {
			return nil, err
		}
		if sc.top {
			if err := r.commit(ctx, &Transition{Status: StatusRunning, State: name, Next: s.next, Previous: doc, Proposed: s.proposed, Output: s.output, Variables: sc.vars}); err != nil {
				return nil, err
			}
		}
		if s.next == "" {
			return s.output, nil
		}
		name, doc, size = s.next, s.output, s.size
	}
}

// stepResult is what running one state produced.
type stepResult struct {
	// output is the state's output: the next state's input.
	output any
	// proposed is the document after ResultPath, before OutputPath.
	proposed any
	// next is the state to run next, "" when the machine ends.
	next string
	// size bounds the output's size (see run.machine).
	size int
}

// step runs one state: it records its entry, runs it (with Retry and
// Catch), applies its Assign, and records its exit.
func (r *run) step(ctx context.Context, st states.State, input any, size int, sc *scope) (stepResult, error) {
	c := st.Base()
	now := time.Now().UTC()
	entered := r.eventAt(Event{Type: eventType(c.Type, true), Timestamp: now, State: c.Name, Scope: sc.prefix, Input: input})
	h := &stateRun{r: r, sc: sc, entered: entered, st: st, inSize: size}
	h.envData = env{r: r, sc: sc, state: c.Name, entered: now, item: sc.item}
	h.env = &h.envData
	var (
		res stepResult
		err error
	)
	switch s := st.(type) {
	case *states.Pass:
		res, err = h.pass(s, input)
	case *states.Task:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) { return h.task(ctx, s, input) })
	case *states.Choice:
		res, err = h.choice(s, input)
	case *states.Wait:
		res, err = h.wait(ctx, s, input)
	case *states.Succeed:
		res, err = h.succeed(s, input)
	case *states.Fail:
		err = h.fail(s, input)
	case *states.Map:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) { return h.mapState(ctx, s, input) })
	case *states.Parallel:
		res, err = h.withRetry(ctx, input, s.Retry, s.Catch, func(ctx context.Context) (stepResult, error) { return h.parallel(ctx, s, input) })
	default:
		err = asl.Errorf(asl.ErrNotImplemented, "state %q: %s states are not implemented yet", c.Name, c.Type)
	}
	if err != nil {
		return stepResult{}, err
	}
	if h.assign != nil {
		sc.assign(h.assign)
	}
	r.event(Event{Type: eventType(c.Type, false), State: c.Name, Scope: sc.prefix, Output: res.output})
	return res, nil
}

// stateRun carries what one run of a state needs.
type stateRun struct {
	r       *run
	env     *env // points at envData
	envData env
	sc      *scope
	entered int64
	st      states.State
	// assign holds the variables the state sets, applied when it exits.
	assign map[string]any
	// inSize bounds the size of the state's raw input.
	inSize int
}

func (h *stateRun) name() string { return h.st.Base().Name }

// runtimeError is a States.Runtime error quoting the state and the event id
// of its entry, as AWS words it.
func (h *stateRun) runtimeError(msg string) *asl.Error {
	return asl.Errorf(asl.ErrRuntime, "An error occurred while executing the state '%s' (entered at the event id #%d). %s", h.name(), h.entered, msg)
}

// pathError turns the failure of a path, template or intrinsic function
// into the error AWS raises for it: States.Runtime, whose cause quotes the
// state. (AWS raises an intrinsic function's failure as States.Runtime with
// the cause "Invalid arguments in States.X", not States.IntrinsicFailure.)
func (h *stateRun) pathError(err error) error {
	var ie *jsonpath.IntrinsicError
	if errors.As(err, &ie) {
		return h.runtimeError(ie.Msg)
	}
	return h.runtimeError(err.Error())
}

// get reads a path of the state's configuration (SecondsPath,
// MaxConcurrencyPath, …) from its input; a miss is States.Runtime.
func (h *stateRun) get(p *jsonpath.Path, input any) (any, error) {
	v, err := p.Get(input, h.env)
	if err != nil {
		return nil, h.pathError(err)
	}
	return v, nil
}

// inputPath applies InputPath to the raw input.
func (h *stateRun) inputPath(input any) (any, error) {
	return h.ioPath(h.st.Base().InputPath, input)
}

// outputPath applies OutputPath to the state's result document.
func (h *stateRun) outputPath(doc any) (any, error) {
	return h.ioPath(h.st.Base().OutputPath, doc)
}

func (h *stateRun) ioPath(p states.IOPath, doc any) (any, error) {
	switch {
	case p.Null:
		return map[string]any{}, nil
	case p.Path == nil:
		return doc, nil
	}
	v, err := p.Path.Get(doc, h.env)
	if err != nil {
		return nil, h.pathError(err)
	}
	return v, nil
}

// resultPath places result into the raw input.
func (h *stateRun) resultPath(rp states.ResultPath, raw, result any) (any, error) {
	switch {
	case rp.Discard:
		return raw, nil
	case rp.Path == nil:
		return result, nil
	}
	doc, err := rp.Path.Set(raw, result)
	if err != nil {
		return nil, asl.Errorf(asl.ErrReferencePathConflict, "%s", err.Error())
	}
	return doc, nil
}

// template evaluates a payload template on input, whose size is at most
// inSize, and returns the result with a bound of its size; a result over
// the payload limit is States.DataLimitExceeded.
func (h *stateRun) template(t *jsonpath.Template, input any, inSize int) (any, int, error) {
	v, err := t.Eval(input, h.env)
	if err != nil {
		return nil, 0, h.pathError(err)
	}
	bound, ok := t.SizeBound(inSize)
	if !ok {
		bound = unknownSize
	}
	size, err := h.fits(v, bound)
	return v, size, err
}

// evalAssign computes the state's Assign block against value; the
// variables are set when the state exits.
func (h *stateRun) evalAssign(t *jsonpath.Template, value any) error {
	if t == nil {
		return nil
	}
	v, err := t.Eval(value, h.env)
	if err != nil {
		return h.pathError(err)
	}
	m, _ := v.(map[string]any)
	h.assign = m
	return nil
}

// finish is the common tail of states that produce a result, whose size
// is at most resultSize: ResultPath, OutputPath (the output is held to the
// payload limit), Assign.
func (h *stateRun) finish(raw, result any, resultSize int, rp states.ResultPath) (stepResult, error) {
	c := h.st.Base()
	proposed, err := h.resultPath(rp, raw, result)
	if err != nil {
		return stepResult{}, err
	}
	out, err := h.outputPath(proposed)
	if err != nil {
		return stepResult{}, err
	}
	size, err := h.settle(out, placedSize(rp, h.inSize, resultSize))
	if err != nil {
		return stepResult{}, err
	}
	if err := h.evalAssign(c.Assign, result); err != nil {
		return stepResult{}, err
	}
	return stepResult{output: out, proposed: proposed, next: c.Next, size: size}, nil
}

// numberValue reads a JSON number as an int64 when it is integral.
func numberValue(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	return jsonpath.Int64(n)
}

// qualified returns the state's name as agents see it.
func (h *stateRun) qualified() string { return h.sc.prefix + h.name() }

func itoa(i int) string { return strconv.Itoa(i) }
