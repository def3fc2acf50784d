package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// scripted answers its calls in turn with outputs (the last repeats) and
// records the requests.
type scripted struct {
	mu      sync.Mutex
	outputs []string
	reqs    []agents.Request
}

func (s *scripted) agent(t *testing.T) agents.Agent {
	return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reqs = append(s.reqs, *req)
		out := s.outputs[min(len(s.reqs), len(s.outputs))-1]
		return mustJSON(t, out), nil
	})
}

func runScripted(t *testing.T, def, input string, as map[string]agents.Agent) (*engine.Result, []engine.Event) {
	t.Helper()
	reg := agents.NewRegistry()
	for n, a := range as {
		_ = reg.Register(n, a)
	}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, input), engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := st.History(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	return res, hist
}

func eventsOfType(hist []engine.Event, typ string) []engine.Event {
	var out []engine.Event
	for _, e := range hist {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestGuardrailsInput(t *testing.T) {
	task := func(rules string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Guardrails":{"Input":` + rules + `},"ResultPath":"$.r","End":true}}}`
	}
	t.Run("redact before the agent sees it", func(t *testing.T) {
		a := &scripted{outputs: []string{`"done"`}}
		res, hist := runScripted(t, task(`{"Rules":[{"Type":"pii","Action":"redact"}]}`), `{"note":"mail jane@example.com"}`, map[string]agents.Agent{"A": a.agent(t)})
		// The document keeps its own data; the agent got it redacted.
		wantOutput(t, res, `{"note":"mail jane@example.com","r":"done"}`)
		if got, _ := jsonvalue.Marshal(a.reqs[0].Input); string(got) != `{"note":"mail [REDACTED:email]"}` {
			t.Errorf("agent input %s", got)
		}
		ev := eventsOfType(hist, engine.EventGuardrail)
		if len(ev) != 1 || ev[0].Detail.(map[string]any)["outcome"] != "passed" {
			t.Fatalf("guardrail events %+v", ev)
		}
		if b, _ := jsonvalue.Marshal(ev[0].Detail); strings.Contains(string(b), "jane@") {
			t.Errorf("the history holds the raw address: %s", b)
		}
	})
	t.Run("block is Agent.InvalidInput, before any call", func(t *testing.T) {
		a := &scripted{outputs: []string{`"done"`}}
		res, _ := runScripted(t, task(`{"Rules":[{"Type":"pattern","Block":["DROP TABLE"]}]}`), `{"q":"x; drop table users"}`, map[string]agents.Agent{"A": a.agent(t)})
		wantError(t, res, asl.ErrAgentInvalidInput, "Guardrails.Input.Rules[0] (pattern) at $.q")
		if len(a.reqs) != 0 {
			t.Errorf("the agent was called %d times", len(a.reqs))
		}
	})
	t.Run("validator agent", func(t *testing.T) {
		a := &scripted{outputs: []string{`"done"`}}
		v := &scripted{outputs: []string{`{"valid":false,"reason":"off topic"}`}}
		res, _ := runScripted(t, task(`{"Validator":"V"}`), `{"q":"x"}`, map[string]agents.Agent{"A": a.agent(t), "V": v.agent(t)})
		wantError(t, res, asl.ErrAgentInvalidInput, "off topic")
		if len(v.reqs) != 1 || v.reqs[0].Step != "T#1/guardrails-input/V" {
			t.Errorf("validator calls %+v", v.reqs)
		}
	})
}

func TestGuardrailsOutput(t *testing.T) {
	def := func(set string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Guardrails":{"Output":` + set + `},"End":true}}}`
	}
	retry := `{"Rules":[{"Type":"regex","Pattern":"(?i)lorem","Action":"retry"}],"MaxRetries":2}`
	t.Run("regenerated until it passes", func(t *testing.T) {
		a := &scripted{outputs: []string{`{"text":"lorem"}`, `{"text":"Lorem ipsum"}`, `{"text":"fine"}`}}
		res, hist := runScripted(t, def(retry), `{}`, map[string]agents.Agent{"A": a.agent(t)})
		wantOutput(t, res, `{"text":"fine"}`)
		if len(a.reqs) != 3 {
			t.Fatalf("%d calls, want 3", len(a.reqs))
		}
		if a.reqs[0].Violation != nil || a.reqs[1].Violation["guardrail"] != "Output" {
			t.Errorf("violations told: %v, %v", a.reqs[0].Violation, a.reqs[1].Violation)
		}
		if a.reqs[1].Step != "T#1/regenerate-1" || a.reqs[2].Step != "T#1/regenerate-2" {
			t.Errorf("steps %q %q", a.reqs[1].Step, a.reqs[2].Step)
		}
		ev := eventsOfType(hist, engine.EventGuardrail)
		if len(ev) != 2 || ev[0].Detail.(map[string]any)["outcome"] != "regenerate" {
			t.Errorf("guardrail events %+v", ev)
		}
	})
	t.Run("out of retries", func(t *testing.T) {
		a := &scripted{outputs: []string{`{"text":"lorem"}`}}
		res, _ := runScripted(t, def(retry), `{}`, map[string]agents.Agent{"A": a.agent(t)})
		wantError(t, res, asl.ErrAgentInvalidOutput, "Guardrails.Output.Rules[0] (regex) at $.text")
		if len(a.reqs) != 3 {
			t.Errorf("%d calls, want 3 (one and two regenerations)", len(a.reqs))
		}
	})
	t.Run("mask", func(t *testing.T) {
		a := &scripted{outputs: []string{`{"card":"4111 1111 1111 1111"}`}}
		res, _ := runScripted(t, def(`{"Rules":[{"Type":"pii","Detect":["card"],"Action":"mask"}]}`), `{}`, map[string]agents.Agent{"A": a.agent(t)})
		wantOutput(t, res, `{"card":"***************1111"}`)
	})
	t.Run("continue records only", func(t *testing.T) {
		a := &scripted{outputs: []string{`"a very long answer"`}}
		res, hist := runScripted(t, def(`{"Rules":[{"Type":"length","Max":5}],"OnFail":"continue"}`), `{}`, map[string]agents.Agent{"A": a.agent(t)})
		wantOutput(t, res, `"a very long answer"`)
		if len(eventsOfType(hist, engine.EventGuardrail)) != 1 {
			t.Error("no guardrail event")
		}
	})
	t.Run("violation is catchable", func(t *testing.T) {
		a := &scripted{outputs: []string{`"secret: hunter2"`}}
		def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Guardrails":{"Output":{"Rules":[{"Type":"pattern","Block":["secret"]}]}},
			"Catch":[{"ErrorEquals":["Agent.GuardrailViolation"],"ResultPath":"$.err","Next":"F"}],"End":true},
			"F":{"Type":"Pass","Parameters":{"e.$":"$.err.Error"},"End":true}}}`
		res, _ := runScripted(t, def, `{}`, map[string]agents.Agent{"A": a.agent(t)})
		wantOutput(t, res, `{"e":"Agent.GuardrailViolation"}`)
	})
}

func TestReasoning(t *testing.T) {
	trace := `{"steps":[{"step":1,"thought":"look"},"decide"],"conclusion":"yes"}`
	def := func(cfg string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Reasoning":` + cfg + `,"ResultPath":"$.r","End":true}}}`
	}
	cases := []struct {
		name, cfg, out, want, cause string
	}{
		{"split and stored", `{"Format":"chain_of_thought","Store":"$.why"}`, `{"result":{"ok":true},"reasoning":` + trace + `}`,
			`{"r":{"ok":true},"why":` + trace + `}`, ""},
		{"history only", `{"Required":true}`, `{"result":1,"reasoning":"because"}`, `{"r":1}`, ""},
		{"not required, plain output", `{"MinSteps":5}`, `{"answer":1}`, `{"r":{"answer":1}}`, ""},
		{"required, missing", `{"Required":true}`, `{"answer":1}`, "", "reasoning is Required"},
		{"reasoning without result", `{}`, `{"reasoning":"x"}`, "", "no result"},
		{"extra fields", `{}`, `{"result":1,"reasoning":"x","other":2}`, "", "besides result and reasoning"},
		{"too few steps", `{"MinSteps":3}`, `{"result":1,"reasoning":` + trace + `}`, "", "2 reasoning steps, fewer than MinSteps 3"},
		{"too many steps", `{"MaxSteps":1}`, `{"result":1,"reasoning":` + trace + `}`, "", "more than MaxSteps 1"},
		{"chain needs steps", `{"Format":"chain_of_thought"}`, `{"result":1,"reasoning":"free text"}`, "", `needs a "steps" array`},
		{"bad step", `{"Format":"tree_of_thoughts"}`, `{"result":1,"reasoning":{"steps":[3]}}`, "", "step 0 is neither"},
		{"reflection", `{"Format":"reflection"}`, `{"result":1,"reasoning":` + trace + `}`, "", `needs a "reflection" field`},
		{"reflection ok", `{"Format":"reflection"}`, `{"result":1,"reasoning":{"steps":["a"],"reflection":"fine"}}`, `{"r":1}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &scripted{outputs: []string{c.out}}
			res, hist := runScripted(t, def(c.cfg), `{}`, map[string]agents.Agent{"A": a.agent(t)})
			if c.cause != "" {
				wantError(t, res, asl.ErrAgentInvalidOutput, c.cause)
				return
			}
			wantOutput(t, res, c.want)
			n := len(eventsOfType(hist, engine.EventReasoning))
			if wantEvents := map[bool]int{true: 1, false: 0}[strings.Contains(c.out, "reasoning")]; n != wantEvents {
				t.Errorf("%d %s events, want %d", n, engine.EventReasoning, wantEvents)
			}
		})
	}
}

func TestContextWindow(t *testing.T) {
	msgs := `{"messages":[{"role":"user","text":"first question, long ago, with many words"},{"role":"assistant","text":"an old answer with many words too"},{"role":"user","text":"the question now"}],"system":"be brief"}`
	def := func(ctx string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":` + ctx + `,"ResultPath":"$.r","End":true}}}`
	}
	t.Run("sliding window drops the oldest", func(t *testing.T) {
		a := &scripted{outputs: []string{`"ok"`}}
		res, hist := runScripted(t, def(`{"MaxTokens":30,"Include":["$.system"]}`), msgs, map[string]agents.Agent{"A": a.agent(t)})
		// The document keeps everything; the agent got the window.
		wantOutput(t, res, strings.Replace(msgs, `"system":"be brief"}`, `"system":"be brief","r":"ok"}`, 1))
		got, _ := jsonvalue.Marshal(a.reqs[0].Input)
		if want := `{"messages":[{"role":"user","text":"the question now"}],"system":"be brief"}`; string(got) != want {
			t.Errorf("agent input %s, want %s", got, want)
		}
		if tokens, _ := jsonpath.EstimateTokens(a.reqs[0].Input); tokens > 30 {
			t.Errorf("window of %d tokens, over MaxTokens", tokens)
		}
		ev := eventsOfType(hist, engine.EventContext)
		if len(ev) != 1 {
			t.Fatalf("%d %s events", len(ev), engine.EventContext)
		}
		if d, _ := jsonvalue.Marshal(ev[0].Detail); !strings.Contains(string(d), `"dropped":["$.messages[0:2]"]`) {
			t.Errorf("event detail %s", d)
		}
	})
	t.Run("overflow", func(t *testing.T) {
		a := &scripted{outputs: []string{`"ok"`}}
		res, _ := runScripted(t, def(`{"MaxTokens":5,"Include":["$.messages"]}`), msgs, map[string]agents.Agent{"A": a.agent(t)})
		wantError(t, res, asl.ErrAgentContextOverflow, "more than MaxTokens 5")
		if len(a.reqs) != 0 {
			t.Errorf("the agent was called")
		}
	})
	t.Run("summarized by an agent", func(t *testing.T) {
		a := &scripted{outputs: []string{`"ok"`}}
		sum := &scripted{outputs: []string{`"user asked twice"`}}
		res, _ := runScripted(t, def(`{"MaxTokens":30,"Summarize":{"Using":"Sum","Target":"$.messages"}}`), msgs,
			map[string]agents.Agent{"A": a.agent(t), "Sum": sum.agent(t)})
		if res.Status != engine.StatusSucceeded {
			t.Fatalf("%+v", res)
		}
		if len(sum.reqs) != 1 || sum.reqs[0].Step != "T#1/context-summary-1/Sum" {
			t.Fatalf("summarizer calls %+v", sum.reqs)
		}
		in := sum.reqs[0].Input.(map[string]any)
		if _, ok := in["content"].([]any); !ok || in["targetTokens"] == nil {
			t.Errorf("summarizer input %v", in)
		}
		got, _ := jsonvalue.Marshal(a.reqs[0].Input)
		if want := `{"messages":"user asked twice","system":"be brief"}`; string(got) != want {
			t.Errorf("agent input %s, want %s", got, want)
		}
	})
}

// The timeouts' Path forms read the input before the context window drops
// parts of it.
func TestContextWindowKeepsTimeoutPaths(t *testing.T) {
	a := &scripted{outputs: []string{`"ok"`}}
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","TimeoutSecondsPath":"$.limit","Context":{"Exclude":["$.limit"]},"ResultPath":"$.r","End":true}}}`
	res, _ := runScripted(t, def, `{"limit":30,"q":"x"}`, map[string]agents.Agent{"A": a.agent(t)})
	wantOutput(t, res, `{"limit":30,"q":"x","r":"ok"}`)
	if got, _ := jsonvalue.Marshal(a.reqs[0].Input); string(got) != `{"q":"x"}` {
		t.Errorf("agent input %s", got)
	}
}
