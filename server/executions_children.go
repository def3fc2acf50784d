package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// The child executions that Workflow states and states:startExecution
// Tasks start, linked both ways: a child's Parent names its parent, and
// the parent's history records each start (engine.EventChildStarted).

// childrenParams are the query parameters of GET
// /v1/executions/{id}/children.
var childrenParams = []string{"status"}

// listChildren answers the child executions of an execution, in the order
// they were started; ?status= keeps those in a status.
func (s *Server) listChildren(w http.ResponseWriter, r *http.Request) error {
	id, q := r.PathValue("id"), r.URL.Query()
	if err := checkQuery(q, childrenParams); err != nil {
		return err
	}
	status := engine.Status(strings.ToUpper(q.Get("status")))
	switch status {
	case "", engine.StatusRunning, engine.StatusWaiting, engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut, engine.StatusAborted:
	default:
		return badRequest("", "status %q is not RUNNING, WAITING, SUCCEEDED, FAILED, TIMED_OUT or ABORTED", q.Get("status"))
	}
	children, err := ChildExecutions(r.Context(), s.st, id)
	if err != nil {
		return err
	}
	out := api.ChildExecutionList{Execution: id, Children: []api.ChildExecution{}}
	for _, c := range children {
		if status == "" || c.Status == string(status) {
			out.Children = append(out.Children, c)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ChildExecutions lists the child executions that the Workflow states and
// states:startExecution Tasks of execution id started, in the order they
// were started: read from its history's ChildExecutionStarted events and
// each child's record (a child whose record is not stored yet has no
// status). An execution that is not there is an error wrapping
// engine.ErrNotFound. The aslrun command reads a database with it.
func ChildExecutions(ctx context.Context, st interface {
	Executions
	Histories
}, id string) ([]api.ChildExecution, error) {
	if _, err := st.Load(ctx, id); err != nil {
		return nil, err
	}
	events, err := st.History(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("the children of execution %s: %w", id, err)
	}
	list, _, err := childrenIn(ctx, st, id, events, 0)
	return list, err
}

// childrenIn lists the children that events, the history of execution
// id, started, each with what its record says: the first limit of them (0:
// all), and how many there are.
func childrenIn(ctx context.Context, st Executions, id string, events []engine.Event, limit int) ([]api.ChildExecution, int, error) {
	var out []api.ChildExecution
	seen := map[string]bool{}
	for _, ev := range events {
		if ev.Type != engine.EventChildStarted {
			continue
		}
		detail, _ := ev.Detail.(map[string]any)
		child, _ := detail["execution"].(string)
		if child == "" || seen[child] {
			// A resumed parent attaches to its child: one entry each.
			continue
		}
		seen[child] = true
		if limit > 0 && len(out) == limit {
			continue
		}
		c := api.ChildExecution{ID: child, State: childStep(id, child, ev), Superseded: ev.Superseded}
		c.Workflow, _ = detail["workflow"].(string)
		c.Detached, _ = detail["detached"].(bool)
		e, err := st.Load(ctx, child)
		switch {
		case errors.Is(err, engine.ErrNotFound):
		case err != nil:
			return nil, 0, fmt.Errorf("child %s of execution %s: %w", child, id, err)
		default:
			c.Status, c.Error = string(e.Status), e.Error
			c.StartedAt, c.StoppedAt = timePtr(e.StartedAt), timePtr(e.StoppedAt)
		}
		out = append(out, c)
	}
	return out, len(seen), nil
}

// childStep is the step of parent that started child: from the child's
// id ("<parent>/<step>.<attempt>", engine.ChildWorkflowID), or, for a
// child its Task named, the state's qualified name from the event.
func childStep(parent, child string, ev engine.Event) string {
	if step, ok := ChildStep(parent, child); ok {
		return step
	}
	return ev.Scope + ev.State
}

// ChildStep returns the step ("Research#1", qualified inside Map items
// and Parallel branches) of parent whose Workflow state or startExecution
// Task started child, read from the child's id,
// "<parent>/<step>.<attempt>" (engine.ChildWorkflowID) with "~N" after it
// for the Nth child of a step a rollback of the parent went back over;
// false when the id does not say (a Distributed Map's child, a fork, a
// child its Task named).
func ChildStep(parent, child string) (string, bool) {
	if !engine.IsWorkflowChild(child, parent) {
		return "", false
	}
	rest := child[len(parent)+1:]
	if i := strings.LastIndexByte(rest, '~'); i >= 0 {
		if !digits(rest[i+1:]) {
			return "", false
		}
		rest = rest[:i]
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 || !strings.Contains(rest[:i], "#") || !digits(rest[i+1:]) {
		return "", false
	}
	return rest[:i], true
}

// digits reports whether s is a number: one digit or more, nothing else.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
