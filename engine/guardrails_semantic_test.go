package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// wordJudge is a validating agent for semantic rules: it fails content
// holding word, and records what it was asked.
type wordJudge struct {
	word string
	mu   sync.Mutex
	reqs []agents.Request
}

func (j *wordJudge) agent() agents.Agent {
	return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		j.mu.Lock()
		j.reqs = append(j.reqs, *req)
		j.mu.Unlock()
		in, ok := req.Input.(map[string]any)
		if _, hasCheck := in["check"].(string); !ok || !hasCheck {
			return map[string]any{"valid": false, "reason": "not a semantic check"}, nil
		}
		text, err := jsonvalue.Marshal(in["content"])
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(text), j.word) {
			return map[string]any{"valid": false, "reason": "it mentions " + j.word}, nil
		}
		return map[string]any{"valid": true}, nil
	})
}

func TestGuardrailsSemantic(t *testing.T) {
	def := func(stage, set string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Guardrails":{"` + stage + `":` + set + `},"ResultPath":"$.r","End":true}}}`
	}
	rule := func(action string) string {
		return `{"Rules":[{"Type":"semantic","Check":"gives no diagnosis","Validator":"Judge","Action":"` + action + `"}],"MaxRetries":2}`
	}
	t.Run("block", func(t *testing.T) {
		a := &scripted{outputs: []string{`{"text":"the diagnosis is flu"}`}}
		j := &wordJudge{word: "diagnosis"}
		res, hist := runScripted(t, def("Output", rule("block")), `{"q":"cough"}`, map[string]agents.Agent{"A": a.agent(t), "Judge": j.agent()})
		wantError(t, res, asl.ErrAgentGuardrailViolation,
			`Guardrails.Output.Rules[0] (semantic) at $: validator "Judge" found that the content does not satisfy the check "gives no diagnosis": it mentions diagnosis`)
		if len(j.reqs) != 1 {
			t.Fatalf("judge calls %d, want 1", len(j.reqs))
		}
		got, _ := jsonvalue.Marshal(j.reqs[0].Input)
		if want := `{"check":"gives no diagnosis","content":{"text":"the diagnosis is flu"}}`; string(got) != want {
			t.Errorf("judge input %s, want %s", got, want)
		}
		if j.reqs[0].Step != "T#1/guardrails-output-0/Judge" {
			t.Errorf("judge step %q", j.reqs[0].Step)
		}
		ev := eventsOfType(hist, engine.EventGuardrail)
		if len(ev) != 1 || ev[0].Detail.(map[string]any)["outcome"] != "violation" {
			t.Errorf("guardrail events %+v", ev)
		}
	})
	t.Run("warn records and goes on", func(t *testing.T) {
		a := &scripted{outputs: []string{`"the diagnosis is flu"`}}
		j := &wordJudge{word: "diagnosis"}
		res, hist := runScripted(t, def("Output", rule("warn")), `{}`, map[string]agents.Agent{"A": a.agent(t), "Judge": j.agent()})
		wantOutput(t, res, `{"r":"the diagnosis is flu"}`)
		ev := eventsOfType(hist, engine.EventGuardrail)
		if len(ev) != 1 {
			t.Fatalf("%d guardrail events, want 1", len(ev))
		}
		d, _ := jsonvalue.Marshal(ev[0].Detail)
		if !strings.Contains(string(d), `"action":"warn"`) || !strings.Contains(string(d), `"outcome":"passed"`) || !strings.Contains(string(d), `"type":"semantic"`) {
			t.Errorf("guardrail event %s", d)
		}
	})
	t.Run("a passing check leaves no event", func(t *testing.T) {
		a := &scripted{outputs: []string{`"rest and drink water"`}}
		j := &wordJudge{word: "diagnosis"}
		res, hist := runScripted(t, def("Output", rule("block")), `{}`, map[string]agents.Agent{"A": a.agent(t), "Judge": j.agent()})
		wantOutput(t, res, `{"r":"rest and drink water"}`)
		if n := len(eventsOfType(hist, engine.EventGuardrail)); n != 0 {
			t.Errorf("%d guardrail events, want 0", n)
		}
	})
	t.Run("retry regenerates until it passes", func(t *testing.T) {
		a := &scripted{outputs: []string{`"the diagnosis is flu"`, `"see a doctor"`}}
		j := &wordJudge{word: "diagnosis"}
		res, hist := runScripted(t, def("Output", rule("retry")), `{}`, map[string]agents.Agent{"A": a.agent(t), "Judge": j.agent()})
		wantOutput(t, res, `{"r":"see a doctor"}`)
		if len(a.reqs) != 2 || a.reqs[1].Violation["guardrail"] != "Output" {
			t.Fatalf("agent calls %+v", a.reqs)
		}
		if len(j.reqs) != 2 {
			t.Errorf("judge calls %d, want 2", len(j.reqs))
		}
		ev := eventsOfType(hist, engine.EventGuardrail)
		if len(ev) != 1 || ev[0].Detail.(map[string]any)["outcome"] != "regenerate" {
			t.Errorf("guardrail events %+v", ev)
		}
	})
	t.Run("retry runs out", func(t *testing.T) {
		a := &scripted{outputs: []string{`"the diagnosis is flu"`}}
		j := &wordJudge{word: "diagnosis"}
		res, _ := runScripted(t, def("Output", rule("retry")), `{}`, map[string]agents.Agent{"A": a.agent(t), "Judge": j.agent()})
		wantError(t, res, asl.ErrAgentGuardrailViolation, "Guardrails.Output.Rules[0] (semantic)")
		if len(a.reqs) != 3 {
			t.Errorf("agent calls %d, want 3 (one and two regenerations)", len(a.reqs))
		}
	})
	t.Run("on Input, with the set's Validator, before the call", func(t *testing.T) {
		a := &scripted{outputs: []string{`"ok"`}}
		j := &wordJudge{word: "diagnosis"}
		set := `{"Rules":[{"Type":"semantic","Check":"asks for no diagnosis"}],"Validator":"Judge"}`
		res, _ := runScripted(t, def("Input", set), `{"q":"give me a diagnosis"}`, map[string]agents.Agent{"A": a.agent(t), "Judge": j.agent()})
		wantError(t, res, asl.ErrAgentInvalidInput, "Guardrails.Input.Rules[0] (semantic) at $")
		if len(a.reqs) != 0 {
			t.Errorf("the agent was called")
		}
		if len(j.reqs) != 1 || j.reqs[0].Step != "T#1/guardrails-input/Judge" {
			t.Errorf("judge calls %+v", j.reqs)
		}
	})
}
