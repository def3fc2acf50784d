package jsonata

import (
	"errors"
	"fmt"
)

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
	// Err is ErrSteps or ErrMemory when the evaluation exceeded its
	// Limits, else nil.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// evalError words the failure err of expression src in field.
func evalError(src, field string, err error) *Error {
	e := &Error{Expr: src, Field: field}
	var (
		ee *thrown
		le *limitError
	)
	switch {
	case errors.As(err, &le):
		e.Err = le.err
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' %s.", src, field, le)
	case errors.Is(err, errUndefined):
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned nothing (undefined).", src, field)
	case errors.Is(err, errUnsupported):
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned an unsupported result type.", src, field)
	case errors.As(err, &ee):
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' threw an error during evaluation. %s", src, field, ee.msg)
	default:
		e.Msg = fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' threw an error during evaluation. %s", src, field, err)
	}
	return e
}
