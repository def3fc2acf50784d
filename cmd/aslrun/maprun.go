package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// mapRunView is what map-runs prints of a map run, read from the store or
// through the API.
type mapRunView struct {
	run      api.MapRun
	children []api.MapRunChild
}

// cmdMapRuns lists the map runs of an execution's Distributed Maps, with
// their children's counts, and with --children each child's status. When
// a server holds the database it asks the server's API.
func cmdMapRuns(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("map-runs", flag.ContinueOnError)
	children := fs.Bool("children", false, "also list each map run's child executions and their status")
	asJSON := fs.Bool("json", false, "print JSON")
	follow := fs.Bool("follow", false, "print the map runs' progress as they move (a bar per map run on a terminal, a line per change elsewhere) until they have all ended, then the table")
	every := fs.Duration("every", time.Second, "with --follow, how often to read the map runs (at least 100ms)")
	db := dbFlag(fs)
	id, h, err := c.openForID(ctx, fs, "map-runs", args, db, accessRead)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	switch {
	case *every < minFollowEvery:
		return usageErrorf("map-runs: --every %s is shorter than %s", *every, minFollowEvery)
	case *follow && *asJSON:
		return usageErrorf("map-runs: --follow prints progress for people; leave out --json (or --follow)")
	}
	fetch := func() ([]mapRunView, error) {
		if h.api != nil {
			runs, err := remoteMapRuns(ctx, h, id, *children)
			if err != nil {
				return nil, remoteError(h, err)
			}
			return runs, nil
		}
		runs, err := localMapRuns(ctx, h, id, *children)
		if err != nil {
			return nil, engineError(err)
		}
		return runs, nil
	}
	var runs []mapRunView
	if *follow && (h.api != nil || h.shared()) {
		if runs, err = followMapRuns(ctx, c.stdout, *every, fetch); err != nil {
			return err
		}
	} else {
		if *follow {
			fmt.Fprintf(c.stderr, "aslrun: map-runs --follow: no process runs executions of %s while this command holds it; the map runs as they are:\n", *db)
		}
		if runs, err = fetch(); err != nil {
			return err
		}
	}
	if *asJSON {
		out := make([]any, len(runs))
		for i, v := range runs {
			r := v.run
			var details any
			if len(r.ResultWriterDetails) > 0 {
				if details, err = jsonvalue.Decode(r.ResultWriterDetails); err != nil {
					return err
				}
			}
			m := map[string]any{
				"mapRunId": r.ID, "mapRunArn": r.ARN, "execution": r.Execution, "state": r.State, "label": nullable(r.Label),
				"status": r.Status, "total": r.Total, "succeeded": r.Succeeded, "failed": r.Failed, "aborted": r.Aborted, "pending": r.Pending,
				"startedAt": timeJSONPtr(r.StartedAt), "stoppedAt": timeJSONPtr(r.StoppedAt), "resultWriterDetails": details,
				"redriveCount": r.RedriveCount, "redrivenAt": timeJSONPtr(r.RedrivenAt),
			}
			if *children {
				list := make([]any, len(v.children))
				for j, k := range v.children {
					list[j] = map[string]any{"index": k.Index, "id": k.ID, "status": k.Status, "error": nullable(k.Error), "cause": nullable(k.Cause)}
				}
				m["children"] = list
			}
			out[i] = m
		}
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("MAP RUN", "STATUS", "TOTAL", "SUCCEEDED", "FAILED", "ABORTED", "PENDING")
	for _, v := range runs {
		r := v.run
		w.row(r.ID, fmt.Sprint(r.Status), fmt.Sprint(r.Total), fmt.Sprint(r.Succeeded), fmt.Sprint(r.Failed), fmt.Sprint(r.Aborted), fmt.Sprint(r.Pending))
		for _, k := range v.children {
			w.row("  "+k.ID, fmt.Sprint(k.Status), "", "", "", "", k.Error)
		}
	}
	return w.flush()
}

// localMapRuns reads the map runs (and their children) from the store.
func localMapRuns(ctx context.Context, h *handle, id string, children bool) ([]mapRunView, error) {
	x := engine.New(engine.Config{Store: h.st})
	runs, err := x.MapRuns(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]mapRunView, len(runs))
	for i, r := range runs {
		out[i].run = api.MapRun{
			ID: r.ID, ARN: r.ARN, Execution: r.Execution, State: r.State, Label: r.Label, Status: r.Status,
			Total: r.Total, Succeeded: r.Succeeded, Failed: r.Failed, Aborted: r.Aborted, Pending: r.Pending,
			StartedAt: timeOrNil(r.StartedAt), StoppedAt: timeOrNil(r.StoppedAt), RedriveCount: r.RedriveCount, RedrivenAt: timeOrNil(r.RedrivenAt),
		}
		if r.ResultWriterDetails != nil {
			if out[i].run.ResultWriterDetails, err = jsonvalue.Marshal(r.ResultWriterDetails); err != nil {
				return nil, err
			}
		}
		if !children {
			continue
		}
		kids, err := x.MapRunChildren(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			out[i].children = append(out[i].children, api.MapRunChild{Index: k.Index, ID: k.ID, Status: string(k.Status), Error: k.Error, Cause: k.Cause})
		}
	}
	return out, nil
}

// remoteMapRuns asks the API of the process holding the database, paging
// through each map run's children.
func remoteMapRuns(ctx context.Context, h *handle, id string, children bool) ([]mapRunView, error) {
	list, err := h.api.MapRuns(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]mapRunView, len(list.MapRuns))
	for i, r := range list.MapRuns {
		out[i].run = r
		q := client.ChildrenQuery{Limit: 1000}
		for children {
			page, err := h.api.MapRunChildren(ctx, id, r.ID, q)
			if err != nil {
				return nil, err
			}
			out[i].children = append(out[i].children, page.Children...)
			if page.Next == "" {
				break
			}
			q.After = page.Next
		}
	}
	return out, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// timeJSONPtr writes t for --json, null when absent.
func timeJSONPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return timeJSON(*t)
}
