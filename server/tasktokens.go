package server

import (
	"net/http"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// The answers to task tokens: of the callback pattern, and of the tasks of
// activities handed to workers. The token is in the body, never in the
// path, so that it stays out of access logs. Each route takes the worker
// role, which an operator and an admin have too: an answer is the result
// of a Task (not a choice among options an approval offers), so a token is
// as strong as a resume, and it is all a worker may send.

// taskSuccess records a task token's result and continues the execution in
// the background (202).
func (s *Server) taskSuccess(w http.ResponseWriter, r *http.Request) error {
	var req api.TaskSuccess
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Token == "" {
		return badRequest("/token", "token is required")
	}
	if len(req.Output) == 0 {
		return badRequest("/output", "output is required (the Task's result, any JSON value)")
	}
	out, err := document(req.Output, "/output", nil)
	if err != nil {
		return err
	}
	res, err := s.x.SendTaskSuccess(r.Context(), req.Token, out, engine.ResumeOptions{RecordOnly: true})
	if err != nil {
		return err
	}
	return s.answered(w, r, res.ID)
}

// taskFailure records a task token's failure and continues the execution
// in the background (202): Retry and Catch see the error.
func (s *Server) taskFailure(w http.ResponseWriter, r *http.Request) error {
	var req api.TaskFailure
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Token == "" {
		return badRequest("/token", "token is required")
	}
	res, err := s.x.SendTaskFailure(r.Context(), req.Token, req.Error, req.Cause, engine.ResumeOptions{RecordOnly: true})
	if err != nil {
		return err
	}
	return s.answered(w, r, res.ID)
}

// taskHeartbeat restarts a waiting Task's HeartbeatSeconds (204).
func (s *Server) taskHeartbeat(w http.ResponseWriter, r *http.Request) error {
	var req api.TaskHeartbeat
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Token == "" {
		return badRequest("/token", "token is required")
	}
	if err := s.x.SendTaskHeartbeat(r.Context(), req.Token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// answered shows the execution as recorded and lets it run on.
func (s *Server) answered(w http.ResponseWriter, r *http.Request, id string) error {
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	s.continueLater("continue after a task token", id)
	writeJSON(w, http.StatusAccepted, executionOf(e))
	return nil
}
