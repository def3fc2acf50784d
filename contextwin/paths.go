package contextwin

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonpath"
)

// This file finds where a path's matches are. jsonpath.Path.Get returns the
// values a path selects, but a context window must also remove them, so it
// needs their locations: the resolver below walks the document the way
// jsonpath's evaluator does (same segments, same order) and records where
// each match is. A filter segment is not re-implemented: the resolver asks
// jsonpath for the values the path selects up to and including the filter,
// and recognises them among the candidates it tests, in order (a filter's
// verdict depends only on the value tested and the root, so two identical
// values get the same verdict).

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

// String writes l in JSONPath syntax, as jsonpath.AppendMember and
// AppendIndex write steps: $.name, $['other name'], $[3].
func (l loc) String() string {
	b := make([]byte, 1, 32)
	b[0] = '$'
	for _, s := range l {
		if s.isIndex {
			b = jsonpath.AppendIndex(b, s.index)
		} else {
			b = jsonpath.AppendMember(b, s.key)
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

// segKind is what one segment of a path selects; see jsonpath.Path.
type segKind uint8

const (
	segName     segKind = iota // .name, ['name']
	segNames                   // ['a','b']
	segIndex                   // [0], [-1]
	segIndexes                 // [0,2]
	segWildcard                // .*, [*]
	segSlice                   // [1:5], [::2]
	segFilter                  // [?(...)]
)

// segment is one step of a path; deep marks a step after "..".
type segment struct {
	kind    segKind
	deep    bool
	names   []string
	indexes []int
	// slice bounds, with Python semantics
	start, end, stride int
	hasStart, hasEnd   bool
	// prefix is, for a filter, the path up to and including it: its Get
	// returns the values that pass the filter, in the order they are tested.
	prefix *jsonpath.Path
}

// pathParser reads the segments of a compiled path's source. The path has
// compiled already, so the syntax is known to be valid; anything unexpected
// is still an error rather than a panic.
type pathParser struct {
	src string
	pos int
}

func (p *pathParser) fail(msg string) error {
	return fmt.Errorf("path %s at offset %d: %s", p.src, p.pos, msg)
}

func (p *pathParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *pathParser) skipSpaces() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\n\r", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// parseSegments returns the segments of path, which must be rooted at "$".
func parseSegments(path *jsonpath.Path) ([]segment, error) {
	src := path.String()
	if path.IsContext() || path.Variable() != "" || !strings.HasPrefix(src, "$") {
		return nil, fmt.Errorf("path %s: a context path must be rooted at $ (the state's input)", src)
	}
	p := &pathParser{src: src, pos: 1}
	var segs []segment
	for p.pos < len(src) {
		var s segment
		var err error
		switch p.peek() {
		case '.':
			p.pos++
			if p.peek() == '.' {
				p.pos++
				s.deep = true
			}
			if p.peek() == '[' {
				err = p.bracket(&s)
			} else {
				err = p.dotted(&s)
			}
		case '[':
			err = p.bracket(&s)
		default:
			err = p.fail("unexpected " + strconv.QuoteRune(rune(p.peek())))
		}
		if err != nil {
			return nil, err
		}
		segs = append(segs, s)
	}
	return segs, nil
}

// dotted reads "*" or a name after "." or "..".
func (p *pathParser) dotted(s *segment) error {
	if p.peek() == '*' {
		p.pos++
		s.kind = segWildcard
		return nil
	}
	start := p.pos
	for p.pos < len(p.src) && strings.IndexByte(".[]()'\" \t\n\r", p.src[p.pos]) < 0 {
		p.pos++
	}
	if p.pos == start {
		return p.fail("a name must follow .")
	}
	s.kind, s.names = segName, []string{p.src[start:p.pos]}
	return nil
}

// bracket reads a bracketed segment, from "[" to "]".
func (p *pathParser) bracket(s *segment) error {
	open := p.pos
	p.pos++
	p.skipSpaces()
	var err error
	switch c := p.peek(); {
	case c == '?':
		return p.filter(s, open)
	case c == '*':
		p.pos++
		s.kind = segWildcard
	case c == '\'' || c == '"':
		err = p.names(s)
	case c == '-' || c == ':' || c >= '0' && c <= '9':
		err = p.indexes(s)
	default:
		return p.fail("unexpected bracket content")
	}
	if err != nil {
		return err
	}
	p.skipSpaces()
	if p.peek() != ']' {
		return p.fail("expected ]")
	}
	p.pos++
	return nil
}

// filter finds where the filter that opens at open ends: at the first "]"
// after which the segment compiles on its own (a shorter text that compiles
// would have ended the filter there too). The path up to that point is
// compiled for the resolver.
func (p *pathParser) filter(s *segment, open int) error {
	for end := open + 1; end < len(p.src); end++ {
		if p.src[end] != ']' {
			continue
		}
		if _, err := jsonpath.Compile("$" + p.src[open:end+1]); err != nil {
			continue
		}
		prefix, err := jsonpath.Compile(p.src[:end+1])
		if err != nil {
			return p.fail("the path up to the filter does not compile: " + err.Error())
		}
		s.kind, s.prefix = segFilter, prefix
		p.pos = end + 1
		return nil
	}
	return p.fail("unterminated filter")
}

// names reads one or more quoted names separated by commas.
func (p *pathParser) names(s *segment) error {
	for {
		name, err := p.quoted()
		if err != nil {
			return err
		}
		s.names = append(s.names, name)
		p.skipSpaces()
		if p.peek() != ',' {
			break
		}
		p.pos++
		p.skipSpaces()
	}
	s.kind = segNames
	if len(s.names) == 1 {
		s.kind = segName
	}
	return nil
}

// quoted reads a string in single or double quotes with JSON-style escapes
// (and \' for a single quote), as jsonpath does.
func (p *pathParser) quoted() (string, error) {
	quote := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == quote:
			p.pos++
			return b.String(), nil
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.src) {
			break
		}
		e := p.src[p.pos+1]
		p.pos += 2
		switch e {
		case '\'', '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.fail(`bad \u escape`)
			}
			if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(p.src[p.pos:], `\u`) {
				save := p.pos
				p.pos += 2
				if r2, ok := p.hex4(); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000
				} else {
					p.pos = save
				}
			}
			if !utf8.ValidRune(r) {
				return "", p.fail(`bad \u escape`)
			}
			b.WriteRune(r)
		default:
			return "", p.fail("unknown escape")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *pathParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	n, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(n), true
}

// indexes reads an index, a union of indexes or a slice.
func (p *pathParser) indexes(s *segment) error {
	first, hasFirst, err := p.integer()
	if err != nil {
		return err
	}
	p.skipSpaces()
	if p.peek() == ':' {
		p.pos++
		s.kind, s.start, s.hasStart, s.stride = segSlice, first, hasFirst, 1
		p.skipSpaces()
		if s.end, s.hasEnd, err = p.integer(); err != nil {
			return err
		}
		p.skipSpaces()
		if p.peek() == ':' {
			p.pos++
			p.skipSpaces()
			stride, ok, err := p.integer()
			if err != nil {
				return err
			}
			if ok {
				s.stride = stride
			}
		}
		if s.stride == 0 {
			return p.fail("a slice step cannot be 0")
		}
		return nil
	}
	if !hasFirst {
		return p.fail("expected an index")
	}
	s.indexes = []int{first}
	for p.peek() == ',' {
		p.pos++
		p.skipSpaces()
		n, ok, err := p.integer()
		if err != nil {
			return err
		}
		if !ok {
			return p.fail("expected an index after ,")
		}
		s.indexes = append(s.indexes, n)
		p.skipSpaces()
	}
	s.kind = segIndexes
	if len(s.indexes) == 1 {
		s.kind = segIndex
	}
	return nil
}

// integer reads an optional -?[0-9]+.
func (p *pathParser) integer() (int, bool, error) {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == start {
		return 0, false, nil
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil {
		return 0, false, p.fail("bad integer " + p.src[start:p.pos])
	}
	return n, true, nil
}

// resolver collects the locations of a path's matches in doc.
type resolver struct {
	segs []segment
	// passed and next hold, per filter segment, the values that pass it in
	// the order they are tested, and how many of them were met so far.
	passed [][]any
	next   []int
	out    []loc
}

// locate returns the locations path selects in doc, in the order
// jsonpath.Path.Get returns their values (a location may repeat, as in
// $.a[0,0]). A path that selects nothing gives none; that is not an error.
func locate(path *jsonpath.Path, doc any) ([]loc, error) {
	segs, err := parseSegments(path)
	if err != nil {
		return nil, err
	}
	r := &resolver{segs: segs, passed: make([][]any, len(segs)), next: make([]int, len(segs))}
	for i, s := range segs {
		if s.kind != segFilter {
			continue
		}
		got, err := s.prefix.Get(doc, nil)
		if err != nil {
			return nil, fmt.Errorf("path %s: %w", path, err)
		}
		r.passed[i], _ = got.([]any)
	}
	r.collect(0, doc, loc{})
	return r.out, nil
}

// collect applies segments i and after to cur, found at at.
func (r *resolver) collect(i int, cur any, at loc) {
	if i == len(r.segs) {
		r.out = append(r.out, at)
		return
	}
	if r.segs[i].deep {
		r.scan(i, cur, at)
		return
	}
	r.step(i, cur, at)
}

// step applies segment i (not deep) to cur.
func (r *resolver) step(i int, cur any, at loc) {
	s := &r.segs[i]
	switch s.kind {
	case segName, segNames:
		if m, ok := cur.(map[string]any); ok {
			for _, name := range s.names {
				if v, ok := m[name]; ok {
					r.collect(i+1, v, at.child(step{key: name}))
				}
			}
		}
	case segIndex, segIndexes:
		if a, ok := cur.([]any); ok {
			for _, j := range s.indexes {
				if j < 0 {
					j += len(a)
				}
				if j >= 0 && j < len(a) {
					r.collect(i+1, a[j], at.child(step{index: j, isIndex: true}))
				}
			}
		}
	case segWildcard:
		forEachChild(cur, at, func(v any, l loc) { r.collect(i+1, v, l) })
	case segSlice:
		if a, ok := cur.([]any); ok {
			start, end, stride := s.bounds(len(a))
			for j := start; stride > 0 && j < end || stride < 0 && j > end; j += stride {
				r.collect(i+1, a[j], at.child(step{index: j, isIndex: true}))
			}
		}
	case segFilter:
		switch c := cur.(type) {
		case []any:
			for j, v := range c {
				if r.passes(i, v) {
					r.collect(i+1, v, at.child(step{index: j, isIndex: true}))
				}
			}
		case map[string]any:
			// Jayway applies a filter on an object to the object itself.
			if r.passes(i, c) {
				r.collect(i+1, c, at)
			}
		}
	}
}

// scan applies a deep segment to cur and to every value inside it, in
// pre-order; a deep filter tests every value inside cur.
func (r *resolver) scan(i int, cur any, at loc) {
	if r.segs[i].kind == segFilter {
		forEachChild(cur, at, func(v any, l loc) {
			if r.passes(i, v) {
				r.collect(i+1, v, l)
			}
			r.scan(i, v, l)
		})
		return
	}
	r.step(i, cur, at)
	forEachChild(cur, at, func(v any, l loc) { r.scan(i, v, l) })
}

// passes reports whether v passes filter segment i: whether it is the next
// of the values jsonpath found to pass it.
func (r *resolver) passes(i int, v any) bool {
	if n := r.next[i]; n < len(r.passed[i]) && same(v, r.passed[i][n]) {
		r.next[i]++
		return true
	}
	return false
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

// bounds resolves a slice against an array of length n, as Python does.
func (s *segment) bounds(n int) (start, end, stride int) {
	stride = s.stride
	clamp := func(i, lo, hi int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, lo), hi)
	}
	if stride > 0 {
		start, end = 0, n
		if s.hasStart {
			start = clamp(s.start, 0, n)
		}
		if s.hasEnd {
			end = clamp(s.end, 0, n)
		}
		return start, end, stride
	}
	start, end = n-1, -1
	if s.hasStart {
		start = clamp(s.start, -1, n-1)
	}
	if s.hasEnd {
		end = clamp(s.end, -1, n-1)
	}
	return start, end, stride
}

// same reports whether a and b are the same JSON text: the same value, or
// values no filter can tell apart (same types, same number spelling, same
// members). Containers that are one and the same are recognised at once.
func same(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if len(x) > 0 && &x[0] == &y[0] {
			return true
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !same(xv, yv) {
				return false
			}
		}
		return true
	}
	if a == nil || b == nil {
		return a == b
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
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
