package jsonata

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// IsExpression reports whether a string of a definition is a JSONata
// expression: it starts with "{%" and ends with "%}", with nothing around
// them (" {% x %} " is a plain string, as in AWS).
func IsExpression(s string) bool {
	return len(s) >= 4 && strings.HasPrefix(s, "{%") && strings.HasSuffix(s, "%}")
}

// Template is a JSON value of a definition in which every string that is
// an expression ("{% … %}") is evaluated, at any depth; everything else is
// taken literally ("$.x" and "States.Format(…)" included). It is immutable
// and safe for concurrent use.
type Template struct {
	root any // a literal, an *Expr, a dynObject or a dynArray
	// chance is set when an expression of it may give another result on
	// another run.
	chance bool
}

// dynObject and dynArray are the objects and arrays that hold
// expressions; the rest of the tree is kept as it is and shared.
type dynObject map[string]any
type dynArray []any

// Problem is one expression of a template that does not compile, at its
// JSON Pointer within the template ("" for the template itself).
type Problem struct {
	Pointer string
	Msg     string
}

// Problems lists every problem of a template.
type Problems []Problem

func (p Problems) Error() string {
	parts := make([]string, len(p))
	for i, pr := range p {
		parts[i] = pr.Pointer + ": " + pr.Msg
	}
	return strings.Join(parts, "; ")
}

// CompileTemplate compiles every expression of v, a decoded JSON value.
// field names the value in its state, for messages ("Output"). Its error
// is Problems.
func CompileTemplate(v any, field string) (*Template, error) {
	t := &Template{}
	var problems Problems
	t.root = t.compile(v, "", field, &problems)
	if len(problems) > 0 {
		return nil, problems
	}
	return t, nil
}

func (t *Template) compile(v any, ptr, field string, problems *Problems) any {
	switch x := v.(type) {
	case string:
		if !IsExpression(x) {
			return x
		}
		e, err := Compile(x[2 : len(x)-2])
		if err != nil {
			*problems = append(*problems, Problem{Pointer: ptr, Msg: fmt.Sprintf("The value for the field '%s' must be a valid JSONata expression: %v", field, err)})
			return x
		}
		t.chance = t.chance || e.chance
		return e
	case map[string]any:
		out := make(dynObject, len(x))
		dynamic := false
		// In key order, so that problems are reported in the same order
		// every time.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e := x[k]
			c := t.compile(e, ptr+"/"+jsonvalue.EscapePointer(k), field+"/"+k, problems)
			out[k] = c
			dynamic = dynamic || isDynamic(c)
		}
		if !dynamic {
			return x
		}
		return out
	case []any:
		out := make(dynArray, len(x))
		dynamic := false
		for i, e := range x {
			c := t.compile(e, ptr+"/"+strconv.Itoa(i), field+"/"+strconv.Itoa(i), problems)
			out[i] = c
			dynamic = dynamic || isDynamic(c)
		}
		if !dynamic {
			return x
		}
		return out
	}
	return v
}

func isDynamic(v any) bool {
	switch v.(type) {
	case *Expr, dynObject, dynArray:
		return true
	}
	return false
}

// Literal returns the template's value when it holds no expression.
func (t *Template) Literal() (any, bool) {
	if isDynamic(t.root) {
		return nil, false
	}
	return t.root, true
}

// Expression returns the template's expression when the whole template is
// one, else nil.
func (t *Template) Expression() *Expr {
	e, _ := t.root.(*Expr)
	return e
}

// Nondeterministic reports whether evaluating the template twice on the
// same data may give two results (the clock, a random draw, the context
// object).
func (t *Template) Nondeterministic() bool { return t.chance }

// Eval evaluates the template in scope s; field names it in its state, for
// the cause of a failure ("Output", "Assign"). Its expressions share one
// budget, s.Limits. The error is an *Error, or ctx's error when ctx ended
// first. Literal parts of the result are shared with the template: never
// modify the result.
func (t *Template) Eval(ctx context.Context, s *Scope, field string) (any, error) {
	if !isDynamic(t.root) {
		return t.root, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return eval(ctx, newRun(s.Limits), t.root, s, field)
}

func eval(ctx context.Context, r *run, v any, s *Scope, field string) (any, error) {
	switch x := v.(type) {
	case *Expr:
		v, err := x.eval(ctx, r, s)
		if err != nil {
			if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return nil, ctx.Err()
			}
			return nil, evalError(x.src, field, err)
		}
		return v, nil
	case dynObject:
		out := make(map[string]any, len(x))
		for k, e := range x {
			v, err := eval(ctx, r, e, s, field+"/"+k)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case dynArray:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := eval(ctx, r, e, s, field+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return v, nil
}

// TypeError is the failure of a template of field whose result v is not
// of the type want ("array", "boolean", "number", "string"), as AWS words
// it.
func (t *Template) TypeError(field, want string, v any) *Error {
	src := ""
	if e := t.Expression(); e != nil {
		src = e.src
	}
	return &Error{Expr: src, Field: field, Msg: fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned an unexpected result type. Expected '%s', but was '%s' for value: %s", src, field, want, typeName(v), compact(v))}
}

// TypeName is JSONata's name of the type of one of our JSON values.
func TypeName(v any) string { return typeName(v) }

// compact writes v as compact JSON for a message.
func compact(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
