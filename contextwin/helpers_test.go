package contextwin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// parseContext parses a Context block the way a definition carries it.
func parseContext(tb testing.TB, block string) *states.ContextConfig {
	tb.Helper()
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "worker", "End": true, "Context": ` + block + `}}}`
	m, err := states.Parse([]byte(def))
	if err != nil {
		tb.Fatalf("Parse(Context %s): %v", block, err)
	}
	task, ok := m.States["T"].(*states.Task)
	if !ok || task.Context == nil {
		tb.Fatalf("Parse(Context %s) gives no Task with a Context", block)
	}
	return task.Context
}

// compact writes v as compact JSON for messages and comparisons.
func compact(tb testing.TB, v any) string {
	tb.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		tb.Fatalf("Marshal: %v", err)
	}
	return string(b)
}

// text returns a string of n runes starting with prefix.
func text(prefix string, n int) string {
	return prefix + strings.Repeat(".", n-len(prefix))
}

// call is one summarizer call.
type call struct {
	Agent   string
	Content string
	Target  int64
}

// fakeSummarizer records its calls and replies with reply(content), or
// with the string "S(<n> tokens)" when reply is nil.
type fakeSummarizer struct {
	mu    sync.Mutex
	calls []call
	reply func(content any, target int64) (any, error)
}

func (f *fakeSummarizer) summarize(_ context.Context, agent string, content any, target int64) (any, error) {
	b, err := jsonvalue.Marshal(content)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.calls = append(f.calls, call{Agent: agent, Content: string(b), Target: target})
	f.mu.Unlock()
	if f.reply != nil {
		return f.reply(content, target)
	}
	return fmt.Sprintf("S(%d)", target), nil
}
