package jsonata

import (
	"errors"
	"fmt"
	"strings"

	lib "github.com/blues/jsonata-go"
)

// jsMessage words an evaluation error of the library as JSONata's
// JavaScript implementation (which AWS runs) words it, with its code: the
// causes AWS records quote that text ("T1006: Attempted to invoke a
// non-function"). Errors without a JavaScript counterpart keep the
// library's text.
func jsMessage(err error) string {
	var ee *lib.EvalError
	if errors.As(err, &ee) {
		if m, ok := evalMessages[ee.Type]; ok {
			return strings.ReplaceAll(strings.ReplaceAll(m, "{{token}}", ee.Token), "{{value}}", ee.Value)
		}
		return ee.Error()
	}
	var ac *lib.ArgCountError
	if errors.As(err, &ac) {
		return fmt.Sprintf("T0410: Argument count of function %s does not match function signature (%d expected, %d given)", ac.Func, ac.Expected, ac.Received)
	}
	var at *lib.ArgTypeError
	if errors.As(err, &at) {
		return fmt.Sprintf("T0410: Argument %d of function %s does not match function signature", at.Which, at.Func)
	}
	return err.Error()
}

// evalMessages are the JavaScript implementation's messages for the
// library's evaluation errors.
var evalMessages = map[lib.ErrType]string{
	lib.ErrNonIntegerLHS:      "T2003: The left side of the range operator (..) must evaluate to an integer",
	lib.ErrNonIntegerRHS:      "T2004: The right side of the range operator (..) must evaluate to an integer",
	lib.ErrNonNumberLHS:       "T2001: The left side of the {{value}} operator must evaluate to a number",
	lib.ErrNonNumberRHS:       "T2002: The right side of the {{value}} operator must evaluate to a number",
	lib.ErrNonComparableLHS:   "T2010: The expressions either side of operator {{value}} must evaluate to numeric or string values",
	lib.ErrNonComparableRHS:   "T2010: The expressions either side of operator {{value}} must evaluate to numeric or string values",
	lib.ErrTypeMismatch:       "T2009: The values either side of operator {{value}} must be of the same data type",
	lib.ErrNonCallable:        "T1006: Attempted to invoke a non-function",
	lib.ErrNonCallableApply:   "T2006: The right side of the function application operator ~> must be a function",
	lib.ErrNonCallablePartial: "T1007: Attempted to partially apply a non-function",
	lib.ErrNumberInf:          "D1001: Number out of range",
	lib.ErrNumberNaN:          "D1001: Number out of range",
	lib.ErrMaxRangeItems:      "D2014: The size of the sequence allocated by the range operator (..) must not exceed 1e7",
	lib.ErrIllegalKey:         "T1003: Key in object structure must evaluate to a string",
	lib.ErrDuplicateKey:       "D1009: Multiple key definitions evaluate to same key: {{value}}",
	lib.ErrClone:              "T2011: The insert/update clause of the transform expression must evaluate to an object",
	lib.ErrIllegalUpdate:      "T2011: The insert/update clause of the transform expression must evaluate to an object",
	lib.ErrIllegalDelete:      "T2012: The delete clause of the transform expression must evaluate to a string or array of strings",
	lib.ErrNonSortable:        "T2008: The expressions within an order-by clause must evaluate to numeric or string values",
	lib.ErrSortMismatch:       "T2007: Type mismatch when comparing values in order-by clause",
}

// Error is an expression that failed at run time; its message is the
// cause AWS gives for it, without the state's part ("An error occurred
// while executing the state …"), which the engine adds. The engine raises
// it as States.QueryEvaluationError.
type Error struct {
	// Expr is the expression's text; Field where it is in the state
	// ("Output/result", "Items").
	Expr  string
	Field string
	// Msg is the whole cause.
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// evalError words the failure err of expression src in field.
func evalError(src, field string, err error) *Error {
	e := &Error{Expr: src, Field: field}
	var le *libError
	switch {
	case errors.Is(err, errUndefined):
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned nothing (undefined).", src, field)
	case errors.Is(err, errUnsupported):
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned an unsupported result type.", src, field)
	case errors.As(err, &le):
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' threw an error during evaluation. %s", src, field, le.msg)
	default:
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' threw an error during evaluation. %s", src, field, err)
	}
	return e
}
