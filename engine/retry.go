package engine

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// withRetry runs one attempt of a state after another as its Retry policy
// says, and hands a failure no retrier takes to Catch.
//
// A durable execution commits its progress after every failed attempt (the
// retries made, the delay until the next attempt), so that a resumed
// execution makes neither a failed attempt nor its delay again.
func (h *stateRun) withRetry(ctx context.Context, raw any, retry []states.Retrier, catch []states.Catcher, attempt func(context.Context) (stepResult, error)) (stepResult, error) {
	var counts []int64
	if p := h.progress; p != nil {
		counts = append([]int64(nil), p.Retries...)
		h.env.retry = p.Attempt
		if err := h.delay(ctx, "Retry", time.Until(p.WakeAt), h.retryProgress(counts)); err != nil {
			return stepResult{}, err
		}
	}
	for {
		h.retries = append([]int64(nil), counts...)
		res, err := attempt(ctx)
		if err == nil {
			return res, nil
		}
		if errors.Is(err, errParked) && !h.parkedSelf && h.r.x.durable {
			// Something inside (a Map item, a Parallel branch) waits: the
			// state's own position and attempt are committed, so that the
			// resumed attempt finds its nested machines under the same keys.
			if err := h.saveProgress(ctx, h.retryProgress(counts)); err != nil {
				return stepResult{}, err
			}
			return stepResult{}, errParked
		}
		var ae *asl.Error
		if !errors.As(err, &ae) {
			return stepResult{}, err
		}
		if i := matchRetrier(retry, ae.Name); i >= 0 {
			if counts == nil {
				counts = make([]int64, len(retry))
			}
			if counts[i] < retry[i].MaxAttempts {
				delay := backoff(&retry[i], counts[i])
				counts[i]++
				h.env.retry++
				h.env.ctxObject = nil
				p := h.retryProgress(counts)
				if h.r.x.durable && delay < progressAfter {
					// The failed attempt is committed even when its delay is
					// too short to be.
					if err := h.saveProgress(ctx, p); err != nil {
						return stepResult{}, err
					}
				}
				if err := h.delay(ctx, "Retry", delay, p); err != nil {
					return stepResult{}, err
				}
				continue
			}
		}
		if i := matchCatcher(catch, ae.Name); i >= 0 {
			h.r.emitState("failed", h.st.Base(), h.sc.prefix, map[string]any{"Error": string(ae.Name), "Cause": ae.Cause})
			return h.caught(ctx, &catch[i], raw, ae)
		}
		return stepResult{}, ae
	}
}

// retryProgress is the durable progress of a state between attempts.
func (h *stateRun) retryProgress(counts []int64) *StepProgress {
	return &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: append([]int64(nil), counts...)}
}

// caught applies a catcher: the error object goes to its ResultPath in the
// raw input, its Assign is applied, and the run continues at its Next. The
// write is committed here: one the commit point refuses fails the state (or
// skips it under SKIP_NODE), with no second Catch on the same state.
func (h *stateRun) caught(ctx context.Context, c *states.Catcher, raw any, ae *asl.Error) (stepResult, error) {
	if h.st.Base().JSONata() {
		return h.jsonataCaught(ctx, c, raw, ae)
	}
	errOut := map[string]any{}
	if ae.Name != "" {
		errOut["Error"] = string(ae.Name)
	}
	if ae.Cause != "" {
		errOut["Cause"] = ae.Cause
	}
	out, err := h.resultPath(c.ResultPath, raw, errOut)
	if err != nil {
		return stepResult{}, err
	}
	size, err := h.settle(out, placedSize(c.ResultPath, h.inSize, jsonvalue.Size(errOut)))
	if err != nil {
		return stepResult{}, err
	}
	h.assign = nil
	if err := h.evalAssign(c.Assign, errOut); err != nil {
		return stepResult{}, err
	}
	res := stepResult{output: out, proposed: out, next: c.Next, size: size, wrote: true, prev: raw}
	if err := h.complete(ctx, &res); err != nil {
		return stepResult{}, err
	}
	return res, nil
}

// errorMatches reports whether an ErrorEquals list matches an error name,
// with AWS's rules: States.Runtime is never matched (nor is
// States.NotImplemented: a feature that does not run must not be swallowed
// by a Catch); States.ALL matches
// everything else but States.DataLimitExceeded; States.TaskFailed matches
// every error but States.Timeout (and those two); an exact name matches;
// the bare names RateLimitExceeded and BudgetExceeded match their States.
// forms.
func errorMatches(names []string, name asl.ErrorName) bool {
	if name == asl.ErrRuntime || name == asl.ErrNotImplemented {
		return false
	}
	terminal := name == asl.ErrDataLimitExceeded
	for _, n := range names {
		switch asl.ErrorName(n) {
		case name:
			return true
		case asl.ErrAll:
			if !terminal {
				return true
			}
		case asl.ErrTaskFailed:
			if !terminal && name != asl.ErrTimeout {
				return true
			}
		case "RateLimitExceeded":
			if name == asl.ErrRateLimitExceeded {
				return true
			}
		case "BudgetExceeded":
			if name == asl.ErrBudgetExceeded {
				return true
			}
		}
	}
	return false
}

func matchRetrier(rs []states.Retrier, name asl.ErrorName) int {
	for i := range rs {
		if errorMatches(rs[i].ErrorEquals, name) {
			return i
		}
	}
	return -1
}

func matchCatcher(cs []states.Catcher, name asl.ErrorName) int {
	for i := range cs {
		if errorMatches(cs[i].ErrorEquals, name) {
			return i
		}
	}
	return -1
}

// backoff returns the delay before retry number n (0-based) of r:
// IntervalSeconds × BackoffRate^n, capped by MaxDelaySeconds, and with FULL
// jitter a uniformly random duration up to that.
func backoff(r *states.Retrier, n int64) time.Duration {
	secs := float64(r.IntervalSeconds) * math.Pow(r.BackoffRate, float64(n))
	if r.MaxDelaySeconds > 0 && secs > float64(r.MaxDelaySeconds) {
		secs = float64(r.MaxDelaySeconds)
	}
	if secs > float64(states.MaxTimeoutSeconds) {
		secs = float64(states.MaxTimeoutSeconds)
	}
	d := time.Duration(secs * float64(time.Second))
	if r.JitterStrategy == "FULL" && d > 0 {
		d = time.Duration(rand.Int64N(int64(d) + 1))
	}
	return d
}
