package server

import (
	"context"
	"slices"

	"github.com/aslrun/aslrun/engine"
)

// maxFailedShown caps the failed children a map run lists on the
// execution page (the API pages through them all).
const maxFailedShown = 20

// mapRunView is a map run as the execution page shows it: its counts and
// its first failed children.
type mapRunView struct {
	engine.MapRun
	// FailedChildren are children that failed, timed out or were aborted, by
	// index (at most maxFailedShown, the first of each status); More is
	// set when there are more.
	FailedChildren []engine.MapRunChild
	More           bool
}

// mapRunViews gathers the map runs of execution id for its page.
func (s *Server) mapRunViews(ctx context.Context, id string) ([]mapRunView, error) {
	runs, err := s.x.MapRuns(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []mapRunView
	for _, mr := range runs {
		v := mapRunView{MapRun: mr}
		// Each listing reads children until it has found as many as the
		// counts say there are (failed counts FAILED and TIMED_OUT).
		failed := 0
		for _, c := range []struct {
			status engine.Status
			count  int
		}{{engine.StatusFailed, mr.Failed}, {engine.StatusTimedOut, mr.Failed}, {engine.StatusAborted, mr.Aborted}} {
			want := c.count
			if c.status != engine.StatusAborted {
				want -= failed
			}
			want = min(want, maxFailedShown+1-len(v.FailedChildren))
			if want <= 0 {
				continue
			}
			kids, err := s.x.MapRunChildrenPage(ctx, mr.ID, engine.ChildrenPage{Status: c.status, Limit: want})
			if err != nil {
				return nil, err
			}
			if c.status != engine.StatusAborted {
				failed += len(kids)
			}
			v.FailedChildren = append(v.FailedChildren, kids...)
		}
		slices.SortFunc(v.FailedChildren, func(a, b engine.MapRunChild) int { return a.Index - b.Index })
		if len(v.FailedChildren) > maxFailedShown {
			v.FailedChildren, v.More = v.FailedChildren[:maxFailedShown], true
		}
		out = append(out, v)
	}
	return out, nil
}
