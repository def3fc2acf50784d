package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Progress (ASL chapter 9): how far an execution, a state, a Map or a
// Parallel is. Reports are live, like streamed text: they go to the
// execution's feed (a ChunkProgress), never to history — but for the
// milestones a state's Progress names, which are history events
// (EventProgressMilestone) and, when they Emit, events of the workflow's
// OnProgress channel.

// EventProgressMilestone records a milestone a state reached.
const EventProgressMilestone = "ProgressMilestone"

// ProgressReport is what a ChunkProgress carries.
type ProgressReport struct {
	// Percentage is how far the state is, 0 to 100, when known.
	Percentage *float64 `json:"percentage,omitempty"`
	// Report is what the agent reported (ReportProgress), when it is not
	// a plain number.
	Report any `json:"report,omitempty"`
	// Milestone names the milestone reached.
	Milestone string `json:"milestone,omitempty"`
	// A Map's items (or a Parallel's branches): how many in all, done,
	// running, not started and failed.
	Total      int64 `json:"total,omitempty"`
	Completed  int64 `json:"completed,omitempty"`
	InProgress int64 `json:"inProgress,omitempty"`
	Pending    int64 `json:"pending,omitempty"`
	Failed     int64 `json:"failed,omitempty"`
	// Parts are each item's (branch's) percentage, with the Map's
	// PerItem (the Parallel's PerBranch), up to 1000 of them.
	Parts []float64 `json:"parts,omitempty"`
}

// progressEvery is the least time between two count reports of one Map
// or Parallel (the last one always goes).
const progressEvery = 100 * time.Millisecond

// reportProgress adds a progress chunk of state (at step) to execution
// id's feed, when the feed exists: someone follows the execution, or a
// state of it streams. Nobody following, nothing is kept.
func (x *Executor) reportProgress(id, state, step string, p *ProgressReport) {
	f := x.live.feed(id, false)
	if f == nil {
		return
	}
	f = x.own(id, f)
	defer f.mu.Unlock()
	f.appendLocked(Chunk{Kind: ChunkProgress, State: state, Step: step, Progress: p})
}

// maxParts bounds the parts (items, branches) a report lists with
// PerItem or PerBranch.
const maxParts = 1000

// counts follows a Map's items or a Parallel's branches (its parts) for
// progress reports: how many are done, running and failed, and, for a
// percentage other than by count, how far each part is (100 once it
// ended, else what an agent in it last reported, else 0).
type counts struct {
	x         *Executor
	id, state string
	step      string
	workflow  string
	// how is "count" (done parts over all), "average", "minimum" or
	// "weighted" (by weights); perPart lists each part's percentage.
	how     string
	weights []float64
	perPart bool

	mu        sync.Mutex
	total     int64
	running   int64
	completed int64
	failed    int64
	parts     map[int]float64
	last      time.Time
	// trailing is set while a report held back by the interval waits;
	// lastDone when the last report sent had every part done.
	trailing bool
	lastDone bool
}

// newCounts follows total parts of the state, as its Progress block says
// (nil: by count).
func (h *stateRun) newCounts(total int, sp *states.StateProgress) *counts {
	c := &counts{x: h.r.x, id: h.r.exec.ID, state: h.qualified(), step: h.step(), workflow: h.r.exec.MachineName, total: int64(total), how: "count"}
	if sp != nil && sp.Enabled {
		switch {
		case sp.AggregateBy == states.AggregateAverage:
			c.how = "average"
		case sp.Aggregation == states.AggregationMinimum:
			c.how = "minimum"
		case sp.Aggregation == states.AggregationWeighted:
			c.how, c.weights = "weighted", sp.Weights
		case sp.Aggregation == states.AggregationAverage:
			c.how = "average"
		}
		c.perPart = (sp.PerItem || sp.PerBranch) && total <= maxParts
	}
	if c.how != "count" || c.perPart {
		c.parts = make(map[int]float64)
	}
	return c
}

// start counts one part started.
func (c *counts) start() {
	c.mu.Lock()
	c.running++
	c.mu.Unlock()
	if f := c.x.hooks.PartsMoved; f != nil {
		f(c.workflow, 1, 0, 0)
	}
}

// grow counts one more part (a Distributed Map learns its items as it
// reads them).
func (c *counts) grow() {
	c.mu.Lock()
	c.total++
	c.mu.Unlock()
}

// abandon counts a part that started and stops without ending (a child
// execution waiting, or aborted with its map run).
func (c *counts) abandon() {
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	if f := c.x.hooks.PartsMoved; f != nil {
		f(c.workflow, -1, 0, 0)
	}
}

// end counts part slot ended (failed or not) and reports.
func (c *counts) end(slot int, failed bool) {
	if f := c.x.hooks.PartsMoved; f != nil {
		if failed {
			f(c.workflow, -1, 0, 1)
		} else {
			f(c.workflow, -1, 1, 0)
		}
	}
	c.mu.Lock()
	c.running--
	if failed {
		c.failed++
	} else {
		c.completed++
	}
	if c.parts != nil {
		c.parts[slot] = 100
	}
	c.changedLocked()
}

// part records how far part slot is, as an agent in it reported.
func (c *counts) part(slot int, pct float64) {
	c.mu.Lock()
	if c.parts == nil || c.parts[slot] == 100 {
		c.mu.Unlock()
		return
	}
	c.parts[slot] = pct
	c.changedLocked()
}

// changedLocked reports the counts (c.mu held; it releases it): at once,
// or, within progressEvery of the last report, when the interval ends
// (once), so that a Map whose next part takes long never shows stale
// counts; the last count always at once.
func (c *counts) changedLocked() {
	now := time.Now()
	done := c.completed+c.failed == c.total
	if wait := progressEvery - now.Sub(c.last); !done && wait > 0 {
		if !c.trailing {
			c.trailing = true
			time.AfterFunc(wait, c.flush)
		}
		c.mu.Unlock()
		return
	}
	p := c.reportLocked(now)
	c.mu.Unlock()
	c.x.reportProgress(c.id, c.state, c.step, p)
}

// flush sends the counts held back by the interval.
func (c *counts) flush() {
	c.mu.Lock()
	c.trailing = false
	if c.lastDone {
		c.mu.Unlock()
		return // the last count went out already
	}
	p := c.reportLocked(time.Now())
	c.mu.Unlock()
	c.x.reportProgress(c.id, c.state, c.step, p)
}

// reportLocked is the report of the counts now (c.mu held).
func (c *counts) reportLocked(now time.Time) *ProgressReport {
	c.last = now
	c.lastDone = c.completed+c.failed == c.total
	pct := c.percentLocked()
	p := &ProgressReport{Percentage: &pct, Total: c.total, Completed: c.completed, InProgress: c.running, Failed: c.failed,
		Pending: c.total - c.completed - c.failed - c.running}
	if c.perPart {
		p.Parts = make([]float64, c.total)
		for i := range p.Parts {
			p.Parts[i] = c.parts[i]
		}
	}
	return p
}

// percentLocked combines the parts as c.how says.
func (c *counts) percentLocked() float64 {
	n := max(c.total, 1)
	switch c.how {
	case "average":
		var sum float64
		for _, v := range c.parts {
			sum += v
		}
		return sum / float64(n)
	case "minimum":
		least := 100.0
		for i := range int(c.total) {
			least = min(least, c.parts[i])
		}
		return least
	case "weighted":
		var sum, all float64
		for i := range int(c.total) {
			w := 1.0
			if i < len(c.weights) {
				w = c.weights[i]
			}
			sum += w * c.parts[i]
			all += w
		}
		if all == 0 {
			return 0
		}
		return sum / all
	}
	return 100 * float64(c.completed+c.failed) / float64(n)
}

// ExecutionProgress is how far an execution is, as its history shows.
type ExecutionProgress struct {
	// Percentage is 0 to 100: the top-level states completed, over the
	// workflow's Progress TotalStates (or its top-level states), or by
	// their WeightedProgress; 100 once it succeeded.
	Percentage float64 `json:"percentage"`
	// Completed counts the distinct top-level states completed; Total is
	// the denominator (TotalStates, or the number of top-level states).
	Completed int `json:"completed"`
	Total     int `json:"total"`
}

// ProgressOf computes an execution's progress from m and its history.
// A state completed twice (a loop) counts once.
func ProgressOf(m *states.Machine, history []Event) ExecutionProgress {
	var wp *states.WorkflowProgress
	if m.Extensions != nil {
		wp = m.Extensions.Progress
	}
	total := len(m.States)
	if wp != nil && wp.TotalStates > 0 {
		total = wp.TotalStates
	}
	done := map[string]bool{}
	succeeded := false
	for _, e := range history {
		switch {
		case e.Type == EventExecutionSucceeded:
			succeeded = true
		case e.Scope == "" && e.State != "" && strings.HasSuffix(e.Type, "StateExited"):
			done[e.State] = true
		}
	}
	p := ExecutionProgress{Completed: len(done), Total: total}
	switch {
	case succeeded:
		p.Percentage = 100
	case wp != nil && len(wp.Weights) > 0:
		var all, got float64
		for name := range m.States {
			w, ok := wp.Weights[name]
			if !ok {
				w = 1
			}
			all += w
			if done[name] {
				got += w
			}
		}
		if all > 0 {
			p.Percentage = 100 * got / all
		}
	case total > 0:
		p.Percentage = min(100, 100*float64(len(done))/float64(total))
	}
	return p
}

// sortedMilestones is a copy of ms sorted by At.
func sortedMilestones(ms []states.Milestone) []states.Milestone {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b states.Milestone) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return out
}

// maxReport bounds an agent's progress report kept in the feed (its
// JSON); a larger one is replaced by {"truncated": true}.
const maxReport = 16 << 10

// progressReporter is agents.Request.OnProgress for a state whose
// Progress block is enabled: each report goes to the execution's feed,
// counts as a heartbeat with HeartbeatOnUpdate, and the milestones its
// percentage passes are recorded (EventProgressMilestone) and, when they
// Emit, sent to the workflow's OnProgress channel — each once per agent
// call.
func (h *stateRun) progressReporter(sp *states.StateProgress, req *agents.Request) func(any) {
	r := h.r
	state, step := req.State, req.Step
	ms := sortedMilestones(sp.Milestones)
	var mu sync.Mutex
	reached := 0
	return func(report any) {
		p := &ProgressReport{}
		pct, ok := percentOf(report, sp.Path)
		if ok {
			p.Percentage = &pct
		}
		// A plain number says it all; another report is shown as it is.
		if v := normalized(report); v != nil && !isNumber(v) {
			p.Report = v
			if jsonvalue.SizeExceeds(v, maxReport) {
				p.Report = map[string]any{"truncated": true}
			}
		}
		r.x.reportProgress(r.exec.ID, state, step, p)
		if sp.HeartbeatOnUpdate {
			req.Heartbeat()
		}
		if !ok {
			return
		}
		// The Map item or Parallel branch the state runs in is that far.
		for sc := h.sc; sc != nil; sc = sc.parent {
			if sc.agg != nil {
				sc.agg.part(sc.slot, pct)
				break
			}
		}
		mu.Lock()
		var passed []states.Milestone
		for reached < len(ms) && pct >= ms[reached].At {
			passed = append(passed, ms[reached])
			reached++
		}
		mu.Unlock()
		for _, m := range passed {
			at := m.At
			r.ownEvent(Event{Type: EventProgressMilestone, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
				Detail: map[string]any{"milestone": m.Name, "at": at, "percentage": pct}})
			r.x.reportProgress(r.exec.ID, state, step, &ProgressReport{Percentage: &at, Milestone: m.Name})
			if w := r.workflowEvents(); m.Emit && w != nil && w.OnProgress != "" {
				r.emit(w.Channels[w.OnProgress], EmittedEvent{Type: "state.milestone", State: h.name(), Scope: h.sc.prefix,
					Data: map[string]any{"milestone": m.Name, "at": at, "percentage": pct}})
			}
		}
	}
}

// percentOf reads the percentage of a report: a number itself, else the
// number Path (default $.percentage) selects; false when there is none
// in 0..100.
func percentOf(report any, path *jsonpath.Path) (float64, bool) {
	v := normalized(report)
	if _, plain := v.(json.Number); !plain {
		if path == nil {
			path = defaultProgressPath
		}
		got, err := path.Get(v, nil)
		if err != nil {
			return 0, false
		}
		v = got
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, ok := jsonvalue.Float64(n)
	if !ok || f < 0 || f > 100 {
		return 0, false
	}
	return f, true
}

// defaultProgressPath is where a report's percentage is without a Path.
var defaultProgressPath = func() *jsonpath.Path {
	p, err := jsonpath.CompileReference("$.percentage")
	if err != nil {
		panic(err)
	}
	return p
}()

func isNumber(v any) bool {
	_, ok := v.(json.Number)
	return ok
}

// normalized is v as JSON values (a Go agent may report a struct).
func normalized(v any) any {
	if n, err := jsonvalue.Normalize(v); err == nil {
		return n
	}
	return nil
}
