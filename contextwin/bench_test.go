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
	}
	summarize := func(_ context.Context, _ string, _ any, target int64) (any, error) {
		return strings.Repeat("s", int(target)*4-2), nil
	}
	for _, bb := range blocks {
		cfg := parseContext(b, bb.block)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := Build(context.Background(), cfg, input, summarize)
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
