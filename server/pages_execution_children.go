package server

// The execution page's child executions: a parent's Workflow states and
// startExecution Tasks link to the children they started (the child's
// graph opens in place, children.js), and a child links back to its
// parent and names the state that started it.

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// childView is a child execution as the parent's page lists it.
type childView struct {
	api.ChildExecution
	// N numbers it on the page (its graph's box is child-graph-N); Seq is
	// the parent's event that started it (#event-Seq), 0 when unknown.
	N, Seq int
	// Href is the child's page; Node the graph's node of the state that
	// started it ("Each/*/Deep", as the graph's data-state names it), ""
	// when the page has no graph.
	Href, Node string
}

// childLink is the child an event of the timeline started.
type childLink struct {
	ID, Status, Href string
}

// pageChildren is how many children the execution page lists (each
// costs a read of its record, at each refresh of the live part).
const pageChildren = 50

// childrenViews lists the first pageChildren children of execution id
// for its page, each with the number of the event that started it in
// events (id's history) and its node in the graph of m (nil: none), and
// how many more there are.
func (s *Server) childrenViews(ctx context.Context, id string, m *states.Machine, events []engine.Event) ([]childView, int, error) {
	list, total, err := childrenIn(ctx, s.st, id, events, pageChildren)
	if err != nil {
		return nil, 0, err
	}
	seq, node := map[string]int{}, map[string]string{}
	for i, ev := range events {
		if ev.Type != engine.EventChildStarted {
			continue
		}
		if c := childOfEvent(ev); c != "" && seq[c] == 0 {
			seq[c] = i + 1
			if m != nil {
				node[c] = graphName(m, ev.Scope+ev.State)
			}
		}
	}
	views := make([]childView, len(list))
	for i, c := range list {
		views[i] = childView{ChildExecution: c, N: i + 1, Seq: seq[c.ID], Href: "/executions/" + url.PathEscape(c.ID), Node: node[c.ID]}
	}
	return views, total - len(list), nil
}

// childEvent reports whether events of type typ name a child execution.
func childEvent(typ string) bool {
	return typ == engine.EventChildStarted || typ == engine.EventChildEnded || typ == engine.EventChildStopped
}

// childOfEvent is the child execution a ChildExecutionStarted, Ended or
// Stopped event names ("" for none).
func childOfEvent(ev engine.Event) string {
	detail, _ := ev.Detail.(map[string]any)
	id, _ := detail["execution"].(string)
	return id
}

// parentStep is the step of e's parent that started e, when a Workflow
// state or a startExecution Task did: read from e's id, or, for a child
// its Task named, from the parent's history. "" for an execution that is
// no such child (a Distributed Map's child, a fork, a first execution),
// or whose parent is gone.
func (s *Server) parentStep(ctx context.Context, e *engine.Execution) (string, error) {
	if _, mapChild := engine.MapRunOf(e.ID, e.Parent); e.Parent == "" || e.ParentCheckpoint != "" || mapChild {
		return "", nil
	}
	if step, ok := ChildStep(e.Parent, e.ID); ok {
		return step, nil
	}
	siblings, err := ChildExecutions(ctx, s.st, e.Parent)
	if errors.Is(err, engine.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range siblings {
		if c.ID == e.ID {
			return c.State, nil
		}
	}
	return "", nil
}

// GraphID is the id of the box the child's graph opens in on its
// parent's page.
func (v childView) GraphID() string { return "child-graph-" + strconv.Itoa(v.N) }
