package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// cmdFeedback exports the feedback people gave on states' outputs as
// JSONL (one api.Feedback a line, oldest first), from the database or
// through the API of the process holding it.
func cmdFeedback(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("feedback", flag.ContinueOnError)
	workflow := fs.String("workflow", "", "only the feedback on executions of this workflow")
	state := fs.String("state", "", "only the feedback on this state")
	execution := fs.String("execution", "", "only the feedback on this execution")
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "feedback", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usageErrorf("feedback: give export")
	case pos[0] != "export":
		return usageErrorf("feedback: %q is not export", pos[0])
	case len(pos) > 1:
		return usageErrorf("feedback export: unexpected argument %q", pos[1])
	}
	h, err := c.open(ctx, *db, accessRead, holderInfo{})
	if err != nil {
		return err
	}
	defer h.close()
	enc := json.NewEncoder(c.stdout)
	if h.api != nil {
		q := client.FeedbackQuery{Workflow: *workflow, State: *state, Execution: *execution, Limit: 1000}
		for {
			page, err := h.api.Feedback(ctx, q)
			if err != nil {
				return remoteError(h, err)
			}
			for _, f := range page.Feedback {
				if err := enc.Encode(f); err != nil {
					return err
				}
			}
			if page.Next == "" {
				return nil
			}
			q.After = page.Next
		}
	}
	st, ok := h.st.(engine.FeedbackStore)
	if !ok {
		return fmt.Errorf("feedback: database %s keeps no feedback", *db)
	}
	f := engine.FeedbackFilter{Workflow: *workflow, State: *state, Execution: *execution, Limit: 1000}
	for {
		page, err := st.ListFeedback(ctx, f)
		if err != nil {
			return err
		}
		for i := range page {
			out, err := feedbackJSON(&page[i])
			if err != nil {
				return err
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
		}
		if len(page) < f.Limit {
			return nil
		}
		f.After = page[len(page)-1].ID
	}
}

// feedbackJSON is f as the API shows it.
func feedbackJSON(f *engine.Feedback) (api.Feedback, error) {
	value, err := jsonvalue.Marshal(f.Value)
	if err != nil {
		return api.Feedback{}, err
	}
	out := api.Feedback{ID: f.ID, Execution: f.Execution, Workflow: f.Workflow, State: f.State, Step: f.Step, By: f.By, Role: f.Role,
		Type: f.Type, Value: value, Comment: f.Comment, CreatedAt: f.CreatedAt.UTC()}
	if f.Output != nil {
		if out.Output, err = jsonvalue.Marshal(f.Output); err != nil {
			return api.Feedback{}, err
		}
	}
	return out, nil
}
