package engine

import (
	"context"
	"errors"
	"fmt"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// fail runs a Fail state: it always returns the error the state names.
func (h *stateRun) fail(ctx context.Context, s *states.Fail, raw any) error {
	if s.JSONata() {
		return h.jsonataFail(ctx, s, raw)
	}
	name, cause := s.Error, s.Cause
	if s.ErrorPath != nil {
		v, err := h.failField(s.ErrorPath, "ErrorPath", raw)
		if err != nil {
			return err
		}
		name = v
	}
	if s.CausePath != nil {
		v, err := h.failField(s.CausePath, "CausePath", raw)
		if err != nil {
			return err
		}
		cause = v
	}
	return &asl.Error{Name: asl.ErrorName(name), Cause: cause}
}

// failField evaluates ErrorPath or CausePath, which must give a string.
func (h *stateRun) failField(e *jsonpath.Expr, field string, raw any) (string, error) {
	v, err := e.Eval(raw, h.env)
	if err != nil {
		var pe *jsonpath.PathError
		if errors.As(err, &pe) {
			return "", h.runtimeError(fmt.Sprintf("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", e.String(), field, compactJSON(raw)))
		}
		return "", h.pathError(err)
	}
	s, ok := v.(string)
	if !ok {
		return "", h.runtimeError(fmt.Sprintf("The %s field must refer to a string value, but '%s' refers to %s", field, e.String(), jsonvalue.TypeName(v)))
	}
	return s, nil
}

// compactJSON writes v as compact JSON for an error message.
func compactJSON(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
