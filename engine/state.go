package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// stateRun carries what one run of a state needs.
type stateRun struct {
	r *run
	// ctx is the step's, for what runs where no context is passed (the
	// embedding of semantic memory writes, as the state completes).
	ctx context.Context
	// used is what the state's agent calls reported consuming (its
	// Audit), guarded by sc.callsMu.
	used Usage
	// waiting is the feedback wait the state's completion began (a Task
	// whose Feedback block waits), once made.
	waiting *PendingFeedback
	env     *env // points at envData
	envData env
	sc      *scope
	entered int64
	st      states.State
	// assign holds the variables the state sets, applied when it exits.
	assign map[string]any
	// memWrites are the memory writes of the attempt that completed,
	// committed with the state's completion.
	memWrites []MemoryWrite
	// trace is the reasoning trace of the attempt, written at
	// Reasoning.Store after ResultPath; nil when there is none.
	trace *storedTrace
	// inSize bounds the size of the state's raw input.
	inSize int
	// raw is the state's raw input.
	raw any
	// visit is the state's visit number in its scope; progress the durable
	// progress loaded for this visit when it was resumed (nil otherwise).
	visit    int
	progress *StepProgress
	// drop lists scope prefixes to remove when the state's completion is
	// committed (the nested machines it ran).
	drop []string
	// denied is the governance error of the state's last refused attempt
	// and violation its detail (handed to the agent run again);
	// retriedOnce is set when RETRY_ONCE has run the state again.
	denied      *asl.Error
	violation   map[string]any
	retriedOnce bool
	// retries are the retries made per retrier before the running attempt
	// (kept by withRetry), for a state that parks in the middle of it.
	retries []int64
	// submitting is set while a callback Task calls its agent: the call's
	// success is a TaskSubmitted event, the Task's own comes with its token.
	submitting bool
	// parkedSelf is set when the state itself parked (its progress is
	// committed), not a machine nested in it.
	parkedSelf bool
	// journal holds the durable steps of the attempt's agent calls, made
	// at the first; stepPrefix names the steps of a call made again in the
	// same attempt (Guardrails.Output regenerating) apart.
	// generation is the Task's Generation evaluated for its agent call.
	generation *agents.Generation
	journalMu  sync.Mutex
	journal    *journal
	stepPrefix string
}

// clear zeroes every field of h for its next state, writing only the
// fields that are not zero already: while the collector marks, every
// pointer written costs a write barrier, and a stateRun copied whole
// (*h = stateRun{}) pays one for each of its pointer fields.
// TestStateRunClear checks that no field is left out.
func (h *stateRun) clear() {
	if h.r != nil {
		h.r = nil
	}
	if h.ctx != nil {
		h.ctx = nil
	}
	h.used = Usage{}
	if h.waiting != nil {
		h.waiting = nil
	}
	if h.env != nil {
		h.env = nil
	}
	h.envData.clear()
	if h.sc != nil {
		h.sc = nil
	}
	h.entered = 0
	if h.st != nil {
		h.st = nil
	}
	if h.assign != nil {
		h.assign = nil
	}
	if h.memWrites != nil {
		h.memWrites = nil
	}
	if h.trace != nil {
		h.trace = nil
	}
	h.inSize = 0
	if h.raw != nil {
		h.raw = nil
	}
	h.visit = 0
	if h.progress != nil {
		h.progress = nil
	}
	if h.drop != nil {
		h.drop = nil
	}
	if h.denied != nil {
		h.denied = nil
	}
	if h.violation != nil {
		h.violation = nil
	}
	h.retriedOnce = false
	if h.retries != nil {
		h.retries = nil
	}
	h.submitting, h.parkedSelf = false, false
	if h.generation != nil {
		h.generation = nil
	}
	h.journalMu = sync.Mutex{}
	if h.journal != nil {
		h.journal = nil
	}
	if h.stepPrefix != "" {
		h.stepPrefix = ""
	}
}

// clear zeroes every field of e, writing only those that are not zero
// (see stateRun.clear).
func (e *env) clear() {
	if e.r != nil {
		e.r = nil
	}
	if e.sc != nil {
		e.sc = nil
	}
	if e.state != "" {
		e.state = ""
	}
	if e.entered != (time.Time{}) {
		e.entered = time.Time{}
	}
	e.retry = 0
	if e.item != nil {
		e.item = nil
	}
	if e.ctxObject != nil {
		e.ctxObject = nil
	}
	if e.token != "" {
		e.token = ""
	}
	e.chance = false
}

// nestedKey is the scope-key prefix of the nested machines this state runs
// in its current attempt; item or branch i adds "i/".
func (h *stateRun) nestedKey() string {
	return h.sc.key + h.name() + "#" + itoa(h.visit) + "." + itoa(h.env.retry) + "/"
}

// nestedPrefix covers the scope keys of every attempt of this visit.
func (h *stateRun) nestedPrefix() string {
	return h.sc.key + h.name() + "#" + itoa(h.visit) + "."
}

// step names this visit of the state durably, for idempotency keys.
func (h *stateRun) step() string { return h.sc.key + h.name() + "#" + itoa(h.visit) }

// saveProgress commits the state's progress (retries made, a delay under
// way) so that a resumed execution picks it up.
func (h *stateRun) saveProgress(ctx context.Context, p *StepProgress) error {
	p.Entered = h.entered
	c := &Commit{
		Scopes: map[string]*Scope{h.sc.key: h.sc.positionBefore(h.name(), h.raw, p)},
	}
	return h.r.commit(ctx, nil, h.sc.settle(c))
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
	return placeResult(rp, raw, result)
}

// placeResult places result into the raw input as ResultPath rp says.
func placeResult(rp states.ResultPath, raw, result any) (any, error) {
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
	if t := h.trace; t != nil {
		h.trace = nil
		if proposed, err = t.path.Set(proposed, t.value); err != nil {
			return stepResult{}, h.runtimeError("Reasoning.Store: " + err.Error())
		}
		resultSize = unknownSize
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
	if m := memoryOf(h.st); m != nil && len(m.Write) > 0 {
		input, err := h.inputPath(raw)
		if err != nil {
			return stepResult{}, err
		}
		if err := h.memoryWrites(m, input, result, proposed); err != nil {
			return stepResult{}, err
		}
	}
	// The commit point checks the write (see run.commit).
	return stepResult{output: out, proposed: proposed, next: c.Next, size: size, wrote: true, prev: raw}, nil
}

// numberValue reads a JSON number as an int64 when it is integral.
func numberValue(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	return jsonvalue.Int64(n)
}

// qualified returns the state's name as agents see it.
func (h *stateRun) qualified() string { return h.sc.prefix + h.name() }

func itoa(i int) string { return strconv.Itoa(i) }
