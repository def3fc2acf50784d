package jsonpath

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/ohler55/ojg/jp"
)

// Indefinite paths (wildcards, unions, slices, deep scans and filters) are
// evaluated by ojg's jp package: each compiled path carries a jp.Expr that
// jp's Walk runs on our values as they are, with no conversion. Walk visits
// object members in key order and calls back with where each match sits,
// which gives Get its order and Locate its locations.
//
// Some fragments of that jp.Expr are ours, each a jp.Frag by embedding
// one of jp's and replacing its Walk (docs/jsonpath.md, "Where we do not use
// ojg", gives the cases that decided each):
//
//   - filterStep, [?(…)]: jp's scripts cannot compare exact json.Number
//     decimals, panic on comparing lists, and test an object's members where
//     Jayway tests the object;
//   - selfAndDescendants, the ".." of "..x": Jayway applies x to the value
//     and its descendants, jp.Descent only to the descendants;
//   - deepFilterStep, "..[?(…)]": each descendant tested once, itself;
//   - sliceStep, a slice with a negative step: jp.Slice's bounds differ from
//     Python's when the start is before the first element;
//   - childStep, a name: jp.Child allocates for each match it records.

// query is an indefinite path (or a filter's operand) compiled for jp.
type query struct {
	x jp.Expr
	// deep is set when x scans descendants, so that a walk goes deeper
	// than x's own steps.
	deep bool
}

// compileQuery returns the jp expression that evaluates segs.
func compileQuery(segs []segment) query {
	x := make(jp.Expr, 0, len(segs)+1)
	deep := false
	for i := range segs {
		s := &segs[i]
		if s.deep {
			deep = true
			if s.kind == segFilter {
				x = append(x, descendants{Descent: jp.Descent('.')}, counted{deepFilterStep{filter: s.filter}})
				continue
			}
			x = append(x, selfAndDescendants{Descent: jp.Descent('.')})
		}
		x = append(x, counted{fragment(s)})
	}
	return query{x: x, deep: deep}
}

// fragment returns the jp fragment of one segment, after any "..".
func fragment(s *segment) jp.Frag {
	switch s.kind {
	case segName:
		return &childStep{Child: jp.Child(s.name)}
	case segIndex:
		return jp.Nth(s.index)
	case segNames:
		u := make(jp.Union, len(s.names))
		for i, n := range s.names {
			u[i] = n
		}
		return u
	case segIndexes:
		u := make(jp.Union, len(s.indexes))
		for i, n := range s.indexes {
			u[i] = int64(n)
		}
		return u
	case segWildcard:
		return jp.Wildcard('*')
	case segSlice:
		if s.slice.step < 0 {
			return sliceStep{Slice: s.slice.jp(), spec: s.slice}
		}
		return s.slice.jp()
	}
	return filterStep{filter: s.filter}
}

// jp returns the slice as a jp.Slice, whose bounds are Python's for every
// array shorter than jp.SliceNotSet elements. jp reads SliceNotSet (our
// largest index) as "not given", so a bound written as that number is
// passed one lower, which selects the same from any such array.
func (sl sliceSpec) jp() jp.Slice {
	bound := func(v int, has bool) int {
		switch {
		case !has:
			return jp.SliceNotSet
		case v == jp.SliceNotSet:
			return v - 1
		}
		return v
	}
	return jp.Slice{bound(sl.start, sl.hasStart), bound(sl.end, sl.hasEnd), sl.step}
}

// walkRoom is how many steps a walk of a query without a deep scan has room
// for in its walkState; deepRoom is how many levels a deep scan has room for
// beyond the query's own steps. jp's fragments append to the path and the
// nodes as they go down: past the room, each visit allocates.
const (
	walkRoom = 4
	deepRoom = 32
)

// walkState is one walk: what "$" means in filters, the budget it spends,
// the matches collected, and the room for the path and the nodes, in one
// allocation. A walk's nodes[0] is its walkState: jp's fragments only read
// the last node, and ours find the root, the budget and the matches there.
type walkState struct {
	root any
	// b is the evaluation's budget: own, or that of the walk whose filter
	// started this one.
	b     *walkBudget
	own   walkBudget
	out   []any
	path  [walkRoom]jp.Frag
	nodes [walkRoom + 2]any
}

// walkBudget is what is left of the steps one evaluation of a path may
// take (a step is a value visited by a fragment of the path, a deep scan
// or a filter's own paths), shared by the walks of its filters. Once it is
// spent, every fragment returns at once and the evaluation fails.
type walkBudget struct{ left int }

// spend takes one step, reporting false once the budget is spent.
func (b *walkBudget) spend() bool {
	b.left--
	return b.left >= 0
}

// over reports whether the budget was spent.
func (b *walkBudget) over() bool { return b.left < 0 }

// counted wraps a fragment so that each visit through it spends a step of
// the walk's budget; past the budget it visits nothing.
type counted struct{ jp.Frag }

// Walk spends a step, then lets the fragment walk.
func (c counted) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	if !nodes[0].(*walkState).b.spend() {
		return
	}
	c.Frag.Walk(rest, path, nodes, cb)
}

// walk runs q from start, and calls cb with the path and the chain of nodes
// to each match; nodes[0] is st, nodes[1] start, and path[i] is the step
// taken from nodes[i+1].
func walk(q query, st *walkState, start any, cb func(path jp.Expr, nodes []any)) {
	path, nodes := st.path[:0], st.nodes[:0]
	if q.deep {
		path = make(jp.Expr, 0, len(q.x)+deepRoom)
		nodes = make([]any, 0, len(q.x)+deepRoom+2)
	}
	nodes = append(nodes, st, start)
	q.x[0].Walk(q.x[1:], path, nodes, cb)
}

// collect returns every value q selects from start, in document order, with
// root as what "$" means in filters, spending b (or, when b is nil, a
// budget of steps of its own). When the budget is spent the matches are
// incomplete, and over is true.
func collect(q query, root, start any, b *walkBudget, steps int) (out []any, over bool) {
	// Room for a few matches from the start: growing from empty would
	// allocate three times on the way to four.
	st := &walkState{root: root, b: b, out: make([]any, 0, 4)}
	if b == nil {
		st.own.left = steps
		st.b = &st.own
	}
	walk(q, st, start, addMatch)
	return st.out, st.b.over()
}

// addMatch adds the value a walk reached to the walk's matches.
func addMatch(_ jp.Expr, nodes []any) {
	st := nodes[0].(*walkState)
	if st.b.spend() {
		st.out = append(st.out, nodes[len(nodes)-1])
	}
}

// stateOf returns the walk that nodes belong to.
func stateOf(nodes []any) *walkState { return nodes[0].(*walkState) }

// location turns the path of a match into a Location, counting negative
// indexes from the end of their arrays.
func location(path jp.Expr, nodes []any) Location {
	loc := make(Location, len(path))
	for i, f := range path {
		switch s := f.(type) {
		case jp.Child:
			loc[i] = Step{Key: string(s)}
		case *childStep:
			loc[i] = Step{Key: string(s.Child)}
		case jp.Nth:
			n := int(s)
			if a, ok := nodes[i+1].([]any); ok && n < 0 {
				n += len(a)
			}
			loc[i] = Step{Index: n, IsIndex: true}
		}
	}
	return loc
}

// next continues a walk with rest, or reports a match when nothing is left.
func next(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	if len(rest) > 0 {
		rest[0].Walk(rest[1:], path, nodes, cb)
		return
	}
	cb(path, nodes)
}

// childStep is a name. jp.Child.Walk boxes the name into a jp.Frag each time
// it appends it to the path, an allocation per match; a *childStep appends
// itself, which costs nothing.
type childStep struct{ jp.Child }

// Walk continues with rest on the member of the last node, if it has one.
func (c *childStep) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	m, ok := nodes[len(nodes)-1].(map[string]any)
	if !ok {
		return
	}
	v, ok := m[string(c.Child)]
	if !ok {
		return
	}
	next(rest, append(path, c), append(nodes, v), cb)
}

// filterStep is [?(…)]. On an array it selects the elements that pass; on an
// object, as in Jayway, the object itself when it passes. jp.At is embedded
// only to make it a jp.Frag; Walk and Append are its own.
type filterStep struct {
	jp.At
	filter filterNode
}

// Walk continues with rest on what the filter selects from the last node.
func (f filterStep) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	st := stateOf(nodes)
	switch c := nodes[len(nodes)-1].(type) {
	case []any:
		path = append(path, nil)
		nodes = append(nodes, nil)
		for i, v := range c {
			if !st.b.spend() {
				return
			}
			if f.filter.eval(st, v) {
				path[len(path)-1] = jp.Nth(i)
				nodes[len(nodes)-1] = v
				next(rest, path, nodes, cb)
			}
		}
	case map[string]any:
		if f.filter.eval(st, c) {
			next(rest, path, nodes, cb)
		}
	}
}

// Append writes the fragment as a filter; the expression itself is not
// kept, so it is written as "[?(…)]".
func (f filterStep) Append(buf []byte, _, _ bool) []byte { return append(buf, "[?(…)]"...) }

// deepFilterStep is the filter of "..[?(…)]", which jp.Descent applies to
// each descendant: it selects the descendant itself when it passes.
type deepFilterStep struct {
	jp.At
	filter filterNode
}

// Walk continues with rest on the last node when it passes the filter.
func (f deepFilterStep) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	if f.filter.eval(stateOf(nodes), nodes[len(nodes)-1]) {
		next(rest, path, nodes, cb)
	}
}

// Append writes the fragment as a filter.
func (f deepFilterStep) Append(buf []byte, _, _ bool) []byte { return append(buf, "[?(…)]"...) }

// selfAndDescendants is the ".." before a name, index, wildcard, union or
// slice: Jayway applies the step to the starting value, then to each
// descendant in pre-order, where jp.Descent starts at the children.
type selfAndDescendants struct{ jp.Descent }

// Walk continues with rest on the last node, then on each of its
// descendants.
func (d selfAndDescendants) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	if !stateOf(nodes).b.spend() {
		return
	}
	next(rest, path, nodes, cb)
	descend(rest, path, nodes, cb)
}

// descendants is the ".." of "..[?(…)]": rest applied to each descendant of
// the last node, not to the node itself, as jp.Descent does. jp.Descent is
// embedded for Append; the walk is ours, so that each descendant visited
// spends a step of the walk's budget.
type descendants struct{ jp.Descent }

// Walk continues with rest on each descendant of the last node.
func (d descendants) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	descend(rest, path, nodes, cb)
}

// descend continues with rest on each descendant of the last node in
// pre-order, object members in key order, as jp.Descent does; each visit
// spends a step, and a spent budget ends the walk.
func descend(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	b := stateOf(nodes).b
	switch c := nodes[len(nodes)-1].(type) {
	case []any:
		path, nodes = append(path, nil), append(nodes, nil)
		for i, v := range c {
			path[len(path)-1], nodes[len(nodes)-1] = jp.Nth(i), v
			if !visitDescendant(rest, path, nodes, cb, b) {
				return
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		path, nodes = append(path, nil), append(nodes, nil)
		for _, k := range keys {
			path[len(path)-1], nodes[len(nodes)-1] = jp.Child(k), c[k]
			if !visitDescendant(rest, path, nodes, cb, b) {
				return
			}
		}
	}
}

// visitDescendant continues with rest on the last node and its
// descendants, reporting false once the budget is spent.
func visitDescendant(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any), b *walkBudget) bool {
	if !b.spend() {
		return false
	}
	next(rest, path, nodes, cb)
	descend(rest, path, nodes, cb)
	return !b.over()
}

// sliceStep is a slice with a negative step. jp.Slice starts such a slice
// at the first element when its start is before the array's first element,
// where Python (and RFC 9535) select nothing: $[-10::-1] on [1,2] is [].
// jp.Slice is embedded for Append; which elements are selected is ours.
type sliceStep struct {
	jp.Slice
	spec sliceSpec
}

// Walk continues with rest on each element the slice selects.
func (s sliceStep) Walk(rest, path jp.Expr, nodes []any, cb func(jp.Expr, []any)) {
	a, ok := nodes[len(nodes)-1].([]any)
	if !ok {
		return
	}
	start, end, step := s.spec.bounds(len(a))
	for i := start; step > 0 && i < end || step < 0 && i > end; i += step {
		jp.Nth(i).Walk(rest, path, nodes, cb)
	}
}

// bounds resolves the slice against an array of length n, as Python does:
// the first index, the index to stop before, and the step.
func (sl sliceSpec) bounds(n int) (start, end, step int) {
	step = sl.step
	clamp := func(i, lo, hi int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, lo), hi)
	}
	if step > 0 {
		start, end = 0, n
		if sl.hasStart {
			start = clamp(sl.start, 0, n)
		}
		if sl.hasEnd {
			end = clamp(sl.end, 0, n)
		}
		return start, end, step
	}
	start, end = n-1, -1
	if sl.hasStart {
		start = clamp(sl.start, -1, n-1)
	}
	if sl.hasEnd {
		end = clamp(sl.end, -1, n-1)
	}
	return start, end, step
}

// index resolves i against a, counting a negative i from the end.
func index(a []any, i int) (int, bool) {
	if i < 0 {
		i += len(a)
	}
	return i, i >= 0 && i < len(a)
}

// typeName names the JSON type of v, for our own messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any, *jsonvalue.Packed:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "not a JSON value"
}

// javaClassName names the class Jayway's default JSON provider (json-smart)
// uses for v, as Jayway's messages print it.
func javaClassName(v any) string {
	switch n := v.(type) {
	case nil:
		return "null"
	case bool:
		return "java.lang.Boolean"
	case string:
		return "java.lang.String"
	case json.Number:
		if strings.ContainsAny(string(n), ".eE") {
			return "java.lang.Double"
		}
		if i, ok := jsonvalue.Int64(n); ok {
			if i >= -1<<31 && i < 1<<31 {
				return "java.lang.Integer"
			}
			return "java.lang.Long"
		}
		return "java.math.BigInteger"
	case []any, *jsonvalue.Packed:
		return "net.minidev.json.JSONArray"
	case map[string]any:
		return "net.minidev.json.JSONObject"
	}
	return "java.lang.Object"
}

// javaString renders v as Java's toString does for json-smart values:
// strings as they are, containers as compact JSON.
func javaString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case json.Number:
		return string(s)
	}
	return marshalForMessage(v)
}

// marshalForMessage writes v as compact JSON for an error message; it never
// fails.
func marshalForMessage(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return "<" + typeName(v) + ">"
	}
	return string(b)
}
