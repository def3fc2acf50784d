package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// redriveExecution restarts a FAILED or TIMED_OUT execution from the state
// that failed, with the request's JSON Patch applied to that state's input
// first, and runs it in the background (202).
func (s *Server) redriveExecution(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req api.Redrive
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			return err
		}
	}
	var opts engine.RedriveOptions
	if len(req.Patch) > 0 {
		v, err := document(req.Patch, "/patch", nil)
		if err != nil {
			return err
		}
		if opts.Patch, err = engine.ParsePatch(v); err != nil {
			return redriveProblem(err)
		}
	}
	opts.RecordOnly = true
	if _, err := s.x.Redrive(r.Context(), id, opts); err != nil {
		return redriveProblem(err)
	}
	// The answer shows the execution as recorded, before it runs on.
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	s.continueLater("continue after a redrive", id)
	writeJSON(w, http.StatusAccepted, executionOf(e))
	return nil
}

// redriveProblem is the problem of a refused redrive: the patch at fault
// (400, or 422 when governance refuses what it makes), or an execution
// that cannot be redriven (409).
func redriveProblem(err error) error {
	var pe *engine.PatchError
	var ge *engine.GovernanceError
	switch {
	case errors.As(err, &pe):
		return badRequest("/patch"+pe.Pointer(), "%s", pe.Msg)
	case errors.As(err, &ge):
		return &problem{status: http.StatusUnprocessableEntity, kind: "governance", title: "refused by the workflow's governance", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/patch", Detail: fmt.Sprintf("%s: %s", ge.Violation.Name, ge.Violation.Cause)}}}
	case errors.Is(err, engine.ErrInvalidInput):
		return &problem{status: http.StatusUnprocessableEntity, kind: "invalid-input", title: "invalid input", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/patch", Detail: err.Error()}}}
	case errors.Is(err, engine.ErrNotRedrivable):
		return &problem{status: http.StatusConflict, kind: "not-redrivable", title: "the execution cannot be redriven", detail: err.Error()}
	}
	return err
}
