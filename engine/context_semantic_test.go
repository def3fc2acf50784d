package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// topicEmbedder gives a text a vector by the topics it names: [1, 0, 0]
// for refunds, [0, 1, 0] for shipping, [1, 1, 0] for both, [0, 0, 1] for
// neither. It
// records the texts of each call, and fails with err when it is set.
type topicEmbedder struct {
	mu    sync.Mutex
	calls [][]string
	err   error
}

func (e *topicEmbedder) Model() string   { return "topics" }
func (e *topicEmbedder) Dimensions() int { return 3 }
func (e *topicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, append([]string(nil), texts...))
	e.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := []float32{0, 0, 0}
		if strings.Contains(t, "refund") {
			v[0] = 1
		}
		if strings.Contains(t, "shipping") {
			v[1] = 1
		}
		if v[0] == 0 && v[1] == 0 {
			v[2] = 1
		}
		out[i] = v
	}
	return out, nil
}

// runWith runs def on input with cfg (its Agents from as, a memory store)
// and returns the result and the history.
func runWith(t *testing.T, cfg engine.Config, def, input string, as map[string]agents.Agent) (*engine.Result, []engine.Event) {
	t.Helper()
	reg := agents.NewRegistry()
	for n, a := range as {
		if err := reg.Register(n, a); err != nil {
			t.Fatal(err)
		}
	}
	st := store.NewMemory()
	cfg.Agents, cfg.Store = reg, st
	x := engine.New(cfg)
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

// contextDetail returns the detail of the only ContextBuilt event as JSON.
func contextDetail(t *testing.T, hist []engine.Event) string {
	t.Helper()
	ev := eventsOfType(hist, engine.EventContext)
	if len(ev) != 1 {
		t.Fatalf("%d %s events, want 1", len(ev), engine.EventContext)
	}
	b, err := jsonvalue.Marshal(ev[0].Detail)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestContextSemantic(t *testing.T) {
	docs := `{"question":"where is my refund?","docs":["shipping takes 3 days","refunds take 5 days","our office is in Paris","refund and shipping costs"]}`
	def := func(ctx string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":` + ctx + `,"ResultPath":"$.r","End":true}}}`
	}
	tests := []struct {
		name   string
		ctx    string
		input  string
		query  string // what the embedder gets first
		want   string // the agent's input
		detail string // the ContextBuilt event
	}{
		{
			name:   "Query.$ picks the TopK, equal scores in document order",
			ctx:    `{"Strategy":"semantic","Query.$":"$.question","Candidates":["$.docs[*]"],"TopK":2}`,
			input:  docs,
			query:  "where is my refund?",
			want:   `{"question":"where is my refund?","docs":["refunds take 5 days","refund and shipping costs"]}`,
			detail: `{"dropped":["$.docs[0]","$.docs[2]"],"picked":[{"path":"$.docs[1]","score":1},{"path":"$.docs[3]","score":0.7071067811865475}],"summarized":false,"tokens":24}`,
		},
		{
			name:   "Query with a placeholder",
			ctx:    `{"Strategy":"semantic","Query":"about {{$.topic}}","Candidates":["$.docs[*]"],"TopK":1}`,
			input:  `{"topic":"shipping","docs":["refunds take 5 days","shipping takes 3 days"]}`,
			query:  "about shipping",
			want:   `{"topic":"shipping","docs":["shipping takes 3 days"]}`,
			detail: `{"dropped":["$.docs[0]"],"picked":[{"path":"$.docs[1]","score":1}],"summarized":false,"tokens":14}`,
		},
		{
			name:   "Query.$ from an intrinsic",
			ctx:    `{"Strategy":"semantic","Query.$":"States.Format('{} please', $.topic)","Candidates":["$.docs[*]"],"TopK":1}`,
			input:  `{"topic":"refund","docs":["shipping takes 3 days","refunds take 5 days"]}`,
			query:  "refund please",
			want:   `{"topic":"refund","docs":["refunds take 5 days"]}`,
			detail: `{"dropped":["$.docs[0]"],"picked":[{"path":"$.docs[1]","score":1}],"summarized":false,"tokens":13}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &scripted{outputs: []string{`"ok"`}}
			e := &topicEmbedder{}
			res, hist := runWith(t, engine.Config{Embedder: e}, def(tt.ctx), tt.input, map[string]agents.Agent{"A": a.agent(t)})
			if res.Status != engine.StatusSucceeded {
				t.Fatalf("status %s (%s: %s)", res.Status, res.Error, res.Cause)
			}
			got, _ := jsonvalue.Marshal(a.reqs[0].Input)
			if want, _ := jsonvalue.Marshal(mustJSON(t, tt.want)); string(got) != string(want) {
				t.Errorf("agent input %s, want %s", got, want)
			}
			if got := contextDetail(t, hist); got != tt.detail {
				t.Errorf("ContextBuilt detail %s\nwant                  %s", got, tt.detail)
			}
			if len(e.calls) != 1 || len(e.calls[0]) == 0 || e.calls[0][0] != tt.query {
				t.Errorf("embedder calls %q, want one starting with the query %q", e.calls, tt.query)
			}
			// The document keeps everything.
			out := mustJSON(t, tt.input).(map[string]any)
			out["r"] = "ok"
			if !jsonvalue.Equal(res.Output, out) {
				b, _ := jsonvalue.Marshal(res.Output)
				t.Errorf("output %s, want the input and r", b)
			}
		})
	}
}

func TestContextSemanticOfflineEmbedder(t *testing.T) {
	// The executor's default embedder (offline, character n-grams).
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":{"Strategy":"semantic","Query.$":"$.q","Candidates":["$.kb[*]"],"TopK":1},"End":true}}}`
	// A blank candidate is not embedded (the offline embedder refuses it).
	input := `{"q":"How do I reset my password?","kb":["","Opening hours of the Paris office","To reset your password, open Settings and choose Reset password","Shipping rates for parcels abroad"]}`
	a := &scripted{outputs: []string{`"ok"`}}
	res, hist := runWith(t, engine.Config{}, def, input, map[string]agents.Agent{"A": a.agent(t)})
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("status %s (%s: %s)", res.Status, res.Error, res.Cause)
	}
	got, _ := jsonvalue.Marshal(a.reqs[0].Input)
	if want := `{"kb":["To reset your password, open Settings and choose Reset password"],"q":"How do I reset my password?"}`; string(got) != want {
		t.Errorf("agent input %s, want %s", got, want)
	}
	if d := contextDetail(t, hist); !strings.Contains(d, `"picked":[{"path":"$.kb[2]"`) {
		t.Errorf("ContextBuilt detail %s, want $.kb[2] picked", d)
	}
}

func TestContextSemanticErrors(t *testing.T) {
	def := func(query string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":{"Strategy":"semantic",` + query + `,"Candidates":["$.docs[*]"],"TopK":1},"End":true}}}`
	}
	input := `{"q":{"not":"text"},"blank":" ","docs":["a","b"]}`
	tests := []struct {
		name     string
		query    string
		embedErr error
		want     asl.ErrorName
		cause    string
	}{
		{"Query.$ is not a string", `"Query.$":"$.q"`, nil, asl.ErrRuntime, "Context.Query.$ gives object, not a string"},
		{"Query.$ selects nothing", `"Query.$":"$.missing"`, nil, asl.ErrRuntime, "Context.Query.$: "},
		{"a blank query", `"Query.$":"$.blank"`, nil, asl.ErrRuntime, "Context: context window: the query of Strategy \"semantic\" is blank"},
		{"a placeholder selects nothing", `"Query":"about {{$.missing}}"`, nil, asl.ErrRuntime, "Context.Query: "},
		{"the embedder's named error", `"Query":"x"`, asl.Errorf("Embedder.Down", "no vectors today"), "Embedder.Down", "no vectors today"},
		{"the embedder's plain error", `"Query":"x"`, errors.New("connection refused"), asl.ErrAgentModelError, "state T: Context: embedding with topics: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &scripted{outputs: []string{`"ok"`}}
			e := &topicEmbedder{err: tt.embedErr}
			res, _ := runWith(t, engine.Config{Embedder: e}, def(tt.query), input, map[string]agents.Agent{"A": a.agent(t)})
			wantError(t, res, tt.want, tt.cause)
			if len(a.reqs) != 0 {
				t.Errorf("the agent was called")
			}
		})
	}
}

func TestContextSemanticCaught(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":{"Strategy":"semantic","Query":"x","Candidates":["$.docs[*]"],"TopK":1},
		"Catch":[{"ErrorEquals":["Agent.ModelError"],"ResultPath":"$.err","Next":"F"}],"End":true},
		"F":{"Type":"Pass","Parameters":{"e.$":"$.err.Error"},"End":true}}}`
	e := &topicEmbedder{err: errors.New("down")}
	res, _ := runWith(t, engine.Config{Embedder: e}, def, `{"docs":["a"]}`, map[string]agents.Agent{"A": (&scripted{outputs: []string{`"ok"`}}).agent(t)})
	wantOutput(t, res, `{"e":"Agent.ModelError"}`)
}

func TestContextStrategySummarize(t *testing.T) {
	def := func(extra string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":{"Strategy":"summarize","MaxTokens":1000,"Summarize":{"Using":"Sum","Target":"$.history"}}` + extra + `,"ResultPath":"$.r","Next":"Totals"},
			"Totals":{"Type":"Pass","Parameters":{"tokens.$":"$$.Execution.TokensUsed"},"End":true}}}`
	}
	input := `{"history":["hi","hello, how can I help?"],"q":"refund?"}`
	// usage makes an agent that reports tokens and answers out.
	usage := func(tokens int64, out string, calls *[]agents.Request) agents.Agent {
		var mu sync.Mutex
		return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
			mu.Lock()
			*calls = append(*calls, *req)
			mu.Unlock()
			req.ReportUsage(agents.Usage{Tokens: tokens})
			return out, nil
		})
	}
	t.Run("it summarizes what fits, and the summary's tokens count", func(t *testing.T) {
		var sums, calls []agents.Request
		res, hist := runWith(t, engine.Config{}, def(""), input, map[string]agents.Agent{
			"A": usage(10, "ok", &calls), "Sum": usage(7, "two greetings", &sums)})
		wantOutput(t, res, `{"tokens":17}`)
		if len(sums) != 1 || sums[0].Step != "T#1/context-summary-1/Sum" {
			t.Fatalf("summarizer calls %+v", sums)
		}
		got, _ := jsonvalue.Marshal(calls[0].Input)
		if want := `{"history":"two greetings","q":"refund?"}`; string(got) != want {
			t.Errorf("agent input %s, want %s", got, want)
		}
		if d := contextDetail(t, hist); !strings.Contains(d, `"summarized":true`) || strings.Contains(d, "picked") {
			t.Errorf("ContextBuilt detail %s", d)
		}
	})
	t.Run("the summary's call is held to the state's Budget", func(t *testing.T) {
		var sums, calls []agents.Request
		res, _ := runWith(t, engine.Config{}, def(`,"Budget":{"MaxTokens":50}`), input, map[string]agents.Agent{
			"A": usage(10, "ok", &calls), "Sum": usage(80, "two greetings", &sums)})
		wantError(t, res, asl.ErrBudgetExceeded, "used 80 tokens, over its Budget.MaxTokens of 50")
		if len(calls) != 0 {
			t.Errorf("the agent was called after the summary went over the budget")
		}
	})
	t.Run("a workflow Budget counts the summary", func(t *testing.T) {
		wf := `{"Budget":{"MaxTokens":15},"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Context":{"Strategy":"summarize","Summarize":{"Using":"Sum"}},"End":true}}}`
		var sums, calls []agents.Request
		res, _ := runWith(t, engine.Config{}, wf, input, map[string]agents.Agent{
			"A": usage(10, "ok", &calls), "Sum": usage(20, "s", &sums)})
		if res.Status != engine.StatusFailed || res.Error != string(asl.ErrBudgetExceeded) {
			t.Errorf("status %s (%s: %s), want FAILED with %s", res.Status, res.Error, res.Cause, asl.ErrBudgetExceeded)
		}
	})
}
