package jsonpath

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonvalue"
)

// segKind is what one step of a path selects.
type segKind uint8

const (
	segName     segKind = iota // .name, ['name']
	segIndex                   // [0], [-1]
	segNames                   // ['a','b']
	segIndexes                 // [0,2]
	segWildcard                // .*, [*]
	segSlice                   // [1:5], [::2]
	segFilter                  // [?(...)]
)

// String names the kind of segment for error messages.
func (k segKind) String() string {
	switch k {
	case segName:
		return "a name"
	case segIndex:
		return "an index"
	case segNames:
		return "a union of names"
	case segIndexes:
		return "a union of indexes"
	case segWildcard:
		return "a wildcard"
	case segSlice:
		return "a slice"
	}
	return "a filter"
}

// segment is one step of a path. deep marks a step preceded by "..", which
// applies to the current value and all its descendants.
type segment struct {
	kind    segKind
	deep    bool
	name    string
	index   int
	names   []string
	indexes []int
	slice   sliceSpec
	filter  filterNode
	offset  int // where the segment starts in the source, for errors
}

// sliceSpec is [start:end:step] with Python semantics.
type sliceSpec struct {
	start, end, step int
	hasStart, hasEnd bool
}

// fragment returns a name or index segment as Jayway prints it in a
// normalized path; only definite paths are ever printed.
func (s *segment) fragment() string {
	if s.kind == segIndex {
		return "[" + strconv.Itoa(s.index) + "]"
	}
	return "['" + s.name + "']"
}

// maxIndex bounds indexes and slice bounds: Jayway reads them as Java ints.
const maxIndex = 1<<31 - 1

// maxNesting bounds the nesting of filters and parentheses, so that no input
// can exhaust the stack.
const maxNesting = 64

// parser reads a path, or a filter inside one, from src.
type parser struct {
	src   string
	pos   int
	depth int
}

func (p *parser) fail(msg string) error {
	return &SyntaxError{Expr: p.src, Offset: p.pos, Msg: msg}
}

func (p *parser) failAt(offset int, msg string) error {
	return &SyntaxError{Expr: p.src, Offset: offset, Msg: msg}
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) skipSpaces() {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// parsePath parses a whole top-level path.
func (p *parser) parsePath() (*Path, error) {
	path := &Path{src: p.src}
	if !strings.HasPrefix(p.src, "$") {
		return nil, p.fail("a path must start with $")
	}
	p.pos = 1
	switch {
	case p.peek() == '$':
		path.root = rootContext
		p.pos++
	case isLetter(p.peek()):
		start := p.pos
		for !p.eof() && (isLetter(p.peek()) || isDigit(p.peek())) {
			p.pos++
		}
		path.root = rootVariable
		path.variable = p.src[start:p.pos]
	}
	segs, err := p.parseSegments(false)
	if err != nil {
		return nil, err
	}
	if !p.eof() {
		return nil, p.fail("unexpected " + quoteChar(p.src[p.pos:]))
	}
	path.segs = segs
	path.definite = definite(segs)
	if !path.definite {
		path.query = compileQuery(segs)
	}
	if path.definite {
		path.steps = make([]step, len(segs))
		for i, s := range segs {
			path.steps[i] = step{name: s.name, index: s.index, isIndex: s.kind == segIndex}
		}
	}
	return path, nil
}

func definite(segs []segment) bool {
	for _, s := range segs {
		if s.deep || s.kind != segName && s.kind != segIndex {
			return false
		}
	}
	return true
}

// parseSegments reads segments while the next character starts one. At the
// top level anything else is left for the caller to reject; inside a filter
// it ends the operand.
func (p *parser) parseSegments(inFilter bool) ([]segment, error) {
	var segs []segment
	for !p.eof() {
		start := p.pos
		var s segment
		var err error
		switch p.peek() {
		case '.':
			p.pos++
			if p.peek() == '.' {
				p.pos++
				if p.peek() == '[' {
					s, err = p.parseBracket()
				} else {
					s, err = p.parseDotted(inFilter)
				}
				s.deep = true
			} else if p.peek() == '[' {
				// AWS (Jayway) reads any bracket after a single dot
				// as if the dot were not there: $.a.[0] is $.a[0].
				s, err = p.parseBracket()
			} else {
				s, err = p.parseDotted(inFilter)
			}
		case '[':
			s, err = p.parseBracket()
		default:
			return segs, nil
		}
		if err != nil {
			return nil, err
		}
		s.offset = start
		segs = append(segs, s)
	}
	return segs, nil
}

// parseDotted reads what follows "." or "..": "*" or a name. A name runs to
// the next character that cannot be part of one, as in Jayway, so that
// "$.detail-type" works.
func (p *parser) parseDotted(inFilter bool) (segment, error) {
	if p.peek() == '*' {
		p.pos++
		return segment{kind: segWildcard}, nil
	}
	start := p.pos
	for !p.eof() && isNameByte(p.src[p.pos], inFilter) {
		p.pos++
	}
	if p.pos == start {
		if p.eof() {
			return segment{}, p.fail("a name must follow .")
		}
		return segment{}, p.fail("a name must follow ., not " + quoteChar(p.src[p.pos:]))
	}
	name := p.src[start:p.pos]
	if !utf8.ValidString(name) {
		return segment{}, p.failAt(start, "a name must be valid UTF-8")
	}
	return segment{kind: segName, name: name}, nil
}

// isNameByte reports whether c may be part of a dotted name. Bytes of
// multi-byte UTF-8 characters always may.
func isNameByte(c byte, inFilter bool) bool {
	switch c {
	case '.', '[', ']', '(', ')', '\'', '"', ' ', '\t', '\n', '\r':
		return false
	case '=', '!', '<', '>', '~', '&', '|', ',':
		return !inFilter
	}
	return true
}

// parseBracket reads a bracketed segment, from "[" to "]".
func (p *parser) parseBracket() (segment, error) {
	p.pos++ // [
	p.skipSpaces()
	var s segment
	var err error
	switch c := p.peek(); {
	case c == '?':
		s, err = p.parseFilterSegment()
	case c == '*':
		p.pos++
		s = segment{kind: segWildcard}
	case c == '\'' || c == '"':
		s, err = p.parseNames()
	case c == '-' || c == ':' || isDigit(c):
		s, err = p.parseIndexes()
	case p.eof():
		return segment{}, p.fail("unterminated bracket")
	default:
		return segment{}, p.fail("unexpected " + quoteChar(p.src[p.pos:]) + " in brackets")
	}
	if err != nil {
		return segment{}, err
	}
	p.skipSpaces()
	if p.peek() != ']' {
		if p.eof() {
			return segment{}, p.fail("unterminated bracket")
		}
		return segment{}, p.fail("expected ] but found " + quoteChar(p.src[p.pos:]))
	}
	p.pos++
	return s, nil
}

// parseNames reads one or more quoted names separated by commas.
func (p *parser) parseNames() (segment, error) {
	var names []string
	for {
		name, err := p.parseQuoted()
		if err != nil {
			return segment{}, err
		}
		names = append(names, name)
		p.skipSpaces()
		if p.peek() != ',' {
			break
		}
		p.pos++
		p.skipSpaces()
		if c := p.peek(); c != '\'' && c != '"' {
			return segment{}, p.fail("expected a quoted name after ,")
		}
	}
	if len(names) == 1 {
		return segment{kind: segName, name: names[0]}, nil
	}
	return segment{kind: segNames, names: names}, nil
}

// parseQuoted reads a string in single or double quotes, with JSON-style
// escapes (and \' for a single quote).
func (p *parser) parseQuoted() (string, error) {
	name, next, msg, at := ReadQuoted(p.src, p.pos)
	if msg != "" {
		return "", p.failAt(at, msg)
	}
	p.pos = next
	return name, nil
}

// ReadQuoted reads the quoted name that starts at src[pos] (a ' or a "),
// with JSON-style escapes and \' as paths write them. It returns the name
// and the position after its closing quote; or, when it does not read, a
// message and the position the problem starts at.
func ReadQuoted(src string, pos int) (name string, next int, msg string, at int) {
	quote := src[pos]
	start := pos
	pos++
	var b strings.Builder
	for pos < len(src) {
		c := src[pos]
		switch {
		case c == quote:
			s := b.String()
			if !utf8.ValidString(s) {
				return "", 0, "a string must be valid UTF-8", start
			}
			return s, pos + 1, "", 0
		case c == '\\':
			var msg string
			if pos, msg = readEscape(src, pos, &b); msg != "" {
				return "", 0, msg, pos
			}
		default:
			b.WriteByte(c)
			pos++
		}
	}
	return "", 0, "unterminated string", start
}

// readEscape reads the backslash escape at src[pos] into b and returns the
// position after it, or the escape's position and what is wrong with it.
func readEscape(src string, pos int, b *strings.Builder) (int, string) {
	start := pos
	pos++ // backslash
	if pos >= len(src) {
		return start, "unterminated escape"
	}
	c := src[pos]
	pos++
	switch c {
	case '\'', '"', '\\', '/':
		b.WriteByte(c)
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
		r, ok := jsonvalue.Hex4(src, pos)
		if !ok {
			return start, `\u must be followed by 4 hex digits`
		}
		pos += 4
		if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(src[pos:], `\u`) {
			if r2, ok := jsonvalue.Hex4(src, pos+2); ok && r2 >= 0xDC00 && r2 < 0xE000 {
				b.WriteRune((r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000)
				return pos + 6, ""
			}
		}
		if r >= 0xD800 && r < 0xE000 {
			return start, "unpaired surrogate in \\u escape"
		}
		b.WriteRune(r)
	default:
		return start, "unknown escape \\" + string(rune(c))
	}
	return pos, ""
}

// parseIndexes reads an index, a union of indexes or a slice.
func (p *parser) parseIndexes() (segment, error) {
	first, hasFirst, err := p.parseInt()
	if err != nil {
		return segment{}, err
	}
	p.skipSpaces()
	if p.peek() == ':' {
		return p.parseSlice(first, hasFirst)
	}
	if !hasFirst {
		return segment{}, p.fail("expected an index")
	}
	indexes := []int{first}
	for p.peek() == ',' {
		p.pos++
		p.skipSpaces()
		n, ok, err := p.parseInt()
		if err != nil {
			return segment{}, err
		}
		if !ok {
			return segment{}, p.fail("expected an index after ,")
		}
		indexes = append(indexes, n)
		p.skipSpaces()
	}
	if len(indexes) == 1 {
		return segment{kind: segIndex, index: first}, nil
	}
	return segment{kind: segIndexes, indexes: indexes}, nil
}

// parseSlice reads the rest of [start:end:step] from the first colon.
func (p *parser) parseSlice(start int, hasStart bool) (segment, error) {
	sl := sliceSpec{start: start, hasStart: hasStart, step: 1}
	p.pos++ // :
	p.skipSpaces()
	var err error
	if sl.end, sl.hasEnd, err = p.parseInt(); err != nil {
		return segment{}, err
	}
	p.skipSpaces()
	if p.peek() == ':' {
		p.pos++
		p.skipSpaces()
		at := p.pos
		step, hasStep, err := p.parseInt()
		if err != nil {
			return segment{}, err
		}
		if hasStep {
			if step == 0 {
				return segment{}, p.failAt(at, "a slice step cannot be 0")
			}
			sl.step = step
		}
	}
	return segment{kind: segSlice, slice: sl}, nil
}

// parseInt reads an optional integer: -?[0-9]+.
func (p *parser) parseInt() (int, bool, error) {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	digits := p.pos
	for !p.eof() && isDigit(p.peek()) {
		p.pos++
	}
	if p.pos == digits {
		if p.pos > start {
			return 0, false, p.failAt(start, "- must be followed by digits")
		}
		return 0, false, nil
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil || n > maxIndex || n < -maxIndex {
		return 0, false, p.failAt(start, "index "+p.src[start:p.pos]+" is out of range")
	}
	return n, true, nil
}

// parseFilterSegment reads ?( expression ).
func (p *parser) parseFilterSegment() (segment, error) {
	p.pos++ // ?
	p.skipSpaces()
	if p.peek() != '(' {
		return segment{}, p.fail("expected ( after ?")
	}
	p.pos++
	f, err := p.parseOr()
	if err != nil {
		return segment{}, err
	}
	p.skipSpaces()
	if p.peek() != ')' {
		if p.eof() {
			return segment{}, p.fail("unterminated filter")
		}
		return segment{}, p.fail("expected ) but found " + quoteChar(p.src[p.pos:]))
	}
	p.pos++
	return segment{kind: segFilter, filter: f}, nil
}

// quoteChar quotes the first character of s for an error message.
func quoteChar(s string) string {
	r, _ := utf8.DecodeRuneInString(s)
	return strconv.QuoteRune(r)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
