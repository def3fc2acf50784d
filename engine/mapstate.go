package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// mapState runs one attempt of a Map state: every item of the array runs
// the processor machine, at most MaxConcurrency at a time; the results are
// in item order.
func (h *stateRun) mapState(ctx context.Context, s *states.Map, raw any) (stepResult, error) {
	if s.Mode == "DISTRIBUTED" {
		return h.distributedMap(ctx, s, raw)
	}
	if s.JSONata() {
		return h.jsonataMap(ctx, s, raw)
	}
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	items, itemSize := input, h.inSize
	if s.ItemsPath != nil {
		if items, err = s.ItemsPath.Eval(input, h.env); err != nil {
			return stepResult{}, h.pathError(err)
		}
		if s.ItemsPath.Path() == nil {
			// An intrinsic function made the array: new data.
			if itemSize, err = h.fits(items, unknownSize); err != nil {
				return stepResult{}, err
			}
		}
	}
	arr, ok := mapItemsOf(items)
	if !ok {
		return stepResult{}, h.runtimeError(fmt.Sprintf("Items of the Map state must be an array, not %s", jsonvalue.TypeName(items)))
	}
	cfg, err := h.mapConfig(s, input)
	if err != nil {
		return stepResult{}, err
	}
	r := h.r
	r.event(Event{Type: EventMapStateStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw})
	results, count, err := h.runItems(ctx, s, input, arr, itemSize, cfg)
	if count != nil && err == nil {
		return h.countedResults(raw, count, s.ResultPath)
	}
	return h.collected(ctx, raw, results, err, EventMapStateSucceeded, EventMapStateFailed, s.ResultSelector, s.ResultPath)
}

// mapItems is the array a Map runs over: a []any, or a packed array
// (jsonvalue.Packed, an execution input's large array) whose items are
// decoded one at a time, as each iteration starts, so that the Map holds
// its input once, as text.
type mapItems struct {
	arr    []any
	packed *jsonvalue.Packed
}

// mapItemsOf returns v as the items of a Map, false when it is not an
// array.
func mapItemsOf(v any) (mapItems, bool) {
	switch a := v.(type) {
	case []any:
		return mapItems{arr: a}, true
	case *jsonvalue.Packed:
		return mapItems{packed: a}, true
	}
	return mapItems{}, false
}

func (m mapItems) len() int {
	if m.packed != nil {
		return m.packed.Len()
	}
	return len(m.arr)
}

// at returns item i, decoded when the array is packed.
func (m mapItems) at(i int) (any, error) {
	if m.packed != nil {
		return m.packed.At(i)
	}
	return m.arr[i], nil
}

// discardsResults reports whether a Map throws its results away: its
// ResultPath is null and nothing else reads them (no ResultSelector, no
// Assign).
func discardsResults(s *states.Map) bool {
	return s.ResultPath.Discard && s.ResultSelector == nil && s.Assign == nil
}

// resultCount stands for the result array of a Map that throws its
// results away under a payload limit: AWS holds a state's result to the
// limit before ResultPath drops it, so the array's size is counted as the
// items end, and nothing else of it is kept. It is safe for concurrent
// use.
type resultCount struct {
	mu    sync.Mutex
	limit int // the payload limit (>= 0)
	items int
	bytes int // the items' sizes
}

func newResultCount(limit int) *resultCount { return &resultCount{limit: limit} }

// add counts result v of one item.
func (c *resultCount) add(v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items++
	c.bytes = saturatingAdd(c.bytes, jsonvalue.Size(v))
}

// size is the size of the array of the results counted: brackets, items
// and commas.
func (c *resultCount) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == 0 {
		return 2
	}
	return saturatingAdd(c.bytes, c.items+1)
}

// countedResults ends a Map whose results were counted, not kept: it fails
// with States.DataLimitExceeded, as collected would, when their array
// passes the payload limit, and otherwise goes on with the Map's input
// (its ResultPath is null).
func (h *stateRun) countedResults(raw any, count *resultCount, rp states.ResultPath) (stepResult, error) {
	h.r.event(Event{Type: EventMapStateSucceeded, State: h.name(), Scope: h.sc.prefix, Document: raw})
	if n := count.size(); n > count.limit {
		return stepResult{}, h.dataLimitErrorOf(n)
	}
	return h.finish(raw, nil, 0, rp)
}

// collected finishes a Map or Parallel once its items or branches are done:
// it records the outcome event, then holds the result array to the payload
// limit and applies ResultSelector, ResultPath, OutputPath and Assign.
func (h *stateRun) collected(ctx context.Context, raw any, results []any, err error, succeeded, failed string, sel *jsonpath.Template, rp states.ResultPath) (stepResult, error) {
	if err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			h.r.event(Event{Type: failed, State: h.name(), Scope: h.sc.prefix, Error: string(ae.Name), Cause: ae.Cause, Document: raw})
		}
		return stepResult{}, err
	}
	h.r.event(Event{Type: succeeded, State: h.name(), Scope: h.sc.prefix, Document: raw})
	if h.st.Base().JSONata() {
		return h.jsonataCollected(ctx, raw, results)
	}
	var result any = results
	size, err := h.fits(result, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	if sel != nil {
		if result, size, err = h.template(sel, result, size); err != nil {
			return stepResult{}, err
		}
	}
	return h.finish(raw, result, size, rp)
}

// mapConfig is a Map's concurrency and failure tolerance, resolved for one run.
type mapConfig struct {
	concurrency int
	// tolerant is set when any tolerance is configured; a failed item then
	// counts against the threshold instead of failing the Map at once.
	tolerant   bool
	maxFailed  int64
	maxPercent float64
}

func (h *stateRun) mapConfig(s *states.Map, input any) (mapConfig, error) {
	cfg := mapConfig{concurrency: int(s.MaxConcurrency), maxFailed: -1, maxPercent: -1}
	if s.MaxConcurrencyPath != nil {
		v, err := h.get(s.MaxConcurrencyPath, input)
		if err != nil {
			return cfg, err
		}
		n, ok := intValue(v)
		if !ok || n < 0 || n > 1<<31-1 {
			return cfg, h.runtimeError(fmt.Sprintf("The MaxConcurrencyPath field refers to value \"%s\" which is not a valid integer: %s", plain(v), s.MaxConcurrencyPath))
		}
		cfg.concurrency = int(n)
	}
	if s.HasToleratedFailureCount {
		cfg.tolerant, cfg.maxFailed = true, s.ToleratedFailureCount
	}
	if s.ToleratedFailureCountPath != nil {
		v, err := h.get(s.ToleratedFailureCountPath, input)
		if err != nil {
			return cfg, err
		}
		n, ok := intValue(v)
		if !ok {
			return cfg, h.runtimeError(fmt.Sprintf("The ToleratedFailureCountPath field refers to value \"%s\" which is not a valid integer: %s", plain(v), s.ToleratedFailureCountPath))
		}
		if n < 0 {
			return cfg, h.runtimeError("ToleratedFailureCount cannot be negative.")
		}
		cfg.tolerant, cfg.maxFailed = true, n
	}
	if s.HasToleratedFailurePercentage {
		cfg.tolerant, cfg.maxPercent = true, s.ToleratedFailurePercentage
	}
	if s.ToleratedFailurePercentagePath != nil {
		v, err := h.get(s.ToleratedFailurePercentagePath, input)
		if err != nil {
			return cfg, err
		}
		f, ok := floatValue(v)
		if !ok {
			return cfg, h.runtimeError(fmt.Sprintf("The ToleratedFailurePercentagePath field refers to value \"%s\" which is not a valid float: %s", plain(v), s.ToleratedFailurePercentagePath))
		}
		if f < 0 || f > 100 {
			return cfg, h.runtimeError("ToleratedFailurePercentage must be between 0 and 100.")
		}
		cfg.tolerant, cfg.maxPercent = true, f
	}
	return cfg, nil
}

// intValue reads an integer from a number or a numeric string (as AWS's
// path fields accept "1").
func intValue(v any) (int64, bool) {
	switch t := v.(type) {
	case json.Number:
		return jsonvalue.Int64(t)
	case string:
		if !jsonvalue.ValidNumber(t) {
			return 0, false
		}
		return jsonvalue.Int64(json.Number(t))
	}
	return 0, false
}

// floatValue reads a number from a number or a numeric string.
func floatValue(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		return jsonvalue.Float64(t)
	case string:
		if !jsonvalue.ValidNumber(t) {
			return 0, false
		}
		return jsonvalue.Float64(json.Number(t))
	}
	return 0, false
}

// runItems runs the processor on every item (each of at most itemSize
// bytes) and returns the outputs in item order.
func (h *stateRun) runItems(ctx context.Context, s *states.Map, input any, arr mapItems, itemSize int, cfg mapConfig) ([]any, *resultCount, error) {
	r := h.r
	// A Map whose results are thrown away keeps none of them, so that its
	// memory does not grow with its items; under a payload limit it counts
	// their size (and its items commit their outputs, so that a resumed
	// Map counts those that had ended too).
	discard := discardsResults(s)
	var (
		results []any
		count   *resultCount
	)
	switch {
	case !discard:
		results = make([]any, arr.len())
	case r.maxPayload >= 0:
		count = newResultCount(r.maxPayload)
	}
	limit := cfg.concurrency
	if limit <= 0 {
		limit = defaultMaxConcurrency
	}
	// The items run on turns of their own (fair.go): this one waits.
	defer pauseTurn(ctx).resume()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	var (
		mu     sync.Mutex
		failed int64
		parked atomic.Bool
	)
	parent := h.sc
	if s.Mode == "DISTRIBUTED" {
		// A distributed Map's iterations cannot see outer variables (AWS).
		parent = nil
	}
	prefix := h.qualified() + "/"
	key := h.nestedKey()
	h.drop = append(h.drop, h.nestedPrefix())
	progress := h.newCounts(arr.len(), s.Progress)
	for i := range arr.len() {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			item, err := arr.at(i)
			if err != nil {
				return fmt.Errorf("item %d of the Map state %q: %w", i, h.name(), err)
			}
			mi := &mapItem{index: i, value: item}
			itemInput, size := item, itemSize
			if s.ItemSelector != nil {
				e := &env{r: r, sc: h.sc, state: h.name(), entered: h.env.entered, retry: h.env.retry, item: mi}
				v, err := s.ItemSelector.Eval(input, e)
				if err != nil {
					return h.pathError(err)
				}
				bound, ok := s.ItemSelector.SizeBound(h.inSize)
				if !ok {
					bound = unknownSize
				}
				if size, err = h.fits(v, bound); err != nil {
					return err
				}
				itemInput = v
			} else if s.ItemSelectorJSONata != nil {
				v, n, err := h.jsonataItem(gctx, s, input, mi)
				if err != nil {
					return err
				}
				itemInput, size = v, n
			}
			r.event(Event{Type: EventMapIterationStart, State: h.name(), Scope: h.sc.prefix, Input: itemInput, Document: itemInput, Detail: r.indexDetail(i)})
			progress.start()
			n := itoa(i) + "/"
			child := &scope{parent: parent, key: key + n, prefix: prefix + n, item: mi, discard: discard && count == nil, agg: progress, slot: i}
			out, err := h.nested(gctx, s.Processor, child, itemInput, size)
			if errors.Is(err, errParked) {
				// The item waits (an Approval): the others go on.
				parked.Store(true)
				return nil
			}
			if err != nil {
				var ae *asl.Error
				if !errors.As(err, &ae) {
					return err
				}
				r.event(Event{Type: EventMapIterationFailed, State: h.name(), Scope: h.sc.prefix, Error: string(ae.Name), Cause: ae.Cause, Detail: r.indexDetail(i)})
				if !cfg.tolerant {
					return ae
				}
				if err := h.failedNested(gctx, child, ae); err != nil {
					return err
				}
				mu.Lock()
				failed++
				mu.Unlock()
				progress.end(i, true)
				switch {
				case count != nil:
					count.add(errorOutput(ae))
				case !discard:
					results[i] = errorOutput(ae)
				}
				return nil
			}
			r.event(Event{Type: EventMapIterationOK, State: h.name(), Scope: h.sc.prefix, Document: out, Detail: r.indexDetail(i)})
			progress.end(i, false)
			switch {
			case count != nil:
				count.add(out)
			case !discard:
				results[i] = out
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, ctxError(ctx)
	}
	if parked.Load() {
		return nil, nil, errParked
	}
	if cfg.tolerant && failed > 0 {
		exceeded := cfg.maxFailed >= 0 && failed > cfg.maxFailed
		if cfg.maxPercent >= 0 && float64(failed)*100 > cfg.maxPercent*float64(arr.len()) {
			exceeded = true
		}
		if cfg.maxFailed < 0 && cfg.maxPercent < 0 {
			exceeded = true
		}
		if exceeded {
			return nil, nil, asl.Errorf(asl.ErrExceedToleratedFailureThreshold, "The specified tolerated failure threshold was exceeded")
		}
	}
	return results, count, nil
}

// errorOutput is the error object Catch and tolerated Map items produce.
func errorOutput(ae *asl.Error) map[string]any {
	out := map[string]any{}
	if ae.Name != "" {
		out["Error"] = string(ae.Name)
	}
	if ae.Cause != "" {
		out["Cause"] = ae.Cause
	}
	return out
}

// indexDetail is the detail of a Map iteration event; in-memory runs keep
// no history, so they skip building it.
func (r *run) indexDetail(i int) any {
	if !r.x.durable {
		return nil
	}
	return map[string]any{"index": jsonvalue.IntNumber(int64(i))}
}
