package builtin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// A loop agent whose preferred model (an OpenAI-compatible server, here
// a fake that is overloaded) falls back to an Anthropic model (a fake
// that asks for a tool, then answers), with the Task's Generation.
func ExampleAgentsFile_Register_modelLoop() {
	overloaded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}))
	defer overloaded.Close()
	claude := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(string(data), "tool_result") {
			fmt.Fprint(w, `{"id":"m1","type":"message","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"tu_1","name":"Lookup","input":{"order":"A-17"}}],"stop_reason":"tool_use","usage":{"input_tokens":40,"output_tokens":12}}`)
			return
		}
		fmt.Fprint(w, `{"id":"m2","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Order A-17 has shipped."}],"stop_reason":"end_turn","usage":{"input_tokens":70,"output_tokens":8}}`)
	}))
	defer claude.Close()

	file := fmt.Sprintf(`{
	  "Hosts":  {"Allow": [%q, %q]},
	  "Models": {
	    "fast":  {"Provider": "openai", "Model": "gpt-4o-mini", "BaseURL": %q, "MaxRetries": 0},
	    "smart": {"Provider": "anthropic", "Model": "claude-sonnet-4-5", "BaseURL": %q}
	  },
	  "Support": {"Type": "loop", "Model": "fast", "System": "You answer questions about orders.", "Tools": ["Lookup"]}
	}`, strings.TrimPrefix(overloaded.URL, "http://"), strings.TrimPrefix(claude.URL, "http://"), overloaded.URL+"/v1", claude.URL)
	f, err := builtin.ParseAgentsFile([]byte(file))
	if err != nil {
		panic(err)
	}
	reg := agents.NewRegistry()
	_ = reg.Register("Lookup", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		return map[string]any{"order": req.Input.(map[string]any)["order"], "status": "shipped"}, nil
	}))
	if err := f.Register(reg, ".", nil); err != nil {
		panic(err)
	}
	m, err := states.Parse([]byte(`{"StartAt": "Answer", "States": {"Answer": {
	  "Type": "Task", "Agent": "Support", "End": true,
	  "Model": {"Preferred": "fast", "Fallback": "smart", "FallbackOn": ["ModelError", "RateLimitExceeded"]},
	  "Generation": {"Temperature": 0.2, "MaxTokens": 300}}}}`))
	if err != nil {
		panic(err)
	}
	st := store.NewMemory()
	res, err := engine.New(engine.Config{Agents: reg, Store: st}).Run(context.Background(), m, "Where is order A-17?", engine.StartOptions{ID: "e"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Output)
	hist, _ := st.History(context.Background(), "e")
	for _, e := range hist {
		if strings.HasPrefix(e.Type, "ModelTurn") || strings.HasPrefix(e.Type, "ToolCall") {
			d := e.Detail.(map[string]any)
			fmt.Println(e.Type, d["name"])
		}
	}
	// Output:
	// SUCCEEDED Order A-17 has shipped.
	// ModelTurnSucceeded turn 1
	// ToolCallSucceeded turn 1/tool tu_1
	// ModelTurnSucceeded turn 2
}
