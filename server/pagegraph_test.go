package server

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// TestGraphName: history names map to the graph's nodes: a Map's items are
// one cluster, a Parallel's branches are numbered.
func TestGraphName(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{
		"Each":{"Type":"Map","ItemProcessor":{"StartAt":"Work","States":{"Work":{"Type":"Pass","End":true}}},"Next":"Par"},
		"Par":{"Type":"Parallel","Branches":[
			{"StartAt":"L","States":{"L":{"Type":"Pass","End":true}}},
			{"StartAt":"Inner","States":{"Inner":{"Type":"Map","ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}}}],"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"Each":            "Each",
		"Each/3/Work":     "Each/*/Work",
		"Par/0/L":         "Par/0/L",
		"Par/1/Inner/7/X": "Par/1/Inner/*/X",
		"Par/9/L":         "Par/9/L",
		"Nope/1/X":        "Nope/1/X",
	} {
		if got := graphName(m, in); got != want {
			t.Errorf("graphName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGraphMarksWhereItStopped: the graph of an execution that stopped
// (failed in a Fail state, timed out, or was stopped by an operator)
// marks the state it stopped at.
func TestGraphMarksWhereItStopped(t *testing.T) {
	// The aborted case is stopped once its agent is called, so that it is
	// at Work, not still at A, when the stop comes.
	called := make(chan struct{}, 1)
	reg := agents.NewRegistry()
	if err := reg.Register("Slow", agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
		called <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) { c.Agents = reg })
	for _, tc := range []struct {
		name, flow, mock, status, mark string
		stop                           bool
	}{
		{name: "failed", status: "FAILED", mark: `<g class="node failed"><title>Boom (Fail)</title>`,
			flow: `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Boom"},"Boom":{"Type":"Fail","Error":"Custom.Bad"}}}`},
		{name: "timed-out", status: "TIMED_OUT", mark: `<g class="node failed"><title>Slow (Wait)</title>`,
			flow: `{"StartAt":"A","TimeoutSeconds":1,"States":{"A":{"Type":"Pass","Next":"Slow"},"Slow":{"Type":"Wait","Seconds":30,"End":true}}}`},
		{name: "aborted", status: "ABORTED", stop: true, mark: `<g class="node stopped"><title>Work (Task)</title>`,
			flow: `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Work"},"Work":{"Type":"Task","Agent":"Slow","End":true}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts.startFlow(t, tc.name, tc.flow, "", tc.mock, func(e api.Execution) bool {
				return e.Status != "RUNNING" || tc.stop && e.Status == "RUNNING"
			})
			if tc.stop {
				<-called
				if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/"+tc.name+"/stop", map[string]any{}, nil); code != http.StatusOK {
					t.Fatalf("stop: %d %s", code, body)
				}
			}
			ts.waitFor(t, tc.name, func(e api.Execution) bool { return string(e.Status) == tc.status })
			_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/"+tc.name)
			graph := between(t, body, `<div id="graph"`, `</svg>`)
			if !strings.Contains(graph, tc.mark) {
				t.Errorf("the graph of the %s execution does not have %s:\n%s", tc.status, tc.mark, graph)
			}
		})
	}
}

// TestGraphPanel: the side panel's data holds, by graph node, each visit
// of the state: its times, input and output (long ones cut, with a link
// to the whole), failed attempts (retries) and the error it ended in,
// and its agent's turns and tool calls; a Map's items are the visits of
// its processor's node, and events rolled back over are left out.
func TestGraphPanel(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"Work","States":{
		"Work":{"Type":"Task","Agent":"a","Retry":[{"ErrorEquals":["States.ALL"]}],"Next":"Each"},
		"Each":{"Type":"Map","ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Pass","End":true}}},"Next":"Boom"},
		"Boom":{"Type":"Task","Agent":"a","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("é", panelShown) // 2 bytes each: cut at half
	ev := func(typ, state string, f func(*engine.Event)) engine.Event {
		e := engine.Event{Type: typ, State: state, Timestamp: at}
		if f != nil {
			f(&e)
		}
		return e
	}
	events := []engine.Event{
		ev("ExecutionStarted", "", nil),
		ev("TaskStateEntered", "Work", func(e *engine.Event) { e.Input = map[string]any{"q": "</script><b>"} }),
		ev("TaskFailed", "Work", func(e *engine.Event) { e.Error, e.Cause = "Agent.Flaky", "try again" }),
		ev("ToolCallSucceeded", "Work", func(e *engine.Event) {
			e.Input, e.Output = map[string]any{"city": "Paris"}, "sunny"
			e.Detail = map[string]any{"name": "turn 1/tool c1", "tool": "weather"}
		}),
		ev("ModelTurnFailed", "Work", func(e *engine.Event) {
			e.Error, e.Cause = "Agent.ModelError", "down"
			e.Detail = map[string]any{"name": "turn 2", "model": "m"}
		}),
		ev("TaskSucceeded", "Work", nil),
		ev("TaskStateExited", "Work", func(e *engine.Event) { e.Output = long }),
		ev("MapStateEntered", "Each", nil),
		ev("PassStateEntered", "W", func(e *engine.Event) { e.Scope = "Each/0/" }),
		ev("PassStateEntered", "W", func(e *engine.Event) { e.Scope = "Each/1/" }),
		ev("PassStateExited", "W", func(e *engine.Event) { e.Scope = "Each/1/"; e.Output = 1.5 }),
		ev("PassStateExited", "W", func(e *engine.Event) { e.Scope = "Each/0/"; e.Output = nil }),
		ev("MapStateExited", "Each", nil),
		ev("TaskStateEntered", "Boom", nil),
		ev("TaskFailed", "Boom", func(e *engine.Event) { e.Error = "Gone"; e.Superseded = true }),
		ev("TaskFailed", "Boom", func(e *engine.Event) { e.Error, e.Cause = "Agent.Broken", "no" }),
	}
	got := graphPanel(m, events, "/executions/x/events/")

	work := got["Work"]
	if work == nil || len(work.Visits) != 1 {
		t.Fatalf("Work: %+v, want one visit", work)
	}
	v := work.Visits[0]
	if v.State != "Work" || v.Seq != 2 || !v.Entered.Equal(at) || !v.Exited.Equal(at) || v.Error != "" {
		t.Errorf("Work's visit = %+v", v)
	}
	if v.Input == nil || v.Input.Text != "{\n  \"q\": \"</script><b>\"\n}" || v.Input.Cut != 0 {
		t.Errorf("Work's input = %+v", v.Input)
	}
	if v.Output == nil || len(v.Output.Text) != panelShown || v.Output.Cut != len(long)-panelShown || v.Output.Href != "/executions/x/events/7/output" {
		t.Errorf("Work's output: %d bytes shown, cut %d, href %q; want %d, %d, the raw route", len(v.Output.Text), v.Output.Cut, v.Output.Href, panelShown, len(long)-panelShown)
	}
	if len(v.Failures) != 1 || v.Failures[0].Error != "Agent.Flaky" || v.Failures[0].Cause != "try again" || v.Failures[0].Seq != 3 {
		t.Errorf("Work's failures = %+v, want the retried Agent.Flaky", v.Failures)
	}
	if len(v.Calls) != 2 {
		t.Fatalf("Work's calls = %+v, want a tool call and a turn", v.Calls)
	}
	if c := v.Calls[0]; c.Kind != "ToolCall" || c.Tool != "weather" || c.Input.Text != "{\n  \"city\": \"Paris\"\n}" || c.Output.Text != "sunny" || c.Failed {
		t.Errorf("the tool call = %+v", c)
	}
	if c := v.Calls[1]; c.Kind != "ModelTurn" || c.Model != "m" || !c.Failed || c.Error != "Agent.ModelError" || c.Output != nil {
		t.Errorf("the model turn = %+v", c)
	}

	items := got["Each/*/W"]
	if items == nil || len(items.Visits) != 2 || items.Visits[0].State != "Each/0/W" || items.Visits[1].State != "Each/1/W" {
		t.Fatalf("Each/*/W: %+v, want the two items' visits", items)
	}
	if o := items.Visits[1].Output; o == nil || o.Text != "1.5" {
		t.Errorf("item 1's output = %+v, want 1.5", o)
	}
	if o := items.Visits[0].Output; o != nil {
		t.Errorf("item 0's output = %+v, want none (null)", o)
	}

	boom := got["Boom"]
	if boom == nil || len(boom.Visits) != 1 {
		t.Fatalf("Boom: %+v", boom)
	}
	if b := boom.Visits[0]; !b.Exited.IsZero() || b.Error != "Agent.Broken" || b.Cause != "no" || len(b.Failures) != 1 {
		t.Errorf("Boom's visit = %+v, want it failed in Agent.Broken (the superseded Gone left out)", b)
	}
	if _, ok := got["Nope"]; ok || len(got) != 4 {
		t.Errorf("nodes %v, want Work, Each, Each/*/W and Boom", len(got))
	}
}

// TestGraphPanelVisitsCapped: a node keeps its last panelVisits visits
// and counts the earlier ones.
func TestGraphPanelVisitsCapped(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Pass","End":true}}},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var events []engine.Event
	for i := range panelVisits + 5 {
		events = append(events, engine.Event{Type: "PassStateEntered", State: "W", Scope: fmt.Sprintf("Each/%d/", i)})
	}
	st := graphPanel(m, events, "/")["Each/*/W"]
	if st == nil || len(st.Visits) != panelVisits || st.Earlier != 5 || st.Visits[0].State != "Each/5/W" {
		t.Fatalf("got %+v, want the last %d visits and 5 earlier", st, panelVisits)
	}
}

// TestGraphPanelEscaped: the panel's data is in the page as JSON in an
// attribute no text of which can end it or open an element.
func TestGraphPanelEscaped(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	evil := "\"></div><script>alert(1)</script>&'"
	events := []engine.Event{
		{Type: "PassStateEntered", State: "A", Input: evil},
		{Type: "PassStateExited", State: "A", Output: map[string]any{"x": evil}},
	}
	out, err := executionGraph(m, &engine.Execution{ID: "a/b"}, events)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	_, data, ok := strings.Cut(s, `<div id="graph-data" data-json="`)
	if !ok {
		t.Fatalf("no panel data:\n%s", s)
	}
	data, _, ok = strings.Cut(data, `" hidden></div>`)
	if !ok || strings.ContainsAny(data, "<>\"'") {
		t.Fatalf("the panel data is not escaped: %s", data)
	}
	var got map[string]panelState
	if err := json.Unmarshal([]byte(html.UnescapeString(data)), &got); err != nil {
		t.Fatal(err)
	}
	if v := got["A"].Visits; len(v) != 1 || v[0].Input.Text != evil || !strings.Contains(v[0].Output.Text, `"x": "\"></div>`) {
		t.Errorf("the panel data decodes to %+v, want the texts as they were", got)
	}
	if strings.Count(s, "<script") != 0 {
		t.Errorf("the graph holds a script element:\n%s", s)
	}
	if !strings.Contains(s, `data-state="A"`) {
		t.Errorf("the graph's nodes are not focusable:\n%s", s)
	}
}

// FuzzGraphPanel: any step event (its type, detail, input and output as
// an agent recorded them) gives panel data that encodes as JSON, never a
// panic.
func FuzzGraphPanel(f *testing.F) {
	f.Add("ToolCallSucceeded", "Each/1/", `{"name":"turn 1/tool c1","tool":"weather"}`, `{"city":"Paris"}`, `"sunny"`)
	f.Add("ModelTurnSucceeded", "", `{"model":7}`, `[]`, `{"model":"m"}`)
	f.Add("TaskFailed", "Nope/x/", `null`, `1`, `"\u2028</script>"`)
	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Pass","End":true}}},"End":true}}}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, typ, scope, detail, input, output string) {
		decode := func(s string) any {
			var v any
			if json.Unmarshal([]byte(s), &v) != nil {
				return s
			}
			return v
		}
		events := []engine.Event{
			{Type: "PassStateEntered", State: "W", Scope: scope, Input: decode(input)},
			{Type: typ, State: "W", Scope: scope, Detail: decode(detail), Input: decode(input), Output: decode(output)},
			{Type: "PassStateExited", State: "W", Scope: scope, Output: decode(output)},
		}
		if _, err := json.Marshal(graphPanel(m, events, "/executions/x/events/")); err != nil {
			t.Fatalf("the panel data does not encode: %v", err)
		}
	})
}
