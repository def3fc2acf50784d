package jsonata

import (
	"context"
	"fmt"
	"regexp"

	"github.com/blues/jsonata-go/jparse"
)

// function is a value that can be called: a function the expression
// defines, a built-in one, a partial application, a chain (f ~> g), an
// object transformation or a regular expression. Functions are values
// made during one evaluation, or immutable built-ins: calling one never
// modifies it.
type function interface {
	// call calls the function with args; focus is the context item at
	// the call ("$"), which some built-ins take as their first argument
	// when it is left out.
	call(ctx context.Context, r *run, focus any, args []any) (any, error)
	// arity is how many arguments the function takes, for the built-ins
	// that call it with one to three ($map, $filter, $each…).
	arity() int
}

// thrown is an error the expression threw while it ran, worded as
// JSONata's JavaScript implementation words it ("T1006: Attempted to
// invoke a non-function").
type thrown struct{ msg string }

func (e *thrown) Error() string { return e.msg }

// throw makes a thrown error.
func throw(format string, args ...any) error {
	return &thrown{msg: fmt.Sprintf(format, args...)}
}

// call evaluates a function call: the function, then its arguments, on
// input in.
func (r *run) call(ctx context.Context, fn jparse.Node, argNodes []jparse.Node, in any, env *frame) (any, error) {
	v, err := r.eval(ctx, fn, in, env)
	if err != nil {
		return nil, err
	}
	f, ok := v.(function)
	if !ok {
		return nil, throw("T1006: Attempted to invoke a non-function")
	}
	args := make([]any, len(argNodes))
	for i, a := range argNodes {
		if args[i], err = r.eval(ctx, a, in, env); err != nil {
			return nil, err
		}
	}
	return r.apply(ctx, f, in, args)
}

// apply calls f one level deeper.
func (r *run) apply(ctx context.Context, f function, focus any, args []any) (any, error) {
	if err := r.tick(ctx, 1); err != nil {
		return nil, err
	}
	if r.depth >= maxDepth {
		return nil, throw("U1001: Stack overflow error: the expression nests deeper than %d levels", maxDepth)
	}
	r.depth++
	v, err := f.call(ctx, r, focus, args)
	r.depth--
	return v, err
}

// lambda is a function the expression defines: function($a, $b){ … }.
// It sees the variables of the scope it was defined in, and that scope's
// input as "$".
type lambda struct {
	node    *jparse.LambdaNode
	typed   bool
	params  []jparse.Param
	env     *frame
	context any
}

func (f *lambda) arity() int { return len(f.node.ParamNames) }

func (f *lambda) call(ctx context.Context, r *run, _ any, args []any) (any, error) {
	if f.typed {
		var err error
		if args, err = f.check(args); err != nil {
			return nil, err
		}
	}
	env := &frame{parent: f.env, vars: make(map[string]any, len(f.node.ParamNames))}
	for i, name := range f.node.ParamNames {
		var v any
		if i < len(args) {
			v = args[i]
		}
		env.vars[name] = v
	}
	return r.eval(ctx, f.node.Body, f.context, env)
}

// check checks and adapts the arguments of a function with a signature
// (function($a, $b)<n-s:s>{ … }).
func (f *lambda) check(args []any) ([]any, error) {
	n := len(f.params)
	given := len(args)
	if given < n && n > 0 && f.params[0].Option == jparse.ParamContextable {
		args = append([]any{f.context}, args...)
	}
	for i := len(args); i < n && f.params[i].Option == jparse.ParamOptional; i++ {
		args = append(args, nil)
	}
	variadic := n > 0 && f.params[n-1].Option == jparse.ParamVariadic
	if len(args) < n || len(args) > n && !variadic {
		return nil, throw("T0410: Argument count of function lambda does not match function signature (%d expected, %d given)", n, given)
	}
	for i, a := range args {
		if a == nil {
			continue
		}
		var p jparse.Param
		switch {
		case i < n:
			p = f.params[i]
		case n > 0:
			p = f.params[n-1]
		}
		if p.Type == jparse.ParamTypeArray {
			a = arrayOf(a)
			args[i] = a
		}
		if !accepts(p, a) {
			return nil, throw("T0410: Argument %d of function lambda does not match function signature", i+1)
		}
	}
	if variadic {
		rest := append([]any{}, args[n-1:]...)
		args = append(args[:n-1:n-1], rest)
	}
	return args, nil
}

// accepts reports whether parameter p of a signature accepts v.
func accepts(p jparse.Param, v any) bool {
	t := p.Type
	if t&jparse.ParamTypeAny != 0 {
		return true
	}
	json := t&jparse.ParamTypeJSON != 0
	switch x := v.(type) {
	case string:
		return json || t&jparse.ParamTypeString != 0
	case float64:
		return json || t&jparse.ParamTypeNumber != 0
	case bool:
		return json || t&jparse.ParamTypeBool != 0
	case *any:
		return json || t&jparse.ParamTypeNull != 0
	case function:
		return t&jparse.ParamTypeFunc != 0
	case []any:
		if json {
			return true
		}
		if t&jparse.ParamTypeArray == 0 {
			return false
		}
		if len(p.SubParams) == 0 {
			return true
		}
		for _, e := range x {
			if !accepts(p.SubParams[0], e) {
				return false
			}
		}
		return true
	case map[string]any:
		return json || t&jparse.ParamTypeObject != 0
	}
	return false
}

// partial is a function with some arguments given: $f(1, ?).
type partial struct {
	fn      function
	args    []jparse.Node
	env     *frame
	context any
}

func (f *partial) arity() int {
	n := 0
	for _, a := range f.args {
		if _, ok := a.(*jparse.PlaceholderNode); ok {
			n++
		}
	}
	return n
}

func (f *partial) call(ctx context.Context, r *run, focus any, args []any) (any, error) {
	all := make([]any, len(f.args))
	for i, a := range f.args {
		if _, ok := a.(*jparse.PlaceholderNode); ok {
			if len(args) > 0 {
				all[i], args = args[0], args[1:]
			}
			continue
		}
		v, err := r.eval(ctx, a, f.context, f.env)
		if err != nil {
			return nil, err
		}
		all[i] = v
	}
	return r.apply(ctx, f.fn, focus, all)
}

// chain is f ~> g of two functions: g of f of the argument.
type chain struct{ fns []function }

func (f *chain) arity() int { return 1 }

func (f *chain) call(ctx context.Context, r *run, focus any, args []any) (any, error) {
	var v any
	if len(args) > 0 {
		v = args[0]
	}
	for _, g := range f.fns {
		var err error
		if v, err = r.apply(ctx, g, focus, []any{v}); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// transform is | pattern | update, delete |: a function that copies an
// object and changes the objects the pattern finds in the copy.
type transform struct {
	node *jparse.ObjectTransformationNode
	env  *frame
}

func (f *transform) arity() int { return 1 }

func (f *transform) call(ctx context.Context, r *run, _ any, args []any) (any, error) {
	if len(args) != 1 {
		return nil, throw("T0410: Argument count of function transform does not match function signature (1 expected, %d given)", len(args))
	}
	switch args[0].(type) {
	case nil:
		return nil, nil
	case map[string]any, []any:
	default:
		return nil, throw("T0410: Argument 1 of function transform does not match function signature")
	}
	obj, err := r.clone(ctx, args[0])
	if err != nil {
		return nil, err
	}
	found, err := r.eval(ctx, f.node.Pattern, obj, f.env)
	if err != nil {
		return nil, err
	}
	for _, item := range arrayOf(found) {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		upd, err := r.eval(ctx, f.node.Updates, m, f.env)
		if err != nil {
			return nil, err
		}
		if upd != nil {
			um, ok := upd.(map[string]any)
			if !ok {
				return nil, throw("T2011: The insert/update clause of the transform expression must evaluate to an object: %s", describe(upd))
			}
			if err := r.allocObject(len(um)); err != nil {
				return nil, err
			}
			for k, v := range um {
				m[k] = v
			}
		}
		if f.node.Deletes == nil {
			continue
		}
		del, err := r.eval(ctx, f.node.Deletes, m, f.env)
		if err != nil {
			return nil, err
		}
		if del == nil {
			continue
		}
		for _, k := range arrayOf(del) {
			if _, ok := k.(string); !ok {
				return nil, throw("T2012: The delete clause of the transform expression must evaluate to a string or array of strings: %s", describe(del))
			}
		}
		for _, k := range arrayOf(del) {
			delete(m, k.(string))
		}
	}
	return obj, nil
}

// clone deep-copies the objects and arrays of v, which a transformation
// may then change.
func (r *run) clone(ctx context.Context, v any) (any, error) {
	if err := r.tick(ctx, 1); err != nil {
		return nil, err
	}
	if r.depth >= maxDepth {
		return nil, throw("U1001: Stack overflow error: the data nests deeper than %d levels", maxDepth)
	}
	r.depth++
	defer func() { r.depth-- }()
	switch t := v.(type) {
	case map[string]any:
		if err := r.allocObject(len(t)); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := r.clone(ctx, e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if err := r.allocItems(len(t)); err != nil {
			return nil, err
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, err := r.clone(ctx, e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// regex is a regular expression (/ab+/i): called on a string it gives its
// first match.
type regex struct{ re *regexp.Regexp }

func (f *regex) arity() int { return 1 }

func (f *regex) call(ctx context.Context, r *run, _ any, args []any) (any, error) {
	if len(args) < 1 {
		return nil, nil
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, nil
	}
	return r.matchFrom(f.re, s, 0)
}

// match is the rest of the matches of a regular expression: calling it
// gives the next one.
type match struct {
	re  *regexp.Regexp
	s   string
	pos int
}

func (f *match) arity() int { return 0 }

func (f *match) call(ctx context.Context, r *run, _ any, _ []any) (any, error) {
	return r.matchFrom(f.re, f.s, f.pos)
}

// matchFrom is the first match of re in s from byte pos: an object with
// the match, its start and end, its groups and the function giving the
// next match; undefined if there is none.
func (r *run) matchFrom(re *regexp.Regexp, s string, pos int) (any, error) {
	if pos > len(s) {
		return nil, nil
	}
	loc := re.FindStringSubmatchIndex(s[pos:])
	if loc == nil {
		return nil, nil
	}
	groups := make([]any, 0, len(loc)/2-1)
	for i := 2; i < len(loc); i += 2 {
		g := ""
		if loc[i] >= 0 {
			g = s[pos+loc[i] : pos+loc[i+1]]
		}
		groups = append(groups, g)
	}
	next := pos + loc[1]
	if loc[1] == loc[0] {
		next++ // an empty match: the next one starts one further
	}
	if err := r.allocObject(5); err != nil {
		return nil, err
	}
	return map[string]any{
		"match":  s[pos+loc[0] : pos+loc[1]],
		"start":  float64(pos + loc[0]),
		"end":    float64(pos + loc[1]),
		"groups": groups,
		"next":   &match{re: re, s: s, pos: next},
	}, nil
}

// describe writes a value for an error message.
func describe(v any) string {
	if _, ok := v.(function); ok {
		return "a function"
	}
	var n int64
	s, err := stringOf(v, &n)
	if err != nil {
		return fmt.Sprint(v)
	}
	return s
}
