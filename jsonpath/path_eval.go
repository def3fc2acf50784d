package jsonpath

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// evaluator evaluates indefinite paths. root is what "$" means inside
// filters: the value the path started from. When locs is set, it also
// records where each value it selects sits (at is the current location).
type evaluator struct {
	root any
	locs *[]Location
	at   Location
}

// collect appends to out every value that segs select from cur. Nothing is
// an error: a step that does not apply to a value selects nothing from it.
func (ev *evaluator) collect(segs []segment, cur any, out *[]any) {
	if len(segs) == 0 {
		*out = append(*out, cur)
		if ev.locs != nil {
			*ev.locs = append(*ev.locs, slices.Clone(ev.at))
		}
		return
	}
	s := &segs[0]
	if s.deep {
		ev.scan(s, segs[1:], cur, out)
		return
	}
	ev.step(s, segs[1:], cur, out)
}

// step applies one (non-deep) segment to cur and continues with rest on
// each value it selects.
func (ev *evaluator) step(s *segment, rest []segment, cur any, out *[]any) {
	switch s.kind {
	case segName:
		if m, ok := cur.(map[string]any); ok {
			if v, ok := m[s.name]; ok {
				ev.into(Step{Key: s.name}, rest, v, out)
			}
		}
	case segNames:
		if m, ok := cur.(map[string]any); ok {
			for _, name := range s.names {
				if v, ok := m[name]; ok {
					ev.into(Step{Key: name}, rest, v, out)
				}
			}
		}
	case segIndex:
		if a, ok := cur.([]any); ok {
			if i, ok := index(a, s.index); ok {
				ev.into(Step{Index: i, IsIndex: true}, rest, a[i], out)
			}
		}
	case segIndexes:
		if a, ok := cur.([]any); ok {
			for _, i := range s.indexes {
				if i, ok := index(a, i); ok {
					ev.into(Step{Index: i, IsIndex: true}, rest, a[i], out)
				}
			}
		}
	case segWildcard:
		forEachChild(cur, func(st Step, v any) { ev.into(st, rest, v, out) })
	case segSlice:
		if a, ok := cur.([]any); ok {
			start, end, step := s.slice.bounds(len(a))
			for i := start; step > 0 && i < end || step < 0 && i > end; i += step {
				ev.into(Step{Index: i, IsIndex: true}, rest, a[i], out)
			}
		}
	case segFilter:
		switch c := cur.(type) {
		case []any:
			for i, v := range c {
				if ev.test(s.filter, v) {
					ev.into(Step{Index: i, IsIndex: true}, rest, v, out)
				}
			}
		case map[string]any:
			// Jayway applies a filter on an object to the object itself.
			if ev.test(s.filter, c) {
				ev.collect(rest, c, out)
			}
		}
	}
}

// into continues with rest on v, the child of the current value at st.
func (ev *evaluator) into(st Step, rest []segment, v any, out *[]any) {
	if ev.locs == nil {
		ev.collect(rest, v, out)
		return
	}
	ev.at = append(ev.at, st)
	ev.collect(rest, v, out)
	ev.at = ev.at[:len(ev.at)-1]
}

// scan applies a deep segment: the segment to cur and to every descendant of
// cur, in pre-order. A deep filter selects every descendant that passes it.
func (ev *evaluator) scan(s *segment, rest []segment, cur any, out *[]any) {
	if s.kind == segFilter {
		forEachChild(cur, func(st Step, v any) {
			if ev.test(s.filter, v) {
				ev.into(st, rest, v, out)
			}
			ev.descend(st, s, rest, v, out)
		})
		return
	}
	ev.step(s, rest, cur, out)
	forEachChild(cur, func(st Step, v any) { ev.descend(st, s, rest, v, out) })
}

// descend scans v, the child of the current value at st.
func (ev *evaluator) descend(st Step, s *segment, rest []segment, v any, out *[]any) {
	if ev.locs == nil {
		ev.scan(s, rest, v, out)
		return
	}
	ev.at = append(ev.at, st)
	ev.scan(s, rest, v, out)
	ev.at = ev.at[:len(ev.at)-1]
}

// forEachChild calls f with each element of an array, or each member of an
// object in key order, and where it is; a scalar has no children.
func forEachChild(cur any, f func(Step, any)) {
	switch c := cur.(type) {
	case []any:
		for i, v := range c {
			f(Step{Index: i, IsIndex: true}, v)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			f(Step{Key: k}, c[k])
		}
	}
}

// index resolves i against a, counting a negative i from the end.
func index(a []any, i int) (int, bool) {
	if i < 0 {
		i += len(a)
	}
	return i, i >= 0 && i < len(a)
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
	case []any:
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
	case []any:
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
