package server

// What the execution page shows of its agents: the usage of each call and
// of the whole execution, and each Debate's rounds as a transcript.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// usageView is what agent calls consumed, as the page shows it.
type usageView struct {
	InputTokens, OutputTokens, Tokens int64
	// Cost is as the engine wrote it ("" when the calls reported none),
	// in Currency: the workflow Budget's, "" without one.
	Cost, Currency string
}

// budgetView is the workflow Budget's limits, for the summary.
type budgetView struct {
	MaxTokens int64
	MaxCost   string // "" when none
	Currency  string
	OnExceed  string
}

// budgetOf is m's workflow Budget; ok is false when it has none.
func budgetOf(m *states.Machine) (budgetView, bool) {
	if m == nil || m.Extensions == nil || m.Extensions.Budget == nil {
		return budgetView{}, false
	}
	b := m.Extensions.Budget
	v := budgetView{MaxTokens: b.MaxTokens, Currency: b.Currency, OnExceed: b.OnExceed}
	if b.MaxCost > 0 {
		v.MaxCost = strconv.FormatFloat(b.MaxCost, 'f', -1, 64)
	}
	return v, true
}

// totalUsage is an execution's usage totals; ok is false when its agents
// reported none.
func totalUsage(u engine.Usage, currency string) (usageView, bool) {
	if u == (engine.Usage{}) {
		return usageView{}, false
	}
	v := usageView{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Tokens: u.Tokens, Currency: currency}
	if u.Cost != 0 {
		v.Cost = strconv.FormatFloat(u.Cost, 'f', -1, 64)
	}
	return v, true
}

// callUsage reads the usage an agent call's outcome event holds in its
// detail ({"usage": {"inputTokens", "outputTokens", "tokens", "cost"}});
// ok is false when it holds none.
func callUsage(detail any, currency string) (usageView, bool) {
	d, _ := detail.(map[string]any)
	u, ok := d["usage"].(map[string]any)
	if !ok {
		return usageView{}, false
	}
	v := usageView{Currency: currency}
	for k, dst := range map[string]*int64{"inputTokens": &v.InputTokens, "outputTokens": &v.OutputTokens, "tokens": &v.Tokens} {
		if n, isNum := u[k].(json.Number); isNum {
			*dst, _ = jsonvalue.Int64(n)
		}
	}
	if n, isNum := u["cost"].(json.Number); isNum && n != "0" {
		v.Cost = string(n)
	}
	if v == (usageView{Currency: currency}) {
		return usageView{}, false
	}
	return v, true
}

// isCallOutcome tells the events that end an agent call.
func isCallOutcome(typ string) bool {
	return typ == engine.EventTaskSucceeded || typ == engine.EventTaskFailed || typ == engine.EventTaskTimedOut
}

// debateView is one run of a Debate state as a transcript.
type debateView struct {
	// State is the state's qualified name; Seq the event that entered it
	// (the timeline's anchor), Attempt counts its retries from 1.
	State   string
	Seq     int64
	Attempt int
	Topic   string
	Rounds  []roundView
	// Ended is set once the state exited; Outcome is its result when its
	// output still holds it.
	Ended   bool
	Outcome *outcomeView
	// Arbiter is the arbiter's turn, when it was asked.
	Arbiter *turnView
}

type roundView struct {
	N     int64
	Turns []turnView
}

// turnView is one debater's answer: its position (a "position" or
// "decision" field) apart, its other fields as text.
type turnView struct {
	Agent    string
	Position string
	Said     []saidView
	Usage    *usageView
}

type saidView struct{ Field, Text string }

// outcomeView is how a Debate ended.
type outcomeView struct {
	// Consensus is "reached", "not reached", or "" when the Debate has no
	// Consensus block.
	Consensus string
	Agreement string // as a percentage
	Decision  string
	Arbiter   string
}

// turnOf makes a debater's response readable.
func turnOf(agent string, response any) turnView {
	t := turnView{Agent: agent}
	obj, ok := response.(map[string]any)
	if !ok {
		t.Said = []saidView{{Text: text(response)}}
		return t
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if (k == "position" || k == "decision") && t.Position == "" {
			t.Position = text(obj[k])
			continue
		}
		t.Said = append(t.Said, saidView{Field: k, Text: text(obj[k])})
	}
	return t
}

// text is a value as prose: a string as is, anything else as compact
// JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// debateCall reads which round and debater a Debate's agent call was, from
// the step of its idempotency key (".../Debate#1/round-2/Critic").
func debateCall(detail any) (round int64, agent string, ok bool) {
	d, _ := detail.(map[string]any)
	step, _ := d["step"].(string)
	i := strings.LastIndex(step, "/round-")
	if i < 0 {
		return 0, "", false
	}
	n, agent, found := strings.Cut(step[i+len("/round-"):], "/")
	round, err := strconv.ParseInt(n, 10, 64)
	if !found || err != nil || agent == "" {
		return 0, "", false
	}
	return round, agent, true
}

// debates rebuilds the transcripts of the execution's Debate states from
// its history: the rounds from their DebateRoundCompleted events, the
// usage and the arbiter's answer from the calls' events, the outcome from
// the state's output (where its ResultPath put the result). Events an
// operator rolled back over are left out.
func debates(m *states.Machine, events []engine.Event, currency string) []debateView {
	var out []debateView
	open := map[string]int{} // qualified state → index in out
	type callKey struct {
		round int64
		agent string
	}
	usage := map[string]map[callKey]usageView{}
	defs := debateStates(m)
	for i, ev := range events {
		d := defs[ev.State]
		if ev.Superseded || d == nil {
			continue
		}
		name := ev.Scope + ev.State
		k, running := open[name]
		switch {
		case ev.Type == "DebateStateEntered":
			out = append(out, debateView{State: name, Seq: int64(i + 1), Attempt: 1})
			open[name], usage[name] = len(out)-1, map[callKey]usageView{}
		case !running:
			continue
		case ev.Type == engine.EventTaskScheduled:
			if in, ok := ev.Input.(map[string]any); ok && out[k].Topic == "" && in["topic"] != nil {
				out[k].Topic = text(in["topic"])
			}
		case isCallOutcome(ev.Type):
			round, agent, ok := debateCall(ev.Detail)
			if !ok {
				continue
			}
			u, used := callUsage(ev.Detail, currency)
			if used {
				usage[name][callKey{round, agent}] = u
			}
			if d.Consensus != nil && agent == d.Consensus.Arbiter && round > int64(len(out[k].Rounds)) && ev.Type == engine.EventTaskSucceeded {
				t := turnOf(agent, ev.Output)
				if used {
					t.Usage = &u
				}
				out[k].Arbiter = &t
			}
		case ev.Type == engine.EventDebateRound:
			detail, _ := ev.Detail.(map[string]any)
			n, _ := detail["round"].(json.Number)
			round, _ := jsonvalue.Int64(n)
			if rs := out[k].Rounds; len(rs) > 0 && round <= rs[len(rs)-1].N {
				// A retry of the Debate starts over from round 1.
				out = append(out, debateView{State: name, Seq: out[k].Seq, Attempt: out[k].Attempt + 1, Topic: out[k].Topic})
				k = len(out) - 1
				open[name] = k
			}
			rv := roundView{N: round}
			turns, _ := detail["turns"].([]any)
			for _, tv := range turns {
				obj, _ := tv.(map[string]any)
				agent, _ := obj["agent"].(string)
				t := turnOf(agent, obj["response"])
				if u, ok := usage[name][callKey{round, agent}]; ok {
					t.Usage = &u
				}
				rv.Turns = append(rv.Turns, t)
			}
			out[k].Rounds = append(out[k].Rounds, rv)
		case ev.Type == "DebateStateExited":
			out[k].Ended = true
			out[k].Outcome = debateOutcome(d, ev.Output)
			delete(open, name)
		}
	}
	return out
}

// debateStates are the Debate states of m and of its nested machines, by
// name (state names are unique across a definition).
func debateStates(m *states.Machine) map[string]*states.Debate {
	out := map[string]*states.Debate{}
	m.Each(func(_, name string, st states.State) bool {
		if d, ok := st.(*states.Debate); ok {
			out[name] = d
		}
		return true
	})
	return out
}

// debateOutcome finds a Debate's result in its state's output, where its
// ResultPath put it; nil when the output does not hold it (a discarded
// result, an OutputPath that kept another part).
func debateOutcome(d *states.Debate, output any) *outcomeView {
	if d.ResultPath.Discard || d.OutputPath.Null || d.OutputPath.Path != nil && d.OutputPath.Path.String() != "$" {
		return nil
	}
	result := output
	if p := d.ResultPath.Path; p != nil && p.String() != "$" {
		if p.IsContext() || p.Variable() != "" {
			return nil
		}
		v, err := p.Get(output, nil)
		if err != nil {
			return nil
		}
		result = v
	}
	obj, ok := result.(map[string]any)
	if !ok {
		return nil
	}
	n, ok := obj["agreement"].(json.Number)
	if !ok {
		return nil
	}
	o := &outcomeView{}
	if f, valid := jsonvalue.Float64(n); valid {
		o.Agreement = strconv.FormatFloat(f*100, 'f', 0, 64) + "%"
	}
	switch obj["consensus"] {
	case true:
		o.Consensus = "reached"
	case false:
		o.Consensus = "not reached"
	}
	if v := obj["decision"]; v != nil {
		o.Decision = text(v)
	}
	o.Arbiter, _ = obj["arbiter"].(string)
	return o
}
