package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agentloop"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/tools"
)

// scripted is a model that answers turns from a script, by the number of
// messages it is sent (so that a turn sent again after a crash gets the
// same answer), and counts what it is sent.
type scripted struct {
	mu    sync.Mutex
	sends int
	turns []models.Turn
	// answer returns the reply to a conversation of n messages.
	answer func(n int) (*models.Reply, error)
}

func (s *scripted) Send(ctx context.Context, t *models.Turn, _ func(string)) (*models.Reply, error) {
	s.mu.Lock()
	s.sends++
	s.turns = append(s.turns, *t)
	s.mu.Unlock()
	return s.answer(len(t.Messages))
}

// lookupTurns asks for two lookups at once, then answers with what they
// found.
func lookupTurns(n int) (*models.Reply, error) {
	if n == 1 {
		return &models.Reply{ToolCalls: []models.ToolCall{
			{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"order":"A-1"}`)},
			{ID: "call_2", Name: "lookup", Arguments: json.RawMessage(`{"order":"B-2"}`)},
		}, Usage: models.Usage{InputTokens: 100, OutputTokens: 20}}, nil
	}
	return &models.Reply{Text: "A-1 shipped, B-2 pending", Usage: models.Usage{InputTokens: 150, OutputTokens: 10}}, nil
}

// lookups is the lookup tool, counting its calls by order; crash, when
// set, is called at each call and may stop the run.
type lookups struct {
	mu    sync.Mutex
	calls map[string]int
	crash func(order string)
}

func (l *lookups) tool() tools.Tool {
	return tools.Tool{Name: "lookup", Description: "Looks an order up.", Input: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}}}`),
		Call: func(ctx context.Context, _ *agents.Request, args map[string]any) (any, error) {
			order, _ := args["order"].(string)
			l.mu.Lock()
			l.calls[order]++
			l.mu.Unlock()
			if l.crash != nil {
				l.crash(order)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
			status := map[string]string{"A-1": "shipped", "B-2": "pending"}[order]
			return map[string]any{"order": order, "status": status}, nil
		}}
}

func loop(t *testing.T, cfg agentloop.Config) *agents.Registry {
	t.Helper()
	a, err := agentloop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := reg.Register("Support", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

func parse(t *testing.T, def string) *states.Machine {
	t.Helper()
	m, err := states.Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const supportTask = `{"StartAt":"Answer","States":{"Answer":{"Type":"Task","Agent":"Support","End":true}}}`

func events(t *testing.T, st *store.Memory, id, typ string) []engine.Event {
	t.Helper()
	hist, err := st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.Event
	for _, e := range hist {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestModelLoopToolCalls: the model asks for two tools at once, gets
// their results in its next turn (answering each call by its id), and
// answers; each turn and each tool call is a history event, and the
// turns' usage is the call's.
func TestModelLoopToolCalls(t *testing.T) {
	m := &scripted{answer: lookupTurns}
	l := &lookups{calls: map[string]int{}}
	reg := loop(t, agentloop.Config{Models: map[string]agentloop.Model{"small": {Model: m, Config: models.Config{InputPrice: 0.001, OutputPrice: 0.002}}}, Model: "small",
		System: "You answer about orders.", Tools: []tools.Tool{l.tool()}})
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st})
	res, err := x.Run(context.Background(), parse(t, supportTask), "Where are A-1 and B-2?", engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded || res.Output != "A-1 shipped, B-2 pending" {
		t.Fatalf("%s %v (%s: %s)", res.Status, res.Output, res.Error, res.Cause)
	}
	if m.sends != 2 || l.calls["A-1"] != 1 || l.calls["B-2"] != 1 {
		t.Errorf("%d turns sent, lookups %v; want 2 and one each", m.sends, l.calls)
	}
	second := m.turns[1]
	if len(second.Messages) != 4 || second.Messages[2].Role != models.RoleTool || second.Messages[2].ToolCallID != "call_1" ||
		!strings.Contains(second.Messages[3].Content, `"pending"`) || second.Messages[3].ToolCallID != "call_2" {
		t.Errorf("the second turn's messages: %+v", second.Messages)
	}
	if second.System != "You answer about orders." || len(second.Tools) != 1 || second.Tools[0].Name != "lookup" {
		t.Errorf("the turn's system prompt and tools: %q %+v", second.System, second.Tools)
	}
	if n := len(events(t, st, "e", "ModelTurnSucceeded")); n != 2 {
		t.Errorf("%d ModelTurnSucceeded events, want 2", n)
	}
	calls := events(t, st, "e", "ToolCallSucceeded")
	if len(calls) != 2 || calls[0].Detail.(map[string]any)["tool"] != "lookup" {
		t.Errorf("tool call events: %+v", calls)
	}
	e, err := st.Load(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	if u := e.Progress.Usage; u.InputTokens != 250 || u.OutputTokens != 30 || u.Cost < 0.309 || u.Cost > 0.311 {
		t.Errorf("usage %+v, want 250 in, 30 out, cost 0.31", u)
	}
}

// TestModelLoopCrashResume: a process dying in any tool call of the loop
// resumes without sending a committed turn or running a committed tool
// call again, and answers as an uninterrupted run does.
func TestModelLoopCrashResume(t *testing.T) {
	for _, order := range []string{"A-1", "B-2"} {
		t.Run("dies in the lookup of "+order, func(t *testing.T) {
			st := store.NewMemory()
			m := &scripted{answer: lookupTurns}
			ctx, cancel := context.WithCancel(context.Background())
			var once sync.Once
			l := &lookups{calls: map[string]int{}, crash: func(o string) {
				if o == order {
					once.Do(cancel)
				}
			}}
			cfg := agentloop.Config{Models: map[string]agentloop.Model{"small": {Model: m}}, Model: "small", Tools: []tools.Tool{l.tool()}}
			x := engine.New(engine.Config{Agents: loop(t, cfg), Store: st})
			if _, err := x.Run(ctx, parse(t, supportTask), "Where are A-1 and B-2?", engine.StartOptions{ID: "e"}); !errors.Is(err, context.Canceled) {
				t.Fatalf("run: %v, want context.Canceled", err)
			}
			x2 := engine.New(engine.Config{Agents: loop(t, cfg), Store: st})
			res, err := x2.Resume(context.Background(), "e", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != "A-1 shipped, B-2 pending" {
				t.Fatalf("resumed: %s %v (%s)", res.Status, res.Output, res.Cause)
			}
			m.mu.Lock()
			sends := m.sends
			m.mu.Unlock()
			if sends != 2 {
				t.Errorf("%d turns sent over the crash, want 2: the first, committed, was not sent again", sends)
			}
			other := map[string]string{"A-1": "B-2", "B-2": "A-1"}[order]
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.calls[order] != 2 || l.calls[other] > 2 {
				t.Errorf("lookups %v: the one in flight runs again, no committed one does", l.calls)
			}
			if n := len(events(t, st, "e", "ToolCallSucceeded")); n != 2 {
				t.Errorf("%d tool call events, want 2", n)
			}
			if err := st.VerifyHistory(context.Background(), "e"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestModelLoopFallback: the preferred model's rate limit moves the turn
// to the Task's fallback, recorded with the turn; an error the Task does
// not name fails the state.
func TestModelLoopFallback(t *testing.T) {
	limited := &scripted{answer: func(int) (*models.Reply, error) {
		return nil, &models.Error{Name: asl.ErrRateLimitExceeded, Status: 429, Provider: "fake", Message: "slow down"}
	}}
	spare := &scripted{answer: func(int) (*models.Reply, error) { return &models.Reply{Text: "from the spare"}, nil }}
	cfg := agentloop.Config{Models: map[string]agentloop.Model{"big": {Model: limited}, "spare": {Model: spare}}, Model: "big"}
	for _, tc := range []struct {
		name, def string
		want      string
		fails     asl.ErrorName
	}{
		{"falls back", `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,
			"Model":{"Preferred":"big","Fallback":"spare","FallbackOn":["RateLimitExceeded"]}}}}`, "from the spare", ""},
		{"not on that error", `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,
			"Model":{"Preferred":"big","Fallback":"spare","FallbackOn":["Timeout"]}}}}`, "", asl.ErrRateLimitExceeded},
		{"a model the agents file does not name", `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,
			"Model":{"Preferred":"huge"}}}}`, "", asl.ErrAgentModelError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory()
			x := engine.New(engine.Config{Agents: loop(t, cfg), Store: st})
			res, err := x.Run(context.Background(), parse(t, tc.def), "hi", engine.StartOptions{ID: "e"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.fails != "" {
				if res.Status != engine.StatusFailed || res.Error != string(tc.fails) {
					t.Fatalf("%s %s: %s, want %s", res.Status, res.Error, res.Cause, tc.fails)
				}
				return
			}
			if res.Output != tc.want {
				t.Fatalf("%s %v (%s)", res.Status, res.Output, res.Cause)
			}
			turns := events(t, st, "e", "ModelTurnSucceeded")
			if len(turns) != 1 {
				t.Fatalf("%d turn events", len(turns))
			}
			out, _ := jsonvalue.Marshal(turns[0].Output)
			if !strings.Contains(string(out), `"fellBack":[{"cause"`) || !strings.Contains(string(out), `"model":"spare"`) {
				t.Errorf("the turn's record %s does not say it fell back to spare", out)
			}
		})
	}
}

// TestModelLoopLimitsAndMistakes: MaxTurns ends a loop that keeps asking
// for tools with Agent.MaxTurnsExceeded; a tool the model invents is told
// to it as an error it can recover from; the Task's Generation overrides
// the agent's, field by field; a tool the state's Tools refuse fails the
// state.
func TestModelLoopLimitsAndMistakes(t *testing.T) {
	temp, agentTemp := 0.1, 0.9
	t.Run("MaxTurns", func(t *testing.T) {
		m := &scripted{answer: func(n int) (*models.Reply, error) {
			return &models.Reply{ToolCalls: []models.ToolCall{{ID: fmt.Sprint("c", n), Name: "lookup", Arguments: json.RawMessage(`{"order":"A-1"}`)}}}, nil
		}}
		l := &lookups{calls: map[string]int{}}
		x := engine.New(engine.Config{Agents: loop(t, agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", MaxTurns: 3, Tools: []tools.Tool{l.tool()}}), Store: store.NewMemory()})
		res, err := x.Run(context.Background(), parse(t, supportTask), "loop", engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != string(agentloop.ErrMaxTurns) || m.sends != 3 {
			t.Errorf("%s %s after %d turns, want %s after 3", res.Status, res.Error, m.sends, agentloop.ErrMaxTurns)
		}
	})
	t.Run("an invented tool, and Generation", func(t *testing.T) {
		m := &scripted{answer: func(n int) (*models.Reply, error) {
			if n == 1 {
				return &models.Reply{ToolCalls: []models.ToolCall{{ID: "x", Name: "delete_everything", Arguments: json.RawMessage(`{}`)}}}, nil
			}
			return &models.Reply{Text: "sorry"}, nil
		}}
		cfg := agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Generation: models.Generation{Temperature: &agentTemp, MaxTokens: 50}}
		st := store.NewMemory()
		x := engine.New(engine.Config{Agents: loop(t, cfg), Store: st})
		def := `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,"Generation":{"Temperature":0.1}}}}`
		res, err := x.Run(context.Background(), parse(t, def), "hi", engine.StartOptions{ID: "e"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Output != "sorry" {
			t.Fatalf("%s %v %s", res.Status, res.Output, res.Cause)
		}
		told := m.turns[1].Messages[2]
		if told.Role != models.RoleTool || !strings.Contains(told.Content, `no tool "delete_everything"`) {
			t.Errorf("the model was told %+v", told)
		}
		if g := m.turns[0].Generation; g.Temperature == nil || *g.Temperature != temp || g.MaxTokens != 50 {
			t.Errorf("generation sent %+v, want the Task's temperature and the agent's max tokens", g)
		}
		if n := len(events(t, st, "e", "ToolCallFailed")); n != 1 {
			t.Errorf("%d ToolCallFailed events, want 1", n)
		}
	})
	t.Run("a tool the state refuses", func(t *testing.T) {
		m := &scripted{answer: lookupTurns}
		l := &lookups{calls: map[string]int{}}
		x := engine.New(engine.Config{Agents: loop(t, agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{l.tool()}}), Store: store.NewMemory()})
		def := `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,"Tools":{"Allowed":["search"]}}}}`
		res, err := x.Run(context.Background(), parse(t, def), "hi", engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != string(asl.ErrPermissions) || len(l.calls) != 0 || len(m.turns[0].Tools) != 0 {
			t.Errorf("%s %s (%s), lookups %v, tools offered %v", res.Status, res.Error, res.Cause, l.calls, m.turns[0].Tools)
		}
	})
}

// TestModelLoopNew: a configuration that cannot work is refused naming
// what is wrong.
func TestModelLoopNew(t *testing.T) {
	m := agentloop.Model{Model: &scripted{}}
	tool := func(name string) tools.Tool {
		return tools.Tool{Name: name, Call: func(context.Context, *agents.Request, map[string]any) (any, error) { return nil, nil }}
	}
	for _, tc := range []struct {
		name string
		cfg  agentloop.Config
		want string
	}{
		{"no models", agentloop.Config{}, "no models"},
		{"unknown default", agentloop.Config{Models: map[string]agentloop.Model{"a": m}, Model: "b"}, `model "b"`},
		{"negative turns", agentloop.Config{Models: map[string]agentloop.Model{"a": m}, Model: "a", MaxTurns: -1}, "MaxTurns -1"},
		{"bad tool name", agentloop.Config{Models: map[string]agentloop.Model{"a": m}, Model: "a", Tools: []tools.Tool{tool("no spaces")}}, `tool "no spaces"`},
		{"tool twice", agentloop.Config{Models: map[string]agentloop.Model{"a": m}, Model: "a", Tools: []tools.Tool{tool("t"), tool("t")}}, "given twice"},
		{"schema not JSON", agentloop.Config{Models: map[string]agentloop.Model{"a": m}, Model: "a", ResultSchema: json.RawMessage(`{`)}, "ResultSchema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := agentloop.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestModelLoopBudget: a turn the state's Budget has no room left for is
// not sent: the Task fails with States.BudgetExceeded after the turn that
// used it up.
func TestModelLoopBudget(t *testing.T) {
	m := &scripted{answer: func(n int) (*models.Reply, error) {
		return &models.Reply{ToolCalls: []models.ToolCall{{ID: fmt.Sprint("c", n), Name: "lookup", Arguments: json.RawMessage(`{"order":"A-1"}`)}},
			Usage: models.Usage{InputTokens: 50, OutputTokens: 10}}, nil
	}}
	l := &lookups{calls: map[string]int{}}
	x := engine.New(engine.Config{Agents: loop(t, agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{l.tool()}}), Store: store.NewMemory()})
	def := `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,"Budget":{"MaxTokens":100}}}}`
	res, err := x.Run(context.Background(), parse(t, def), "hi", engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != string(asl.ErrBudgetExceeded) || m.sends != 2 {
		t.Errorf("%s %s (%s) after %d turns, want States.BudgetExceeded after 2", res.Status, res.Error, res.Cause, m.sends)
	}
}

// TestModelLoopToolGuardrails: every tool result passes the state's
// output guardrails before the model sees it: a redacting rule changes
// it, a refusing rule withholds it (the model is told, the call fails).
func TestModelLoopToolGuardrails(t *testing.T) {
	for _, tc := range []struct{ name, rules, told string }{
		{"redacted", `{"Rules":[{"Type":"pii","Action":"redact"}]}`, "[REDACTED"},
		{"refused", `{"Rules":[{"Type":"pattern","Block":["jane@"]}]}`, "error: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &scripted{answer: func(n int) (*models.Reply, error) {
				if n == 1 {
					return &models.Reply{ToolCalls: []models.ToolCall{{ID: "c1", Name: "owner", Arguments: json.RawMessage(`{}`)}}}, nil
				}
				return &models.Reply{Text: "ok"}, nil
			}}
			owner := tools.Tool{Name: "owner", Call: func(context.Context, *agents.Request, map[string]any) (any, error) {
				return map[string]any{"owner": "mail jane@example.com"}, nil
			}}
			x := engine.New(engine.Config{Agents: loop(t, agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{owner}}), Store: store.NewMemory()})
			def := `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,"Guardrails":{"Output":` + tc.rules + `}}}}`
			res, err := x.Run(context.Background(), parse(t, def), "whose order?", engine.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != engine.StatusSucceeded || len(m.turns) != 2 {
				t.Fatalf("%s %s (%s) after %d turns", res.Status, res.Error, res.Cause, len(m.turns))
			}
			told := m.turns[1].Messages[2].Content
			if !strings.Contains(told, tc.told) || strings.Contains(told, "jane@example.com") {
				t.Errorf("the model was told %q", told)
			}
		})
	}
}

// TestModelLoopResultSchema: with a ResultSchema the model is asked for
// a value of that schema, the answer is decoded and checked against it:
// one that does not match is Agent.InvalidOutput naming why.
func TestModelLoopResultSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"verdict":{"enum":["refund","reject"]}},"required":["verdict"]}`)
	for _, tc := range []struct {
		answer, want string
		fails        bool
	}{
		{`{"verdict":"refund"}`, `map[verdict:refund]`, false},
		{`{"verdict":"maybe"}`, "", true},
		{`the verdict is refund`, "", true},
	} {
		m := &scripted{answer: func(int) (*models.Reply, error) { return &models.Reply{Text: tc.answer}, nil }}
		x := engine.New(engine.Config{Agents: loop(t, agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", ResultSchema: schema})})
		res, err := x.Run(context.Background(), parse(t, supportTask), "judge", engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tc.fails {
			if res.Error != string(asl.ErrAgentInvalidOutput) {
				t.Errorf("%s: %s %s, want Agent.InvalidOutput", tc.answer, res.Status, res.Error)
			}
		} else if fmt.Sprint(res.Output) != tc.want {
			t.Errorf("%s: %s %v (%s)", tc.answer, res.Status, res.Output, res.Cause)
		}
		if string(m.turns[0].ResultSchema) != string(schema) {
			t.Errorf("the turn's ResultSchema %s", m.turns[0].ResultSchema)
		}
	}
	if _, err := agentloop.New(agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: &scripted{}}}, Model: "m", ResultSchema: json.RawMessage(`{"$ref":"https://example.com/s.json"}`)}); err == nil {
		t.Error("a ResultSchema that refers to another document was accepted")
	}
}

// TestModelLoopBudgetFallback: once the workflow Budget is used up and
// its OnExceed is UseFallback, later calls use its Fallback model instead
// of failing; the switch is in the history.
func TestModelLoopBudgetFallback(t *testing.T) {
	big := &scripted{answer: func(int) (*models.Reply, error) {
		return &models.Reply{Text: "big", Usage: models.Usage{InputTokens: 80, OutputTokens: 40}}, nil
	}}
	cheap := &scripted{answer: func(int) (*models.Reply, error) {
		return &models.Reply{Text: "cheap", Usage: models.Usage{InputTokens: 80, OutputTokens: 40}}, nil
	}}
	cfg := agentloop.Config{Models: map[string]agentloop.Model{"big": {Model: big}, "cheap": {Model: cheap}}, Model: "big"}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: loop(t, cfg), Store: st})
	def := `{"Budget":{"MaxTokens":100,"OnExceed":"UseFallback","Fallback":{"UseModel":"cheap"}},
	  "StartAt":"One","States":{
	  "One":{"Type":"Task","Agent":"Support","ResultPath":"$.one","Next":"Two"},
	  "Two":{"Type":"Task","Agent":"Support","ResultPath":"$.two","Next":"Three"},
	  "Three":{"Type":"Task","Agent":"Support","ResultPath":"$.three","Budget":{"Priority":"critical"},"End":true}}}`
	res, err := x.Run(context.Background(), parse(t, def), map[string]any{}, engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := jsonvalue.Marshal(res.Output)
	// Three's Budget.Priority critical keeps its own model.
	if res.Status != engine.StatusSucceeded || string(out) != `{"one":"big","three":"big","two":"cheap"}` {
		t.Fatalf("%s %s (%s: %s)", res.Status, out, res.Error, res.Cause)
	}
	if n := len(events(t, st, "e", engine.EventBudgetFallback)); n != 1 {
		t.Errorf("%d %s events, want 1", n, engine.EventBudgetFallback)
	}
}

// TestModelLoopWireNames: a tool whose name has a '.' (an MCP server's
// "fs.read") is offered to the model as "fs__read", which the providers
// accept, and the model's call of that name runs it under its own name
// (the state's Tools and the history say "fs.read"); two tools that would
// share a wire name are refused.
func TestModelLoopWireNames(t *testing.T) {
	m := &scripted{answer: func(n int) (*models.Reply, error) {
		if n == 1 {
			return &models.Reply{ToolCalls: []models.ToolCall{{ID: "c1", Name: "fs__read", Arguments: json.RawMessage(`{}`)}}}, nil
		}
		return &models.Reply{Text: "read"}, nil
	}}
	read := tools.Tool{Name: "fs.read", Call: func(context.Context, *agents.Request, map[string]any) (any, error) { return "contents", nil }}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: loop(t, agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{read}}), Store: st})
	def := `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","Tools":{"Allowed":["fs.read"]},"End":true}}}`
	res, err := x.Run(context.Background(), parse(t, def), "read it", engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "read" || m.turns[0].Tools[0].Name != "fs__read" || m.turns[1].Messages[2].Content != "contents" {
		t.Fatalf("%s %v (%s); offered %v; told %q", res.Status, res.Output, res.Cause, m.turns[0].Tools, m.turns[1].Messages[2].Content)
	}
	calls := events(t, st, "e", "ToolCallSucceeded")
	if len(calls) != 1 || calls[0].Detail.(map[string]any)["tool"] != "fs.read" {
		t.Errorf("tool call events %+v", calls)
	}
	clash := tools.Tool{Name: "fs__read", Call: read.Call}
	if _, err := agentloop.New(agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{read, clash}}); err == nil || !strings.Contains(err.Error(), "both be sent") {
		t.Errorf("New with clashing wire names = %v", err)
	}
}

// TestModelLoopDynamicTools: Dynamic tools are read at the start of every
// call, so a server's changed list reaches the next call; one that has
// the name of a fixed tool is left out.
func TestModelLoopDynamicTools(t *testing.T) {
	var mu sync.Mutex
	current := []string{"srv.a"}
	mk := func(name string) tools.Tool {
		tl := tools.Tool{Name: name, Call: func(context.Context, *agents.Request, map[string]any) (any, error) { return name, nil }}
		if err := tl.Check(); err != nil {
			t.Fatal(err)
		}
		return tl
	}
	m := &scripted{answer: func(int) (*models.Reply, error) { return &models.Reply{Text: "ok"}, nil }}
	cfg := agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m", Tools: []tools.Tool{mk("fixed")},
		Dynamic: func() []tools.Tool {
			mu.Lock()
			defer mu.Unlock()
			var out []tools.Tool
			for _, n := range current {
				out = append(out, mk(n))
			}
			return out
		}}
	x := engine.New(engine.Config{Agents: loop(t, cfg)})
	offered := func() []string {
		var names []string
		for _, s := range m.turns[len(m.turns)-1].Tools {
			names = append(names, s.Name)
		}
		return names
	}
	if _, err := x.Run(context.Background(), parse(t, supportTask), "one", engine.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(offered(), ","); got != "fixed,srv__a" {
		t.Errorf("first call offered %s", got)
	}
	mu.Lock()
	current = []string{"srv.a", "srv.b", "fixed"}
	mu.Unlock()
	if _, err := x.Run(context.Background(), parse(t, supportTask), "two", engine.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(offered(), ","); got != "fixed,srv__a,srv__b" {
		t.Errorf("second call offered %s", got)
	}
}
