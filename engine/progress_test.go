package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// progressChunks are the progress reports of an execution's feed, one
// line each.
func progressChunks(x *engine.Executor, id string) []string {
	var out []string
	for _, c := range x.Live(id, "", 0).Chunks {
		if c.Kind != engine.ChunkProgress {
			continue
		}
		p := c.Progress
		line := c.State
		if p.Percentage != nil {
			line += fmt.Sprintf(" %g%%", *p.Percentage)
		}
		if p.Total > 0 {
			line += fmt.Sprintf(" %d/%d failed %d", p.Completed, p.Total, p.Failed)
		}
		if p.Milestone != "" {
			line += " milestone " + p.Milestone
		}
		if p.Report != nil {
			data, _ := json.Marshal(p.Report)
			line += " " + string(data)
		}
		out = append(out, line)
	}
	return out
}

// TestProgressMap: a Map followed by a reader reports its items' counts;
// the last report has them all done.
func TestProgressMap(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.Register("W", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		if req.Input == "bad" {
			return nil, fmt.Errorf("bad item")
		}
		return "ok", nil
	})); err != nil {
		t.Fatal(err)
	}
	x := engine.New(engine.Config{Agents: reg})
	x.Live("pm", "", 0) // someone follows the execution
	def := `{"StartAt": "Each", "States": {"Each": {"Type": "Map", "MaxConcurrency": 1, "ToleratedFailureCount": 1, "End": true,
	  "ItemProcessor": {"StartAt": "W", "States": {"W": {"Type": "Task", "Agent": "W", "End": true}}}}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `["a", "bad", "c"]`), engine.StartOptions{ID: "pm"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got := progressChunks(x, "pm")
	if len(got) == 0 || got[len(got)-1] != "Each 100% 2/3 failed 1" {
		t.Errorf("progress %q, want it to end with all 3 items done, 1 failed", got)
	}
	// Nobody following: nothing kept.
	res, err = x.Run(context.Background(), mustParse(t, def), mustJSON(t, `["a"]`), engine.StartOptions{ID: "unfollowed"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatal(err)
	}
	if got := progressChunks(x, "unfollowed"); len(got) != 0 {
		t.Errorf("an execution nobody follows kept %q", got)
	}
}

// TestProgressAgentMilestones: an agent's reports reach the feed (a
// number, and an object whose Path selects the percentage); each
// milestone it passes is recorded once in history, and those that Emit
// go to the OnProgress channel.
func TestProgressAgentMilestones(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.Register("Work", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		req.ReportProgress(10)
		req.ReportProgress(map[string]any{"done": 6, "of": 10, "pct": 60})
		req.ReportProgress(map[string]any{"pct": 100})
		req.ReportProgress("not a report with a percentage")
		return "done", nil
	})); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st, EventsOut: &out})
	x.Live("pa", "", 0)
	def := `{"StartAt": "Work",
	  "Events": {"Channels": {"log": {"Type": "stdout", "Format": "text"}}, "OnProgress": {"Channel": "log"}},
	  "States": {"Work": {"Type": "Task", "Agent": "Work", "HeartbeatSeconds": 5, "End": true,
	    "Progress": {"Path": "$.pct", "HeartbeatOnUpdate": true, "Milestones": [{"At": "50%", "Name": "half"}, {"At": 100, "Name": "all", "Emit": false}]}}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), nil, engine.StartOptions{ID: "pa"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := []string{
		"Work 10%",
		`Work 60% {"done":6,"of":10,"pct":60}`,
		"Work 50% milestone half",
		`Work 100% {"pct":100}`,
		"Work 100% milestone all",
		`Work "not a report with a percentage"`,
	}
	if got := progressChunks(x, "pa"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	hist, err := st.History(context.Background(), "pa")
	if err != nil {
		t.Fatal(err)
	}
	var milestones []string
	for _, e := range hist {
		if e.Type == engine.EventProgressMilestone {
			milestones = append(milestones, e.Detail.(map[string]any)["milestone"].(string))
		}
	}
	if strings.Join(milestones, ",") != "half,all" {
		t.Errorf("milestone events %v, want half and all", milestones)
	}
	if lines := strings.TrimSpace(out.String()); strings.Count(lines, "state.milestone") != 1 || !strings.Contains(lines, `"milestone":"half"`) {
		t.Errorf("OnProgress got %q, want the half milestone only", lines)
	}
}

// TestProgressOf: an execution's percentage from its history — distinct
// top-level states completed over TotalStates or their weights, 100 once
// it succeeded.
func TestProgressOf(t *testing.T) {
	three := `"States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "Next": "C"}, "C": {"Type": "Pass", "End": true}}`
	exited := func(names ...string) []engine.Event {
		var h []engine.Event
		for _, n := range names {
			h = append(h, engine.Event{Type: "PassStateExited", State: n})
		}
		return h
	}
	for _, tc := range []struct {
		name, def string
		history   []engine.Event
		want      string
	}{
		{"by count", `{"StartAt": "A", ` + three + `}`, exited("A"), "33.3 1/3"},
		{"a loop counts once", `{"StartAt": "A", ` + three + `}`, exited("A", "A", "B"), "66.7 2/3"},
		{"nested states do not count", `{"StartAt": "A", ` + three + `}`, append(exited("A"), engine.Event{Type: "PassStateExited", State: "X", Scope: "M/0/"}), "33.3 1/3"},
		{"TotalStates", `{"StartAt": "A", "Progress": {"TotalStates": 4}, ` + three + `}`, exited("A", "B"), "50.0 2/4"},
		{"weights", `{"StartAt": "A", "Progress": {"WeightedProgress": {"A": 1, "B": 1, "C": 8}}, ` + three + `}`, exited("A", "B"), "20.0 2/3"},
		{"succeeded", `{"StartAt": "A", ` + three + `}`, append(exited("A"), engine.Event{Type: engine.EventExecutionSucceeded}), "100.0 1/3"},
	} {
		p := engine.ProgressOf(mustParse(t, tc.def), tc.history)
		if got := fmt.Sprintf("%.1f %d/%d", p.Percentage, p.Completed, p.Total); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestProgressParallelWeighted: a Parallel with Aggregation weighted
// combines its branches' progress — 100 for an ended branch, else what
// an agent in it last reported — by their Weights, each branch's listed
// with PerBranch.
func TestProgressParallelWeighted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := agents.NewRegistry()
		reg.Register("Quick", agents.Func(func(context.Context, *agents.Request) (any, error) { return 1, nil }))
		reg.Register("Slow", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
			time.Sleep(10 * time.Millisecond) // after the quick branch ended
			req.ReportProgress(50)
			time.Sleep(time.Second)
			return 2, nil
		}))
		x := engine.New(engine.Config{Agents: reg})
		x.Live("pp", "", 0)
		def := `{"StartAt": "Both", "States": {"Both": {"Type": "Parallel", "End": true,
		  "Progress": {"Aggregation": "weighted", "Weights": [3, 1], "PerBranch": true},
		  "Branches": [
		    {"StartAt": "S", "States": {"S": {"Type": "Task", "Agent": "Slow", "End": true, "Progress": {}}}},
		    {"StartAt": "Q", "States": {"Q": {"Type": "Task", "Agent": "Quick", "End": true}}}]}}}`
		res, err := x.Run(context.Background(), mustParse(t, def), nil, engine.StartOptions{ID: "pp"})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		var got []string
		for _, c := range x.Live("pp", "", 0).Chunks {
			if c.Kind == engine.ChunkProgress && c.State == "Both" {
				got = append(got, fmt.Sprintf("%g %v", *c.Progress.Percentage, c.Progress.Parts))
			}
		}
		if want := "[25 [0 100] 62.5 [50 100] 100 [100 100]]"; fmt.Sprint(got) != want {
			t.Errorf("the Parallel's reports %v, want %s", got, want)
		}
	})
}

// TestProgressPartsMoved: the hook hears each Map item start and end, by
// workflow (whether or not anyone follows the execution).
func TestProgressPartsMoved(t *testing.T) {
	reg := agents.NewRegistry()
	reg.Register("W", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		if req.Input == "bad" {
			return nil, fmt.Errorf("bad item")
		}
		return "ok", nil
	}))
	var running, completed, failed int64
	x := engine.New(engine.Config{Agents: reg, Hooks: engine.Hooks{PartsMoved: func(workflow string, r, c, f int64) {
		if workflow != "orders" {
			t.Errorf("workflow %q", workflow)
		}
		running, completed, failed = running+r, completed+c, failed+f
	}}})
	def := `{"StartAt": "Each", "States": {"Each": {"Type": "Map", "MaxConcurrency": 1, "ToleratedFailureCount": 1, "End": true,
	  "ItemProcessor": {"StartAt": "W", "States": {"W": {"Type": "Task", "Agent": "W", "End": true}}}}}}`
	if _, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `["a", "bad", "c"]`), engine.StartOptions{MachineName: "orders"}); err != nil {
		t.Fatal(err)
	}
	if running != 0 || completed != 2 || failed != 1 {
		t.Errorf("running %d, completed %d, failed %d; want 0, 2, 1", running, completed, failed)
	}
}

// TestProgressDistributedMap: a followed Distributed Map reports its
// children's counts as an inline Map its items'.
func TestProgressDistributedMap(t *testing.T) {
	var mu sync.Mutex // the children end on goroutines of their own
	var running, done int64
	x := engine.New(engine.Config{Store: store.NewMemory(), Hooks: engine.Hooks{PartsMoved: func(_ string, r, c, f int64) {
		mu.Lock()
		running, done = running+r, done+c+f
		mu.Unlock()
	}}})
	x.Live("dm", "", 0)
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":null,
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{"items": [1, 2, 3, 4]}`), engine.StartOptions{ID: "dm"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got := progressChunks(x, "dm")
	if len(got) == 0 || got[len(got)-1] != "Each 100% 4/4 failed 0" {
		t.Errorf("progress %q, want it to end with 4 of 4", got)
	}
	if running != 0 || done != 4 {
		t.Errorf("parts: %d running, %d done; want 0 and 4", running, done)
	}
}
