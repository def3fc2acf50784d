package contextwin

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds the window while it is being built: the input, plus a
// tree of the locations that were removed or replaced, each knowing the
// size its JSON text has now. The input is never modified; materialize
// copies only the containers on the way to a change.
//
// Sizes are counted in runes of compact JSON text (Marshal), the unit of
// jsonpath.EstimateTokens: a container's text is its brackets, its
// children's texts, one comma between two children and, in an object, each
// member's quoted key and colon. Removing a child or replacing it changes
// its ancestors' sizes by a difference computed from the child alone, so
// that measuring never walks the whole document again.

// node is a location of the input that the window has touched: removed,
// replaced, or on the way to one that was.
type node struct {
	val    any // the value at this location in the input
	parent *node
	at     step // where it is in its parent

	orig  int // runes of val's JSON text; -1 until measured
	delta int // what the changes inside it added to orig

	lenDelta int // children removed from a container (negative)

	kids map[step]*node

	gone    bool // removed
	hasRepl bool // replaced by repl (a summary)
	repl    any
	changed bool // something at or inside it was removed or replaced
}

// work is a window being built.
type work struct {
	root    *node
	dropped []loc
	// err is the first failure to measure a value; once set, the work's
	// sizes are wrong and Build returns it.
	err error
}

func newWork(input any, runes int) *work {
	return &work{root: &node{val: input, orig: runes}}
}

// runesOf returns the length in runes of v's compact JSON text,
// utf8.RuneCount(jsonvalue.Marshal(v)), without writing the text: Size gives
// its bytes, and the characters Marshal writes as several bytes can only
// come from strings and keys (escapes are ASCII; an invalid byte becomes
// U+FFFD, three bytes).
func runesOf(v any) (int, error) {
	n := jsonvalue.Size(v)
	if n < 0 {
		if _, err := jsonvalue.Marshal(v); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("cannot measure a %s", jsonvalue.TypeName(v))
	}
	return n - extraBytes(v), nil
}

// extraBytes returns how many more bytes than runes the strings and keys
// in v take in Marshal's text.
func extraBytes(v any) int {
	switch c := v.(type) {
	case string:
		return extraInString(c)
	case []any:
		n := 0
		for _, x := range c {
			n += extraBytes(x)
		}
		return n
	case map[string]any:
		n := 0
		for k, x := range c {
			n += extraInString(k) + extraBytes(x)
		}
		return n
	}
	return 0
}

func extraInString(s string) int {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	n := 0
	for _, r := range s[i:] {
		if r >= utf8.RuneSelf {
			n += utf8.RuneLen(r) - 1
		}
	}
	return n
}

// size returns the runes of the JSON text of n's current value.
func (w *work) size(n *node) int {
	if n.orig < 0 {
		r, err := runesOf(n.val)
		if err != nil && w.err == nil {
			w.err = err
		}
		n.orig = r
	}
	return n.orig + n.delta
}

// length returns the number of children n's current value has.
func (n *node) length() int {
	switch c := n.val.(type) {
	case map[string]any:
		return len(c) + n.lenDelta
	case []any:
		return len(c) + n.lenDelta
	}
	return 0
}

// grow adds d runes to n and every container around it, and marks them
// changed.
func (n *node) grow(d int) {
	for p := n; p != nil; p = p.parent {
		p.delta += d
		p.changed = true
	}
}

// childOf returns the child of v at s.
func childOf(v any, s step) (any, bool) {
	switch c := v.(type) {
	case map[string]any:
		if s.isIndex {
			return nil, false
		}
		x, ok := c[s.key]
		return x, ok
	case []any:
		if !s.isIndex || s.index < 0 || s.index >= len(c) {
			return nil, false
		}
		return c[s.index], true
	}
	return nil, false
}

// node returns the node of l, creating it and the nodes on the way; nil
// when l is not in the input, or lies inside a location that was removed
// or replaced. The node returned may itself be removed or replaced.
func (w *work) node(l loc) *node {
	n := w.root
	for _, s := range l {
		if n.gone || n.hasRepl {
			return nil
		}
		k := n.kids[s]
		if k == nil {
			v, ok := childOf(n.val, s)
			if !ok {
				return nil
			}
			k = &node{val: v, parent: n, at: s, orig: -1}
			if n.kids == nil {
				n.kids = make(map[step]*node)
			}
			n.kids[s] = k
		}
		n = k
	}
	return n
}

// present reports whether l is in the window as it is now (neither it nor
// a location around it was removed or replaced), without creating nodes.
func (w *work) present(l loc) bool {
	n := w.root
	for i, s := range l {
		if n.gone || n.hasRepl {
			return false
		}
		k := n.kids[s]
		if k == nil {
			_, ok := valueIn(n.val, l[i:])
			return ok
		}
		n = k
	}
	return !n.gone
}

// valueIn returns the value at the steps l inside v.
func valueIn(v any, l loc) (any, bool) {
	for _, s := range l {
		var ok bool
		if v, ok = childOf(v, s); !ok {
			return nil, false
		}
	}
	return v, true
}

// remove removes n from its parent (n is not the root) and records l as
// dropped when record is set.
func (w *work) remove(n *node, l loc, record bool) {
	p := n.parent
	d := w.size(n)
	if !n.at.isIndex {
		k, err := runesOf(n.at.key)
		if err != nil && w.err == nil {
			w.err = err
		}
		d += k + 1 // "key":
	}
	if p.length() >= 2 {
		d++ // the comma that separated it from a sibling
	}
	n.gone, n.changed = true, true
	n.kids = nil
	p.lenDelta--
	p.grow(-d)
	if record {
		w.dropped = append(w.dropped, l)
	}
}

// replace puts v in place of n's value.
func (w *work) replace(n *node, v any) error {
	r, err := runesOf(v)
	if err != nil {
		return err
	}
	d := r - w.size(n)
	n.hasRepl, n.repl, n.kids = true, v, nil
	n.grow(d)
	return nil
}

// current returns the value of n as it is now.
func (w *work) current(n *node) any {
	switch {
	case n.hasRepl:
		return n.repl
	case !n.changed:
		return n.val
	}
	switch c := n.val.(type) {
	case map[string]any:
		out := make(map[string]any, n.length())
		for k, v := range c {
			kid := n.kids[step{key: k}]
			switch {
			case kid == nil:
				out[k] = v
			case !kid.gone:
				out[k] = w.current(kid)
			}
		}
		return out
	case []any:
		out := make([]any, 0, n.length())
		for i, v := range c {
			kid := n.kids[step{index: i, isIndex: true}]
			switch {
			case kid == nil:
				out = append(out, v)
			case !kid.gone:
				out = append(out, w.current(kid))
			}
		}
		return out
	}
	return n.val
}

// content returns the window's content as it is now.
func (w *work) content() any {
	return w.current(w.root)
}

// tokens returns the estimate of the content as it is now, as
// jsonpath.EstimateTokens computes it: a string's own runes, or the runes
// of any other value's JSON text, divided by four and rounded up.
func (w *work) tokens() int64 {
	v := w.root.val
	if w.root.hasRepl {
		v = w.root.repl
	}
	if s, ok := v.(string); ok {
		return int64((utf8.RuneCountInString(s) + 3) / 4)
	}
	return int64((w.size(w.root) + 3) / 4)
}

// children returns the steps to the children of n that are still there,
// in document order: object members by key, array elements by index.
func (n *node) children() []step {
	if n.gone || n.hasRepl {
		return nil
	}
	var out []step
	switch c := n.val.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			s := step{key: k}
			if kid := n.kids[s]; kid == nil || !kid.gone {
				out = append(out, s)
			}
		}
	case []any:
		for i := range c {
			s := step{index: i, isIndex: true}
			if kid := n.kids[s]; kid == nil || !kid.gone {
				out = append(out, s)
			}
		}
	}
	return out
}

// exclude removes the locations path selects in the input; those already
// removed are skipped. Removing the root leaves null.
func (w *work) exclude(path *jsonpath.Path) error {
	locs, err := locate(path, w.root.val)
	if err != nil {
		return fmt.Errorf("exclude: %w", err)
	}
	for _, l := range locs {
		n := w.node(l)
		switch {
		case n == nil || n.gone || n.hasRepl:
		case len(l) == 0:
			if err := w.replace(n, nil); err != nil {
				return err
			}
			n.gone = true // nothing is left to drop or summarize
			w.dropped = append(w.dropped, l)
		default:
			w.remove(n, l, true)
		}
	}
	return nil
}

// drop removes the location l, except what protect holds at, around or
// inside it and what keep holds strictly inside it: when such a location
// lies inside l, l's other parts are removed instead, so that the kept
// values stay at their places inside their containers (the root itself is
// never removed, only its parts). It reports whether anything was removed.
func (w *work) drop(l loc, protect, keep *trie) bool {
	if protect.covers(l) {
		return false
	}
	n := w.node(l)
	if n == nil || n.gone || n.hasRepl {
		return false
	}
	return w.dropIn(n, l, protect.at(l), keep.at(l))
}

func (w *work) dropIn(n *node, l loc, protect, keep *trie) bool {
	if n.parent != nil && !protect.hasKids() && !keep.hasKids() {
		w.remove(n, l, true)
		return true
	}
	removed := false
	for _, s := range n.children() {
		p, k := protect.kid(s), keep.kid(s)
		if p != nil && p.here || k != nil && k.here {
			continue
		}
		kl := l.child(s)
		kid := w.node(kl)
		if kid == nil || kid.hasRepl {
			continue
		}
		if w.dropIn(kid, kl, p, k) {
			removed = true
		}
	}
	return removed
}
