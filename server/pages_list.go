package server

// The executions page: the list, filtered and paged, kept current by the
// list stream (stream_list.go) in the page's script.

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// executionsData is the executions page's data.
type executionsData struct {
	base
	Status, Workflow string
	Statuses         []engine.Status
	Executions       []store.Summary
	Next             string
	// Stream is the URL of the list stream that resumes after the list
	// shown ("" when the server could not read it: the page stays as
	// loaded). Paged is true past the first page, where only the rows
	// shown change (new executions go on the first page).
	Stream string
	Paged  bool
	Limit  int
}

// executionsPage lists executions, newest first, filtered by status and
// workflow, a page at a time; a filter the list cannot take shows the
// form again with why.
func (s *Server) executionsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	data := executionsData{base: baseOf(r, "Executions"), Status: q.Get("status"), Workflow: q.Get("workflow"), Statuses: listStatuses, Limit: executionsPerPage}
	lq, err := parseListQuery(q)
	if err != nil {
		data.Error = problemOf(err).detail
		return s.render(w, http.StatusBadRequest, "executions", data)
	}
	data.Status = string(lq.Status)
	// The stream's cursor is read before the list: what changes between
	// the two comes again on the stream, and the page applies it once.
	if err := s.feed.refresh(r.Context(), s.st); err != nil {
		s.log.Warn("follow the executions for the list page", "error", err)
	} else {
		v := lq.values()
		v.Set("after", fmt.Sprint(s.feed.cursor()))
		data.Stream = "/v1/execution-events?" + v.Encode()
	}
	after := q.Get("after")
	data.Paged = after != ""
	list, err := s.st.List(r.Context(), store.ListOptions{Status: lq.Status, MachineName: lq.Workflow, After: after, Limit: executionsPerPage})
	if errors.Is(err, engine.ErrNotFound) {
		data.Error = fmt.Sprintf("after %q names no execution: follow the next link of the previous page", after)
		data.Stream = ""
		return s.render(w, http.StatusBadRequest, "executions", data)
	}
	if err != nil {
		return err
	}
	data.Executions = list
	if len(list) == executionsPerPage {
		next := lq.values()
		next.Set("after", list[len(list)-1].ID)
		data.Next = "/executions?" + next.Encode()
	}
	return s.render(w, http.StatusOK, "executions", data)
}
