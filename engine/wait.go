package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/states"
)

// wait runs a Wait state: it sleeps for Seconds / SecondsPath or until
// Timestamp / TimestampPath, then passes its effective input on.
func (h *stateRun) wait(ctx context.Context, s *states.Wait, raw any) (stepResult, error) {
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	var d time.Duration
	switch {
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
			secs, isInt = jsonpath.Int64(n)
			isInt = isInt && jsonpath.IsInteger(n) && !strings.ContainsAny(string(n), ".eE")
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
	if err := sleep(ctx, d); err != nil {
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

// sleep waits for d or until ctx ends; a non-positive d returns at once.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
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
// execution's timeout is States.Timeout; other cancellations stay Go errors.
func ctxError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause == errExecutionTimeout {
		return asl.Errorf(asl.ErrTimeout, "the execution timed out")
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
