package server

// What the execution page shows of a Task whose agent ran durable steps
// (agents.Request.Journal): a model loop's turns, each with the tool calls
// it asked for, a Go agent's own steps, and the tokens and cost of each
// agent call.

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// loopView is one agent call of a Task state that ran durable steps: its
// model turns with their tool calls, its other steps, and its totals.
type loopView struct {
	// State is the state's qualified name; Seq the call's first step
	// event (the timeline's anchor); Attempt counts the state's retries
	// from 1.
	State   string
	Seq     int64
	Attempt int64
	Turns   []loopTurnView
	// Steps are the call's plain steps (StepSucceeded, StepFailed) and
	// the tool calls of no turn shown, in the order they ended.
	Steps []stepView
	// Usage is the total of its turns (nil when they reported none);
	// ToolCalls counts its tool calls, FailedCalls the failed ones.
	Usage                  *usageView
	ToolCalls, FailedCalls int
}

// loopTurnView is one model turn.
type loopTurnView struct {
	N   int64
	Seq int64
	// Model is the model that answered (the one asked first when the turn
	// failed).
	Model      string
	Usage      *usageView
	Latency    string
	Text       payloadView
	StopReason string
	// FellBack are the models that failed before Model answered.
	FellBack []fellBackView
	// Failed is set when the turn failed, with Error and Cause.
	Failed bool
	Error  string
	Cause  payloadView
	// Messages counts the messages sent; Conversation is them as JSON.
	Messages     int
	Conversation payloadView
	// Calls are the tool calls the model asked for in this turn.
	Calls []stepView
}

// fellBackView is a model a turn fell back from, and why.
type fellBackView struct {
	Model, Error string
	Cause        payloadView
}

// stepView is a tool call or a plain step.
type stepView struct {
	// Name is the step's name; Tool and ID the tool's name and call ID
	// ("" for a plain step).
	Name, Tool, ID string
	// Seq is its event (0 while Pending).
	Seq     int64
	Latency string
	// Input is the tool's arguments (the step's input), Output its result.
	Input, Output payloadView
	Failed        bool
	Error         string
	Cause         payloadView
	// Pending is set for a tool call the model asked for whose outcome is
	// not recorded (yet).
	Pending bool
}

// journalKinds are the durable steps' event families.
var journalKinds = []string{engine.StepKindModelTurn, engine.StepKindToolCall, engine.StepKindStep}

// journalEvents are the event types of the durable steps.
func journalEvents() []string {
	var out []string
	for _, k := range journalKinds {
		out = append(out, k+"Succeeded", k+"Failed")
	}
	return out
}

// journalKind tells a durable step's event: its kind and whether it
// failed; ok is false for any other event.
func journalKind(typ string) (kind string, failed, ok bool) {
	for _, k := range journalKinds {
		switch typ {
		case k + "Succeeded":
			return k, false, true
		case k + "Failed":
			return k, true, true
		}
	}
	return "", false, false
}

// callRef is the agent call a state's step events belong to.
type callRef struct {
	key     string
	attempt int64
}

// loops rebuilds the agent calls of the execution's Task states that ran
// durable steps from their events. A step belongs to the call its state
// last scheduled (a TaskScheduled event's step and attempt): a call run
// again after a crash goes on in the same view, a retry is a new one.
// Events an operator rolled back over are left out; an event's links
// lead to its parts in the timeline's raw routes (base + "{seq}/input").
func loops(events []engine.Event, currency, base string) []loopView {
	var out []loopView
	current := map[string]callRef{} // qualified state → its call
	index := map[string]int{}       // call → its index in out
	for i, ev := range events {
		if ev.Superseded || ev.State == "" {
			continue
		}
		name, seq := ev.Scope+ev.State, int64(i+1)
		switch {
		case strings.HasSuffix(ev.Type, "StateEntered"):
			current[name] = callRef{key: "entered " + strconv.FormatInt(seq, 10)}
			continue
		case ev.Type == engine.EventTaskScheduled:
			if ref, ok := scheduledCall(ev.Detail); ok {
				current[name] = ref
			}
			continue
		}
		kind, failed, ok := journalKind(ev.Type)
		if !ok {
			continue
		}
		ref := current[name]
		k, seen := index[name+"\x00"+ref.key]
		if !seen {
			out = append(out, loopView{State: name, Seq: seq, Attempt: ref.attempt + 1})
			k = len(out) - 1
			index[name+"\x00"+ref.key] = k
		}
		at := base + strconv.FormatInt(seq, 10) + "/"
		l := &out[k]
		switch kind {
		case engine.StepKindModelTurn:
			t := modelTurnOf(ev, seq, failed, at, currency)
			l.Turns = append(l.Turns, t)
			if t.Usage != nil {
				l.Usage = addUsage(l.Usage, *t.Usage)
			}
		case engine.StepKindToolCall:
			l.ToolCalls++
			if failed {
				l.FailedCalls++
			}
			l.addToolCall(ev, seq, failed, at)
		default:
			l.Steps = append(l.Steps, stepOf(ev, seq, failed, at))
		}
	}
	return out
}

// scheduledCall reads which call a TaskScheduled event scheduled, from
// its detail ({"step", "attempt"}); ok is false without one.
func scheduledCall(detail any) (callRef, bool) {
	d, _ := detail.(map[string]any)
	step, ok := d["step"].(string)
	if !ok {
		return callRef{}, false
	}
	n, _ := d["attempt"].(json.Number)
	attempt, _ := jsonvalue.Int64(n)
	return callRef{key: step + "#" + string(n), attempt: max(attempt, 0)}, true
}

// modelTurnOf reads a model turn's event: the turn record of its output
// ({"model", "text", "toolCalls", "inputTokens", "outputTokens", "cost",
// "stopReason", "fellBack"}), its conversation from its input
// ({"messages"}), its number and latency from its detail.
func modelTurnOf(ev engine.Event, seq int64, failed bool, at, currency string) loopTurnView {
	detail, _ := ev.Detail.(map[string]any)
	name, _ := detail["name"].(string)
	t := loopTurnView{Seq: seq, Latency: latency(detail["millis"]), Failed: failed}
	t.N, _ = turnNumber(detail, name)
	t.Model, _ = detail["model"].(string)
	if in, ok := ev.Input.(map[string]any); ok {
		if msgs, ok := in["messages"].([]any); ok {
			t.Messages = len(msgs)
		}
		t.Conversation = cut(pretty(ev.Input), at+"input")
	}
	if failed {
		t.Error, t.Cause = ev.Error, cut(ev.Cause, at+"cause")
		return t
	}
	rec, _ := ev.Output.(map[string]any)
	if m, ok := rec["model"].(string); ok && m != "" {
		t.Model = m
	}
	if s, ok := rec["text"].(string); ok {
		t.Text = cut(s, at+"output")
	}
	t.StopReason, _ = rec["stopReason"].(string)
	if u, ok := turnUsage(rec, currency); ok {
		t.Usage = &u
	}
	fell, _ := rec["fellBack"].([]any)
	for _, f := range fell {
		obj, _ := f.(map[string]any)
		var fb fellBackView
		fb.Model, _ = obj["model"].(string)
		fb.Error, _ = obj["error"].(string)
		cause, _ := obj["cause"].(string)
		fb.Cause = cut(cause, at+"output")
		t.FellBack = append(t.FellBack, fb)
	}
	calls, _ := rec["toolCalls"].([]any)
	for i, c := range calls {
		obj, _ := c.(map[string]any)
		call := stepView{Pending: true}
		call.Tool, _ = obj["Name"].(string)
		call.ID, _ = obj["ID"].(string)
		if call.ID == "" {
			// The loop names a call without an ID by its place.
			call.ID = strconv.Itoa(i)
		}
		call.Input = cut(text(obj["Arguments"]), at+"output")
		t.Calls = append(t.Calls, call)
	}
	return t
}

// turnUsage is a turn record's tokens and cost; ok is false when it
// reported none.
func turnUsage(rec map[string]any, currency string) (usageView, bool) {
	u := usageView{Currency: currency}
	if n, ok := rec["inputTokens"].(json.Number); ok {
		u.InputTokens, _ = jsonvalue.Int64(n)
	}
	if n, ok := rec["outputTokens"].(json.Number); ok {
		u.OutputTokens, _ = jsonvalue.Int64(n)
	}
	u.Tokens = u.InputTokens + u.OutputTokens
	if n, ok := rec["cost"].(json.Number); ok {
		if r, valid := new(big.Rat).SetString(string(n)); valid && r.Sign() != 0 {
			u.Cost = string(n)
		}
	}
	if u == (usageView{Currency: currency}) {
		return usageView{}, false
	}
	return u, true
}

// addUsage is total with u added (total nil: u alone). Costs are added
// as the decimals they were written as.
func addUsage(total *usageView, u usageView) *usageView {
	if total == nil {
		return &u
	}
	sum := *total
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.Tokens += u.Tokens
	switch {
	case sum.Cost == "":
		sum.Cost = u.Cost
	case u.Cost != "":
		a, okA := new(big.Rat).SetString(sum.Cost)
		b, okB := new(big.Rat).SetString(u.Cost)
		if okA && okB {
			s := a.Add(a, b).FloatString(12)
			sum.Cost = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
		}
	}
	return &sum
}

// addToolCall puts a tool call's event under the turn that asked for it
// (in place of the call it asked for), or among the call's steps when no
// turn shown asked for it.
func (l *loopView) addToolCall(ev engine.Event, seq int64, failed bool, at string) {
	s := stepOf(ev, seq, failed, at)
	detail, _ := ev.Detail.(map[string]any)
	n, hasTurn := turnNumber(detail, s.Name)
	if i := strings.LastIndex(s.Name, "tool "); i >= 0 {
		s.ID = s.Name[i+len("tool "):]
	}
	if !hasTurn {
		l.Steps = append(l.Steps, s)
		return
	}
	for ti := len(l.Turns) - 1; ti >= 0; ti-- {
		t := &l.Turns[ti]
		if t.N != n {
			continue
		}
		for ci := range t.Calls {
			if c := &t.Calls[ci]; c.Pending && c.ID == s.ID {
				if s.Tool == "" {
					s.Tool = c.Tool
				}
				*c = s
				return
			}
		}
		t.Calls = append(t.Calls, s)
		return
	}
	l.Steps = append(l.Steps, s)
}

// stepOf reads a step's event: its name and latency (and a tool call's
// tool) from its detail, its input, and its output or error.
func stepOf(ev engine.Event, seq int64, failed bool, at string) stepView {
	detail, _ := ev.Detail.(map[string]any)
	s := stepView{Seq: seq, Latency: latency(detail["millis"]), Failed: failed}
	s.Name, _ = detail["name"].(string)
	s.Tool, _ = detail["tool"].(string)
	if ev.Input != nil {
		s.Input = cut(text(ev.Input), at+"input")
	}
	if failed {
		s.Error, s.Cause = ev.Error, cut(ev.Cause, at+"cause")
		return s
	}
	if str, ok := ev.Output.(string); ok {
		s.Output = cut(str, at+"output")
	} else if ev.Output != nil {
		s.Output = cut(pretty(ev.Output), at+"output")
	}
	return s
}

// turnNumber is the turn a step belongs to: its detail's "turn", or the
// number after the last "turn " of its name ("turn 2", "turn 2/tool c1").
func turnNumber(detail map[string]any, name string) (int64, bool) {
	if n, ok := detail["turn"].(json.Number); ok {
		if v, valid := jsonvalue.Int64(n); valid {
			return v, true
		}
	}
	i := strings.LastIndex(name, "turn ")
	if i < 0 || i > 0 && name[i-1] != '/' {
		return 0, false
	}
	digits, _, _ := strings.Cut(name[i+len("turn "):], "/")
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// latency writes a step's milliseconds: "340 ms", "2.5 s"; "" without.
func latency(v any) string {
	n, ok := v.(json.Number)
	if !ok {
		return ""
	}
	ms, valid := jsonvalue.Int64(n)
	switch {
	case !valid || ms < 0:
		return ""
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
}
