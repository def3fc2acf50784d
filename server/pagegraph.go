package server

import (
	"bytes"
	"html/template"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/graph"
	"github.com/aslrun/aslrun/states"
)

// executionGraph draws an execution's workflow with its progress: the
// states it visited, the one it is at, the one it failed in; each state
// links to its first event in the timeline. It is SVG written by package
// graph, which escapes every text, so the page may include it as is.
func executionGraph(e *engine.Execution, events []engine.Event) (template.HTML, error) {
	m, err := states.Parse(e.Definition)
	if err != nil {
		return "", err
	}
	status := map[string]string{}
	first := map[string]int{}
	for i, ev := range events {
		if ev.State == "" || ev.Superseded {
			continue
		}
		name := graphName(m, ev.Scope+ev.State)
		if _, ok := first[name]; !ok {
			first[name] = i + 1
		}
		if strings.HasSuffix(ev.Type, "StateExited") {
			status[name] = "visited"
		}
		if strings.HasSuffix(ev.Type, "Failed") || strings.HasSuffix(ev.Type, "TimedOut") {
			status[name] = "failed"
		}
	}
	if top := e.Progress.Scopes[""]; top != nil && !e.Status.Ended() && top.Next != "" {
		status[top.Next] = "current"
	}
	// A state retried or caught and then gone on from is visited; only one
	// whose last event is a failure stays failed.
	for name, st := range status {
		if st == "failed" && !failedLast(events, m, name) {
			status[name] = "visited"
		}
	}
	var buf bytes.Buffer
	err = graph.Build(m).WriteSVG(&buf, graph.SVGOptions{Status: status, Link: func(state string) string {
		if seq, ok := first[state]; ok {
			return "#event-" + strconv.Itoa(seq)
		}
		return ""
	}})
	if err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil
}

// workflowGraph draws a workflow without progress.
func workflowGraph(m *states.Machine) (template.HTML, error) {
	var buf bytes.Buffer
	if err := graph.Build(m).WriteSVG(&buf, graph.SVGOptions{}); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil
}

// failedLast reports whether the last event of state name is a failure.
func failedLast(events []engine.Event, m *states.Machine, name string) bool {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.State == "" || graphName(m, ev.Scope+ev.State) != name {
			continue
		}
		return strings.HasSuffix(ev.Type, "Failed") || strings.HasSuffix(ev.Type, "TimedOut")
	}
	return false
}

// graphName turns a state's qualified name in the history ("Each/3/Work"
// for a Map item, "Par/1/Left" for a Parallel branch) into the name package
// graph gives its node: Map iterations are one cluster ("Each/*/Work").
func graphName(m *states.Machine, qualified string) string {
	parts := strings.Split(qualified, "/")
	cur := m
	for i := 0; i+1 < len(parts); i += 2 {
		st, ok := cur.States[parts[i]]
		if !ok {
			break
		}
		switch s := st.(type) {
		case *states.Map:
			parts[i+1] = "*"
			cur = s.Processor
		case *states.Parallel:
			n, err := strconv.Atoi(parts[i+1])
			if err != nil || n < 0 || n >= len(s.Branches) {
				return qualified
			}
			cur = s.Branches[n]
		default:
			return qualified
		}
	}
	return strings.Join(parts, "/")
}
