package jsonata

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	lib "github.com/blues/jsonata-go"
	"github.com/blues/jsonata-go/jparse"
)

// evalMu serializes every evaluation of the library. Its built-in
// functions are package-level values that record the context and the name
// of each call in place (SetContext, SetName), so two evaluations at once
// (two Map items, two executions) would race on them. Evaluations are
// short and CPU-bound: holding one lock costs less than the wrong answer a
// race could give.
var evalMu sync.Mutex

// Expr is one compiled JSONata expression: the text between "{%" and "%}",
// trimmed. It is immutable and safe for concurrent use.
type Expr struct {
	src string
	lib *lib.Expr
	// refs are the names of the variables the expression may read ($name),
	// found by scanning its text outside string literals and comments; a
	// name that is not a workflow variable is left unbound.
	refs []string
	// funcs are the Step Functions functions it calls.
	funcs map[string]lib.Extension
	// context is set when it may read $states.context; chance when it may
	// read something that differs between two runs (the context object,
	// the clock, a random draw).
	context bool
	chance  bool
	// path is set when the expression is a plain path from a variable
	// ($states.input.items): the variable's name, then the keys.
	path []string
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
	text := withoutComments(src)
	x, err := lib.Compile(text)
	if err != nil {
		return nil, err
	}
	root, err := jparse.Parse(text)
	if err != nil {
		return nil, err
	}
	if err := refuseRecursion(root); err != nil {
		return nil, err
	}
	e = &Expr{src: src, lib: x}
	e.scan()
	e.path = plainPath(root)
	return e, nil
}

// lexerTraps refuses the text the library's lexer cannot read safely: a
// "!" or "~" not followed by "=" or ">" (outside strings, quoted names and
// comments). Neither is an operator alone in JSONata, and when the next
// character is not ASCII the lexer backs up too far and loops for ever.
func lexerTraps(s string) error {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' && c != '`' {
					i++
				}
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				end := strings.Index(s[i+2:], "*/")
				if end < 0 {
					return nil
				}
				i += end + 3
			}
		case '!', '~':
			want := byte('=')
			if c == '~' {
				want = '>'
			}
			if i+1 >= len(s) || s[i+1] != want {
				return fmt.Errorf("syntax error: '%c' (at offset %d) must be followed by '%c'", c, i, want)
			}
		}
	}
	return nil
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

// scan finds the variables the expression reads and the Step Functions
// functions it calls. It reads the text, not the syntax tree, so it may
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
				if f, ok := stepFunctions[name]; ok {
					if e.funcs == nil {
						e.funcs = map[string]lib.Extension{}
					}
					e.funcs[name] = f
				}
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

// eval evaluates the expression in scope s and returns its result as one of
// our JSON values. The error is errUndefined, errUnsupported, or the
// library's evaluation error.
func (e *Expr) eval(s *Scope) (any, error) {
	vars := make(map[string]any, len(e.refs))
	for _, name := range e.refs {
		if v, ok := s.lookup(name, e.context); ok {
			vars[name] = v
		}
	}
	if e.chance && s.Drew != nil {
		s.Drew()
	}
	v, err := e.run(vars)
	if errors.Is(err, errUndefined) && e.path != nil && emptyArrayAt(vars, e.path) {
		// The library ends a path at an empty array with no result, where
		// JSONata's JavaScript implementation gives the array.
		return []any{}, nil
	}
	if err != nil {
		return nil, err
	}
	return fromJSONata(v)
}

// plainPath returns the steps of a path made of a variable and names
// only ($a.b.c), else nil.
func plainPath(n jparse.Node) []string {
	p, ok := n.(*jparse.PathNode)
	if !ok || len(p.Steps) < 2 || p.KeepArrays {
		return nil
	}
	v, ok := p.Steps[0].(*jparse.VariableNode)
	if !ok || v.Name == "" {
		return nil
	}
	out := []string{v.Name}
	for _, st := range p.Steps[1:] {
		name, ok := st.(*jparse.NameNode)
		if !ok {
			return nil
		}
		out = append(out, name.Value)
	}
	return out
}

// emptyArrayAt reports whether path leads, through objects only, from a
// bound variable to an empty array.
func emptyArrayAt(vars map[string]any, path []string) bool {
	v, ok := vars[path[0]]
	for _, k := range path[1:] {
		if !ok {
			return false
		}
		m, isObj := v.(map[string]any)
		if !isObj {
			return false
		}
		v, ok = m[k]
	}
	arr, isArr := v.([]any)
	return ok && isArr && len(arr) == 0
}

// run evaluates the library's expression with vars bound, on no input:
// Step Functions gives "$" no value, every datum comes from $states and
// the variables.
func (e *Expr) run(vars map[string]any) (v any, err error) {
	evalMu.Lock()
	defer evalMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &libError{msg: fmt.Sprintf("the evaluation failed (%v)", p)}
		}
	}()
	x := *e.lib // a copy without variables: the compiled one is shared
	if len(e.funcs) > 0 {
		if err := x.RegisterExts(e.funcs); err != nil {
			return nil, &libError{msg: err.Error()}
		}
	}
	if len(vars) > 0 {
		if err := x.RegisterVars(vars); err != nil {
			return nil, &libError{msg: err.Error()}
		}
	}
	v, err = x.Eval(nil)
	switch {
	case errors.Is(err, lib.ErrUndefined):
		return nil, errUndefined
	case err != nil:
		return nil, &libError{msg: jsMessage(err)}
	}
	return v, nil
}

// libError is an error the expression threw while it ran, worded as
// JSONata's JavaScript implementation words it ("T1006: Attempted to
// invoke a non-function").
type libError struct{ msg string }

func (e *libError) Error() string { return e.msg }

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
