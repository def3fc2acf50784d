package states_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/states"
)

// progressStates are one state of each kind that Progress treats
// differently, in the order they run.
var progressStates = []struct{ name, body string }{
	{"N", `"Type": "Task", "Agent": "A", "Next": "T"`},
	{"T", `"Type": "Task", "Agent": "A", "TimeoutSeconds": 60, "HeartbeatSeconds": 10, "Next": "D"`},
	{"D", `"Type": "Debate", "Agents": ["x", "y"], "Next": "M"`},
	{"M", `"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": true}}}, "Next": "P"`},
	{"P", `"Type": "Parallel", "Branches": [{"StartAt": "B1", "States": {"B1": {"Type": "Pass", "End": true}}}, {"StartAt": "B2", "States": {"B2": {"Type": "Pass", "End": true}}}], "Next": "S"`},
	{"S", `"Type": "Pass", "End": true`},
}

// progressDefinition returns a definition with the states of
// progressStates, state's with the Progress block given (none when
// state is ""), and the top-level Progress block top (none when "").
func progressDefinition(top, state, block string) string {
	var b strings.Builder
	b.WriteString(`{"StartAt": "N", `)
	if top != "" {
		b.WriteString(`"Progress": ` + top + `, `)
	}
	b.WriteString(`"States": {`)
	for i, s := range progressStates {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"` + s.name + `": {` + s.body)
		if s.name == state {
			b.WriteString(`, "Progress": ` + block)
		}
		b.WriteString("}")
	}
	b.WriteString("}}")
	return b.String()
}

// describeProgress renders a state's Progress on one line.
func describeProgress(sp *states.StateProgress) string {
	path := "-"
	if sp.Path != nil {
		path = sp.Path.String()
	}
	var ms []string
	for _, m := range sp.Milestones {
		ms = append(ms, fmt.Sprintf("%g:%s:%t", m.At, m.Name, m.Emit))
	}
	return fmt.Sprintf("enabled=%t path=%s milestones=%v heartbeat=%t perItem=%t aggregateBy=%q aggregation=%q weights=%v perBranch=%t",
		sp.Enabled, path, ms, sp.HeartbeatOnUpdate, sp.PerItem, sp.AggregateBy, sp.Aggregation, sp.Weights, sp.PerBranch)
}

func TestStateProgressAccepted(t *testing.T) {
	for _, tc := range []struct{ name, state, block, want string }{
		{"empty on a Task", "N", `{}`,
			`enabled=true path=$.percentage milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"disabled", "N", `{"Enabled": false}`,
			`enabled=false path=$.percentage milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"a Task's own Path", "N", `{"Path": "$.status.done[0]"}`,
			`enabled=true path=$.status.done[0] milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"milestones sorted, percent strings, Emit", "N", `{"Milestones": [
			{"At": "75%", "Name": "most"}, {"At": 0, "Name": "start", "Emit": false}, {"At": 12.5, "Name": "eighth"}, {"At": "100%", "Name": "all"}]}`,
			`enabled=true path=$.percentage milestones=[0:start:false 12.5:eighth:true 75:most:true 100:all:true] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"a decimal percent string", "S", `{"Milestones": [{"At": "33.3%", "Name": "third"}, {"At": "0%", "Name": "zero"}]}`,
			`enabled=true path=- milestones=[0:zero:true 33.3:third:true] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"a Task with heartbeats", "T", `{"HeartbeatOnUpdate": true}`,
			`enabled=true path=$.percentage milestones=[] heartbeat=true perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"HeartbeatOnUpdate false anywhere", "S", `{"HeartbeatOnUpdate": false}`,
			`enabled=true path=- milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"a Debate", "D", `{"Path": "$.round"}`,
			`enabled=true path=$.round milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`},
		{"a Map by default", "M", `{}`,
			`enabled=true path=- milestones=[] heartbeat=false perItem=false aggregateBy="count" aggregation="" weights=[] perBranch=false`},
		{"a Map averaging its items", "M", `{"PerItem": true, "AggregateBy": "average", "Milestones": [{"At": 50, "Name": "half"}]}`,
			`enabled=true path=- milestones=[50:half:true] heartbeat=false perItem=true aggregateBy="average" aggregation="" weights=[] perBranch=false`},
		{"a Parallel by default", "P", `{}`,
			`enabled=true path=- milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="average" weights=[] perBranch=false`},
		{"a Parallel's minimum", "P", `{"Aggregation": "minimum", "PerBranch": true}`,
			`enabled=true path=- milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="minimum" weights=[] perBranch=true`},
		{"a Parallel weighted", "P", `{"Aggregation": "weighted", "Weights": [3, 0.5]}`,
			`enabled=true path=- milestones=[] heartbeat=false perItem=false aggregateBy="" aggregation="weighted" weights=[3 0.5] perBranch=false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := states.Parse([]byte(progressDefinition("", tc.state, tc.block)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			sp := m.States[tc.state].Base().Progress
			if sp == nil {
				t.Fatalf("%s's Progress = nil", tc.state)
			}
			if got := describeProgress(sp); got != tc.want {
				t.Errorf("Progress =\n %s\nwant\n %s", got, tc.want)
			}
			for _, s := range progressStates {
				if got := m.States[s.name].Base().Progress; s.name != tc.state && got != nil {
					t.Errorf("%s's Progress = %+v, want nil", s.name, got)
				}
			}
			if m.Extensions != nil && m.Extensions.Progress != nil {
				t.Errorf("workflow Progress = %+v, want nil", m.Extensions.Progress)
			}
		})
	}
}

func TestStateProgressInJSONata(t *testing.T) {
	m, err := states.Parse([]byte(`{"QueryLanguage": "JSONata", "StartAt": "T", "States": {
	  "T": {"Type": "Task", "Agent": "A", "End": true, "Progress": {"Milestones": [{"At": "50%", "Name": "half"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describeProgress(m.States["T"].Base().Progress), `enabled=true path=$.percentage milestones=[50:half:true] heartbeat=false perItem=false aggregateBy="" aggregation="" weights=[] perBranch=false`; got != want {
		t.Errorf("Progress = %s, want %s", got, want)
	}
}

func TestWorkflowProgressAccepted(t *testing.T) {
	for _, tc := range []struct {
		name, top string
		want      states.WorkflowProgress
	}{
		{"empty", `{}`, states.WorkflowProgress{Enabled: true, TotalStates: 6}},
		{"disabled", `{"Enabled": false}`, states.WorkflowProgress{Enabled: false, TotalStates: 6}},
		{"a total", `{"TotalStates": 10}`, states.WorkflowProgress{Enabled: true, TotalStates: 10}},
		{"weights", `{"WeightedProgress": {"M": 4, "P": 0.25}}`, states.WorkflowProgress{Enabled: true, TotalStates: 6, Weights: map[string]float64{"M": 4, "P": 0.25}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := states.Parse([]byte(progressDefinition(tc.top, "", "")))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := m.Extensions.Progress
			if got == nil {
				t.Fatal("workflow Progress = nil")
			}
			if got.Enabled != tc.want.Enabled || got.TotalStates != tc.want.TotalStates || fmt.Sprint(got.Weights) != fmt.Sprint(tc.want.Weights) {
				t.Errorf("workflow Progress = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestEventsOnProgress(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt": "S", "Progress": {},
	  "Events": {"Channels": {"log": {"Type": "stdout"}}, "OnProgress": {"Channel": "log"}},
	  "States": {"S": {"Type": "Pass", "End": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Extensions.Events.OnProgress; got != "log" {
		t.Errorf("OnProgress = %q, want %q", got, "log")
	}
}

func TestProgressRefused(t *testing.T) {
	const pct = `must be a percentage from 0 to 100, a number like 50 or a string like "50%"`
	for _, tc := range []struct {
		name, top, state, block string
		ptr, msg                string
	}{
		// Top level.
		{"top not an object", `true`, "", "", "/Progress", "Progress must be an object, not boolean"},
		{"top Enabled not a boolean", `{"Enabled": "yes"}`, "", "", "/Progress/Enabled", "Enabled must be a boolean, not string"},
		{"TotalStates zero", `{"TotalStates": 0}`, "", "", "/Progress/TotalStates", "TotalStates must be at least 1, not 0"},
		{"TotalStates a fraction", `{"TotalStates": 2.5}`, "", "", "/Progress/TotalStates", "TotalStates must be an integer, not 2.5"},
		{"TotalStates a string", `{"TotalStates": "5"}`, "", "", "/Progress/TotalStates", "TotalStates must be an integer, not string"},
		{"WeightedProgress not an object", `{"WeightedProgress": [1]}`, "", "", "/Progress/WeightedProgress", "WeightedProgress must be an object, not array"},
		{"a weight for no state", `{"WeightedProgress": {"Nope": 1}}`, "", "", "/Progress/WeightedProgress/Nope", `WeightedProgress names "Nope", which is not a top-level state`},
		{"a weight for a nested state", `{"WeightedProgress": {"B1": 1}}`, "", "", "/Progress/WeightedProgress/B1", `WeightedProgress names "B1", which is not a top-level state`},
		{"a zero weight", `{"WeightedProgress": {"M": 0}}`, "", "", "/Progress/WeightedProgress/M", "M must be a number greater than 0, not 0"},
		{"a negative weight", `{"WeightedProgress": {"M": -2}}`, "", "", "/Progress/WeightedProgress/M", "M must be a number greater than 0, not -2"},
		{"a string weight", `{"WeightedProgress": {"M": "2"}}`, "", "", "/Progress/WeightedProgress/M", "M must be a number greater than 0, not string"},
		{"a key escaped in the pointer", `{"WeightedProgress": {"a/b": 1}}`, "", "", "/Progress/WeightedProgress/a~1b", `WeightedProgress names "a/b", which is not a top-level state`},
		{"an unknown top field", `{"Steps": 3}`, "", "", "/Progress/Steps", `unknown field "Steps" in Progress`},

		// Any state.
		{"not an object", "", "N", `[]`, "/States/N/Progress", "Progress must be an object, not array"},
		{"Enabled not a boolean", "", "N", `{"Enabled": 1}`, "/States/N/Progress/Enabled", "Enabled must be a boolean, not number"},
		{"an unknown field", "", "S", `{"Every": "5s"}`, "/States/S/Progress/Every", `unknown field "Every" in Progress`},

		// Path.
		{"Path on a Pass", "", "S", `{"Path": "$.p"}`, "/States/S/Progress/Path", "Path is where an agent reports its percentage: only a Task's or a Debate's Progress has one, not a Pass's"},
		{"Path on a Map", "", "M", `{"Path": "$.p"}`, "/States/M/Progress/Path", "Path is where an agent reports its percentage: only a Task's or a Debate's Progress has one, not a Map's"},
		{"Path not a string", "", "N", `{"Path": 5}`, "/States/N/Progress/Path", "Path must be a JSONPath string, not number"},
		{"Path the whole report", "", "N", `{"Path": "$"}`, "/States/N/Progress/Path", `Path "$" must select a field of the agent's report, like "$.percentage"`},
		{"Path a context path", "", "N", `{"Path": "$$.State.Name"}`, "/States/N/Progress/Path", `Path "$$.State.Name" is not a valid reference path: `},
		{"Path a wildcard", "", "N", `{"Path": "$.a[*]"}`, "/States/N/Progress/Path", `Path "$.a[*]" is not a valid reference path: `},

		// HeartbeatOnUpdate.
		{"HeartbeatOnUpdate not a boolean", "", "T", `{"HeartbeatOnUpdate": "true"}`, "/States/T/Progress/HeartbeatOnUpdate", "HeartbeatOnUpdate must be a boolean, not string"},
		{"HeartbeatOnUpdate on a Map", "", "M", `{"HeartbeatOnUpdate": true}`, "/States/M/Progress/HeartbeatOnUpdate", "HeartbeatOnUpdate counts an agent's progress reports as heartbeats: only a Task has heartbeats, not a Map"},
		{"HeartbeatOnUpdate on a Debate", "", "D", `{"HeartbeatOnUpdate": true}`, "/States/D/Progress/HeartbeatOnUpdate", "HeartbeatOnUpdate counts an agent's progress reports as heartbeats: only a Task has heartbeats, not a Debate"},
		{"HeartbeatOnUpdate without HeartbeatSeconds", "", "N", `{"HeartbeatOnUpdate": true}`, "/States/N/Progress/HeartbeatOnUpdate", "HeartbeatOnUpdate needs the Task's HeartbeatSeconds or HeartbeatSecondsPath: without them no heartbeat is awaited"},

		// Milestones.
		{"Milestones not an array", "", "N", `{"Milestones": {}}`, "/States/N/Progress/Milestones", "Milestones must be an array of 1 to 100 milestones, not object"},
		{"Milestones empty", "", "N", `{"Milestones": []}`, "/States/N/Progress/Milestones", "Milestones must be an array of 1 to 100 milestones, not 0 entries"},
		{"Milestones too many", "", "N", `{"Milestones": [` + strings.Repeat(`{"At": 1, "Name": "x"}, `, 100) + `{"At": 2, "Name": "y"}]}`, "/States/N/Progress/Milestones", "Milestones must be an array of 1 to 100 milestones, not 101 entries"},
		{"a milestone not an object", "", "N", `{"Milestones": ["50%"]}`, "/States/N/Progress/Milestones/0", "a milestone must be an object, not string"},
		{"a milestone without At", "", "N", `{"Milestones": [{"Name": "x"}]}`, "/States/N/Progress/Milestones/0", `a milestone needs At: a percentage from 0 to 100, like 50 or "50%"`},
		{"At over 100", "", "N", `{"Milestones": [{"At": 100.5, "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + ", not 100.5"},
		{"At negative", "", "N", `{"Milestones": [{"At": -1, "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + ", not -1"},
		{"At over 100%", "", "N", `{"Milestones": [{"At": "101%", "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + `, not "101%"`},
		{"At without %", "", "N", `{"Milestones": [{"At": "50", "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + `, not "50"`},
		{"At a negative percent", "", "N", `{"Milestones": [{"At": "-5%", "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + `, not "-5%"`},
		{"At an exponent percent", "", "N", `{"Milestones": [{"At": "1e1%", "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + `, not "1e1%"`},
		{"At a boolean", "", "N", `{"Milestones": [{"At": true, "Name": "x"}]}`, "/States/N/Progress/Milestones/0/At", "At " + pct + ", not boolean"},
		{"At twice", "", "N", `{"Milestones": [{"At": 50, "Name": "x"}, {"At": "50%", "Name": "y"}]}`, "/States/N/Progress/Milestones/1/At", "At 50 is also Milestones[0]'s: each milestone is at its own percentage"},
		{"a milestone without Name", "", "N", `{"Milestones": [{"At": 5}]}`, "/States/N/Progress/Milestones/0", "missing required field Name"},
		{"an empty Name", "", "N", `{"Milestones": [{"At": 5, "Name": ""}]}`, "/States/N/Progress/Milestones/0/Name", "Name must not be empty"},
		{"a long Name", "", "N", `{"Milestones": [{"At": 5, "Name": "` + strings.Repeat("é", 129) + `"}]}`, "/States/N/Progress/Milestones/0/Name", "Name is 129 characters long: at most 128"},
		{"a Name twice", "", "N", `{"Milestones": [{"At": 5, "Name": "x"}, {"At": 6, "Name": "x"}]}`, "/States/N/Progress/Milestones/1/Name", `Name "x" is also Milestones[0]'s: milestone names are unique within a state`},
		{"Emit not a boolean", "", "N", `{"Milestones": [{"At": 5, "Name": "x", "Emit": "no"}]}`, "/States/N/Progress/Milestones/0/Emit", "Emit must be a boolean, not string"},
		{"an unknown milestone field", "", "N", `{"Milestones": [{"At": 5, "Name": "x", "Channel": "c"}]}`, "/States/N/Progress/Milestones/0/Channel", `unknown field "Channel" in a milestone`},

		// Map only.
		{"PerItem on a Task", "", "N", `{"PerItem": true}`, "/States/N/Progress/PerItem", "PerItem is only for a Map state's Progress, not a Task's"},
		{"AggregateBy on a Parallel", "", "P", `{"AggregateBy": "count"}`, "/States/P/Progress/AggregateBy", "AggregateBy is only for a Map state's Progress, not a Parallel's"},
		{"PerItem not a boolean", "", "M", `{"PerItem": "yes"}`, "/States/M/Progress/PerItem", "PerItem must be a boolean, not string"},
		{"an unknown AggregateBy", "", "M", `{"AggregateBy": "sum"}`, "/States/M/Progress/AggregateBy", `AggregateBy must be "count" or "average", not "sum"`},

		// Parallel only.
		{"Aggregation on a Map", "", "M", `{"Aggregation": "average"}`, "/States/M/Progress/Aggregation", "Aggregation is only for a Parallel state's Progress, not a Map's"},
		{"PerBranch on a Pass", "", "S", `{"PerBranch": true}`, "/States/S/Progress/PerBranch", "PerBranch is only for a Parallel state's Progress, not a Pass's"},
		{"Weights on a Debate", "", "D", `{"Weights": [1]}`, "/States/D/Progress/Weights", "Weights is only for a Parallel state's Progress, not a Debate's"},
		{"an unknown Aggregation", "", "P", `{"Aggregation": "maximum"}`, "/States/P/Progress/Aggregation", `Aggregation must be "average", "minimum" or "weighted", not "maximum"`},
		{"PerBranch not a boolean", "", "P", `{"PerBranch": 1}`, "/States/P/Progress/PerBranch", "PerBranch must be a boolean, not number"},
		{"weighted without Weights", "", "P", `{"Aggregation": "weighted"}`, "/States/P/Progress/Aggregation", `Aggregation "weighted" needs Weights: one number greater than 0 per branch`},
		{"Weights without weighted", "", "P", `{"Weights": [1, 2]}`, "/States/P/Progress/Weights", `Weights are for Aggregation "weighted" only`},
		{"Weights with minimum", "", "P", `{"Aggregation": "minimum", "Weights": [1, 2]}`, "/States/P/Progress/Weights", `Weights are for Aggregation "weighted" only`},
		{"Weights not an array", "", "P", `{"Aggregation": "weighted", "Weights": 2}`, "/States/P/Progress/Weights", "Weights must be an array of numbers greater than 0, one per branch, not number"},
		{"too few Weights", "", "P", `{"Aggregation": "weighted", "Weights": [1]}`, "/States/P/Progress/Weights", "Weights has 1 entries and the Parallel has 2 branches: one weight per branch"},
		{"too many Weights", "", "P", `{"Aggregation": "weighted", "Weights": [1, 1, 1]}`, "/States/P/Progress/Weights", "Weights has 3 entries and the Parallel has 2 branches: one weight per branch"},
		{"a zero weight", "", "P", `{"Aggregation": "weighted", "Weights": [1, 0]}`, "/States/P/Progress/Weights/1", "Weights[1] must be a number greater than 0, not 0"},
		{"a string weight", "", "P", `{"Aggregation": "weighted", "Weights": ["1", 2]}`, "/States/P/Progress/Weights/0", "Weights[0] must be a number greater than 0, not string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := states.Parse([]byte(progressDefinition(tc.top, tc.state, tc.block)))
			var list states.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse = %v, want problems", err)
			}
			if len(list) != 1 {
				t.Errorf("Parse reported %d problems, want 1:\n%v", len(list), err)
			}
			for _, e := range list {
				if e.Pointer == tc.ptr && (e.Msg == tc.msg || strings.HasSuffix(tc.msg, ": ") && strings.HasPrefix(e.Msg, tc.msg)) {
					if e.State != tc.state {
						t.Errorf("problem %q names state %q, want %q", e.Error(), e.State, tc.state)
					}
					return
				}
			}
			t.Errorf("problems:\n%v\nwant %s: %s", err, tc.ptr, tc.msg)
		})
	}
}

// FuzzProgressBlock parses arbitrary Progress blocks on every kind of
// state and at the top level: Parse never panics, every problem points
// into a Progress block, and what it accepts keeps Progress's rules.
func FuzzProgressBlock(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"Enabled": false}`, `{"Path": "$.p.q[2]"}`, `{"Path": "$$.x"}`,
		`{"Milestones": [{"At": "50%", "Name": "half"}, {"At": 10, "Name": "start", "Emit": false}]}`,
		`{"Milestones": [{"At": "5e1%", "Name": ""}]}`, `{"Milestones": [{"At": 1e400, "Name": "x"}]}`,
		`{"PerItem": true, "AggregateBy": "average"}`, `{"Aggregation": "weighted", "Weights": [1, 2]}`,
		`{"Aggregation": "minimum", "PerBranch": true}`, `{"HeartbeatOnUpdate": true}`,
		`{"TotalStates": 3, "WeightedProgress": {"M": 2}}`, `[]`, `null`, `{"Milestones": [{"At": "%", "Name": "x"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, block string) {
		if !json.Valid([]byte(block)) {
			return
		}
		for _, at := range []string{"", "N", "T", "D", "M", "P", "S"} {
			def := progressDefinition(block, "", "")
			if at != "" {
				def = progressDefinition("", at, block)
			}
			m, err := states.Parse([]byte(def))
			var list states.ErrorList
			if err != nil {
				if !errors.As(err, &list) {
					return // not strict JSON (duplicate keys, bad UTF-8): refused before any Progress is read
				}
				for _, e := range list {
					if !strings.Contains(e.Pointer, "/Progress") || e.Msg == "" {
						t.Errorf("problem %q is not in a Progress block", e.Error())
					}
				}
				continue
			}
			if at == "" {
				w := m.Extensions.Progress
				if w.TotalStates < 1 {
					t.Errorf("TotalStates = %d", w.TotalStates)
				}
				for name, v := range w.Weights {
					if m.States[name] == nil || !(v > 0) {
						t.Errorf("weight %s = %g", name, v)
					}
				}
				continue
			}
			sp := m.States[at].Base().Progress
			for i, ms := range sp.Milestones {
				if ms.At < 0 || ms.At > 100 || ms.Name == "" || i > 0 && !(sp.Milestones[i-1].At < ms.At) {
					t.Errorf("milestones %+v", sp.Milestones)
				}
			}
			if sp.Aggregation == states.AggregationWeighted && len(sp.Weights) != 2 {
				t.Errorf("weights %v for two branches", sp.Weights)
			}
		}
	})
}

func ExampleStateProgress() {
	m, err := states.Parse([]byte(`{
	  "StartAt": "Research",
	  "Progress": {"WeightedProgress": {"Research": 3}},
	  "States": {
	    "Research": {
	      "Type": "Task",
	      "Agent": "Researcher",
	      "Progress": {
	        "Path": "$.progress.pct",
	        "Milestones": [{"At": "90%", "Name": "drafted"}, {"At": 25, "Name": "sources", "Emit": false}]
	      },
	      "Next": "Each"
	    },
	    "Each": {
	      "Type": "Map",
	      "ItemProcessor": {"StartAt": "Do", "States": {"Do": {"Type": "Pass", "End": true}}},
	      "Progress": {"PerItem": true, "AggregateBy": "average"},
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	w := m.Extensions.Progress
	fmt.Println("workflow:", w.Enabled, w.TotalStates, w.Weights)
	research := m.States["Research"].Base().Progress
	fmt.Println("research reports at", research.Path)
	for _, ms := range research.Milestones {
		fmt.Printf("  %g%% %s emit=%t\n", ms.At, ms.Name, ms.Emit)
	}
	each := m.States["Each"].Base().Progress
	fmt.Println("map:", each.PerItem, each.AggregateBy)
	// Output:
	// workflow: true 2 map[Research:3]
	// research reports at $.progress.pct
	//   25% sources emit=false
	//   90% drafted emit=true
	// map: true average
}
