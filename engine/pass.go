package engine

import (
	"context"

	"github.com/aslrun/aslrun/states"
)

// pass runs a Pass state: the result is Result (taken literally, even when
// falsy), else Parameters evaluated on the effective input, else the
// effective input itself.
func (h *stateRun) pass(ctx context.Context, s *states.Pass, raw any) (stepResult, error) {
	if s.JSONata() {
		return h.jsonataPass(ctx, raw)
	}
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	inSize := h.inSize
	if s.Memory != nil && s.Memory.Read != nil {
		if input, err = h.memoryRead(ctx, s.Memory, input); err != nil {
			return stepResult{}, err
		}
		inSize = unknownSize
	}
	result, size := input, inSize
	switch {
	case s.HasResult:
		if h.r.maxPayload >= 0 && s.ResultSize > h.r.maxPayload {
			return stepResult{}, h.dataLimitError(s.Result)
		}
		result, size = s.Result, s.ResultSize
	case s.Parameters != nil:
		if result, size, err = h.template(s.Parameters, input, inSize); err != nil {
			return stepResult{}, err
		}
	}
	return h.finish(raw, result, size, s.ResultPath)
}

// succeed runs a Succeed state: the output is the filtered input and the
// machine ends.
func (h *stateRun) succeed(ctx context.Context, s *states.Succeed, raw any) (stepResult, error) {
	if s.JSONata() {
		return h.jsonataPassThrough(ctx, h.jsonataScope(raw), s.Output, nil, "")
	}
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	out, err := h.outputPath(input)
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{output: out, proposed: input, size: h.inSize}, nil
}
