package jsonata

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/blues/jsonata-go/jparse"
)

// Expr is one compiled JSONata expression: the text between "{%" and "%}",
// trimmed. It is immutable and safe for concurrent use.
type Expr struct {
	src  string
	root jparse.Node
	// refs are the names of the variables the expression may read ($name),
	// found by scanning its text outside string literals and comments; a
	// name that is not a workflow variable is left unbound.
	refs []string
	// context is set when it may read $states.context; chance when it may
	// read something that differs between two runs (the context object,
	// the clock, a random draw).
	context bool
	chance  bool
}

// Compile compiles the text of an expression (without "{%" and "%}").
func Compile(src string) (e *Expr, err error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return nil, errors.New("the expression is empty")
	}
	if err := lexerTraps(src); err != nil {
		return nil, err
	}
	defer func() {
		// The library's parser is third-party code run on text a stranger
		// may send: whatever it does, a definition gets an error back.
		if p := recover(); p != nil {
			e, err = nil, fmt.Errorf("the expression cannot be parsed (%v)", p)
		}
	}()
	root, err := jparse.Parse(withoutComments(src))
	if err != nil {
		return nil, err
	}
	if err := refuseRecursion(root); err != nil {
		return nil, err
	}
	e = &Expr{src: src, root: root}
	e.scan()
	return e, nil
}

// lexerTraps refuses the text the parser's lexer cannot read safely: a
// "!" or "~" not followed by "=" or ">" (outside strings, quoted names and
// comments). Neither is an operator alone in JSONata, and when the next
// character is not ASCII the lexer backs up too far and loops for ever.
// It reads the text as the lexer does: a quote starts a string only where
// a token starts, and is part of a name inside one (a"!é is the name a"
// and then "!").
func lexerTraps(s string) error {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v':
			i++
		case c == '"' || c == '\'' || c == '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' && c != '`' {
					i++
				}
			}
			i++
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil
			}
			i += end + 4
		case c == '!' || c == '~':
			want := byte('=')
			if c == '~' {
				want = '>'
			}
			if i+1 >= len(s) || s[i+1] != want {
				return fmt.Errorf("syntax error: '%c' (at offset %d) must be followed by '%c'", c, i, want)
			}
			i += 2
		case strings.IndexByte(lexerSymbols, c) >= 0:
			i++
		default:
			// A name (or a number): up to a space or a symbol, quotes
			// included.
			for i < len(s) && !isLexerBoundary(s[i]) {
				i++
			}
		}
	}
	return nil
}

// lexerSymbols are the characters that are tokens of their own (or start
// one) to the lexer; with spaces, "!" and "~", they end a name.
const lexerSymbols = "[]{}().,;:?+-*/%|=<>^&"

func isLexerBoundary(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '!' || c == '~' || strings.IndexByte(lexerSymbols, c) >= 0
}

// withoutComments replaces each /* … */ comment outside strings and quoted
// names by a space: JSONata 2 (which AWS runs) has comments, the library
// does not. An unterminated comment is left for the library to refuse.
func withoutComments(s string) string {
	if !strings.Contains(s, "/*") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' {
					j++
				}
			}
			end := min(j+1, len(s))
			b.WriteString(s[i:end])
			i = end - 1
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			b.WriteByte(' ')
			i += end + 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// String returns the expression's text, as AWS quotes it in causes.
func (e *Expr) String() string { return e.src }

// nondeterministic names the functions whose result differs between two
// runs of the same expression on the same data.
var nondeterministic = map[string]bool{"now": true, "millis": true, "random": true, "uuid": true}

// scan finds the variables the expression reads, and whether it calls a
// function whose result changes from run to run. It reads the text, not the syntax tree, so it may
// find too many (a name assigned inside the expression): binding a name the
// expression does not read changes nothing.
func (e *Expr) scan() {
	s := e.src
	seen := map[string]bool{}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '`':
			// A string literal or a quoted name: skip to its closing quote.
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' && c != '`' {
					i++
				}
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return
			}
			i += end + 3
		case c == '$':
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			name := s[i+1 : j]
			if name == "states" && !plainStatesField(s[j:]) {
				e.context = true
			}
			if name != "" && !seen[name] {
				seen[name] = true
				e.refs = append(e.refs, name)
				if nondeterministic[name] {
					e.chance = true
				}
			}
			i = j - 1
		}
	}
	if e.context {
		e.chance = true
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// plainStatesField reports whether the text after "$states" reads one of
// the fields that are not the context object.
func plainStatesField(rest string) bool {
	for _, f := range []string{".input", ".result", ".errorOutput"} {
		if strings.HasPrefix(rest, f) && (len(rest) == len(f) || !isNameByte(rest[len(f)])) {
			return true
		}
	}
	return false
}

// errUndefined is an expression that evaluated to nothing.
var errUndefined = errors.New("undefined")

// eval evaluates the expression in scope s, spending r, and returns its
// result as one of our JSON values. The error is errUndefined,
// errUnsupported, a *limitError, the context's error, or the error the
// expression threw.
func (e *Expr) eval(ctx context.Context, r *run, s *Scope) (v any, err error) {
	root := &frame{vars: make(map[string]any, len(e.refs)+1)}
	for _, name := range e.refs {
		if v, ok := s.lookup(name, e.context); ok {
			root.vars[name] = v
		}
	}
	// Step Functions gives "$" no value: every datum comes from $states
	// and the variables.
	root.vars["$"] = nil
	if e.chance && s.Drew != nil {
		s.Drew()
	}
	defer func() {
		// The library's functions are third-party code run on data a
		// stranger may send: whatever they do, a definition gets an error.
		if p := recover(); p != nil {
			r.depth = 0
			v, err = nil, throw("the evaluation failed (%v)", p)
		}
	}()
	v, err = r.eval(ctx, e.root, nil, root)
	switch {
	case err != nil:
		return nil, err
	case v == nil:
		return nil, errUndefined
	}
	return fromJSONata(v)
}

// Scope is what expressions see while one state runs: $states (its input,
// its result or error output, the context object) and the workflow
// variables. Values are converted for the library once per scope. A Scope
// is used by one goroutine at a time.
type Scope struct {
	// Input is $states.input.
	Input any
	// Result is $states.result, when HasResult.
	Result    any
	HasResult bool
	// ErrorOutput is $states.errorOutput, when HasErrorOutput.
	ErrorOutput    any
	HasErrorOutput bool
	// Context returns the context object, $states.context.
	Context func() any
	// Variable looks a workflow variable up.
	Variable func(name string) (any, bool)
	// Drew is called (when not nil) before an expression that may give
	// another result on another run (the clock, a random draw, the context
	// object) is evaluated.
	Drew func()
	// Limits bound each evaluation of a template in the scope; the zero
	// value is the defaults.
	Limits Limits

	states        map[string]any
	statesContext bool
	vars          map[string]any
}

// lookup returns the library's value of variable name: $states, or a
// workflow variable.
func (s *Scope) lookup(name string, context bool) (any, bool) {
	if name == "states" {
		// The result is set once the agent answered, after Arguments used
		// the scope: add what is new since the last expression.
		if s.states == nil {
			s.states = map[string]any{"input": toJSONata(s.Input)}
		}
		if _, ok := s.states["result"]; s.HasResult && !ok {
			s.states["result"] = toJSONata(s.Result)
		}
		if _, ok := s.states["errorOutput"]; s.HasErrorOutput && !ok {
			s.states["errorOutput"] = toJSONata(s.ErrorOutput)
		}
		if context && !s.statesContext && s.Context != nil {
			s.statesContext = true
			s.states["context"] = toJSONata(s.Context())
		}
		return s.states, true
	}
	if v, ok := s.vars[name]; ok {
		return v, true
	}
	if s.Variable == nil {
		return nil, false
	}
	raw, ok := s.Variable(name)
	if !ok {
		return nil, false
	}
	v := toJSONata(raw)
	if s.vars == nil {
		s.vars = map[string]any{}
	}
	s.vars[name] = v
	return v, true
}
