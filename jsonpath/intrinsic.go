package jsonpath

import (
	"errors"
	"fmt"
	"github.com/aslrun/aslrun/jsonvalue"
	"strings"
	"unicode/utf8"
)

// IntrinsicError reports an intrinsic function call that failed while it was
// evaluated: an argument of the wrong type or out of range, text that does
// not parse, a limit exceeded. The engine raises it as an intrinsic failure
// whose cause is Msg.
//
// A path argument that does not resolve is not an IntrinsicError: eval
// returns the path's own error (a *PathError).
type IntrinsicError struct {
	// Func is the function that failed, like "States.ArrayGetItem".
	Func string
	// Msg is the cause as AWS Step Functions words it, like
	// "Invalid arguments in States.ArrayGetItem". AWS gives no more detail
	// than that, so a cause built from Msg alone matches AWS exactly.
	Msg string
	// Detail says what exactly was wrong, like "index 3 is out of bounds for
	// an array of 3 items". It is our addition: AWS has no such text.
	Detail string
}

// Error returns Msg, followed by Detail when there is one.
func (e *IntrinsicError) Error() string {
	if e.Detail == "" {
		return e.Msg
	}
	return e.Msg + ": " + e.Detail
}

// invalidArgs returns the error AWS raises for every argument problem of fn.
func invalidArgs(fn, format string, args ...any) error {
	return &IntrinsicError{Func: fn, Msg: "Invalid arguments in " + fn, Detail: fmt.Sprintf(format, args...)}
}

// maxIntrinsicDepth is how deep calls may nest: AWS documents "up to 10
// nested intrinsic functions within a field". The outermost call has depth 1.
const maxIntrinsicDepth = 10

// intrinsic is a compiled intrinsic function call such as
// States.Format('Hello {}', $.name). It is immutable and safe for concurrent
// use.
//
// Arguments are single-quoted string literals, numbers, true, false, null,
// paths ($…, $$…, $name…) and nested calls, separated by commas. In a string
// literal \' \{ \} and \\ stand for ' { } and \; any other backslash is a
// syntax error, as in AWS. Unescaped braces are ordinary characters except in
// the template of States.Format, where {} is a placeholder and a lone { or }
// is an error.
//
// The functions are AWS's (States.Format, StringToJson, JsonToString, Array,
// ArrayPartition, ArrayContains, ArrayRange, ArrayGetItem, ArrayLength,
// ArrayUnique, Base64Encode, Base64Decode, Hash, JsonMerge, MathRandom,
// MathAdd, StringSplit, UUID) with AWS's argument checks and results. AWS
// details worth knowing: MathAdd rounds each operand as Java's Math.round
// does (half up: -1.5 → -1) and works in 32-bit integers; ArrayRange,
// ArrayPartition, ArrayGetItem and MathRandom drop the fraction of their
// numbers (AWS's documentation says "rounded", AWS truncates); MathRandom
// returns an integer in [start, end), and with a seed the value
// java.util.Random(seed).nextInt(end-start) gives; ArrayRange makes at most
// 1000 items; Base64Encode, Base64Decode and Hash take at most 10,000
// characters; Base64Decode skips characters outside the alphabet; Hash
// hashes the JSON text of a value that is not a string; StringSplit splits
// at each character of its delimiter string and drops empty tokens;
// StringToJson of a blank string is null; ArrayGetItem on an empty array is
// null; Format renders objects and arrays Java-style ({a=1, b=[x, y]}).
// Every failure is an *IntrinsicError whose Msg is AWS's cause,
// "Invalid arguments in <function>".
//
// The ASL extensions:
//
//   - States.ArrayConcat(arr, arr, …): the arrays joined in order.
//   - States.MathSubtract(a, b) and States.MathMultiply(a, b): exact decimal
//     arithmetic on the numbers' text (0.1*3 is 0.3); the result is written
//     without exponent and without trailing fractional zeros.
//   - States.Merge(obj, obj, …): deep merge; objects present on both sides
//     merge recursively, otherwise the later value wins.
//   - States.Pick(obj, 'k1', 'k2', …) and States.Omit(obj, 'k1', …): the
//     object with only, or without, the named keys.
//   - States.Coalesce(a, b, …): the first argument that is not null (null
//     when all are). An argument path that does not resolve is still an error.
//   - States.TokenCount(value): an estimate of the value's tokens,
//     ceil(characters/4) of the string or of its compact JSON text.
//   - States.Truncate(text, maxTokens): text cut to 4*maxTokens characters
//     (runes), with "..." appended only when something was cut.
//   - States.CurrentCost() and States.CurrentTokens(): $$.Execution.Cost and
//     $$.Execution.TokensUsed from the context object, 0 when absent.
type intrinsic struct {
	src  string
	root *call
}

// call is one function call inside an intrinsic.
type call struct {
	fn     *funcSpec
	args   []arg
	offset int
	// tmpl is the pre-split template of a States.Format call whose template
	// is a string literal: the text around each {} placeholder.
	tmpl []string
}

type argKind uint8

const (
	argLiteral argKind = iota
	argPath
	argCall
)

// arg is one argument of a call.
type arg struct {
	kind   argKind
	offset int
	lit    any    // argLiteral: string, json.Number, bool or nil
	raw    string // argLiteral string: the source text between the quotes
	path   *Path  // argPath
	call   *call  // argCall
}

// compileIntrinsic parses one intrinsic function call. Syntax errors, unknown
// function names, wrong argument counts and literal arguments of the wrong
// type are *SyntaxError.
func compileIntrinsic(src string) (*intrinsic, error) {
	p := &intrinsicParser{src: src}
	p.skipSpace()
	c, err := p.call(1)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(src) {
		return nil, p.errorf(p.pos, "unexpected %q after the call", p.src[p.pos:])
	}
	return &intrinsic{src: src, root: c}, nil
}

// String returns the source text of the call.
func (f *intrinsic) String() string { return f.src }

// eval evaluates the call against input. Failures of a function are
// *IntrinsicError; a path argument that does not resolve returns the path's
// error unchanged.
func (f *intrinsic) eval(input any, env Env) (any, error) {
	if env == nil {
		env = noEnv{}
	}
	limit := boundsOf(env).IntrinsicBytes
	b := &builtBudget{left: limit, limit: limit}
	return f.root.eval(input, env, b)
}

// builtBudget is what is left of the bytes one evaluation of an intrinsic
// function call may build. Each call is charged the size of the value it
// returns, shallowly (a string's bytes, 16 bytes a member of an array and
// 48 of an object, 16 for anything else): what it shares with its
// arguments or the input is charged by the calls that built it, and
// nested calls are charged as they return, so that calls nested ten deep
// cannot multiply the input past the limit.
type builtBudget struct{ left, limit int }

// charge takes what v costs for the call to fn, failing once the budget is
// spent.
func (b *builtBudget) charge(fn string, v any) error {
	switch x := v.(type) {
	case string:
		b.left -= len(x)
	case []any:
		b.left -= 16 * len(x)
	case map[string]any:
		b.left -= 48 * len(x)
	default:
		b.left -= 16
	}
	if b.left < 0 {
		return b.spent(fn)
	}
	return nil
}

// spent is the failure of an evaluation past its budget, reached in fn.
func (b *builtBudget) spent(fn string) error {
	return &IntrinsicError{Func: fn, Msg: fmt.Sprintf("The intrinsic functions of the field build more than %d bytes (the limit of one evaluation)", b.limit), Detail: "the limit is reached in " + fn}
}

func (c *call) eval(input any, env Env, b *builtBudget) (any, error) {
	args := make([]any, len(c.args))
	for i := range c.args {
		v, err := c.args[i].value(input, env, b)
		if err != nil {
			return nil, err
		}
		// The functions read arrays as []any: a packed one is decoded.
		if args[i], err = jsonvalue.Expand(v); err != nil {
			return nil, err
		}
	}
	if c.fn.builds != nil {
		// A function whose result grows with its arguments is charged
		// before it builds anything.
		b.left -= c.fn.builds(c, args, max(b.left, 0)+1)
		if b.left < 0 {
			return nil, b.spent(c.fn.name)
		}
		return c.fn.eval(c, args, env)
	}
	v, err := c.fn.eval(c, args, env)
	if err != nil {
		return nil, err
	}
	if err := b.charge(c.fn.name, v); err != nil {
		return nil, err
	}
	return v, nil
}

func (a *arg) value(input any, env Env, b *builtBudget) (any, error) {
	switch a.kind {
	case argPath:
		return a.path.Get(input, env)
	case argCall:
		return a.call.eval(input, env, b)
	default:
		return a.lit, nil
	}
}

// noEnv stands in for a nil Env: no context object, no variables.
type noEnv struct{}

func (noEnv) Context() any                { return nil }
func (noEnv) Variable(string) (any, bool) { return nil, false }

type intrinsicParser struct {
	src string
	pos int
}

func (p *intrinsicParser) errorf(offset int, format string, args ...any) error {
	return &SyntaxError{Expr: p.src, Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

func isIntrinsicSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *intrinsicParser) skipSpace() {
	for p.pos < len(p.src) && isIntrinsicSpace(p.src[p.pos]) {
		p.pos++
	}
}

func isIdentByte(c byte) bool {
	return c == '.' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ident reads a function name or keyword.
func (p *intrinsicParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) && isIdentByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// call parses a function call at p.pos.
func (p *intrinsicParser) call(depth int) (*call, error) {
	start := p.pos
	name := p.ident()
	if name == "" {
		return nil, p.errorf(start, "expected an intrinsic function call")
	}
	spec := lookupIntrinsic(name)
	if spec == nil {
		return nil, p.errorf(start, "unknown intrinsic function %q", name)
	}
	if depth > maxIntrinsicDepth {
		return nil, p.errorf(start, "intrinsic functions nest deeper than %d levels", maxIntrinsicDepth)
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '(' {
		return nil, p.errorf(p.pos, "expected ( after %s", name)
	}
	p.pos++
	c := &call{fn: spec, offset: start}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ')' {
		p.pos++
		return c, c.check(p)
	}
	for {
		a, err := p.arg(depth)
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, a)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.errorf(p.pos, "missing ) to close %s", name)
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
			continue
		case ')':
			p.pos++
			return c, c.check(p)
		}
		return nil, p.errorf(p.pos, "expected , or ) after argument %d of %s", len(c.args), name)
	}
}

// arg parses one argument at p.pos.
func (p *intrinsicParser) arg(depth int) (arg, error) {
	start := p.pos
	if p.pos >= len(p.src) {
		return arg{}, p.errorf(start, "expected an argument")
	}
	switch c := p.src[p.pos]; {
	case c == '\'':
		return p.stringLiteral()
	case c == '$':
		return p.pathArg()
	case c == '-' || c >= '0' && c <= '9':
		return p.numberLiteral()
	case isIdentByte(c):
		id := p.ident()
		if p.pos < len(p.src) && p.src[p.pos] == '(' || strings.HasPrefix(id, "States.") {
			p.pos = start
			sub, err := p.call(depth + 1)
			if err != nil {
				return arg{}, err
			}
			return arg{kind: argCall, offset: start, call: sub}, nil
		}
		switch id {
		case "true":
			return arg{kind: argLiteral, offset: start, lit: true}, nil
		case "false":
			return arg{kind: argLiteral, offset: start, lit: false}, nil
		case "null":
			return arg{kind: argLiteral, offset: start, lit: nil}, nil
		}
		return arg{}, p.errorf(start, "unexpected %q: an argument is a 'string', a number, true, false, null, a path or a call", id)
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return arg{}, p.errorf(start, "unexpected %q: expected an argument", r)
}

// stringLiteral parses a single-quoted string with AWS's escapes.
func (p *intrinsicParser) stringLiteral() (arg, error) {
	open := p.pos
	p.pos++
	rawStart := p.pos
	var b strings.Builder
	escaped := false
	for {
		if p.pos >= len(p.src) {
			return arg{}, p.errorf(open, "unterminated string literal")
		}
		c := p.src[p.pos]
		if c == '\'' {
			break
		}
		if c != '\\' {
			if escaped {
				b.WriteByte(c)
			}
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.src) {
			return arg{}, p.errorf(p.pos, "unterminated escape sequence in string literal")
		}
		switch n := p.src[p.pos+1]; n {
		case '\'', '{', '}', '\\':
			if !escaped {
				escaped = true
				b.WriteString(p.src[rawStart:p.pos])
			}
			b.WriteByte(n)
			p.pos += 2
		default:
			r, _ := utf8.DecodeRuneInString(p.src[p.pos+1:])
			return arg{}, p.errorf(p.pos, `illegal escape sequence "\%c" in string literal: only \', \{, \} and \\ are allowed`, r)
		}
	}
	raw := p.src[rawStart:p.pos]
	p.pos++
	value := raw
	if escaped {
		value = b.String()
	}
	return arg{kind: argLiteral, offset: open, lit: value, raw: raw}, nil
}

// numberLiteral parses a number in JSON's grammar.
func (p *intrinsicParser) numberLiteral() (arg, error) {
	start := p.pos
	s := p.src
	i := p.pos
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	intStart := i
	if digits() == 0 {
		return arg{}, p.errorf(start, "invalid number: expected a digit")
	}
	if s[intStart] == '0' && i-intStart > 1 {
		return arg{}, p.errorf(start, "invalid number: leading zero")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return arg{}, p.errorf(start, "invalid number: expected a digit after the decimal point")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return arg{}, p.errorf(start, "invalid number: expected a digit in the exponent")
		}
	}
	if i < len(s) && (isIdentByte(s[i]) || s[i] == '$' || s[i] == '\'') {
		return arg{}, p.errorf(start, "invalid number %q", s[start:i+1])
	}
	p.pos = i
	return arg{kind: argLiteral, offset: start, lit: jsonNumber(s[start:i])}, nil
}

// pathArg reads a path argument and compiles it.
func (p *intrinsicParser) pathArg() (arg, error) {
	start := p.pos
	end, bad := scanPath(p.src, start)
	if bad >= 0 {
		return arg{}, p.errorf(bad, "unterminated quoted name in path")
	}
	text := strings.TrimRight(p.src[start:end], " \t\n\r")
	path, err := Compile(text)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return arg{}, p.errorf(start+se.Offset, "invalid path argument %q: %s", text, se.Msg)
		}
		return arg{}, p.errorf(start, "invalid path argument %q: %v", text, err)
	}
	p.pos = end
	return arg{kind: argPath, offset: start, path: path}, nil
}

// scanPath returns the end of the path that starts at s[start]: the first
// comma or closing parenthesis outside brackets, parentheses and quotes
// (filters and quoted names may hold both), or the end of s. bad is the
// offset of an unterminated quote, or -1.
func scanPath(s string, start int) (end, bad int) {
	depth := 0
	i := start
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return i, i
			}
			i = j
		case '[', '(':
			depth++
		case ']':
			depth--
		case ')':
			if depth <= 0 {
				return i, -1
			}
			depth--
		case ',':
			if depth <= 0 {
				return i, -1
			}
		}
	}
	return i, -1
}

// check validates a parsed call against its function: argument count,
// literal argument types, and the function's own compile-time checks.
func (c *call) check(p *intrinsicParser) error {
	fn := c.fn
	n := len(c.args)
	switch {
	case fn.max >= 0 && fn.min == fn.max && n != fn.min:
		return p.errorf(c.offset, "%s takes %s, got %d", fn.name, plural(fn.min, "argument"), n)
	case n < fn.min:
		return p.errorf(c.offset, "%s takes at least %s, got %d", fn.name, plural(fn.min, "argument"), n)
	case fn.max >= 0 && n > fn.max:
		return p.errorf(c.offset, "%s takes at most %s, got %d", fn.name, plural(fn.max, "argument"), n)
	}
	for i := range c.args {
		a := &c.args[i]
		if a.kind != argLiteral {
			continue
		}
		want := fn.param(i)
		if !want.accepts(a.lit) {
			return p.errorf(a.offset, "argument %d of %s must be %s, got %s", i+1, fn.name, want, literalKind(a.lit))
		}
	}
	if fn.check != nil {
		if off, msg := fn.check(c); msg != "" {
			return p.errorf(off, "%s", msg)
		}
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
