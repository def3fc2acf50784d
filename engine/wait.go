package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// wait runs a Wait state: it sleeps for Seconds / SecondsPath or until
// Timestamp / TimestampPath, then passes its effective input on.
func (h *stateRun) wait(ctx context.Context, s *states.Wait, raw any) (stepResult, error) {
	if s.JSONata() {
		return h.jsonataWait(ctx, s, raw)
	}
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	var d time.Duration
	switch {
	case h.progress != nil && !h.progress.WakeAt.IsZero():
		// Resumed in the middle of this wait: it ends when it was due to.
		d = time.Until(h.progress.WakeAt)
	case s.HasSeconds:
		d = time.Duration(s.Seconds) * time.Second
	case !s.Timestamp.IsZero():
		d = time.Until(s.Timestamp)
	case s.SecondsPath != nil:
		v, err := h.get(s.SecondsPath, input)
		if err != nil {
			return stepResult{}, err
		}
		n, ok := v.(json.Number)
		secs, isInt := int64(0), false
		if ok {
			secs, isInt = jsonvalue.Int64(n)
			isInt = isInt && jsonvalue.IsInteger(n) && !strings.ContainsAny(string(n), ".eE")
		}
		switch {
		case !isInt:
			return stepResult{}, h.runtimeError(fmt.Sprintf("The SecondsPath parameter cannot be parsed as a long value: %s == %s", s.SecondsPath, plain(v)))
		case secs < 0:
			return stepResult{}, h.runtimeError(fmt.Sprintf("The SecondsPath parameter references a negative value: %s == %s", s.SecondsPath, plain(v)))
		}
		d = time.Duration(secs) * time.Second
	case s.TimestampPath != nil:
		v, err := h.get(s.TimestampPath, input)
		if err != nil {
			return stepResult{}, err
		}
		str, ok := v.(string)
		t, valid := states.ParseTimestamp(str)
		if !ok || !valid {
			return stepResult{}, h.runtimeError(fmt.Sprintf("The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: %s == %s", s.TimestampPath, plain(v)))
		}
		d = time.Until(t)
	}
	if err := h.delay(ctx, "Wait", d, &StepProgress{Visit: h.visit}); err != nil {
		return stepResult{}, err
	}
	out, err := h.outputPath(input)
	if err != nil {
		return stepResult{}, err
	}
	if err := h.evalAssign(s.Assign, input); err != nil {
		return stepResult{}, err
	}
	return stepResult{output: out, proposed: input, next: s.Next, size: h.inSize}, nil
}

// progressAfter is the shortest delay worth committing, so that a resumed
// execution waits only what remains of it.
const progressAfter = time.Second

// delay waits d within a state whose progress, apart from its wake-up
// time, is p. A durable execution commits the wake-up time of a delay of a
// second or more; in the top-level machine, one longer than ParkAfter stops
// the execution as WAITING (for what) to be woken later, instead of
// sleeping.
func (h *stateRun) delay(ctx context.Context, what string, d time.Duration, p *StepProgress) error {
	if d <= 0 {
		return nil
	}
	if h.r.x.durable && d >= progressAfter {
		p.WakeAt = time.Now().UTC().Add(d)
		if h.sc.top && d > h.r.x.parkAfter {
			return h.park(ctx, what, p.WakeAt, p)
		}
		if err := h.saveProgress(ctx, p); err != nil {
			return err
		}
	}
	return sleep(ctx, d)
}

// sleep waits for d or until ctx ends; a non-positive d returns at once.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	defer pauseTurn(ctx).resume()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctxError(ctx)
	}
}

// ctxError turns the end of ctx into the error a state reports: the
// execution's timeout (which no Retry or Catch may take: it ends the
// execution as TIMED_OUT), or the cancellation.
func ctxError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause == errExecutionTimeout {
		return errExecutionTimeout
	}
	return ctx.Err()
}

// plain renders a value in an error message: strings as they are, other
// values as compact JSON.
func plain(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return compactJSON(v)
}
