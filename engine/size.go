package engine

import (
	"fmt"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Sizes. AWS holds every state's input, result and output to a payload
// limit (256 KiB). Measuring each document would walk it at every state, so
// the engine carries an upper bound of each document's size instead: the
// execution input is measured once; a path selects at most its input; a
// template made of paths is bounded by its literal parts plus its input
// once per path (jsonpath.Template.SizeBound); ResultPath adds the result to
// the raw input. Only a document whose bound passes the limit is measured,
// and the measured size replaces the bound. New data (agent results, Pass
// Result, intrinsic functions, Map and Parallel results) is measured.

// unknownSize is a bound that always passes the limit: the document must
// be measured.
const unknownSize = int(^uint(0) >> 1)

// fits checks a document whose size is at most bound against the payload
// limit, measuring it only when bound passes the limit, and returns a bound
// of its size no larger than the limit.
func (h *stateRun) fits(v any, bound int) (int, error) {
	limit := h.r.maxPayload
	if limit < 0 || bound <= limit {
		return bound, nil
	}
	n, ok := h.sc.sizeWithin(v, limit)
	if !ok {
		return 0, h.dataLimitError(v)
	}
	return n, nil
}

// settle is fits for a state's output, which the next state builds on: a
// bound past a quarter of the limit is replaced by the measured size, so
// that loose bounds do not pile up state after state until every document
// has to be measured.
func (h *stateRun) settle(v any, bound int) (int, error) {
	if limit := h.r.maxPayload; limit >= 0 && bound > limit/4 {
		return h.fits(v, unknownSize)
	}
	return bound, nil
}

// placedSize bounds the document ResultPath makes of a raw input of at most
// rawSize bytes and a result of at most resultSize bytes.
func placedSize(rp states.ResultPath, rawSize, resultSize int) int {
	switch {
	case rp.Discard:
		return rawSize
	case rp.Path == nil:
		return resultSize
	}
	// Set may create an object per key of the path: each costs the key,
	// quotes, a colon, braces and a comma.
	return saturatingAdd(saturatingAdd(rawSize, resultSize), 3*len(rp.Path.String())+8)
}

func saturatingAdd(a, b int) int {
	if a > unknownSize-b {
		return unknownSize
	}
	return a + b
}

// dataLimitError is the States.DataLimitExceeded of document v, with AWS's
// cause; the sizes are in its *PayloadError.
func (h *stateRun) dataLimitError(v any) *asl.Error {
	return h.dataLimitErrorOf(jsonvalue.Size(v))
}

// dataLimitErrorOf is dataLimitError of a document of size bytes.
func (h *stateRun) dataLimitErrorOf(size int) *asl.Error {
	e := asl.Errorf(asl.ErrDataLimitExceeded, "The state/task '%s' returned a result with a size exceeding the maximum number of bytes service limit.", h.name())
	e.Err = &PayloadError{State: h.qualified(), Size: size, Limit: h.r.maxPayload}
	return e
}

// PayloadError is the Go error inside a States.DataLimitExceeded (the
// *asl.Error's Err), or of an input Run refuses (State ""): the state, the
// size of the document in bytes of compact JSON and the limit it passed
// (the execution's own, StartOptions.MaxPayloadSize, else
// Config.MaxPayloadSize). The error's cause stays AWS's, which names no
// sizes.
type PayloadError struct {
	State string
	Size  int
	Limit int
}

func (e *PayloadError) Error() string {
	if e.State == "" {
		return fmt.Sprintf("the execution input of %d bytes passes the payload limit of %d bytes", e.Size, e.Limit)
	}
	return fmt.Sprintf("state %s: a document of %d bytes passes the payload limit of %d bytes", e.State, e.Size, e.Limit)
}
