package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// The map runs of Distributed Maps and their child executions.

// listMapRuns answers an execution's map runs with their counts.
func (s *Server) listMapRuns(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	runs, err := s.x.MapRuns(r.Context(), id)
	if err != nil {
		return err
	}
	out := api.MapRunList{Execution: id, MapRuns: []api.MapRun{}}
	for _, mr := range runs {
		out.MapRuns = append(out.MapRuns, mapRunOf(mr))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listMapRunChildren answers a page of a map run's children: ?status=
// keeps those in a status, ?after= (the previous page's next) starts
// after that index, ?limit= (1 to 1000, 100 by default) caps the page.
func (s *Server) listMapRunChildren(w http.ResponseWriter, r *http.Request) error {
	id, mapRun := r.PathValue("id"), r.PathValue("mapRun")
	q := r.URL.Query()
	page := engine.ChildrenPage{Status: engine.Status(strings.ToUpper(q.Get("status")))}
	switch page.Status {
	case "", engine.StatusRunning, engine.StatusWaiting, engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut, engine.StatusAborted:
	default:
		return badRequest("", "status %q is not RUNNING, WAITING, SUCCEEDED, FAILED, TIMED_OUT or ABORTED", q.Get("status"))
	}
	limit, err := pageSize(q.Get("limit"))
	if err != nil {
		return err
	}
	page.Limit = limit
	if v := q.Get("after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badRequest("", "after %q must be a child's index (the next cursor of the previous page)", v)
		}
		page.From = n + 1
	}
	runs, err := s.x.MapRuns(r.Context(), id)
	if err != nil {
		return err
	}
	found := false
	for _, mr := range runs {
		found = found || mr.ID == mapRun
	}
	if !found {
		known := make([]string, len(runs))
		for i, mr := range runs {
			known[i] = mr.ID
		}
		detail := "execution " + id + " has no map run " + strconv.Quote(mapRun)
		if len(known) > 0 {
			detail += " (its map runs: " + strings.Join(known, ", ") + ")"
		} else {
			detail += " (it has none)"
		}
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "no such map run", detail: detail}
	}
	children, err := s.x.MapRunChildrenPage(r.Context(), mapRun, page)
	if err != nil {
		return err
	}
	out := api.MapRunChildList{MapRun: mapRun, Children: []api.MapRunChild{}}
	for _, c := range children {
		out.Children = append(out.Children, api.MapRunChild{Index: c.Index, ID: c.ID, Status: string(c.Status), Error: c.Error, Cause: c.Cause})
	}
	if len(children) == limit {
		out.Next = strconv.Itoa(children[len(children)-1].Index)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func mapRunOf(mr engine.MapRun) api.MapRun {
	out := api.MapRun{
		ID: mr.ID, ARN: mr.ARN, Execution: mr.Execution, State: mr.State, Label: mr.Label, Status: mr.Status,
		Total: mr.Total, Succeeded: mr.Succeeded, Failed: mr.Failed, Aborted: mr.Aborted, Pending: mr.Pending,
		StartedAt: timePtr(mr.StartedAt), StoppedAt: timePtr(mr.StoppedAt), RedriveCount: mr.RedriveCount, RedrivenAt: timePtr(mr.RedrivenAt),
	}
	if mr.ResultWriterDetails != nil {
		out.ResultWriterDetails = raw(mr.ResultWriterDetails)
	}
	return out
}
