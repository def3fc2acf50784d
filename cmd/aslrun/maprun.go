package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/aslrun/aslrun/engine"
)

// cmdMapRuns lists the map runs of an execution's Distributed Maps, with
// their children's counts, and with --children each child's status.
func cmdMapRuns(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("map-runs", flag.ContinueOnError)
	children := fs.Bool("children", false, "also list each map run's child executions and their status")
	asJSON := fs.Bool("json", false, "print JSON")
	db := dbFlag(fs)
	id, h, err := c.openForID(ctx, fs, "map-runs", args, db, accessLocal)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	x := engine.New(engine.Config{Store: h.st})
	runs, err := x.MapRuns(ctx, id)
	if err != nil {
		return engineError(err)
	}
	kids := make([][]engine.MapRunChild, len(runs))
	if *children {
		for i, r := range runs {
			if kids[i], err = x.MapRunChildren(ctx, r.ID); err != nil {
				return err
			}
		}
	}
	if *asJSON {
		out := make([]any, len(runs))
		for i, r := range runs {
			m := map[string]any{
				"mapRunId": r.ID, "mapRunArn": r.ARN, "execution": r.Execution, "state": r.State, "label": nullable(r.Label),
				"status": r.Status, "total": r.Total, "succeeded": r.Succeeded, "failed": r.Failed, "pending": r.Pending,
				"startedAt": timeJSON(r.StartedAt), "stoppedAt": timeJSON(r.StoppedAt), "resultWriterDetails": r.ResultWriterDetails,
			}
			if *children {
				list := make([]any, len(kids[i]))
				for j, k := range kids[i] {
					list[j] = map[string]any{"index": k.Index, "id": k.ID, "status": k.Status, "error": nullable(k.Error), "cause": nullable(k.Cause)}
				}
				m["children"] = list
			}
			out[i] = m
		}
		return writeJSON(c.stdout, out)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MAP RUN\tSTATUS\tTOTAL\tSUCCEEDED\tFAILED\tPENDING")
	for i, r := range runs {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\n", r.ID, r.Status, r.Total, r.Succeeded, r.Failed, r.Pending)
		for _, k := range kids[i] {
			fmt.Fprintf(w, "  %s\t%s\t\t\t\t%s\n", k.ID, k.Status, k.Error)
		}
	}
	return w.Flush()
}
