package server

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
)

// stopExecution ends an execution as ABORTED (Step Functions'
// StopExecution) and answers with it once it is: a run of it is cancelled
// first, its agent calls in flight included. The body is optional.
func (s *Server) stopExecution(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	req, err := stopOf(r)
	if err != nil {
		return err
	}
	if _, err := s.x.Stop(r.Context(), id, req.Error, req.Cause); err != nil {
		return err
	}
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, executionOf(e))
	return nil
}

// stopOf reads a stop request: an empty body is a stop without error or
// cause.
func stopOf(r *http.Request) (api.Stop, error) {
	var req api.Stop
	br := bufio.NewReader(r.Body)
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return req, nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	if err := decodeBody(r, &req); err != nil {
		return req, err
	}
	if n := utf8.RuneCountInString(req.Error); n > api.MaxStopError {
		return req, badRequest("/error", "error has %d characters, more than %d", n, api.MaxStopError)
	}
	if n := utf8.RuneCountInString(req.Cause); n > api.MaxStopCause {
		return req, badRequest("/cause", "cause has %d characters, more than %d", n, api.MaxStopCause)
	}
	return req, nil
}
