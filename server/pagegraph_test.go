package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
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
