package jsonpath

import "strings"

// Expr is the value of a ".$" field on its own: a path ("$…", "$$…",
// "$name…") or an intrinsic function call ("States.Name(…)"). Fields such as
// Variable, ItemsPath, Cause.$ and Prompt.$ hold one.
//
// An Expr is immutable and safe for concurrent use.
type Expr struct {
	src  string
	path *Path
	fn   *intrinsic
}

// CompileExpr compiles a path or an intrinsic function call. A string that
// starts with "States." is an intrinsic call (as in AWS); one that starts
// with "$" is a path; anything else is a *SyntaxError. Errors in a path or
// a call are the *SyntaxError Compile or the intrinsic compiler returns.
func CompileExpr(src string) (*Expr, error) {
	switch {
	case strings.HasPrefix(src, "States."):
		fn, err := compileIntrinsic(src)
		if err != nil {
			return nil, err
		}
		return &Expr{src: src, fn: fn}, nil
	case strings.HasPrefix(src, "$"):
		p, err := Compile(src)
		if err != nil {
			return nil, err
		}
		return &Expr{src: src, path: p}, nil
	}
	return nil, &SyntaxError{Expr: src, Msg: "expected a path starting with $ or an intrinsic function call starting with States."}
}

// Eval evaluates the expression: a path's Get, or the intrinsic call. A path
// that does not resolve is a *PathError; a failing call is an
// *IntrinsicError.
func (e *Expr) Eval(input any, env Env) (any, error) {
	switch {
	case e.path != nil:
		return e.path.Get(input, env)
	case e.fn != nil:
		return e.fn.eval(input, env)
	}
	return nil, &SyntaxError{Msg: "empty expression: use CompileExpr"}
}

// String returns the source text of the expression.
func (e *Expr) String() string { return e.src }

// Path returns the compiled path, or nil when the expression is an
// intrinsic call.
func (e *Expr) Path() *Path { return e.path }

// usesContext reports whether the expression may read "$$". For an
// intrinsic call it looks at the source text, so it may say yes for a "$$"
// inside a string literal.
func (e *Expr) usesContext() bool {
	if e.path != nil {
		return e.path.root == rootContext
	}
	return strings.Contains(e.src, "$$")
}

// usesVariables reports whether the expression may read a variable. For an
// intrinsic call it looks at the source text for "$" followed by a letter,
// so it may say yes for one inside a string literal.
func (e *Expr) usesVariables() bool {
	if e.path != nil {
		return e.path.root == rootVariable
	}
	for i := 0; i+1 < len(e.src); i++ {
		if e.src[i] == '$' && isLetter(e.src[i+1]) && (i == 0 || e.src[i-1] != '$') {
			return true
		}
	}
	return false
}
