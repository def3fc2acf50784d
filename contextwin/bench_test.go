package contextwin

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// conversation returns a conversation-like input of about size bytes of
// JSON: a system prompt, a history of messages and a question.
func conversation(tb testing.TB, size int) any {
	tb.Helper()
	var msgs []any
	for i := 0; ; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{
			"id":      fmt.Sprintf("m-%d", i),
			"role":    role,
			"content": fmt.Sprintf("message %d: ", i) + strings.Repeat("lorem ipsum dolor sit amet ", 6+i%5),
		})
		v := map[string]any{
			"system":   strings.Repeat("You are a careful assistant. ", 10),
			"messages": msgs,
			"question": "What did we decide about the schema migration?",
		}
		if jsonvalue.Size(v) >= size {
			return v
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	input := conversation(b, 50<<10)
	tokens, err := jsonpath.EstimateTokens(input)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("input: %d bytes, %d tokens", jsonvalue.Size(input), tokens)
	blocks := []struct{ name, block string }{
		{"fits", `{"MaxTokens": 20000}`},
		{"sliding_window", `{"MaxTokens": 4000, "Include": ["$.system", "$.question", "$.messages[-1]"]}`},
		{"sliding_window_exclude", `{"MaxTokens": 4000, "Exclude": ["$.messages[*].id"], "Include": ["$.system", "$.question"]}`},
		{"priority_based", `{"Strategy": "priority_based", "MaxTokens": 4000, "Priority": ["$.question", "$.system", "$.messages[*]"]}`},
		{"summarize", `{"MaxTokens": 4000, "Include": ["$.messages[-1]"], "Summarize": {"Using": "sum", "Target": "$.messages"}}`},
		{"strategy_summarize", `{"Strategy": "summarize", "MaxTokens": 4000, "Include": ["$.messages[-1]"], "Summarize": {"Using": "sum", "Target": "$.messages"}}`},
		{"semantic", `{"Strategy": "semantic", "MaxTokens": 4000, "Query": "q", "Candidates": ["$.messages[*]"], "TopK": 20}`},
	}
	// embed gives each text a vector of 64 components from its bytes: the
	// cost of Build around the embedder, not of a model.
	embed := func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			v := make([]float32, 64)
			for j := 0; j < len(t); j++ {
				v[(int(t[j])+j)%64]++
			}
			out[i] = v
		}
		return out, nil
	}
	summarize := func(_ context.Context, _ string, _ any, target int64) (any, error) {
		return strings.Repeat("s", int(target)*4-2), nil
	}
	for _, bb := range blocks {
		cfg := parseContext(b, bb.block)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := BuildWith(context.Background(), cfg, input, Funcs{Summarize: summarize, Embed: embed, Query: "schema migration"})
				if err != nil {
					b.Fatal(err)
				}
				if w.Tokens > cfg.MaxTokens {
					b.Fatalf("Tokens = %d, more than %d", w.Tokens, cfg.MaxTokens)
				}
			}
		})
	}
}
