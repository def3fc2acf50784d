package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// gateAgent is a Go agent that tells started it runs (when there is
// room), reports each value of reports as its progress and returns
// "done" once reports is closed.
func gateAgent(started chan<- string, reports <-chan any) agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		select {
		case started <- req.State:
		default:
		}
		for {
			select {
			case r, ok := <-reports:
				if !ok {
					return "done", nil
				}
				req.ReportProgress(r)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	})
}

// progressServer is a test server whose Gate agent is
// gateAgent(started, reports), and Quick an agent that returns at once.
func progressServer(t *testing.T, started chan<- string, reports <-chan any) *testServer {
	t.Helper()
	reg := agents.NewRegistry()
	if err := reg.Register("Gate", gateAgent(started, reports)); err != nil {
		t.Fatal(err)
	}
	quick := agents.Func(func(context.Context, *agents.Request) (any, error) { return "quick", nil })
	if err := reg.Register("Quick", quick); err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, func(c *Config) { c.Agents = reg })
}

// TestProgressExecutionField: GET /v1/executions/{id} has the
// execution's progress when its workflow has an enabled Progress block —
// 2 of TotalStates 4 done is 50, and 100 once it succeeded — and none
// without the block, with it disabled, or in lists.
func TestProgressExecutionField(t *testing.T) {
	// A and B are Tasks: Pass states are committed with the next step
	// that has an effect.
	four := `"States": {"A": {"Type": "Task", "Agent": "Quick", "Next": "B"}, "B": {"Type": "Task", "Agent": "Quick", "Next": "C"},
	  "C": {"Type": "Task", "Agent": "Gate", "Next": "D"}, "D": {"Type": "Pass", "End": true}}`
	for _, tc := range []struct {
		name, progress string
		want           bool
	}{
		{"enabled", `"Progress": {"TotalStates": 4},`, true},
		{"no block", ``, false},
		{"disabled", `"Progress": {"Enabled": false},`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reports, started := make(chan any), make(chan string, 1)
			ts := progressServer(t, started, reports)
			def := json.RawMessage(`{"StartAt": "A", ` + tc.progress + four + `}`)
			if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "p1", "definition": def}, nil); code != http.StatusCreated {
				t.Fatalf("start: %d %s", code, body)
			}
			<-started
			var e api.Execution
			if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/p1", nil, &e); code != http.StatusOK {
				t.Fatalf("get: %d %s", code, body)
			}
			if !tc.want {
				if e.Progress != nil {
					t.Errorf("progress %+v, want none", *e.Progress)
				}
				close(reports)
				ts.waitFor(t, "p1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
				return
			}
			// C has been entered: A and B are done, whatever the moment.
			if e.Progress == nil || *e.Progress != (api.ExecutionProgress{Percentage: 50, Completed: 2, Total: 4}) {
				t.Errorf("progress while C runs = %+v, want 50%%, 2 of 4", e.Progress)
			}
			close(reports)
			e = ts.waitFor(t, "p1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
			if e.Progress == nil || *e.Progress != (api.ExecutionProgress{Percentage: 100, Completed: 4, Total: 4}) {
				t.Errorf("progress once succeeded = %+v, want 100%%, 4 of 4", e.Progress)
			}
			var list api.ExecutionList
			if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions", nil, &list); code != http.StatusOK || len(list.Executions) != 1 {
				t.Fatalf("list: %d %s", code, body)
			}
			if list.Executions[0].Progress != nil {
				t.Errorf("a listed execution has progress %+v, want none (it costs a history read)", list.Executions[0].Progress)
			}
		})
	}
}

// TestProgressStreamEvents: progress reports go out as `progress` events
// whose data is the chunk (an agent's percentage and report, the
// milestone reached); ?events=chunk gets them, ?events=history,state
// does not.
func TestProgressStreamEvents(t *testing.T) {
	reports := make(chan any)
	ts := progressServer(t, nil, reports)
	def := json.RawMessage(`{"StartAt": "Work", "States": {"Work": {"Type": "Task", "Agent": "Gate", "End": true,
	  "Progress": {"Path": "$.pct", "Milestones": [{"At": 50, "Name": "half"}]}}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "s1", "definition": def}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.s.x.Live("s1", "", 0) // the feed exists before the first report
	_, all := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "")
	_, chunks := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events?events=chunk", "")
	_, history := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events?events=history,state", "")
	reports <- 10
	reports <- map[string]any{"pct": 60, "note": "<b>six</b> of ten"}
	close(reports)

	progress := func(events []liveEvent) []string {
		var out []string
		for _, ev := range events {
			if ev.Event != eventProgress {
				continue
			}
			c := ev.chunk(t)
			if c.Kind != engine.ChunkProgress || c.State != "Work" || c.Progress == nil {
				t.Errorf("progress event %s, want a progress chunk of Work", ev.Data)
				continue
			}
			line := fmt.Sprintf("%g", *c.Progress.Percentage)
			if c.Progress.Milestone != "" {
				line += " milestone " + c.Progress.Milestone
			}
			if c.Progress.Report != nil {
				data, _ := json.Marshal(c.Progress.Report)
				line += " " + string(data)
			}
			out = append(out, line)
		}
		return out
	}
	want := []string{"10", `60 {"note":"\u003cb\u003esix\u003c/b\u003e of ten","pct":60}`, "50 milestone half"}
	for what, rd := range map[string]*sseReader{"all": all, "?events=chunk": chunks} {
		events := readLive(t, rd, nil)
		if got := progress(events); !slices.Equal(got, want) {
			t.Errorf("%s: progress %q, want %q", what, got, want)
		}
		for _, ev := range events {
			if ev.Event == eventProgress && !strings.Contains(ev.ID, ":") {
				t.Errorf("%s: progress event id %q, want N:EPOCH:SEQ", what, ev.ID)
			}
		}
	}
	events := readLive(t, history, nil)
	if got := progress(events); len(got) != 0 {
		t.Errorf("?events=history,state sent progress %q", got)
	}
	if len(events) < 2 {
		t.Errorf("?events=history,state sent %d events, want the history and end", len(events))
	}
}
