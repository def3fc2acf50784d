package contextwin

import (
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds what shortens a window: the two strategies that drop
// by position, and Summarize, which replaces (Strategy "summarize" is
// Summarize with When "Always", then sliding_window; Strategy "semantic"
// is in semantic.go). The rules are written down in doc.go.

// slidingWindow drops until the content fits: first the oldest elements of
// the arrays (the largest array first, chosen again after every element),
// then whole top-level members in reverse key order.
func (b *builder) slidingWindow() {
	w := b.w
	var arrays []loc
	if !w.root.hasRepl {
		windowArrays(w.root.val, loc{}, &arrays)
	}
	h := &arrayHeap{}
	for _, l := range arrays {
		if b.protect.covers(l) {
			continue
		}
		n := w.node(l)
		if n == nil || n.gone || n.hasRepl || n.length() == 0 {
			continue
		}
		h.items = append(h.items, &arrayCursor{at: l, n: n, size: w.size(n)})
	}
	heap.Init(h)
	for h.Len() > 0 && !b.fits() {
		a := h.items[0]
		elems, _ := a.n.val.([]any)
		for removed := false; !removed && a.next < len(elems); a.next++ {
			removed = w.drop(a.at.child(step{index: a.next, isIndex: true}), b.protect, nil)
		}
		if a.next >= len(elems) {
			heap.Pop(h)
			continue
		}
		a.size = w.size(a.n)
		heap.Fix(h, 0)
	}
	m, isObject := w.root.val.(map[string]any)
	if !isObject || w.root.hasRepl {
		return
	}
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range slices.Backward(keys) {
		if b.fits() {
			return
		}
		w.drop(loc{{key: k}}, b.protect, nil)
	}
}

// windowArrays collects the arrays a sliding window shortens: those reached
// from v through object members only (v itself when it is one), in
// document order. Arrays inside array elements are left alone: they belong
// to an entry (a message's parts), not to the history.
func windowArrays(v any, at loc, out *[]loc) {
	switch c := v.(type) {
	case []any:
		*out = append(*out, at)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			windowArrays(c[k], at.child(step{key: k}), out)
		}
	}
}

// arrayCursor is an array a sliding window shortens: next is the index of the
// oldest element not yet considered, size the runes of its text now.
type arrayCursor struct {
	at   loc
	n    *node
	size int
	next int
}

// arrayHeap orders the arrays largest first, then in document order.
type arrayHeap struct{ items []*arrayCursor }

func (h *arrayHeap) Len() int { return len(h.items) }
func (h *arrayHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.size != b.size {
		return a.size > b.size
	}
	return compareLoc(a.at, b.at) < 0
}
func (h *arrayHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *arrayHeap) Push(x any) {
	if c, ok := x.(*arrayCursor); ok {
		h.items = append(h.items, c)
	}
}
func (h *arrayHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// priority drops until the content fits: first the parts no Priority path
// selects, in document order, then the matches of each Priority path from
// the last path to the first, each path's matches in the order it selects
// them. A location keeps the rank of the first path that selects it, and
// dropping a location keeps what more important paths select inside it.
func (b *builder) priority() error {
	w := b.w
	input := w.root.val
	listed := &trie{}
	ranks := make([][]loc, 0, len(b.cfg.Priority))
	for _, p := range b.cfg.Priority {
		locs, err := locate(p, input)
		if err != nil {
			return fmt.Errorf("priority: %w", err)
		}
		var group []loc
		for _, l := range locs {
			if t := listed.at(l); t != nil && t.here {
				continue
			}
			listed.add(l)
			group = append(group, l)
		}
		ranks = append(ranks, group)
	}
	var unlisted []loc
	if !listed.covers(loc{}) {
		unlistedParts(input, loc{}, listed, &unlisted)
	}
	for _, l := range unlisted {
		if b.fits() {
			return nil
		}
		w.drop(l, b.protect, nil)
	}
	for r := len(ranks) - 1; r >= 0; r-- {
		keep := &trie{}
		for _, group := range ranks[:r] {
			for _, l := range group {
				keep.add(l)
			}
		}
		for _, l := range ranks[r] {
			if b.fits() {
				return nil
			}
			w.drop(l, b.protect, keep)
		}
	}
	return nil
}

// unlistedParts collects, in document order, the largest parts of v (found
// at at, which listed does not cover) that hold no listed location: its
// children, and inside a child that holds listed locations, that child's
// own unlisted parts.
func unlistedParts(v any, at loc, listed *trie, out *[]loc) {
	forEachChild(v, at, func(c any, l loc) {
		switch {
		case listed.covers(l):
		case listed.holdsInside(l):
			unlistedParts(c, l, listed, out)
		default:
			*out = append(*out, l)
		}
	})
}

// wantSummary reports whether Summarize applies to the content as it is
// after Exclude: always with Strategy "summarize".
func (b *builder) wantSummary() bool {
	s := b.cfg.Summarize
	if s == nil {
		return false
	}
	switch {
	case b.cfg.Strategy == "summarize" || s.When == "Always":
		return true
	case s.When == "Never":
		return false
	}
	return b.cfg.MaxTokens > 0 && !b.fits()
}

// part is what one summarizer call condenses: the value at at, or, when
// run is set, the elements at those indexes of the array at at.
type part struct {
	at  loc
	run []int
}

// summarize replaces the Summarize target (the whole content by default)
// by its summary. When Include locations lie inside the target, each of
// its largest parts without one is summarized on its own instead (a run
// of consecutive array elements being one part, whose summary takes the
// run's place as one element), so that included values stay as they are.
func (b *builder) summarize(ctx context.Context, summarize Summarizer) error {
	s := b.cfg.Summarize
	target := loc{}
	if s.Target != nil {
		locs, err := locate(s.Target, b.w.root.val)
		if err != nil {
			return fmt.Errorf("context window: summarize target: %w", err)
		}
		if len(locs) == 0 {
			return nil
		}
		target = locs[0]
	}
	if !b.w.present(target) || b.protect.covers(target) {
		return nil
	}
	var parts []part
	if p := b.protect.at(target); p.hasKids() {
		b.split(target, p, &parts)
	} else {
		parts = []part{{at: target}}
	}
	if len(parts) == 0 {
		return nil
	}
	if summarize == nil {
		return fmt.Errorf("context window: Summarize applies but no summarizer was given")
	}
	contents := make([]any, len(parts))
	sizes := make([]int64, len(parts))
	var total int64
	for i, p := range parts {
		contents[i] = b.partContent(p)
		t, err := jsonpath.EstimateTokens(contents[i])
		if err != nil {
			return fmt.Errorf("context window: %w", err)
		}
		sizes[i], total = t, total+t
	}
	goal := b.summaryTokens(total)
	for i, p := range parts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("context window: %w", err)
		}
		want := goal
		if len(parts) > 1 {
			want = share(goal, sizes[i], total)
		}
		summary, err := summarize(ctx, s.Using, contents[i], want)
		if err != nil {
			return fmt.Errorf("context window: summarizer %q for %s: %w", s.Using, p.String(), err)
		}
		summary, err = jsonvalue.Normalize(summary)
		if err == nil {
			err = b.place(p, summary)
		}
		if err != nil {
			return fmt.Errorf("context window: summary by %q for %s: %w", s.Using, p.String(), err)
		}
	}
	b.summarized = true
	return nil
}

// String writes where the part is: its location, or its array's location
// followed by the indexes of the run.
func (p part) String() string {
	if p.run == nil {
		return p.at.String()
	}
	first, last := p.run[0], p.run[len(p.run)-1]
	if first == last {
		return p.at.child(step{index: first, isIndex: true}).String()
	}
	return fmt.Sprintf("%s[%d..%d]", p.at, first, last)
}

// split collects the parts of the location l to summarize, where protect
// (the Include locations at l) holds locations strictly inside it.
func (b *builder) split(l loc, protect *trie, out *[]part) {
	n := b.w.node(l)
	if n == nil || n.gone || n.hasRepl {
		return
	}
	_, isArray := n.val.([]any)
	var run []int
	flush := func() {
		if len(run) > 0 {
			*out = append(*out, part{at: l, run: run})
			run = nil
		}
	}
	for _, s := range n.children() {
		k := protect.kid(s)
		switch {
		case k != nil && k.here:
			flush()
		case k.hasKids():
			flush()
			b.split(l.child(s), k, out)
		case isArray:
			run = append(run, s.index)
		default:
			*out = append(*out, part{at: l.child(s)})
		}
	}
	flush()
}

// partContent returns the value a part holds now.
func (b *builder) partContent(p part) any {
	if p.run == nil {
		return b.w.current(b.w.node(p.at))
	}
	out := make([]any, len(p.run))
	for i, j := range p.run {
		out[i] = b.w.current(b.w.node(p.at.child(step{index: j, isIndex: true})))
	}
	return out
}

// place puts a summary in the place of a part and protects it.
func (b *builder) place(p part, summary any) error {
	at := p.at
	if p.run != nil {
		at = p.at.child(step{index: p.run[0], isIndex: true})
	}
	if err := b.w.replace(b.w.node(at), summary); err != nil {
		return err
	}
	for _, j := range p.run[min(1, len(p.run)):] {
		l := p.at.child(step{index: j, isIndex: true})
		b.w.remove(b.w.node(l), l, false)
	}
	b.protectLoc(at, "summary")
	return nil
}

// summaryTokens returns the size the summaries should reach together:
// ceil(total×Ratio) with a Ratio; else MaxTokens minus the estimate of the
// rest of the content; at least 1 either way. Without Ratio and MaxTokens
// it is 0: the summarizer decides.
func (b *builder) summaryTokens(total int64) int64 {
	s := b.cfg.Summarize
	switch {
	case s.Ratio > 0:
		return max(1, int64(math.Ceil(float64(total)*s.Ratio)))
	case b.cfg.MaxTokens > 0:
		rest := max(0, b.w.tokens()-total)
		return max(1, b.cfg.MaxTokens-rest)
	}
	return 0
}

// share returns the part of goal due to a part of size tokens out of
// total: in proportion, rounded up, at least 1 (0 when goal is 0).
func share(goal, size, total int64) int64 {
	if goal == 0 {
		return 0
	}
	if total <= 0 {
		return goal
	}
	return max(1, (goal*size+total-1)/total)
}
