package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/aslrun/aslrun/agentloop"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/openai"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/tools"
)

// toolTurns is how many turns ask for a tool before the model answers.
const toolTurns = 3

// fake answers a Chat Completions request at once: a call of the tool
// "lookup" while the conversation holds fewer than toolTurns tool
// results, then the answer.
func fake() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		results := strings.Count(string(data), `"role":"tool"`)
		w.Header().Set("Content-Type", "application/json")
		if results < toolTurns {
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"lookup","arguments":"{\"n\":%d}"}}]}}],"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`, results, results)
			return
		}
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],"usage":{"prompt_tokens":80,"completion_tokens":5,"total_tokens":85}}`)
	}))
}

func lookup(args map[string]any) any { return map[string]any{"found": args["n"]} }

// BenchmarkBareLoop is the loop written with the OpenAI SDK alone.
func BenchmarkBareLoop(b *testing.B) {
	srv := fake()
	defer srv.Close()
	chat := sdk.NewChatCompletionService(option.WithBaseURL(srv.URL+"/v1"), option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
	tool := sdk.ChatCompletionFunctionTool(sdkFunction())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		msgs := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Where is it?")}
		for {
			resp, err := chat.New(ctx, sdk.ChatCompletionNewParams{Model: "m", Messages: msgs, Tools: []sdk.ChatCompletionToolUnionParam{tool}})
			if err != nil {
				b.Fatal(err)
			}
			m := resp.Choices[0].Message
			if len(m.ToolCalls) == 0 {
				break
			}
			msgs = append(msgs, m.ToParam())
			for _, c := range m.ToolCalls {
				var args map[string]any
				if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
					b.Fatal(err)
				}
				out, _ := json.Marshal(lookup(args))
				msgs = append(msgs, sdk.ToolMessage(string(out), c.ID))
			}
		}
	}
	b.ReportMetric(float64(toolTurns+1), "turns/op")
}

func sdkFunction() shared.FunctionDefinitionParam {
	return shared.FunctionDefinitionParam{Name: "lookup",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}}
}

// BenchmarkLoop is the same loop run by aslrun, by store and durability.
func BenchmarkLoop(b *testing.B) {
	srv := fake()
	defer srv.Close()
	m, err := openai.New(models.Config{Model: "m", BaseURL: srv.URL + "/v1"}, srv.Client())
	if err != nil {
		b.Fatal(err)
	}
	a, err := agentloop.New(agentloop.Config{Models: map[string]agentloop.Model{"m": {Model: m}}, Model: "m",
		Tools: []tools.Tool{{Name: "lookup", Input: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
			Call: func(_ context.Context, _ *agents.Request, args map[string]any) (any, error) { return lookup(args), nil }}}})
	if err != nil {
		b.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := reg.Register("Support", a); err != nil {
		b.Fatal(err)
	}
	machine, err := states.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true}}}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		st   func(b *testing.B) engine.Store
		dur  engine.Durability
	}{
		{"no store", func(*testing.B) engine.Store { return nil }, ""},
		{"memory", func(*testing.B) engine.Store { return store.NewMemory() }, engine.DurabilityStrict},
		{"bbolt batched", boltStore, engine.DurabilityBatched},
		{"bbolt strict", boltStore, engine.DurabilityStrict},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st := tc.st(b)
			cfg := engine.Config{Agents: reg, Durability: tc.dur}
			if st != nil {
				cfg.Store = st
			}
			x := engine.New(cfg)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Run(ctx, machine, "Where is it?", engine.StartOptions{})
				if err != nil || res.Status != engine.StatusSucceeded {
					b.Fatalf("%v %+v", err, res)
				}
			}
			b.ReportMetric(float64(toolTurns+1), "turns/op")
		})
	}
}

func boltStore(b *testing.B) engine.Store {
	s, err := store.OpenBolt(filepath.Join(b.TempDir(), "loop.db"), store.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
