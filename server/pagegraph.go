package server

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/graph"
	"github.com/aslrun/aslrun/states"
)

// executionGraph draws an execution's workflow m with its progress: the
// states it visited, the one it is at, the one it failed in or was stopped
// at, and on each
// Map's cluster how many items its iterations ran and failed; each state
// links to its first event in the timeline. It is SVG written by package
// graph, which escapes every text, so the page may include it as is.
func executionGraph(m *states.Machine, e *engine.Execution, events []engine.Event) (template.HTML, error) {
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
	if top := e.Progress.Scopes[""]; top != nil && (e.Status == engine.StatusFailed || e.Status == engine.StatusTimedOut) && top.Done && top.Next != "" {
		// The state the execution failed in (and a redrive runs again),
		// even when it recorded no failure of its own (a Choice).
		status[top.Next] = "failed"
	}
	if e.Status == engine.StatusAborted {
		// The state an operator stopped it at, which recorded no failure.
		if at := stoppedAt(e, events); at != "" {
			status[graphName(m, at)] = "stopped"
		}
	}
	var buf bytes.Buffer
	err := graph.Build(m).WriteSVG(&buf, graph.SVGOptions{Unstyled: true, Status: status, Notes: mapNotes(m, events, e.Status.Ended()), Link: func(state string) string {
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

// stoppedAt is the top-level state a stopped execution was at: the one
// it was to run next, else the last one it entered and did not leave; ""
// when none.
func stoppedAt(e *engine.Execution, events []engine.Event) string {
	if top := e.Progress.Scopes[""]; top != nil && top.Next != "" {
		return top.Next
	}
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.Scope != "" || ev.State == "" || ev.Superseded {
			continue
		}
		if strings.HasSuffix(ev.Type, "StateExited") {
			return ""
		}
		if strings.HasSuffix(ev.Type, "StateEntered") {
			return ev.State
		}
	}
	return ""
}

// iterations counts the items of one run of a Map state.
type iterations struct {
	started, succeeded, failed int
	done                       bool // the Map state finished
	running                    int  // in sums: items of runs not finished
}

// mapNotes says, for each Map state (by its graph name), how many items
// its last run went through and how many failed, over every instance of
// it when it is nested in another Map.
func mapNotes(m *states.Machine, events []engine.Event, ended bool) map[string]string {
	runs := map[string]*iterations{} // by qualified name: the last run
	for _, ev := range events {
		if ev.Superseded || ev.State == "" {
			continue
		}
		name := ev.Scope + ev.State
		switch ev.Type {
		case engine.EventMapStateStarted:
			runs[name] = &iterations{}
		case engine.EventMapStateSucceeded, engine.EventMapStateFailed:
			if it := runs[name]; it != nil {
				it.done = true
			}
		case engine.EventMapIterationStart, engine.EventMapIterationOK, engine.EventMapIterationFailed:
			it := runs[name]
			if it == nil {
				it = &iterations{}
				runs[name] = it
			}
			switch ev.Type {
			case engine.EventMapIterationStart:
				it.started++
			case engine.EventMapIterationOK:
				it.succeeded++
			default:
				it.failed++
			}
		}
	}
	sums := map[string]*iterations{}
	for name, it := range runs {
		g := graphName(m, name)
		if sums[g] == nil {
			sums[g] = &iterations{}
		}
		sums[g].started += it.started
		sums[g].succeeded += it.succeeded
		sums[g].failed += it.failed
		if !it.done && !ended {
			sums[g].running += it.started - it.succeeded - it.failed
		}
	}
	notes := map[string]string{}
	for g, it := range sums {
		note := fmt.Sprintf("%d items", it.started)
		if it.started == 1 {
			note = "1 item"
		}
		if it.failed > 0 {
			note += fmt.Sprintf(", %d failed", it.failed)
		}
		if it.running > 0 {
			note += fmt.Sprintf(", %d running", it.running)
		}
		notes[g] = note
	}
	return notes
}

// workflowGraph draws a workflow without progress.
func workflowGraph(m *states.Machine) (template.HTML, error) {
	var buf bytes.Buffer
	if err := graph.Build(m).WriteSVG(&buf, graph.SVGOptions{Unstyled: true}); err != nil {
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
