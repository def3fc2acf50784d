package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// chatServer speaks OpenAI's Chat Completions: the first request of a
// conversation gets a tool call of "Lookup", the next (holding its result)
// the answer. status, when set, answers every request with it instead.
type chatServer struct {
	mu     sync.Mutex
	bodies []map[string]any
	status int
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(data, &body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	status := s.status
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
		return
	}
	msgs, _ := body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] == "tool" {
		status := "is unknown"
		if strings.Contains(fmt.Sprint(last["content"]), `"status":"shipped"`) {
			status = "has shipped"
		}
		fmt.Fprintf(w, `{"id":"c2","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"the order %s"}}],"usage":{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}}`, status)
		return
	}
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"Lookup","arguments":"{\"order\":\"A-1\"}"}}]}}],"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}`)
}

// messagesServer speaks Anthropic's Messages API with a plain answer.
type messagesServer struct {
	mu    sync.Mutex
	calls int
}

func (s *messagesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"from claude"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":3}}`)
}

func host(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

// TestModelLoopAgentsFile: an agents file names an OpenAI-compatible and
// an Anthropic model; a loop agent calls a tool (another agent) through
// the first, and a Task's Model falls back to the second when the first
// fails.
func TestModelLoopAgentsFile(t *testing.T) {
	chat, claude := &chatServer{}, &messagesServer{}
	openaiSrv, anthropicSrv := httptest.NewServer(chat), httptest.NewServer(claude)
	defer openaiSrv.Close()
	defer anthropicSrv.Close()
	t.Setenv("LOOP_TEST_KEY", "sk-test")
	file := fmt.Sprintf(`{
	  "Hosts": {"Allow": [%q, %q]},
	  "Models": {
	    "fast":  {"Provider": "openai", "Model": "gpt-test", "BaseURL": %q, "APIKeyEnv": "LOOP_TEST_KEY", "InputCostPerMTok": 1, "OutputCostPerMTok": 2, "MaxRetries": 0},
	    "smart": {"Provider": "anthropic", "Model": "claude-test", "BaseURL": %q, "APIKey": "${LOOP_TEST_KEY}"}
	  },
	  "Support": {"Type": "loop", "Model": "fast", "System": "Answer about orders.", "Tools": ["Lookup"], "MaxTurns": 4, "Temperature": 0.3}
	}`, host(t, openaiSrv.URL), host(t, anthropicSrv.URL), openaiSrv.URL+"/v1", anthropicSrv.URL)
	f, err := builtin.ParseAgentsFile([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	lookups := 0
	if err := reg.Register("Lookup", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		lookups++
		return map[string]any{"order": req.Input.(map[string]any)["order"], "status": "shipped"}, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	run := func(def string) *engine.Result {
		t.Helper()
		m, err := states.Parse([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		x := engine.New(engine.Config{Agents: reg, Store: store.NewMemory()})
		res, err := x.Run(context.Background(), m, "Where is A-1?", engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(`{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true}}}`)
	if res.Status != engine.StatusSucceeded || !strings.Contains(fmt.Sprint(res.Output), "shipped") || lookups != 1 {
		t.Fatalf("%s %v (%s: %s), %d lookups", res.Status, res.Output, res.Error, res.Cause, lookups)
	}
	first := chat.bodies[0]
	if first["model"] != "gpt-test" || first["temperature"] != 0.3 || first["tools"] == nil {
		t.Errorf("the first request: model %v, temperature %v, tools %v", first["model"], first["temperature"], first["tools"])
	}
	chat.mu.Lock()
	chat.status = http.StatusInternalServerError
	chat.mu.Unlock()
	res = run(`{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true,
		"Model":{"Preferred":"fast","Fallback":"smart","FallbackOn":["ModelError"]}}}}`)
	if res.Status != engine.StatusSucceeded || res.Output != "from claude" || claude.calls != 1 {
		t.Fatalf("fallback: %s %v (%s: %s), %d calls to claude", res.Status, res.Output, res.Error, res.Cause, claude.calls)
	}
	res = run(`{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true}}}`)
	if res.Status != engine.StatusFailed || res.Error != string(asl.ErrAgentModelError) {
		t.Errorf("without a fallback: %s %s (%s), want Agent.ModelError", res.Status, res.Error, res.Cause)
	}
}

// TestModelsFileErrors: a Models entry or a loop agent that cannot work is
// refused at the pointer of its problem.
func TestModelsFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, file, ptr string }{
		{"Models not an object", `{"Models": []}`, "/Models"},
		{"unknown provider", `{"Models": {"m": {"Provider": "gemini", "Model": "x"}}}`, "/Models/m/Provider"},
		{"no Model", `{"Models": {"m": {"Provider": "openai"}}}`, "/Models/m/Model"},
		{"unknown field", `{"Models": {"m": {"Provider": "openai", "Model": "x", "Temprature": 1}}}`, "/Models/m/Temprature"},
		{"a literal key", `{"Models": {"m": {"Provider": "openai", "Model": "x", "APIKey": "sk-123"}}}`, "/Models/m/APIKey"},
		{"loop of an unknown model", `{"Models": {"m": {"Provider": "openai", "Model": "x"}}, "A": {"Type": "loop", "Model": "n"}}`, "/A/Model"},
		{"loop without Models", `{"A": {"Type": "loop", "Model": "n"}}`, "/A/Model"},
		{"loop bad tool name", `{"Models": {"m": {"Provider": "openai", "Model": "x"}}, "A": {"Type": "loop", "Model": "m", "Tools": ["a b"]}}`, "/A/Tools/0"},
		{"loop MaxTurns 0", `{"Models": {"m": {"Provider": "openai", "Model": "x"}}, "A": {"Type": "loop", "Model": "m", "MaxTurns": 0}}`, "/A/MaxTurns"},
		{"loop Temperature 3", `{"Models": {"m": {"Provider": "openai", "Model": "x"}}, "A": {"Type": "loop", "Model": "m", "Temperature": 3}}`, "/A/Temperature"},
		{"loop ResultSchema not an object", `{"Models": {"m": {"Provider": "openai", "Model": "x"}}, "A": {"Type": "loop", "Model": "m", "ResultSchema": []}}`, "/A/ResultSchema"},
		{"loop unknown field", `{"Models": {"m": {"Provider": "openai", "Model": "x"}}, "A": {"Type": "loop", "Model": "m", "Prompt": "x"}}`, "/A/Prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := builtin.ParseAgentsFile([]byte(tc.file))
			var fe *builtin.FileError
			if !errors.As(err, &fe) || fe.Pointer != tc.ptr {
				t.Errorf("ParseAgentsFile = %v, want a problem at %s", err, tc.ptr)
			}
		})
	}
}

// TestLLMAgentModelAndGeneration: an llm agent asks the Task's models in
// order at its endpoint (the next on a FallbackOn error) with the Task's
// Generation over its own settings.
func TestLLMAgentModelAndGeneration(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if body["model"] == "busy" {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
			return
		}
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"from spare"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`)
	}))
	defer srv.Close()
	f, err := builtin.ParseAgentsFile([]byte(fmt.Sprintf(`{"Hosts": {"Allow": [%q]},
	  "Writer": {"Type": "llm", "BaseURL": %q, "Model": "own", "Temperature": 0.9, "MaxTokens": 100, "MaxRetries": 0}}`, host(t, srv.URL), srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	m, err := states.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Writer","End":true,
		"Model":{"Preferred":"busy","Fallback":"spare","FallbackOn":["RateLimitExceeded"]},
		"Generation":{"Temperature":0.1,"StopSequences":["END"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Config{Agents: reg}).Run(context.Background(), m, "hi", engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "from spare" || len(bodies) != 2 || bodies[0]["model"] != "busy" || bodies[1]["model"] != "spare" {
		t.Fatalf("%s %v (%s), requests %v", res.Status, res.Output, res.Cause, bodies)
	}
	if b := bodies[1]; b["temperature"] != 0.1 || b["max_tokens"] != float64(100) || fmt.Sprint(b["stop"]) != "[END]" {
		t.Errorf("the request's settings: %v", b)
	}
}

// TestModelLoopHostRefused: a model at a host the file's Hosts do not
// grant is not reached: the Task fails with States.Permissions.
func TestModelLoopHostRefused(t *testing.T) {
	chat := &chatServer{}
	srv := httptest.NewServer(chat)
	defer srv.Close()
	f, err := builtin.ParseAgentsFile([]byte(fmt.Sprintf(`{
	  "Models": {"m": {"Provider": "openai", "Model": "x", "BaseURL": %q, "MaxRetries": 0}},
	  "Support": {"Type": "loop", "Model": "m"}}`, srv.URL+"/v1")))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	m, err := states.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Support","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Config{Agents: reg}).Run(context.Background(), m, "hi", engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != string(asl.ErrPermissions) || !strings.Contains(res.Cause, "127.0.0.1") || len(chat.bodies) != 0 {
		t.Errorf("%s %s (%s), %d requests reached the server", res.Status, res.Error, res.Cause, len(chat.bodies))
	}
}
