package jsonata

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultSteps is the number of steps one evaluation may take when
// Limits.Steps is 0: a step is a node of the expression evaluated or one
// turn of a loop over a sequence, a range or an array. The expressions of
// the AWS conformance cases take fewer than 100 steps.
const DefaultSteps = 10_000_000

// DefaultMemory is the number of bytes of values one evaluation may build
// when Limits.Memory is 0, counted as they are made (sequences, arrays,
// objects, strings), whether or not they are still in use.
const DefaultMemory = 64 << 20

// maxRangeItems is the most items the range operator makes, as in
// JSONata's JavaScript implementation (D2014).
const maxRangeItems = 10_000_000

// maxDepth is the deepest the evaluation of an expression may nest (a
// node inside a node, a function inside a function): past it the
// evaluation fails rather than exhaust the goroutine's stack.
const maxDepth = 2000

// Limits bound one evaluation of a template (every expression of one
// field of a state): the zero value is the defaults, DefaultSteps and
// DefaultMemory; a negative field means no limit.
type Limits struct {
	// Steps is the most steps: nodes evaluated plus turns of loops.
	Steps int64
	// Memory is the most bytes of values built.
	Memory int64

	// Progress, when set, is called by the evaluating goroutine each time
	// the evaluation checks its context (every 1024 steps): tests use it to
	// act while an evaluation runs. Evaluations in parallel call it at
	// once.
	Progress func()
}

// checkEvery is how many steps pass between two checks of the context.
const checkEvery = 1024

// ErrSteps and ErrMemory are the errors (wrapped in an *Error) of an
// evaluation that exceeded its Limits.
var (
	ErrSteps  = errors.New("the evaluation exceeded its step budget")
	ErrMemory = errors.New("the evaluation exceeded its memory budget")
)

// limitError is an evaluation stopped by a limit: err is ErrSteps or
// ErrMemory, limit the number it exceeded.
type limitError struct {
	err   error
	limit int64
}

func (e *limitError) Error() string {
	if e.err == ErrSteps {
		return fmt.Sprintf("exceeded the evaluation budget of %d steps", e.limit)
	}
	return fmt.Sprintf("exceeded the memory budget of %d bytes", e.limit)
}

func (e *limitError) Unwrap() error { return e.err }

// run is the state of one evaluation: what it has spent of its limits,
// how deep it is, and its clock ($now and $millis give one time for the
// whole evaluation). It is used by one goroutine.
type run struct {
	steps, maxSteps int64
	bytes, maxBytes int64
	depth           int
	now             time.Time
	Progress        func()
}

func newRun(l Limits) *run {
	r := &run{maxSteps: l.Steps, maxBytes: l.Memory, now: time.Now(), Progress: l.Progress}
	if r.maxSteps == 0 {
		r.maxSteps = DefaultSteps
	}
	if r.maxBytes == 0 {
		r.maxBytes = DefaultMemory
	}
	return r
}

// tick counts n steps, and checks the context every checkEvery steps.
func (r *run) tick(ctx context.Context, n int64) error {
	before := r.steps
	r.steps += n
	if r.maxSteps > 0 && r.steps > r.maxSteps {
		return &limitError{err: ErrSteps, limit: r.maxSteps}
	}
	if r.steps/checkEvery != before/checkEvery {
		if r.Progress != nil {
			r.Progress()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// alloc counts n bytes of values about to be built: the error comes
// before the memory is taken.
func (r *run) alloc(n int64) error {
	r.bytes += n
	if r.maxBytes > 0 && (r.bytes > r.maxBytes || n < 0) {
		return &limitError{err: ErrMemory, limit: r.maxBytes}
	}
	return nil
}

// Sizes counted for the values an evaluation builds.
const (
	itemBytes  = 16 // one item of a sequence or an array
	entryBytes = 48 // one entry of an object, besides its key
)

// allocItems counts an array or sequence of n items.
func (r *run) allocItems(n int) error { return r.alloc(int64(n) * itemBytes) }

// allocString counts a string of n bytes.
func (r *run) allocString(n int) error { return r.alloc(int64(n)) }

// allocObject counts an object of n entries.
func (r *run) allocObject(n int) error { return r.alloc(int64(n) * entryBytes) }

// sizeOf is how many bytes are counted for a value a built-in function
// made: its own strings, items and entries, not those of values it holds.
func sizeOf(v any) int64 {
	switch t := v.(type) {
	case string:
		return int64(len(t))
	case []any:
		return int64(len(t)) * itemBytes
	case map[string]any:
		n := int64(len(t)) * entryBytes
		for k := range t {
			n += int64(len(k))
		}
		return n
	}
	return 8
}
