package contextwin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds locations: a context window removes what its paths select,
// so it works with where the matches are (jsonpath.Path.Locate), kept in
// tries to ask "is this location, or one around it, in the set?".

// step is one member name or array index of a location.
type step struct {
	key     string
	index   int
	isIndex bool
}

// loc is the location of a value inside a document: the steps from the root.
// The empty loc is the root.
type loc []step

// child returns l extended by s, never sharing l's spare capacity.
func (l loc) child(s step) loc {
	out := make(loc, len(l)+1)
	copy(out, l)
	out[len(l)] = s
	return out
}

// String writes l in JSONPath syntax, as jsonvalue.AppendMember and
// AppendIndex write steps: $.name, $['other name'], $[3].
func (l loc) String() string {
	b := make([]byte, 1, 32)
	b[0] = '$'
	for _, s := range l {
		if s.isIndex {
			b = jsonvalue.AppendIndex(b, s.index)
		} else {
			b = jsonvalue.AppendMember(b, s.key)
		}
	}
	return string(b)
}

// compareLoc orders locations in document order: object members by key
// (byte order), array elements by index, a location before those inside it.
func compareLoc(a, b loc) int {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if x.isIndex && y.isIndex {
			if c := x.index - y.index; c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(x.key, y.key); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// trie is a set of locations, indexed so that "is this location, or one
// around it, in the set" and "is anything inside this location in the set"
// are cheap.
type trie struct {
	here bool
	kids map[step]*trie
}

func (t *trie) add(l loc) {
	n := t
	for _, s := range l {
		if n.kids == nil {
			n.kids = make(map[step]*trie)
		}
		next := n.kids[s]
		if next == nil {
			next = &trie{}
			n.kids[s] = next
		}
		n = next
	}
	n.here = true
}

// kid returns the subtree under s; nil when t is nil or has none.
func (t *trie) kid(s step) *trie {
	if t == nil {
		return nil
	}
	return t.kids[s]
}

// covers reports whether l or a location around it is in the set.
func (t *trie) covers(l loc) bool {
	n := t
	for _, s := range l {
		if n == nil {
			return false
		}
		if n.here {
			return true
		}
		n = n.kids[s]
	}
	return n != nil && n.here
}

// holdsInside reports whether a location strictly inside l is in the set.
func (t *trie) holdsInside(l loc) bool {
	n := t
	for _, s := range l {
		if n == nil {
			return false
		}
		n = n.kids[s]
	}
	return n != nil && len(n.kids) > 0
}

// locate returns the locations path selects in doc, in the order
// jsonpath.Path.Get returns their values (a location may repeat, as in
// $.a[0,0]). A path that selects nothing gives none; that is not an error.
func locate(path *jsonpath.Path, doc any) ([]loc, error) {
	found, err := path.Locate(doc)
	if err != nil {
		return nil, fmt.Errorf("path %s: a context path must be rooted at $ (the state's input): %w", path, err)
	}
	out := make([]loc, len(found))
	for i, l := range found {
		out[i] = make(loc, len(l))
		for j, st := range l {
			out[i][j] = step{key: st.Key, index: st.Index, isIndex: st.IsIndex}
		}
	}
	return out, nil
}

// forEachChild calls f with each element of an array, or each member of an
// object in key order, and its location.
func forEachChild(cur any, at loc, f func(any, loc)) {
	switch c := cur.(type) {
	case []any:
		for j, v := range c {
			f(v, at.child(step{index: j, isIndex: true}))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			f(c[k], at.child(step{key: k}))
		}
	}
}

// at returns the subtree of t at l, whatever t holds on the way; nil when
// there is none.
func (t *trie) at(l loc) *trie {
	n := t
	for _, s := range l {
		n = n.kid(s)
	}
	return n
}

// hasKids reports whether t holds a location below its own.
func (t *trie) hasKids() bool {
	return t != nil && len(t.kids) > 0
}
