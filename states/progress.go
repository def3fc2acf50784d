package states

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Progress (ASL chapter 9): the top-level block says how an execution's
// percentage is counted; a state's block says how the state's own
// progress is followed — where its agent reports a percentage, the
// milestones it passes, and how a Map's items or a Parallel's branches
// add up. Every type here is immutable after Parse and safe for
// concurrent use.

// Map AggregateBy values.
const (
	// AggregateCount makes a Map's percentage its completed items over
	// its total.
	AggregateCount = "count"
	// AggregateAverage makes a Map's percentage the mean of its items'
	// own percentages.
	AggregateAverage = "average"
)

// Parallel Aggregation values.
const (
	// AggregationAverage makes a Parallel's percentage the mean of its
	// branches' percentages.
	AggregationAverage = "average"
	// AggregationMinimum makes it the least advanced branch's.
	AggregationMinimum = "minimum"
	// AggregationWeighted makes it the mean of its branches' percentages
	// weighted by Weights.
	AggregationWeighted = "weighted"
)

// DefaultProgressPath is where a Task's or Debate's agent reports its
// percentage when its Progress names no Path.
const DefaultProgressPath = "$.percentage"

// Limits of a state's Progress Milestones.
const (
	MaxMilestones    = 100
	MaxMilestoneName = 128
)

// WorkflowProgress is the top-level Progress block.
type WorkflowProgress struct {
	// Enabled is true unless the block says false.
	Enabled bool
	// TotalStates is the denominator of the execution's percentage: the
	// block's TotalStates, else the number of top-level states.
	TotalStates int
	// Weights is WeightedProgress: the weight (> 0) of each top-level
	// state it names in the execution's percentage (a state it does not
	// name weighs 1); nil when absent.
	Weights map[string]float64
}

// StateProgress is a state's Progress block.
type StateProgress struct {
	// Enabled is true unless the block says false.
	Enabled bool
	// Path selects the percentage in what the agent of a Task or Debate
	// reports (DefaultProgressPath unless set); nil on other states.
	Path *jsonpath.Path
	// Milestones are the named percentages the state passes, sorted by
	// At (no two equal); nil when absent.
	Milestones []Milestone
	// HeartbeatOnUpdate counts each progress report of a Task's agent
	// as a heartbeat (the Task must have a HeartbeatSeconds or
	// HeartbeatSecondsPath).
	HeartbeatOnUpdate bool

	// PerItem reports each item's own progress (Map only).
	PerItem bool
	// AggregateBy is AggregateCount (the default) or AggregateAverage on
	// a Map; "" on other states.
	AggregateBy string

	// Aggregation is AggregationAverage (the default),
	// AggregationMinimum or AggregationWeighted on a Parallel; "" on other
	// states.
	Aggregation string
	// Weights are the branches' weights (> 0, one per branch) when
	// Aggregation is AggregationWeighted; nil otherwise.
	Weights []float64
	// PerBranch reports each branch's own progress (Parallel only).
	PerBranch bool
}

// Milestone is a named percentage a state passes.
type Milestone struct {
	// At is the percentage, 0 to 100 ("50%" and 50 are both 50).
	At float64
	// Name names the milestone: unique within the state, at most
	// MaxMilestoneName characters.
	Name string
	// Emit says whether an event is emitted when the milestone is reached
	// (true unless the milestone says false).
	Emit bool
}

// workflowProgress reads the top-level Progress block of the top-level
// machine o; nil when absent.
func (p *parser) workflowProgress(o *object) *WorkflowProgress {
	const key = "Progress"
	po, _ := o.child(key, key)
	if po == nil {
		return nil
	}
	defer po.done("Progress")
	states, _ := o.m["States"].(map[string]any)
	w := &WorkflowProgress{Enabled: true, TotalStates: len(states)}
	if b, ok := po.boolean("Enabled"); ok {
		w.Enabled = b
	}
	if n, ok := po.count("TotalStates", 1); ok {
		w.TotalStates = int(n)
	}
	wo, _ := po.child("WeightedProgress", "WeightedProgress")
	if wo == nil {
		return w
	}
	w.Weights = make(map[string]float64, len(wo.m))
	for _, name := range sortedKeys(wo.m) {
		if _, isState := states[name]; !isState && states != nil {
			wo.has(name)
			wo.errorf(name, "WeightedProgress names %q, which is not a top-level state", name)
			continue
		}
		if f, ok := positive(wo, name); ok {
			w.Weights[name] = f
		}
	}
	wo.done("WeightedProgress")
	return w
}

// positive reads a number greater than 0.
func positive(o *object, key string) (float64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	f, msg := positiveNumber(v)
	if msg != "" {
		o.errorf(key, "%s %s", key, msg)
		return 0, false
	}
	return f, true
}

// positiveNumber returns v as a number greater than 0, or what is wrong
// with it.
func positiveNumber(v any) (float64, string) {
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, "must be a number greater than 0, not " + jsonvalue.TypeName(v)
	}
	f, ok := jsonvalue.Float64(n)
	if !ok || !(f > 0) {
		return 0, "must be a number greater than 0, not " + n.String()
	}
	return f, ""
}

// stateProgress reads the Progress block of state o of type typ; nil
// when absent.
func (p *parser) stateProgress(o *object, typ string) *StateProgress {
	const key = "Progress"
	po, _ := o.child(key, key)
	if po == nil {
		return nil
	}
	defer po.done("Progress")
	sp := &StateProgress{Enabled: true}
	if b, ok := po.boolean("Enabled"); ok {
		sp.Enabled = b
	}
	agent := typ == "Task" || typ == "Debate"
	if agent {
		sp.Path, _ = jsonpath.CompileReference(DefaultProgressPath)
	}
	if v, ok := po.get("Path"); ok {
		text, isStr := v.(string)
		switch {
		case !agent:
			po.errorf("Path", "Path is where an agent reports its percentage: only a Task's or a Debate's Progress has one, not %s's", article(typ))
		case !isStr:
			po.errorf("Path", "Path must be a JSONPath string, not %s", jsonvalue.TypeName(v))
		default:
			path, err := jsonpath.CompileReference(text)
			switch {
			case err != nil:
				po.errorf("Path", "Path %q is not a valid reference path: %s", text, errText(err))
			case !strings.HasPrefix(text, "$."):
				po.errorf("Path", `Path %q must select a field of the agent's report, like "$.percentage"`, text)
			default:
				sp.Path = path
			}
		}
	}
	sp.Milestones = p.milestones(po)
	if b, ok := po.boolean("HeartbeatOnUpdate"); ok {
		_, beats := o.m["HeartbeatSeconds"]
		_, beatsPath := o.m["HeartbeatSecondsPath"]
		switch {
		case b && typ != "Task":
			po.errorf("HeartbeatOnUpdate", "HeartbeatOnUpdate counts an agent's progress reports as heartbeats: only a Task has heartbeats, not %s", article(typ))
		case b && !beats && !beatsPath:
			po.errorf("HeartbeatOnUpdate", "HeartbeatOnUpdate needs the Task's HeartbeatSeconds or HeartbeatSecondsPath: without them no heartbeat is awaited")
		}
		sp.HeartbeatOnUpdate = b
	}

	onlyOn := func(want string, keys ...string) {
		for _, k := range keys {
			if typ != want && po.has(k) {
				po.errorf(k, "%s is only for %s state's Progress, not %s's", k, article(want), article(typ))
			}
		}
	}
	onlyOn("Map", "PerItem", "AggregateBy")
	onlyOn("Parallel", "Aggregation", "Weights", "PerBranch")
	switch typ {
	case "Map":
		sp.PerItem, _ = po.boolean("PerItem")
		sp.AggregateBy = AggregateCount
		if s, ok := po.enum("AggregateBy", []string{AggregateCount, AggregateAverage}, nil); ok {
			sp.AggregateBy = s
		}
	case "Parallel":
		sp.PerBranch, _ = po.boolean("PerBranch")
		sp.Aggregation = AggregationAverage
		if s, ok := po.enum("Aggregation", []string{AggregationAverage, AggregationMinimum, AggregationWeighted}, nil); ok {
			sp.Aggregation = s
		}
		branches, _ := o.m["Branches"].([]any)
		sp.Weights = p.branchWeights(po, sp.Aggregation, branches)
	}
	return sp
}

// branchWeights reads a Parallel's Progress Weights: present exactly
// when Aggregation is "weighted", one per branch.
func (p *parser) branchWeights(po *object, aggregation string, branches []any) []float64 {
	v, ok := po.get("Weights")
	switch {
	case !ok && aggregation == AggregationWeighted && po.has("Aggregation"):
		po.errorf("Aggregation", `Aggregation "weighted" needs Weights: one number greater than 0 per branch`)
		return nil
	case !ok:
		return nil
	case aggregation != AggregationWeighted:
		po.errorf("Weights", `Weights are for Aggregation "weighted" only`)
		return nil
	}
	list, isArr := v.([]any)
	if !isArr {
		po.errorf("Weights", "Weights must be an array of numbers greater than 0, one per branch, not %s", jsonvalue.TypeName(v))
		return nil
	}
	if branches != nil && len(list) != len(branches) {
		po.errorf("Weights", "Weights has %d entries and the Parallel has %d branches: one weight per branch", len(list), len(branches))
	}
	weights := make([]float64, 0, len(list))
	for i, e := range list {
		f, msg := positiveNumber(e)
		if msg != "" {
			p.errorf(fmt.Sprintf("%s/%d", po.at("Weights"), i), po.state, "Weights[%d] %s", i, msg)
			continue
		}
		weights = append(weights, f)
	}
	return weights
}

// milestones reads a Progress block's Milestones, sorted by At.
func (p *parser) milestones(po *object) []Milestone {
	v, ok := po.get("Milestones")
	if !ok {
		return nil
	}
	list, isArr := v.([]any)
	if !isArr || len(list) == 0 || len(list) > MaxMilestones {
		what := jsonvalue.TypeName(v)
		if isArr {
			what = fmt.Sprintf("%d entries", len(list))
		}
		po.errorf("Milestones", "Milestones must be an array of 1 to %d milestones, not %s", MaxMilestones, what)
		return nil
	}
	var out []Milestone
	names := make(map[string]int, len(list))
	ats := make(map[float64]int, len(list))
	for i, e := range list {
		mo := p.newObject(e, fmt.Sprintf("%s/%d", po.at("Milestones"), i), po.state, "a milestone")
		if mo == nil {
			continue
		}
		m := Milestone{Emit: true}
		good := true
		if raw, ok := mo.get("At"); !ok {
			mo.errorf("", "a milestone needs At: a percentage from 0 to 100, like 50 or \"50%%\"")
			good = false
		} else if at, msg := milestoneAt(raw); msg != "" {
			mo.errorf("At", "At %s", msg)
			good = false
		} else if j, dup := ats[at]; dup {
			mo.errorf("At", "At %g is also Milestones[%d]'s: each milestone is at its own percentage", at, j)
			good = false
		} else {
			m.At, ats[at] = at, i
		}
		if name, ok := mo.name("Name", true); ok {
			switch j, dup := names[name]; {
			case utf8.RuneCountInString(name) > MaxMilestoneName:
				mo.errorf("Name", "Name is %d characters long: at most %d", utf8.RuneCountInString(name), MaxMilestoneName)
				good = false
			case dup:
				mo.errorf("Name", "Name %q is also Milestones[%d]'s: milestone names are unique within a state", name, j)
				good = false
			default:
				m.Name, names[name] = name, i
			}
		} else {
			good = false
		}
		if b, ok := mo.boolean("Emit"); ok {
			m.Emit = b
		}
		mo.done("a milestone")
		if good {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Milestone) int { return cmp.Compare(a.At, b.At) })
	return out
}

// milestoneAt reads a milestone's At: a number from 0 to 100 or a string
// like "50%". It returns what is wrong with v, or "".
func milestoneAt(v any) (float64, string) {
	const want = `must be a percentage from 0 to 100, a number like 50 or a string like "50%"`
	switch x := v.(type) {
	case json.Number:
		f, ok := jsonvalue.Float64(x)
		if !ok || f < 0 || f > 100 {
			return 0, want + ", not " + x.String()
		}
		return f, ""
	case string:
		digits, isPct := strings.CutSuffix(x, "%")
		if !isPct || !isDecimal(digits) {
			return 0, want + ", not " + strconv.Quote(x)
		}
		f, err := strconv.ParseFloat(digits, 64)
		if err != nil || f > 100 {
			return 0, want + ", not " + strconv.Quote(x)
		}
		return f, ""
	}
	return 0, want + ", not " + jsonvalue.TypeName(v)
}
