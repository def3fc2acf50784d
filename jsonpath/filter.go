package jsonpath

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// A filter [?( … )] is a boolean expression over the current value "@" and
// the root "$":
//
//	or      = and { "||" and }
//	and     = unary { "&&" unary }
//	unary   = "!" unary | "(" or ")" | compare
//	compare = operand [ op operand ]          (no op: an existence test)
//	op      = "==" | "!=" | "<" | "<=" | ">" | ">=" | "=~" | "in" | "nin"
//	operand = @path | $path | number | 'string' | "string" | true | false
//	        | null | [ literal, … ] | /regex/flags (right of =~ only)
//
// Comparisons never fail: numbers compare by value, strings as strings, and
// values of different types (or a missing value) are simply not equal and
// not ordered. "!=" is the negation of "==", "nin" of "in", as in Jayway.

// filterNode is a node of a compiled filter expression.
type filterNode interface {
	eval(st *walkState, cur any) bool
}

type orNode struct{ left, right filterNode }

func (n *orNode) eval(st *walkState, cur any) bool {
	return n.left.eval(st, cur) || n.right.eval(st, cur)
}

type andNode struct{ left, right filterNode }

func (n *andNode) eval(st *walkState, cur any) bool {
	return n.left.eval(st, cur) && n.right.eval(st, cur)
}

type notNode struct{ x filterNode }

func (n *notNode) eval(st *walkState, cur any) bool { return !n.x.eval(st, cur) }

// existsNode is a path on its own: true when the path selects something.
type existsNode struct{ path *operand }

func (n *existsNode) eval(st *walkState, cur any) bool {
	_, ok := n.path.value(st, cur)
	return ok
}

type compareNode struct {
	op          string
	left, right *operand
	re          *regexp.Regexp // for =~
}

func (n *compareNode) eval(st *walkState, cur any) bool {
	l, lok := n.left.value(st, cur)
	switch n.op {
	case "=~":
		return lok && n.re.MatchString(regexInput(l))
	case "!=", "nin":
		return !n.positive(st, cur, l, lok)
	}
	return n.positive(st, cur, l, lok)
}

// positive evaluates ==, in and the orderings (!= and nin are their
// negations).
func (n *compareNode) positive(st *walkState, cur any, l any, lok bool) bool {
	r, rok := n.right.value(st, cur)
	if !lok || !rok {
		return false
	}
	switch n.op {
	case "==", "!=":
		return jsonvalue.Equal(l, r)
	case "in", "nin":
		list, ok := r.([]any)
		if !ok {
			return false
		}
		for _, v := range list {
			if jsonvalue.Equal(l, v) {
				return true
			}
		}
		return false
	}
	c, ok := order(l, r)
	if !ok {
		return false
	}
	switch n.op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0 // >=
}

// order compares two numbers or two strings; other pairs are not ordered.
func order(a, b any) (int, bool) {
	switch x := a.(type) {
	case json.Number:
		if y, ok := b.(json.Number); ok {
			return jsonvalue.CompareNumbers(x, y), true
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	}
	return 0, false
}

// regexInput is the text a regular expression is matched against: Jayway
// matches strings, and numbers and booleans by their text.
func regexInput(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return ""
}

// operand is one side of a comparison: a path relative to "@" or "$", or a
// literal.
type operand struct {
	fromRoot bool // $ rather than @
	segs     []segment
	definite bool
	query    query // segs for jp, when not definite
	isPath   bool
	literal  any
	regex    bool // regex literal; only its compareNode uses it
}

// value returns the operand's value and whether it exists. An indefinite
// path yields the list of its matches, which exists when it is not empty.
func (o *operand) value(st *walkState, cur any) (any, bool) {
	if !o.isPath {
		return o.literal, true
	}
	start := cur
	if o.fromRoot {
		start = st.root
	}
	if o.definite {
		return walkDefinite(o.segs, start)
	}
	out, _ := collect(o.query, st.root, start, st.b, 0)
	return out, len(out) > 0
}

// walkDefinite follows names and single indexes, reporting whether the
// value exists.
func walkDefinite(segs []segment, cur any) (any, bool) {
	for i := range segs {
		s := &segs[i]
		if s.kind == segName {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s.name]; !ok {
				return nil, false
			}
			continue
		}
		a, ok := cur.([]any)
		if !ok {
			return nil, false
		}
		i, ok := index(a, s.index)
		if !ok {
			return nil, false
		}
		cur = a[i]
	}
	return cur, true
}

// parseOr reads an "||" chain.
func (p *parser) parseOr() (filterNode, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNesting {
		return nil, p.fail("filter nested too deeply")
	}
	left, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpaces()
		if !strings.HasPrefix(p.src[p.pos:], "||") {
			return left, nil
		}
		p.pos += 2
		right, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		left = &orNode{left, right}
	}
}

// parseAnd reads an "&&" chain.
func (p *parser) parseAnd() (filterNode, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpaces()
		if !strings.HasPrefix(p.src[p.pos:], "&&") {
			return left, nil
		}
		p.pos += 2
		right, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		left = &andNode{left, right}
	}
}

// parseUnary reads a negation, a parenthesized expression or a comparison.
func (p *parser) parseUnary() (filterNode, error) {
	p.skipSpaces()
	switch p.peek() {
	case '!':
		p.pos++
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxNesting {
			return nil, p.fail("filter nested too deeply")
		}
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &notNode{x}, nil
	case '(':
		p.pos++
		x, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		p.skipSpaces()
		if p.peek() != ')' {
			return nil, p.fail("expected )")
		}
		p.pos++
		return x, nil
	}
	return p.parseCompare()
}

// filterOps lists the comparison operators, longest first.
var filterOps = []string{"==", "!=", "<=", ">=", "=~", "<", ">", "nin", "in"}

// parseCompare reads operand [op operand].
func (p *parser) parseCompare() (filterNode, error) {
	start := p.pos
	left, err := p.parseOperand(false)
	if err != nil {
		return nil, err
	}
	p.skipSpaces()
	op := ""
	for _, o := range filterOps {
		if strings.HasPrefix(p.src[p.pos:], o) {
			if (o == "in" || o == "nin") && p.pos+len(o) < len(p.src) && isLetter(p.src[p.pos+len(o)]) {
				continue
			}
			op = o
			break
		}
	}
	if op == "" {
		if !left.isPath {
			return nil, p.failAt(start, "a literal on its own is not a condition")
		}
		return &existsNode{left}, nil
	}
	p.pos += len(op)
	p.skipSpaces()
	right, err := p.parseOperand(op == "=~")
	if err != nil {
		return nil, err
	}
	n := &compareNode{op: op, left: left, right: right}
	if op == "=~" {
		if !right.regex {
			return nil, p.failAt(start, "=~ must be followed by a /regular expression/")
		}
		n.re = right.literal.(*regexp.Regexp)
	} else if right.regex || left.regex {
		return nil, p.failAt(start, "a regular expression can only follow =~")
	}
	return n, nil
}

// parseOperand reads a path or a literal; a /regex/ only when allowed.
func (p *parser) parseOperand(regexAllowed bool) (*operand, error) {
	p.skipSpaces()
	start := p.pos
	switch c := p.peek(); {
	case c == '@' || c == '$':
		p.pos++
		if c == '$' && (p.peek() == '$' || isLetter(p.peek())) {
			return nil, p.failAt(start, "a filter can refer only to @ and $")
		}
		segs, err := p.parseSegments(true)
		if err != nil {
			return nil, err
		}
		o := &operand{isPath: true, fromRoot: c == '$', segs: segs, definite: definite(segs)}
		if !o.definite {
			o.query = compileQuery(segs)
		}
		return o, nil
	case c == '/':
		if !regexAllowed {
			return nil, p.fail("a regular expression can only follow =~")
		}
		re, err := p.parseRegex()
		if err != nil {
			return nil, err
		}
		return &operand{literal: re, regex: true}, nil
	case c == '[':
		list, err := p.parseListLiteral()
		if err != nil {
			return nil, err
		}
		return &operand{literal: list}, nil
	}
	v, err := p.parseScalarLiteral()
	if err != nil {
		return nil, err
	}
	return &operand{literal: v}, nil
}

// parseListLiteral reads [literal, …] for in and nin.
func (p *parser) parseListLiteral() ([]any, error) {
	p.pos++ // [
	list := []any{}
	p.skipSpaces()
	if p.peek() == ']' {
		p.pos++
		return list, nil
	}
	for {
		p.skipSpaces()
		v, err := p.parseScalarLiteral()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		p.skipSpaces()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return list, nil
		default:
			if p.eof() {
				return nil, p.fail("unterminated list")
			}
			return nil, p.fail("expected , or ] in a list")
		}
	}
}

// parseScalarLiteral reads a number, a string, true, false or null.
func (p *parser) parseScalarLiteral() (any, error) {
	c := p.peek()
	switch {
	case c == '\'' || c == '"':
		return p.parseQuoted()
	case c == '-' || isDigit(c):
		return p.parseNumber()
	}
	for _, w := range []string{"true", "false", "null"} {
		if strings.HasPrefix(p.src[p.pos:], w) {
			end := p.pos + len(w)
			if end < len(p.src) && (isLetter(p.src[end]) || isDigit(p.src[end])) {
				break
			}
			p.pos = end
			switch w {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, nil
		}
	}
	if p.eof() {
		return nil, p.fail("expected a value")
	}
	return nil, p.fail("expected a value, not " + quoteChar(p.src[p.pos:]))
}

// parseNumber reads a number in JSON syntax.
func (p *parser) parseNumber() (json.Number, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for !p.eof() && isDigit(p.peek()) {
			p.pos++
			n++
		}
		return n
	}
	if p.peek() == '-' {
		p.pos++
	}
	intStart := p.pos
	if digits() == 0 {
		return "", p.failAt(start, "invalid number")
	}
	if p.src[intStart] == '0' && p.pos-intStart > 1 {
		return "", p.failAt(start, "a number cannot have leading zeros")
	}
	if p.peek() == '.' {
		p.pos++
		if digits() == 0 {
			return "", p.failAt(start, "invalid number")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if digits() == 0 {
			return "", p.failAt(start, "invalid number")
		}
	}
	return json.Number(p.src[start:p.pos]), nil
}

// parseRegex reads /pattern/flags. Jayway matches the whole string (Java's
// Matcher.matches), so the pattern is anchored at both ends of the text
// whatever the flags. Flags: i (ignore case), m (^ and $ match at line
// breaks), s (. matches a line break).
func (p *parser) parseRegex() (*regexp.Regexp, error) {
	start := p.pos
	p.pos++ // /
	var b strings.Builder
	for {
		if p.eof() {
			return nil, p.failAt(start, "unterminated regular expression")
		}
		c := p.src[p.pos]
		if c == '/' {
			p.pos++
			break
		}
		if c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/' {
			b.WriteByte('/')
			p.pos += 2
			continue
		}
		if c == '\\' && p.pos+1 < len(p.src) {
			b.WriteString(p.src[p.pos : p.pos+2])
			p.pos += 2
			continue
		}
		b.WriteByte(c)
		p.pos++
	}
	flags := ""
	for !p.eof() && isLetter(p.peek()) {
		switch f := p.peek(); f {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, rune(f)) {
				flags += string(f)
			}
		default:
			return nil, p.fail("unknown regular expression flag " + quoteChar(p.src[p.pos:]))
		}
		p.pos++
	}
	pattern := `\A(?:` + b.String() + `)\z`
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, p.failAt(start, "invalid regular expression: "+err.Error())
	}
	return re, nil
}
