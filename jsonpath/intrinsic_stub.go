package jsonpath

// TEMPORARY stand-in for the intrinsic functions, so that expressions and
// templates compile until intrinsic.go lands; deleted on merge.

// intrinsic is a compiled intrinsic function call such as States.Format(…).
type intrinsic struct{}

// compileIntrinsic compiles an intrinsic function call.
func compileIntrinsic(src string) (*intrinsic, error) {
	return nil, &SyntaxError{Expr: src, Msg: "intrinsic functions are not available yet"}
}

// eval evaluates the call against the input and env.
func (f *intrinsic) eval(input any, env Env) (any, error) {
	return nil, &SyntaxError{Msg: "intrinsic functions are not available yet"}
}
