package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	err := graph.Build(m).WriteSVG(&buf, graph.SVGOptions{Unstyled: true, Focusable: true, Status: status, Notes: mapNotes(m, events, e.Status.Ended()), Link: func(state string) string {
		if seq, ok := first[state]; ok {
			return "#event-" + strconv.Itoa(seq)
		}
		return ""
	}})
	if err != nil {
		return "", err
	}
	// The side panel's data: JSON in an attribute, HTML-escaped (the
	// page's one script element stays its own).
	data, err := json.Marshal(graphPanel(m, events, "/executions/"+url.PathEscape(e.ID)+"/events/"))
	if err != nil {
		return "", fmt.Errorf("the graph's panel data: %w", err)
	}
	buf.WriteString(`<div id="graph-data" data-json="`)
	buf.WriteString(html.EscapeString(string(data)))
	buf.WriteString(`" hidden></div>` + "\n")
	return template.HTML(buf.String()), nil
}

// panelShown is how many bytes of a payload the graph's side panel
// shows; panelVisits how many visits of one node it lists (the last).
const (
	panelShown  = 2 << 10
	panelVisits = 20
)

// panelState is what the graph's side panel shows of one node: the
// visits of its state (for a node in a Map's processor, those of every
// item), the last panelVisits of them, and how many earlier ones are
// left out.
type panelState struct {
	Visits  []*panelVisit `json:"visits"`
	Earlier int           `json:"earlier,omitempty"`
}

// panelVisit is one visit of a state: from its entered event to its
// exited one (none yet, or none when it failed).
type panelVisit struct {
	// State is the state's qualified name ("Each/3/Work"), Seq its
	// entered event's number (the timeline's anchor, #event-{seq}).
	State   string     `json:"state"`
	Seq     int64      `json:"seq"`
	Entered time.Time  `json:"entered"`
	Exited  time.Time  `json:"exited,omitzero"`
	Input   *panelText `json:"input,omitempty"`
	Output  *panelText `json:"output,omitempty"`
	// Failures are the state's failed attempts (Task, Activity, Map,
	// Parallel, Approval failures and timeouts): retries, or caught, when
	// the visit went on to its exit; Error and Cause the last one when
	// the visit ended in it.
	Failures []panelFailure `json:"failures,omitempty"`
	Error    string         `json:"error,omitempty"`
	Cause    string         `json:"cause,omitempty"`
	// Calls are its agent's durable steps: model turns, tool calls and
	// plain steps, in the order they ended.
	Calls []panelCall `json:"calls,omitempty"`
}

// panelText is a payload cut to panelShown bytes; Cut and Href, when it
// was cut, how many bytes were left out and where the whole is.
type panelText struct {
	Text string `json:"text"`
	Cut  int    `json:"cut,omitempty"`
	Href string `json:"href,omitempty"`
}

// panelFailure is one failed attempt of a state.
type panelFailure struct {
	Seq   int64     `json:"seq"`
	Type  string    `json:"type"`
	Time  time.Time `json:"time"`
	Error string    `json:"error,omitempty"`
	Cause string    `json:"cause,omitempty"`
}

// panelCall is a durable step of a state's agent.
type panelCall struct {
	Seq int64 `json:"seq"`
	// Kind is ModelTurn, ToolCall or Step; Name the step's name, Tool a
	// tool call's tool, Model a turn's model.
	Kind   string     `json:"kind"`
	Name   string     `json:"name,omitempty"`
	Tool   string     `json:"tool,omitempty"`
	Model  string     `json:"model,omitempty"`
	Input  *panelText `json:"input,omitempty"`
	Output *panelText `json:"output,omitempty"`
	Failed bool       `json:"failed,omitempty"`
	Error  string     `json:"error,omitempty"`
	Cause  string     `json:"cause,omitempty"`
}

// graphPanel gathers, by graph node (graphName), the visits of each
// state from the history: each entered event opens a visit of its
// qualified state, the exited event closes it; failures and durable
// steps of that state between the two go into it. Events an operator
// rolled back over are left out. base is the raw event route's prefix
// ("/executions/{id}/events/"), for the links to whole payloads.
func graphPanel(m *states.Machine, events []engine.Event, base string) map[string]*panelState {
	out := map[string]*panelState{}
	open := map[string]*panelVisit{} // qualified state → its open visit
	for i, ev := range events {
		if ev.Superseded || ev.State == "" {
			continue
		}
		seq, q := int64(i+1), ev.Scope+ev.State
		at := base + strconv.FormatInt(seq, 10) + "/"
		switch {
		case strings.HasSuffix(ev.Type, "StateEntered"):
			v := &panelVisit{State: q, Seq: seq, Entered: ev.Timestamp, Input: panelPayload(ev.Input, at+"input")}
			name := graphName(m, q)
			if out[name] == nil {
				out[name] = &panelState{}
			}
			out[name].Visits = append(out[name].Visits, v)
			open[q] = v
			continue
		}
		v := open[q]
		if v == nil {
			continue
		}
		if kind, failed, ok := journalKind(ev.Type); ok {
			v.Calls = append(v.Calls, panelCallOf(ev, seq, kind, failed, at))
			continue
		}
		switch {
		case strings.HasSuffix(ev.Type, "StateExited"):
			v.Exited, v.Output = ev.Timestamp, panelPayload(ev.Output, at+"output")
			v.Error, v.Cause = "", ""
			delete(open, q)
		case strings.HasSuffix(ev.Type, "Failed") || strings.HasSuffix(ev.Type, "TimedOut"):
			v.Failures = append(v.Failures, panelFailure{Seq: seq, Type: ev.Type, Time: ev.Timestamp, Error: ev.Error, Cause: ev.Cause})
			v.Error, v.Cause = ev.Error, ev.Cause
		}
	}
	for _, st := range out {
		if n := len(st.Visits); n > panelVisits {
			st.Earlier = n - panelVisits
			st.Visits = st.Visits[n-panelVisits:]
		}
	}
	return out
}

// panelCallOf reads a durable step's event for the panel.
func panelCallOf(ev engine.Event, seq int64, kind string, failed bool, at string) panelCall {
	detail, _ := ev.Detail.(map[string]any)
	c := panelCall{Seq: seq, Kind: kind, Failed: failed, Error: ev.Error, Cause: ev.Cause}
	c.Name, _ = detail["name"].(string)
	c.Tool, _ = detail["tool"].(string)
	c.Model, _ = detail["model"].(string)
	c.Input = panelPayload(ev.Input, at+"input")
	if !failed {
		c.Output = panelPayload(ev.Output, at+"output")
		if rec, ok := ev.Output.(map[string]any); ok && kind == engine.StepKindModelTurn {
			if m, ok := rec["model"].(string); ok && m != "" {
				c.Model = m
			}
		}
	}
	return c
}

// panelPayload is v as the panel shows it: a string as it is, anything
// else as indented JSON, cut to panelShown bytes (on a character
// boundary) with href as the link to the whole; nil for no value.
func panelPayload(v any, href string) *panelText {
	if v == nil {
		return nil
	}
	text, ok := v.(string)
	if !ok {
		text = pretty(v)
	}
	if len(text) <= panelShown {
		return &panelText{Text: text}
	}
	n := panelShown
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return &panelText{Text: text[:n], Cut: len(text) - n, Href: href}
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
