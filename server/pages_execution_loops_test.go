package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agentloop"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/tools"
)

// loopFlow runs a model loop (Ask), a Go agent's plain steps (Plain),
// then an agent whose model turn fails (Broken, caught), with a Budget in
// euros.
const loopFlow = `{"StartAt":"Ask","Budget":{"MaxCost":1,"Currency":"EUR"},"States":{
	"Ask":{"Type":"Task","Agent":"Loop","ResultPath":"$.answer","Next":"Plain"},
	"Plain":{"Type":"Task","Agent":"Plain","ResultPath":"$.plain","Next":"Broken"},
	"Broken":{"Type":"Task","Agent":"Broken","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Done"}],"Next":"Done"},
	"Done":{"Type":"Succeed"}}}`

// loopAgents are Go agents that record their work as durable steps the
// way a model loop does: Loop a turn that asks for two tools (one
// fails), a second turn that answers, and a plain step; Broken a turn
// whose model fails; Plain two plain steps.
func loopAgents(t *testing.T) *agents.Registry {
	t.Helper()
	loop := func(ctx context.Context, req *agents.Request) (any, error) {
		first := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "What is the weather in Paris?"}}}
		_, err := req.Journal(ctx, agents.StepSpec{Name: "turn 1", Kind: "ModelTurn", Input: first, Detail: map[string]any{"turn": 1, "model": "small"}},
			func(context.Context) (any, error) {
				return map[string]any{"model": "large", "text": "Let me look that up.", "inputTokens": 120, "outputTokens": 30, "cost": 0.0015, "stopReason": "tool_use",
					"toolCalls": []any{
						map[string]any{"ID": "c1", "Name": "weather", "Arguments": map[string]any{"city": "Paris"}},
						map[string]any{"ID": "c2", "Name": "forecast", "Arguments": map[string]any{"city": "Paris", "days": 3}},
					},
					"fellBack": []any{map[string]any{"model": "small", "error": "Model.RateLimited", "cause": "429 too many requests"}}}, nil
			})
		if err != nil {
			return nil, err
		}
		// As a model loop does: each turn's usage counts for the call.
		req.ReportUsage(agents.Usage{InputTokens: 120, OutputTokens: 30, Cost: 0.0015})
		if _, err := req.Journal(ctx, agents.StepSpec{Name: "turn 1/tool c1", Kind: "ToolCall", Input: map[string]any{"city": "Paris"}, Detail: map[string]any{"turn": 1, "tool": "weather"}},
			func(context.Context) (any, error) { return "<b>21 °C</b>, sunny", nil }); err != nil {
			return nil, err
		}
		_, err = req.Journal(ctx, agents.StepSpec{Name: "turn 1/tool c2", Kind: "ToolCall", Input: map[string]any{"city": "Paris", "days": 3}, Detail: map[string]any{"turn": 1, "tool": "forecast"}},
			func(context.Context) (any, error) {
				return nil, asl.Errorf(asl.ErrAgentToolError, "no forecast <beyond> today")
			})
		if err == nil {
			// The model is told of the tool's failure: the loop goes on.
			return nil, errors.New("the forecast tool did not fail")
		}
		second := map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": "What is the weather in Paris?"},
			map[string]any{"role": "assistant", "content": "Let me look that up."},
			map[string]any{"role": "tool", "toolCallId": "c1", "content": "21 °C, sunny"},
			map[string]any{"role": "tool", "toolCallId": "c2", "content": "error: no forecast"},
		}}
		if _, err := req.Journal(ctx, agents.StepSpec{Name: "turn 2", Kind: "ModelTurn", Input: second, Detail: map[string]any{"turn": 2, "model": "large"}},
			func(context.Context) (any, error) {
				return map[string]any{"model": "large", "text": "It is 21 °C and sunny in Paris.", "inputTokens": 200, "outputTokens": 20, "cost": 0.0025, "stopReason": "end_turn"}, nil
			}); err != nil {
			return nil, err
		}
		req.ReportUsage(agents.Usage{InputTokens: 200, OutputTokens: 20, Cost: 0.0025})
		if _, err := req.RunStep(ctx, "save answer", func(context.Context) (any, error) { return map[string]any{"saved": true}, nil }); err != nil {
			return nil, err
		}
		return "It is 21 °C and sunny in Paris.", nil
	}
	broken := func(ctx context.Context, req *agents.Request) (any, error) {
		return req.Journal(ctx, agents.StepSpec{Name: "turn 1", Kind: "ModelTurn", Input: map[string]any{"messages": []any{}}, Detail: map[string]any{"turn": 1, "model": "large"}},
			func(context.Context) (any, error) {
				return nil, asl.Errorf(asl.ErrAgentModelError, "the model is down")
			})
	}
	steps := func(ctx context.Context, req *agents.Request) (any, error) {
		if _, err := req.RunStep(ctx, "fetch", func(context.Context) (any, error) { return "fetched", nil }); err != nil {
			return nil, err
		}
		return req.RunStep(ctx, "store", func(context.Context) (any, error) { return "stored", nil })
	}
	reg := agents.NewRegistry()
	for name, f := range map[string]agents.Func{"Loop": loop, "Broken": broken, "Plain": steps} {
		if err := reg.Register(name, f); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// newLoopServer is a test server whose own agents are loopAgents, with
// the execution "loop" of loopFlow run to its end.
func newLoopServer(t *testing.T) *testServer {
	t.Helper()
	reg := loopAgents(t)
	ts := newTestServer(t, func(c *Config) { c.Agents = reg })
	ts.startFlow(t, "loop", loopFlow, `{}`, "", succeeded)
	return ts
}

// TestModelLoopPage: a Task whose agent ran a model loop shows each turn
// (model, tokens, cost, latency, text, the model it fell back from) with
// the tool calls it asked for under it (arguments, result or error), its
// plain steps, and its totals; a failed turn is marked failed; what the
// agents wrote is escaped.
func TestModelLoopPage(t *testing.T) {
	ts := newLoopServer(t)
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/loop")
	section := between(t, body, `<section id="loops">`, "</article>\n</section>")
	ask := between(t, section, `<article class="loop" data-state="Ask">`, "</article>")
	text := plain(ask)
	for _, w := range []string{
		"Ask 2 turns, 2 tool calls (1 failed): 370 tokens (320 in, 50 out), cost 0.004 EUR",
		"Turn 1 large 150 tokens (120 in, 30 out), cost 0.0015 EUR",
		"stop: tool_use",
		"Fell back from small : Model.RateLimited 429 too many requests",
		"Let me look that up.",
		"Messages sent (1)",
		`weather c1`,
		`arguments: {"city":"Paris"} result: <b>21 °C</b>, sunny`,
		`forecast c2 failed`,
		`arguments: {"city":"Paris","days":3} Agent.ToolError no forecast <beyond> today`,
		"Turn 2 large 220 tokens (200 in, 20 out), cost 0.0025 EUR",
		"stop: end_turn",
		"It is 21 °C and sunny in Paris.",
		"Messages sent (4)",
		`Steps save answer`,
		`output: { "saved": true }`,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the loop of Ask has no %q in\n%s", w, text)
		}
	}
	// The tool calls are under the turn that asked for them.
	turn1 := between(t, ask, `aria-label="Turn 1"`, "</section>")
	if n := strings.Count(turn1, `<li class="step`); n != 2 || !strings.Contains(turn1, `data-tool="weather"`) || !strings.Contains(turn1, `<li class="step failed" data-tool="forecast">`) {
		t.Errorf("turn 1 has %d tool calls, want weather and forecast (failed):\n%s", n, turn1)
	}
	if strings.Contains(between(t, ask, `aria-label="Turn 2"`, "</section>"), `<li class="step`) {
		t.Errorf("turn 2 shows tool calls")
	}
	// Escaped, never markup.
	for _, bad := range []string{"<b>21", "<beyond>"} {
		if strings.Contains(section, bad) {
			t.Errorf("the section holds %q unescaped", bad)
		}
	}
	if !strings.Contains(section, "&lt;b&gt;21 °C&lt;/b&gt;, sunny") {
		t.Errorf("the tool's result is not shown escaped:\n%s", section)
	}
	if text := plain(between(t, section, `<article class="loop" data-state="Plain">`, "</article>")); !strings.Contains(text, "Plain 2 steps Steps fetch") ||
		!strings.Contains(text, "output: fetched store") || !strings.Contains(text, "output: stored") {
		t.Errorf("the steps of Plain are shown as\n%s", text)
	}
	broken := between(t, section, `<article class="loop" data-state="Broken">`, "</article>")
	text = plain(broken)
	for _, w := range []string{"Broken 1 turn, 0 tool calls", "Turn 1 large failed", "Agent.ModelError the model is down", "Messages sent (0)"} {
		if !strings.Contains(text, w) {
			t.Errorf("the loop of Broken has no %q in\n%s", w, text)
		}
	}
	if !strings.Contains(broken, `<section class="loop-turn failed" aria-label="Turn 1">`) || strings.Contains(broken, `class="usage"`) {
		t.Errorf("the failed turn is not marked failed, or shows usage:\n%s", broken)
	}
	// The summary counts what the loop reported.
	if !strings.Contains(body, `<dd id="usage">370 tokens (320 in, 50 out), cost 0.004 EUR`) {
		t.Errorf("the summary's usage is not the loop's:\n%s", between(t, body, `<dl class="summary"`, "</dl>"))
	}
	// Each turn and tool call links to its event in the timeline.
	if n := strings.Count(ask, `<a href="#event-`); n != 6 {
		t.Errorf("%d links to the timeline in Ask's loop, want the call's, 2 turns', 2 tool calls' and the step's", n)
	}
}

// TestModelLoopLive: the live part has the loops, and the page's script
// listens to the steps' events.
func TestModelLoopLive(t *testing.T) {
	ts := newLoopServer(t)
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/loop/live")
	if !strings.Contains(body, `<section id="loops">`) || !strings.Contains(body, `data-state="Ask"`) {
		t.Errorf("the live part has no loops:\n%s", body)
	}
	listened := strings.Fields(streamEvents())
	for _, ev := range []string{"ModelTurnSucceeded", "ModelTurnFailed", "ToolCallSucceeded", "ToolCallFailed", "StepSucceeded", "StepFailed"} {
		if !contains(listened, ev) {
			t.Errorf("the page's script does not listen to %s", ev)
		}
	}
}

// TestLoopsFromHistory: a call resumed goes on in the same view, a retry
// is a new attempt, rolled back events are left out, tool calls find the
// turn that asked for them (by ID, or by place without one), the others
// are steps, costs add as decimals, and long texts are cut with a link.
func TestLoopsFromHistory(t *testing.T) {
	n := func(s string) json.Number { return json.Number(s) }
	scheduled := func(attempt string) engine.Event {
		return engine.Event{Type: engine.EventTaskScheduled, State: "T", Detail: map[string]any{"step": "T#1", "attempt": n(attempt), "invocation": n("0")}}
	}
	turn := func(typ, number string, output any) engine.Event {
		return engine.Event{Type: typ, State: "T", Input: map[string]any{"messages": []any{"m"}}, Output: output,
			Detail: map[string]any{"name": "turn " + number, "millis": n("1500"), "turn": n(number), "model": "first"}}
	}
	long := strings.Repeat("é", 40<<10)
	events := []engine.Event{
		{Type: "TaskStateEntered", State: "T"},
		scheduled("0"),
		turn("ModelTurnSucceeded", "1", map[string]any{"model": "m", "inputTokens": n("1"), "outputTokens": n("2"), "cost": n("0.1"),
			"toolCalls": []any{map[string]any{"ID": "a", "Name": "x", "Arguments": map[string]any{}}, map[string]any{"ID": "", "Name": "y", "Arguments": map[string]any{"k": n("1")}}}}),
		{Type: "ToolCallSucceeded", State: "T", Input: map[string]any{"k": n("1")}, Output: "ok", Detail: map[string]any{"name": "turn 1/tool 1", "millis": n("12")}},
		func() engine.Event { e := turn("ModelTurnSucceeded", "2", nil); e.Superseded = true; return e }(),
		scheduled("0"),
		turn("ModelTurnSucceeded", "2", map[string]any{"model": "m", "cost": n("0.2"), "text": long,
			"fellBack": []any{map[string]any{"model": "big", "error": "RateLimitExceeded", "cause": long}}}),
		{Type: "StepFailed", State: "T", Error: "E", Cause: "c", Detail: map[string]any{"name": "s", "millis": n("3")}},
		{Type: "ToolCallSucceeded", State: "T", Output: map[string]any{"v": n("1")}, Detail: map[string]any{"name": "free", "tool": "z"}},
		{Type: "TaskSucceeded", State: "T"},
		scheduled("1"),
		turn("ModelTurnFailed", "1", nil),
		{Type: "ToolCallFailed", State: "T", Error: "E", Detail: map[string]any{"name": "turn 9/tool q", "turn": n("9"), "tool": "q"}},
		{Type: "ModelTurnSucceeded", State: "T", Scope: "M/0/", Detail: map[string]any{"name": "turn 1"}},
	}
	events[11].Error, events[11].Cause = "Agent.ModelError", "down"
	got := loops(events, "EUR", "/executions/x/events/")
	if len(got) != 3 {
		t.Fatalf("loops = %+v, want the first attempt, the second, and the Map item's", got)
	}
	first, retry, item := got[0], got[1], got[2]
	if first.State != "T" || first.Seq != 3 || first.Attempt != 1 || len(first.Turns) != 2 || first.ToolCalls != 2 || first.FailedCalls != 0 {
		t.Errorf("first attempt = %+v", first)
	}
	if u := first.Usage; u == nil || *u != (usageView{InputTokens: 1, OutputTokens: 2, Tokens: 3, Cost: "0.3", Currency: "EUR"}) {
		t.Errorf("first attempt's usage = %+v, want 3 tokens and a cost of 0.3 EUR", u)
	}
	t1 := first.Turns[0]
	if t1.N != 1 || t1.Model != "m" || t1.Latency != "1.5 s" || t1.Messages != 1 || len(t1.Calls) != 2 {
		t.Fatalf("turn 1 = %+v", t1)
	}
	if c := t1.Calls[0]; !c.Pending || c.Tool != "x" || c.ID != "a" || c.Input.Text != "{}" || c.Seq != 0 {
		t.Errorf("the call not run = %+v, want it pending", c)
	}
	if c := t1.Calls[1]; c.Pending || c.Tool != "y" || c.ID != "1" || c.Seq != 4 || c.Latency != "12 ms" || c.Input.Text != `{"k":1}` || c.Output.Text != "ok" {
		t.Errorf("the call run = %+v, want y's result in place of the call", c)
	}
	t2 := first.Turns[1]
	if t2.Seq != 7 || t2.Text.Cut == 0 || t2.Text.Href != "/executions/x/events/7/output" || len(t2.Text.Text) > maxShown {
		t.Errorf("turn 2's long text: seq %d, %d bytes shown, %d cut, link %q", t2.Seq, len(t2.Text.Text), t2.Text.Cut, t2.Text.Href)
	}
	if len(t2.FellBack) != 1 || t2.FellBack[0].Model != "big" || t2.FellBack[0].Cause.Cut == 0 || t2.FellBack[0].Cause.Href != "/executions/x/events/7/output" {
		t.Errorf("turn 2 fell back = %+v, want big's long cause cut", t2.FellBack)
	}
	if len(first.Steps) != 2 || first.Steps[0].Name != "s" || !first.Steps[0].Failed || first.Steps[0].Error != "E" || first.Steps[0].Cause.Text != "c" ||
		first.Steps[1].Tool != "z" || first.Steps[1].Output.Text != "{\n  \"v\": 1\n}" {
		t.Errorf("steps = %+v, want the failed step and the tool call of no turn", first.Steps)
	}
	if retry.Attempt != 2 || len(retry.Turns) != 1 || !retry.Turns[0].Failed || retry.Turns[0].Error != "Agent.ModelError" || retry.Turns[0].Cause.Text != "down" ||
		retry.Turns[0].Model != "first" || retry.Usage != nil || retry.FailedCalls != 1 || len(retry.Steps) != 1 || retry.Steps[0].Tool != "q" {
		t.Errorf("retry = %+v", retry)
	}
	if item.State != "M/0/T" || item.Seq != 14 || item.Attempt != 1 || len(item.Turns) != 1 || item.Turns[0].Usage != nil {
		t.Errorf("the Map item's loop = %+v", item)
	}
	if got := loops([]engine.Event{{Type: "TaskStateEntered", State: "T"}, {Type: engine.EventTaskSucceeded, State: "T"}}, "", ""); got != nil {
		t.Errorf("loops of a Task without steps = %+v", got)
	}
}

func TestTurnNumber(t *testing.T) {
	for _, tc := range []struct {
		detail map[string]any
		name   string
		want   int64
		ok     bool
	}{
		{map[string]any{"turn": json.Number("3")}, "x", 3, true},
		{map[string]any{"turn": json.Number("3.5")}, "turn 2", 2, true},
		{nil, "turn 2", 2, true},
		{nil, "turn 2/tool c1", 2, true},
		{nil, "regen-1/turn 14/tool c/1", 14, true},
		{nil, "return 2", 0, false},
		{nil, "turn x", 0, false},
		{nil, "turn ", 0, false},
		{nil, "", 0, false},
	} {
		got, ok := turnNumber(tc.detail, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("turnNumber(%v, %q) = %d, %v; want %d, %v", tc.detail, tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLatency(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{json.Number("0"), "0 ms"}, {json.Number("999"), "999 ms"}, {json.Number("1000"), "1.0 s"}, {json.Number("61234"), "61.2 s"},
		{json.Number("-1"), ""}, {json.Number("1.5"), ""}, {"12", ""}, {nil, ""},
	} {
		if got := latency(tc.v); got != tc.want {
			t.Errorf("latency(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestAddUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		costs      []string
		want       string
		wantTokens int64
	}{
		{"decimals", []string{"0.1", "0.2"}, "0.3", 6},
		{"none", []string{"", ""}, "", 6},
		{"some", []string{"", "0.0015", "", "0.0025"}, "0.004", 12},
		{"exponent", []string{"1e-05", "2e-05"}, "0.00003", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var total *usageView
			for _, c := range tc.costs {
				total = addUsage(total, usageView{InputTokens: 1, OutputTokens: 2, Tokens: 3, Cost: c})
			}
			if total.Cost != tc.want || total.Tokens != tc.wantTokens || total.InputTokens+total.OutputTokens != tc.wantTokens {
				t.Errorf("total = %+v, want cost %q and %d tokens", total, tc.want, tc.wantTokens)
			}
		})
	}
}

// FuzzLoops: whatever the agents put in their steps' events, the page's
// loops are built without a panic.
func FuzzLoops(f *testing.F) {
	f.Add("ModelTurnSucceeded", `{"name":"turn 1","turn":1,"millis":5}`, `{"messages":[]}`, `{"model":"m","toolCalls":[{"ID":"a","Name":"x","Arguments":{}}],"cost":0.1,"fellBack":[{"model":"n"}]}`)
	f.Add("ToolCallFailed", `{"name":"turn 1/tool a","tool":"x"}`, `{"k":1}`, `null`)
	f.Add("StepSucceeded", `{"name":"s","millis":"x"}`, `[]`, `"out"`)
	f.Add("TaskScheduled", `{"step":"T#1","attempt":-3}`, `1`, `{}`)
	f.Fuzz(func(t *testing.T, typ, detail, input, output string) {
		dec := func(s string) any {
			v, err := jsonvalue.Decode([]byte(s))
			if err != nil {
				return s
			}
			return v
		}
		ev := engine.Event{Type: typ, State: "T", Detail: dec(detail), Input: dec(input), Output: dec(output), Error: "E"}
		turn := engine.Event{Type: "ModelTurnSucceeded", State: "T", Detail: map[string]any{"turn": json.Number("1")}, Output: dec(output)}
		for _, l := range loops([]engine.Event{turn, ev, ev}, "", "/") {
			if l.Attempt < 1 || l.Seq < 1 {
				t.Errorf("loop %+v", l)
			}
		}
	})
}

// fakeModel answers a turn by the number of messages it is sent.
type fakeModel func(n int) (*models.Reply, error)

func (f fakeModel) Send(_ context.Context, t *models.Turn, _ func(string)) (*models.Reply, error) {
	return f(len(t.Messages))
}

// TestModelLoopPageAgentLoop: the model loop itself (package agentloop)
// with a fake model: the turns it records, falling back from a
// rate-limited model, a tool's result and an unknown tool's failure.
func TestModelLoopPageAgentLoop(t *testing.T) {
	limited := fakeModel(func(int) (*models.Reply, error) {
		return nil, &models.Error{Name: asl.ErrRateLimitExceeded, Status: 429, Provider: "fake", Message: "slow down"}
	})
	spare := fakeModel(func(n int) (*models.Reply, error) {
		if n == 1 {
			return &models.Reply{Text: "Adding.", StopReason: "tool_use", Usage: models.Usage{InputTokens: 10, OutputTokens: 2}, ToolCalls: []models.ToolCall{
				{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)},
				{Name: "nope", Arguments: json.RawMessage(`{}`)},
			}}, nil
		}
		return &models.Reply{Text: "1 + 2 = 3", StopReason: "end_turn", Usage: models.Usage{InputTokens: 20, OutputTokens: 1}}, nil
	})
	add := tools.Tool{Name: "add", Call: func(_ context.Context, _ *agents.Request, args map[string]any) (any, error) {
		a, _ := args["a"].(json.Number).Int64()
		b, _ := args["b"].(json.Number).Int64()
		return a + b, nil
	}}
	prices := models.Config{InputPrice: 0.5, OutputPrice: 1}
	loop, err := agentloop.New(agentloop.Config{Models: map[string]agentloop.Model{"big": {Model: limited, Config: prices}, "spare": {Model: spare, Config: prices}},
		Model: "big", Tools: []tools.Tool{add}})
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := reg.Register("Calc", loop); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) { c.Agents = reg })
	ts.startFlow(t, "calc", `{"StartAt":"Sum","Budget":{"MaxCost":100,"Currency":"USD"},"States":{"Sum":{"Type":"Task","Agent":"Calc","End":true,
		"Model":{"Preferred":"big","Fallback":"spare","FallbackOn":["RateLimitExceeded"]}}}}`, `{"prompt":"1 + 2?"}`, "", succeeded)
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/calc")
	text := plain(between(t, body, `<article class="loop" data-state="Sum">`, "</article>"))
	for _, w := range []string{
		"Sum 2 turns, 2 tool calls (1 failed): 33 tokens (30 in, 3 out), cost 18 USD",
		"Turn 1 spare 12 tokens (10 in, 2 out), cost 7 USD",
		"stop: tool_use Fell back from big : " + string(asl.ErrRateLimitExceeded),
		"Adding. Messages sent (1)",
		`add c1`, `arguments: {"a":1,"b":2} result: 3`,
		`nope 1 failed`, "arguments: {} " + string(asl.ErrAgentToolError) + ` there is no tool "nope"`,
		"Turn 2 spare 21 tokens (20 in, 1 out), cost 11 USD",
		"1 + 2 = 3 Messages sent (4)",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the loop of Sum has no %q in\n%s", w, text)
		}
	}
}
