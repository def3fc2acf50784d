package engine

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/states"
)

// parallel runs one attempt of a Parallel state: every branch runs
// concurrently on the same input; the first failure cancels the others and
// fails the state with that branch's error.
func (h *stateRun) parallel(ctx context.Context, s *states.Parallel, raw any) (stepResult, error) {
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	if s.Parameters != nil {
		if input, err = h.template(s.Parameters, input); err != nil {
			return stepResult{}, err
		}
	}
	r := h.r
	r.event(Event{Type: EventParallelStarted, State: h.name()})
	results := make([]any, len(s.Branches))
	g, gctx := errgroup.WithContext(ctx)
	prefix := h.qualified() + "/"
	for i, b := range s.Branches {
		g.Go(func() error {
			child := &scope{parent: h.sc, prefix: prefix + itoa(i) + "/", item: h.sc.item}
			out, err := r.machine(gctx, b, input, child)
			if err != nil {
				return err
			}
			results[i] = out
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			r.event(Event{Type: EventParallelFailed, State: h.name(), Error: string(ae.Name), Cause: ae.Cause})
		}
		return stepResult{}, err
	}
	r.event(Event{Type: EventParallelSucceeded, State: h.name()})
	var result any = results
	if err := h.checkSize(result); err != nil {
		return stepResult{}, err
	}
	if s.ResultSelector != nil {
		if result, err = h.template(s.ResultSelector, result); err != nil {
			return stepResult{}, err
		}
	}
	return h.finish(raw, result, s.ResultPath)
}
