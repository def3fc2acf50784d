package governance

import (
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// A path here is a JSON path made of names and indexes only, rooted at "$":
// the paths of rules, of write-policy patterns (which may also hold "*" for
// one object key and "[*]" for one array index) and of written values.

type segKind uint8

const (
	segKey      segKind = iota // .name or ['name']
	segIndex                   // [2]
	segAnyKey                  // .* (patterns only)
	segAnyIndex                // [*] (patterns only)
)

type segment struct {
	kind  segKind
	key   string
	index int
}

func keySeg(k string) segment { return segment{kind: segKey, key: k} }
func indexSeg(i int) segment  { return segment{kind: segIndex, index: i} }
func (s segment) equal(o segment) bool {
	return s.kind == o.kind && s.key == o.key && s.index == o.index
}

// matches reports whether the pattern segment s matches the concrete
// segment c (a key or an index).
func (s segment) matches(c segment) bool {
	switch s.kind {
	case segAnyKey:
		return c.kind == segKey
	case segAnyIndex:
		return c.kind == segIndex
	}
	return s.equal(c)
}

// compare orders concrete segments: keys by byte order, indexes by value,
// keys before indexes (siblings are never of both kinds in one document).
func (s segment) compare(o segment) int {
	switch {
	case s.kind != o.kind:
		if s.kind < o.kind {
			return -1
		}
		return 1
	case s.kind == segKey:
		return strings.Compare(s.key, o.key)
	case s.index < o.index:
		return -1
	case s.index > o.index:
		return 1
	}
	return 0
}

// comparePaths orders paths segment by segment; a path sorts before the
// paths below it.
func comparePaths(a, b []segment) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := a[i].compare(b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// parsePath parses a rule path (wildcards false) or a write-policy pattern
// (wildcards true). It first lets jsonpath compile the text, so that both
// accept the same syntax, then keeps only what a plain walk can follow.
// The message says why a path is refused.
func parsePath(src string, wildcards bool) ([]segment, string) {
	if !strings.HasPrefix(src, "$") {
		return nil, "must start with $"
	}
	if strings.HasPrefix(src, "$$") {
		return nil, "must be rooted at $, not at the context object $$"
	}
	if len(src) > 1 && src[1] != '.' && src[1] != '[' {
		return nil, "must be rooted at $, not at a variable"
	}
	if _, err := jsonpath.Compile(src); err != nil {
		return nil, err.Error()
	}
	p := pathParser{src: src, pos: 1, wildcards: wildcards}
	segs, msg := p.parse()
	if msg != "" {
		return nil, msg
	}
	if len(segs) == 0 {
		return nil, "must name a value below $, like $.status"
	}
	return segs, ""
}

type pathParser struct {
	src       string
	pos       int
	wildcards bool
}

const onlyNames = "names and indexes only"

func (p *pathParser) only() string {
	if p.wildcards {
		return "names, indexes, * and [*] only"
	}
	return onlyNames
}

func (p *pathParser) inBrackets() string {
	if p.wildcards {
		return "only a quoted name, an index or * may stand in brackets (" + p.only() + ")"
	}
	return "only a quoted name or an index may stand in brackets (" + p.only() + ")"
}

func (p *pathParser) parse() ([]segment, string) {
	var segs []segment
	for p.pos < len(p.src) {
		var s segment
		var msg string
		switch p.src[p.pos] {
		case '.':
			p.pos++
			s, msg = p.dotted()
		case '[':
			p.pos++
			s, msg = p.bracket()
		default:
			msg = "unexpected " + strconv.Quote(p.src[p.pos:p.pos+1]) + " at offset " + strconv.Itoa(p.pos)
		}
		if msg != "" {
			return nil, msg
		}
		segs = append(segs, s)
	}
	return segs, ""
}

func (p *pathParser) wildcard(s segment) (segment, string) {
	if !p.wildcards {
		return segment{}, "wildcards are not allowed in a rule path (" + onlyNames + ")"
	}
	return s, ""
}

func (p *pathParser) dotted() (segment, string) {
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		return segment{}, "deep scan (..) is not allowed (" + p.only() + ")"
	}
	if p.pos < len(p.src) && p.src[p.pos] == '*' {
		p.pos++
		return p.wildcard(segment{kind: segAnyKey})
	}
	if p.pos < len(p.src) && p.src[p.pos] == '[' {
		// A dot before a bracket is ignored, as in AWS's JSONPath:
		// $.a.[0] is $.a[0].
		p.pos++
		return p.bracket()
	}
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return segment{}, "a name must follow . at offset " + strconv.Itoa(start)
	}
	return keySeg(p.src[start:p.pos]), ""
}

// isNameByte reports whether c may be part of a dotted name, as in
// jsonpath: a name runs to the next . [ ] ( ) quote or space.
func isNameByte(c byte) bool {
	switch c {
	case '.', '[', ']', '(', ')', '\'', '"', ' ', '\t', '\n', '\r':
		return false
	}
	return true
}

func (p *pathParser) skipSpaces() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\n\r", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *pathParser) bracket() (segment, string) {
	p.skipSpaces()
	if p.pos >= len(p.src) {
		return segment{}, "unterminated bracket"
	}
	var s segment
	var msg string
	switch c := p.src[p.pos]; {
	case c == '*':
		p.pos++
		s, msg = p.wildcard(segment{kind: segAnyIndex})
	case c == '\'' || c == '"':
		var k string
		k, msg = p.quoted()
		s = keySeg(k)
	case c == '-':
		return segment{}, "negative indexes are not allowed (" + p.only() + ")"
	case '0' <= c && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		if err != nil || (p.pos-start > 1 && p.src[start] == '0') {
			return segment{}, "index " + p.src[start:p.pos] + " is not a plain non-negative integer"
		}
		s = indexSeg(n)
	default:
		return segment{}, p.inBrackets()
	}
	if msg != "" {
		return segment{}, msg
	}
	p.skipSpaces()
	if p.pos >= len(p.src) || p.src[p.pos] != ']' {
		return segment{}, p.inBrackets()
	}
	p.pos++
	return s, ""
}

// quoted reads a name in single or double quotes with JSON escapes (and
// \'), as jsonpath does.
func (p *pathParser) quoted() (string, string) {
	name, next, msg, _ := jsonpath.ReadQuoted(p.src, p.pos)
	if msg != "" {
		return "", msg
	}
	p.pos = next
	return name, ""
}

// formatPath writes a path as $, then .key (or ['key'] for a key that is
// not a plain identifier), [i], .* and [*], the way jsonpath writes the
// paths of its errors.
func formatPath(segs []segment) string {
	return string(appendPath(make([]byte, 0, 32), segs))
}

func appendPath(b []byte, segs []segment) []byte {
	b = append(b, '$')
	for _, s := range segs {
		b = appendSeg(b, s)
	}
	return b
}

func appendSeg(b []byte, s segment) []byte {
	switch s.kind {
	case segIndex:
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(s.index), 10)
		return append(b, ']')
	case segAnyKey:
		return append(b, ".*"...)
	case segAnyIndex:
		return append(b, "[*]"...)
	}
	return jsonvalue.AppendMember(b, s.key)
}

// lookup follows a rule path (keys and indexes) through doc.
func lookup(doc any, segs []segment) (any, bool) {
	v := doc
	for _, s := range segs {
		switch s.kind {
		case segKey:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[s.key]; !ok {
				return nil, false
			}
		case segIndex:
			a, ok := v.([]any)
			if !ok || s.index >= len(a) {
				return nil, false
			}
			v = a[s.index]
		default:
			return nil, false
		}
	}
	return v, true
}
