package jsonpath

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// TemplateError reports a payload template that does not compile.
type TemplateError struct {
	// Pointer is the JSON Pointer of the offending field inside the
	// template, like /args/0/x.$.
	Pointer string
	// Field is the offending key, like x.$.
	Field string
	// Msg says what is wrong. For a ".$" value that is neither a path nor an
	// intrinsic call it is AWS's wording: "The value for the field 'x.$'
	// must be a valid JSONPath or a valid intrinsic function call".
	Msg string

	err error
}

// Error returns Msg followed by " at " and the Pointer.
func (e *TemplateError) Error() string {
	if e.Pointer == "" {
		return e.Msg
	}
	return e.Msg + " at " + e.Pointer
}

// Unwrap returns the *SyntaxError behind an invalid ".$" value, if any.
func (e *TemplateError) Unwrap() error { return e.err }

// FieldError reports a ".$" field of a template whose definite path selects
// nothing. Its Error text is AWS's cause: "The JSONPath '<Path>' specified
// for the field '<Field>' could not be found in the input '<Input>'".
type FieldError struct {
	// Field is the key, with its ".$", like value.$ (or a field name such as
	// ErrorPath when the engine builds one itself).
	Field string
	// Path is the source text of the path.
	Path string
	// Input is the state input, written as compact JSON only by Error.
	Input any
}

// Error returns AWS's cause, with the input written as compact JSON.
func (e *FieldError) Error() string {
	return fmt.Sprintf("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'",
		e.Path, e.Field, marshalForMessage(e.Input))
}

// Template is a compiled payload template: the value of Parameters,
// ResultSelector, ItemSelector or Assign. Keys ending in ".$" take the value
// of their path or intrinsic call; everything else is literal.
//
// A Template is immutable and safe for concurrent use.
type Template struct {
	root     *tnode
	usesCtx  bool
	usesVars bool
	usesFns  bool
	errs     []*TemplateError // while compiling
	// fixed, factor and bounded describe SizeBound.
	fixed, factor int
	bounded       bool
}

// tnode is a compiled template value. A subtree without ".$" fields is a
// literal, shared (never copied) by every Eval.
type tnode struct {
	literal any
	isLit   bool
	expr    *Expr
	field   string   // the ".$" key of expr
	keys    []string // object: output keys, in order
	vals    []*tnode // object: values of keys
	items   []*tnode // array: elements; nil for objects
	isArray bool
}

// CompileTemplate compiles a decoded JSON value (usually an object) as a
// payload template. Objects and arrays are walked recursively. A key ending
// in ".$" must have a string value that is a path or an intrinsic call; the
// output key drops the ".$". Keys without ".$" are literal, even when their
// values look like paths. Errors are *TemplateError.
//
// Every problem is reported: one is returned as a *TemplateError, several
// as an errors.Join of them (errors.As finds the first).
func CompileTemplate(v any) (*Template, error) {
	t := &Template{}
	root := t.compile(v, "")
	switch len(t.errs) {
	case 0:
	case 1:
		return nil, t.errs[0]
	default:
		errs := make([]error, len(t.errs))
		for i, e := range t.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	t.root = root
	t.fixed, t.factor, t.bounded = root.boundParts()
	return t, nil
}

// compile compiles v, recording problems in t.errs and carrying on so that
// all of them are found.
func (t *Template) compile(v any, pointer string) *tnode {
	switch x := v.(type) {
	case map[string]any:
		return t.compileObject(x, pointer)
	case []any:
		n := &tnode{isArray: true, items: make([]*tnode, len(x))}
		literal := true
		for i, item := range x {
			child := t.compile(item, pointer+"/"+strconv.Itoa(i))
			n.items[i] = child
			literal = literal && child.isLit
		}
		if literal {
			return &tnode{literal: x, isLit: true}
		}
		return n
	}
	return &tnode{literal: v, isLit: true}
}

func (t *Template) compileObject(m map[string]any, pointer string) *tnode {
	n := &tnode{}
	literal := true
	seen := make(map[string]string, len(m))
	for _, key := range slices.Sorted(maps.Keys(m)) {
		ptr := pointer + "/" + jsonvalue.EscapePointer(key)
		out := key
		var child *tnode
		if name, ok := strings.CutSuffix(key, ".$"); ok {
			out = name
			e, err := compileField(key, m[key])
			if err != nil {
				t.errs = append(t.errs, &TemplateError{Pointer: ptr, Field: key, Msg: err.Error(), err: errors.Unwrap(err)})
				e = &Expr{src: "$"} // placeholder: the template is not used
			}
			t.usesCtx = t.usesCtx || e.usesContext()
			t.usesVars = t.usesVars || e.usesVariables()
			t.usesFns = t.usesFns || e.path == nil
			child = &tnode{expr: e, field: key}
		} else {
			child = t.compile(m[key], ptr)
		}
		if other, dup := seen[out]; dup {
			t.errs = append(t.errs, &TemplateError{Pointer: ptr, Field: key,
				Msg: fmt.Sprintf("the fields '%s' and '%s' both produce the field '%s'", other, key, out)})
		}
		seen[out] = key
		n.keys = append(n.keys, out)
		n.vals = append(n.vals, child)
		literal = literal && child.isLit
	}
	if literal {
		return &tnode{literal: m, isLit: true}
	}
	return n
}

// fieldError is the reason a ".$" value does not compile, wrapping the
// syntax error when there is one.
type fieldError struct {
	msg string
	err error
}

func (e *fieldError) Error() string { return e.msg }
func (e *fieldError) Unwrap() error { return e.err }

// compileField compiles the value of the ".$" key.
func compileField(key string, v any) (*Expr, error) {
	msg := fmt.Sprintf("The value for the field '%s' must be a valid JSONPath or a valid intrinsic function call", key)
	s, ok := v.(string)
	if !ok {
		return nil, &fieldError{msg: msg}
	}
	e, err := CompileExpr(s)
	if err != nil {
		return nil, &fieldError{msg: msg, err: err}
	}
	return e, nil
}

// UsesContext reports whether evaluating the template may read the context
// object ("$$"), so the engine can skip building it when not. It may say yes
// for a "$$" inside a string literal of an intrinsic call.
func (t *Template) UsesContext() bool { return t.usesCtx }

// UsesVariables reports whether evaluating the template may read variables.
// It may say yes for a "$name" inside a string literal of an intrinsic call.
func (t *Template) UsesVariables() bool { return t.usesVars }

// UsesIntrinsics reports whether the template calls an intrinsic function,
// the only way a template can produce data that is not already in its
// input, context or variables.
func (t *Template) UsesIntrinsics() bool { return t.usesFns }

// Eval evaluates the template against the state input and env. It returns a
// fresh value, except that subtrees without ".$" fields are shared with the
// template (a template without any is returned as it is): callers must not
// modify the result.
//
// A definite path that selects nothing is a *FieldError; an intrinsic call
// that fails returns its *IntrinsicError. An undefined variable is also a
// *FieldError: AWS's wording for that case is not recorded anywhere we could
// find, so we use the same family.
func (t *Template) Eval(input any, env Env) (any, error) {
	return t.root.eval(input, env)
}

func (n *tnode) eval(input any, env Env) (any, error) {
	switch {
	case n.isLit:
		return n.literal, nil
	case n.expr != nil:
		v, err := n.expr.Eval(input, env)
		if err != nil {
			// Only a path of the field itself is reported this way; an
			// intrinsic call reports its own failures, arguments included.
			var pe *PathError
			if n.expr.path != nil && errors.As(err, &pe) {
				return nil, &FieldError{Field: n.field, Path: n.expr.src, Input: input}
			}
			return nil, err
		}
		return v, nil
	case n.isArray:
		out := make([]any, len(n.items))
		for i, item := range n.items {
			v, err := item.eval(input, env)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	out := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		v, err := n.vals[i].eval(input, env)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
