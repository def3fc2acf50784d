package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// The reads and writes of semantic and episodic memory (see semantic.go
// for how they are kept).

// autoKey names the entry a write without a Key makes: unique to the
// execution, the state's visit and the write's index, so that a state run
// again after a crash writes the same entry.
func (h *stateRun) autoKey(i int) string {
	return fmt.Sprintf("%s/%s%s#%d/%d", h.r.exec.ID, h.sc.prefix, h.name(), h.visit, i)
}

// useCollection records that the execution uses a collection's namespace
// (its checkpoints snapshot it).
func (h *stateRun) useCollection(ns string) {
	if h.r.useNamespace(ns) {
		h.sc.callsMu.Lock()
		h.sc.namespaces = append(h.sc.namespaces, ns)
		h.sc.callsMu.Unlock()
	}
}

// semanticWrite makes mw (a write of namespace mw.Namespace) a write of
// the collection: the text embedded (Text, Text.$ on the proposed
// document, or the value: a string as it is, else its JSON), its vector
// and the value.
func (h *stateRun) semanticWrite(mw *MemoryWrite, w *states.MemoryWrite, i int, input, proposed any) error {
	what := fmt.Sprintf("Memory.Write[%d]", i)
	var text string
	var err error
	switch {
	case w.TextExpr != nil || !w.Text.IsZero():
		if text, err = h.queryText(what+".Text", w.Text, w.TextExpr, proposed); err != nil {
			return err
		}
	default:
		if text, err = textOf(mw.Value); err != nil {
			return h.runtimeError(fmt.Sprintf("%s: the value: %v", what, err))
		}
	}
	vecs, err := h.embed(h.ctx, what, []string{text})
	if err != nil {
		return err
	}
	ns := collectionNamespace(mw.Namespace, "semantic", w.Collection)
	if err := CheckMemoryName("the collection's namespace", ns); err != nil {
		return h.runtimeError(fmt.Sprintf("%s: Collection %q: %v", what, w.Collection, err))
	}
	key := w.Key
	if w.KeyExpr != nil {
		v, err := w.KeyExpr.Eval(proposed, h.env)
		if err != nil {
			return h.runtimeError(fmt.Sprintf("%s.Key.$: %v", what, err))
		}
		s, ok := v.(string)
		if !ok {
			return h.runtimeError(fmt.Sprintf("%s.Key.$ gave %s, not a string", what, jsonvalue.TypeName(v)))
		}
		key = s
	}
	if key == "" && w.KeyExpr == nil {
		key = h.autoKey(i)
	}
	if err := CheckMemoryName("the key", key); err != nil {
		return h.runtimeError(fmt.Sprintf("%s: %v", what, err))
	}
	mw.Namespace, mw.Key, mw.Merge = ns, key, false
	mw.Value = semanticValue(text, mw.Value, h.r.embedder().Model(), vecs[0])
	h.useCollection(ns)
	return nil
}

// episodicWrite makes mw a write of an event to the collection, under a
// key that sorts by time.
func (h *stateRun) episodicWrite(mw *MemoryWrite, w *states.MemoryWrite, i int) error {
	ns := collectionNamespace(mw.Namespace, "episodic", w.Collection)
	if err := CheckMemoryName("the collection's namespace", ns); err != nil {
		return h.runtimeError(fmt.Sprintf("Memory.Write[%d]: Collection %q: %v", i, w.Collection, err))
	}
	key := fmt.Sprintf("%019d %s", mw.At.UnixNano(), h.autoKey(i))
	if err := CheckMemoryName("the key", key); err != nil {
		return h.runtimeError(fmt.Sprintf("Memory.Write[%d]: %v", i, err))
	}
	mw.Namespace, mw.Key, mw.Merge = ns, key, false
	mw.Value = map[string]any{"event": mw.Value, "at": mw.At.Format(time.RFC3339Nano), "execution": h.r.exec.ID, "state": h.name()}
	h.useCollection(ns)
	return nil
}

// semanticRead places the TopK entries of the collection nearest to the
// query (with at least MinScore) at InjectAt: an array, best first, of
// {"key", "score", "text", "value", "updatedAt"}.
func (h *stateRun) semanticRead(ctx context.Context, ms MemoryStore, r *states.MemoryRead, ns string, input any) (any, error) {
	q, err := h.queryText("Memory.Read.Query", r.Query, r.QueryExpr, input)
	if err != nil {
		return nil, err
	}
	vecs, err := h.embed(ctx, "Memory.Read.Query", []string{q})
	if err != nil {
		return nil, err
	}
	stored := collectionNamespace(ns, "semantic", r.Collection)
	h.useCollection(stored)
	minScore := float32(-1)
	if r.HasMinScore {
		minScore = float32(r.MinScore)
	}
	now := time.Now()
	res, entries, err := h.r.x.vectors.get(stored).search(ctx, ms, stored, h.r.embedder().Model(), vecs[0], int(r.TopK), minScore, now)
	if err != nil {
		return nil, h.runtimeError(fmt.Sprintf("Memory.Read: collection %q of namespace %q: %v", r.Collection, ns, err))
	}
	found := make([]any, 0, len(res))
	keys := make([]any, 0, len(res))
	for _, m := range res {
		e := entries[m.ID]
		score := jsonvalue.FloatNumber(float64(m.Score))
		found = append(found, map[string]any{"key": m.ID, "score": score, "text": e.text, "value": e.value, "updatedAt": e.updated.UTC().Format(time.RFC3339Nano)})
		keys = append(keys, map[string]any{"key": m.ID, "score": score})
	}
	out, err := r.InjectAt.Set(input, found)
	if err != nil {
		return nil, h.runtimeError(fmt.Sprintf("Memory.Read.InjectAt: %v", err))
	}
	h.r.ownEvent(Event{Type: EventMemoryRead, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
		Detail: map[string]any{"namespace": ns, "type": "semantic", "collection": r.Collection, "model": h.r.embedder().Model(), "matches": keys}})
	return out, nil
}

// episodicRead places the collection's events that match Filter at
// InjectAt: an array of {"event", "at", "execution", "state"}, newest
// first (Order "desc") or oldest first, at most Limit.
func (h *stateRun) episodicRead(ctx context.Context, ms MemoryStore, r *states.MemoryRead, ns string, input any) (any, error) {
	type want struct {
		field string
		value any
	}
	filter := make([]want, 0, len(r.Filter))
	for _, f := range r.Filter {
		v := f.Value
		if f.Expr != nil {
			var err error
			if v, err = f.Expr.Eval(input, h.env); err != nil {
				return nil, h.runtimeError(fmt.Sprintf("Memory.Read.Filter.%s.$: %v", f.Field, err))
			}
		}
		filter = append(filter, want{f.Field, v})
	}
	stored := collectionNamespace(ns, "episodic", r.Collection)
	h.useCollection(stored)
	list, err := ms.ListMemory(ctx, stored, time.Now())
	if err != nil {
		return nil, fmt.Errorf("state %s: read memory namespace %q: %w", h.name(), stored, err)
	}
	if r.Order != "asc" {
		slices.Reverse(list)
	}
	events := []any{}
	for _, e := range list {
		if int64(len(events)) >= r.Limit {
			break
		}
		rec, ok := e.Value.(map[string]any)
		if !ok {
			continue
		}
		if len(filter) > 0 {
			ev, ok := rec["event"].(map[string]any)
			if !ok {
				continue
			}
			match := true
			for _, f := range filter {
				if got, ok := ev[f.field]; !ok || !jsonvalue.Equal(got, f.value) {
					match = false
					break
				}
			}
			if !match {
				continue
			}
		}
		events = append(events, rec)
	}
	out, err := r.InjectAt.Set(input, events)
	if err != nil {
		return nil, h.runtimeError(fmt.Sprintf("Memory.Read.InjectAt: %v", err))
	}
	h.r.ownEvent(Event{Type: EventMemoryRead, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
		Detail: map[string]any{"namespace": ns, "type": "episodic", "collection": r.Collection, "events": jsonvalue.IntNumber(int64(len(events))), "limit": jsonvalue.IntNumber(r.Limit)}})
	return out, nil
}
