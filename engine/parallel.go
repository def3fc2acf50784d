package engine

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

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
	size := h.inSize
	if s.JSONata() {
		if input, size, err = h.jsonataParallelInput(ctx, s, raw); err != nil {
			return stepResult{}, err
		}
	}
	if s.Parameters != nil {
		if input, size, err = h.template(s.Parameters, input, h.inSize); err != nil {
			return stepResult{}, err
		}
	}
	r := h.r
	r.event(Event{Type: EventParallelStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw})
	results := make([]any, len(s.Branches))
	var parked atomic.Bool
	// The items run on turns of their own (fair.go): this one waits.
	defer pauseTurn(ctx).resume()
	g, gctx := errgroup.WithContext(ctx)
	prefix := h.qualified() + "/"
	key := h.nestedKey()
	h.drop = append(h.drop, h.nestedPrefix())
	progress := h.newCounts(len(s.Branches), s.Progress)
	for i, b := range s.Branches {
		g.Go(func() error {
			child := &scope{parent: h.sc, key: key + itoa(i) + "/", prefix: prefix + itoa(i) + "/", item: h.sc.item, agg: progress, slot: i}
			progress.start()
			out, err := h.nested(gctx, b, child, input, size)
			if errors.Is(err, errParked) {
				// The branch waits (an Approval): the others go on.
				parked.Store(true)
				return nil
			}
			if err != nil {
				progress.end(i, true)
				return err
			}
			progress.end(i, false)
			results[i] = out
			return nil
		})
	}
	err = g.Wait()
	if err == nil && parked.Load() {
		err = errParked
	}
	return h.collected(ctx, raw, results, err, EventParallelSucceeded, EventParallelFailed, s.ResultSelector, s.ResultPath)
}
