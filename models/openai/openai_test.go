package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/internal/wiretest"
	"github.com/aslrun/aslrun/models/openai"
)

const testKey = "sk-test-secret-1234"

// newModel returns a Model talking to srv with the key in OPENAI_TEST_KEY.
func newModel(t *testing.T, srv *wiretest.Server, edit ...func(*models.Config)) models.Model {
	t.Helper()
	t.Setenv("OPENAI_TEST_KEY", testKey)
	cfg := models.Config{Provider: "openai", Model: "gpt-test", BaseURL: srv.URL + "/v1", APIKeyEnv: "OPENAI_TEST_KEY"}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := openai.New(cfg, srv.Client())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func modelError(t *testing.T, err error) *models.Error {
	t.Helper()
	var me *models.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want a *models.Error", err, err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error %q holds the API key", err)
	}
	return me
}

const textCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-0613",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","refusal":null},"finish_reason":"stop","logprobs":null}],
 "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

func TestModelLoopOpenAIText(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, textCompletion))
	m := newModel(t, srv)
	temp, topP := 0.2, 0.9
	reply, err := m.Send(t.Context(), &models.Turn{
		System:     "Be brief.",
		Messages:   []models.Message{{Role: models.RoleUser, Content: "Hi"}},
		Generation: models.Generation{Temperature: &temp, TopP: &topP, MaxTokens: 100, StopSequences: []string{"END"}},
	}, nil)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := models.Reply{Text: "Hello there", Usage: models.Usage{InputTokens: 12, OutputTokens: 3}, StopReason: "stop", Model: "gpt-test-0613"}
	if got := *reply; got.Text != want.Text || got.Usage != want.Usage || got.StopReason != want.StopReason || got.Model != want.Model || got.ToolCalls != nil {
		t.Errorf("reply = %+v, want %+v", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want Bearer and the key", got)
	}
	checks := []struct {
		path []any
		want string
	}{
		{[]any{"model"}, `"gpt-test"`},
		{[]any{"messages"}, `[{"content":"Be brief.","role":"system"},{"content":"Hi","role":"user"}]`},
		{[]any{"temperature"}, `0.2`},
		{[]any{"top_p"}, `0.9`},
		{[]any{"max_completion_tokens"}, `100`},
		{[]any{"stop"}, `["END"]`},
		{[]any{"stream"}, `null`},
		{[]any{"tools"}, `null`},
		{[]any{"response_format"}, `null`},
	}
	for _, c := range checks {
		if got := wiretest.Compact(wiretest.Get(r.Body, c.path...)); got != c.want {
			t.Errorf("body %v = %s, want %s", c.path, got, c.want)
		}
	}
}

const toolCallsCompletion = `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-test",
 "choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,"refusal":null,
  "tool_calls":[
   {"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
   {"id":"call_b","type":"function","function":{"name":"time","arguments":""}}]}}],
 "usage":{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60}}`

var tools = []models.ToolSpec{
	{Name: "weather", Description: "The weather in a city.", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "time"},
}

func TestModelLoopOpenAIToolCalls(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, toolCallsCompletion), wiretest.JSON(200, textCompletion))
	m := newModel(t, srv)
	turn := &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Weather and time?"}}, Tools: tools}
	reply, err := m.Send(t.Context(), turn, nil)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := []models.ToolCall{
		{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "call_b", Name: "time", Arguments: json.RawMessage(`{}`)},
	}
	if got := wiretest.Compact(reply.ToolCalls); got != wiretest.Compact(want) {
		t.Errorf("ToolCalls = %s, want %s", got, wiretest.Compact(want))
	}
	if reply.StopReason != "tool_calls" || reply.Text != "" {
		t.Errorf("reply = %+v, want no text and stop reason tool_calls", reply)
	}
	body := srv.Requests()[0].Body
	wantTools := `[{"function":{"description":"The weather in a city.","name":"weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},"type":"function"},` +
		`{"function":{"name":"time","parameters":{"type":"object"}},"type":"function"}]`
	if got := wiretest.Compact(body["tools"]); got != wantTools {
		t.Errorf("tools = %s, want %s", got, wantTools)
	}

	// The next turn carries the calls and their results.
	turn.Messages = append(turn.Messages,
		models.Message{Role: models.RoleAssistant, ToolCalls: reply.ToolCalls},
		models.Message{Role: models.RoleTool, ToolCallID: "call_a", Content: `{"temp":21}`},
		models.Message{Role: models.RoleTool, ToolCallID: "call_b", Content: "12:00"},
	)
	if _, err := m.Send(t.Context(), turn, nil); err != nil {
		t.Fatalf("second Send: %v", err)
	}
	msgs := srv.Requests()[1].Body["messages"]
	wantMsgs := `[{"content":"Weather and time?","role":"user"},` +
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"weather"},"id":"call_a","type":"function"},{"function":{"arguments":"{}","name":"time"},"id":"call_b","type":"function"}]},` +
		`{"content":"{\"temp\":21}","role":"tool","tool_call_id":"call_a"},` +
		`{"content":"12:00","role":"tool","tool_call_id":"call_b"}]`
	if got := wiretest.Compact(msgs); got != wantMsgs {
		t.Errorf("messages = %s\nwant %s", got, wantMsgs)
	}
}

// chunk returns a chat.completion.chunk event with one choice delta.
func chunk(delta map[string]any, finish any) string {
	return wiretest.Data(map[string]any{
		"id": "chatcmpl-3", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-stream",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		"usage":   nil,
	})
}

func toolDelta(index int, id, name, args string) map[string]any {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"], tc["type"] = id, "function"
		tc["function"].(map[string]any)["name"] = name
	}
	return map[string]any{"tool_calls": []any{tc}}
}

func TestModelLoopOpenAIStream(t *testing.T) {
	usage := wiretest.Data(map[string]any{"id": "chatcmpl-3", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-stream",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}})
	srv := wiretest.New(t, wiretest.SSE(
		chunk(map[string]any{"role": "assistant", "content": ""}, nil),
		chunk(map[string]any{"content": "Let me "}, nil),
		chunk(map[string]any{"content": "check."}, nil),
		chunk(toolDelta(0, "call_1", "weather", ""), nil),
		chunk(toolDelta(0, "", "", `{"ci`), nil),
		chunk(toolDelta(1, "call_2", "weather", `{"city":`), nil),
		chunk(toolDelta(0, "", "", `ty":"Oslo"}`), nil),
		chunk(toolDelta(1, "", "", `"Rome"}`), nil),
		chunk(map[string]any{}, "tool_calls"),
		usage,
		"data: [DONE]",
	))
	m := newModel(t, srv)
	var deltas []string
	reply, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Oslo and Rome?"}}, Tools: tools[:1]},
		func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := strings.Join(deltas, "|"); got != "Let me |check." {
		t.Errorf("deltas = %q, want %q", got, "Let me |check.")
	}
	want := models.Reply{
		Text: "Let me check.",
		ToolCalls: []models.ToolCall{
			{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
			{ID: "call_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
		},
		Usage:      models.Usage{InputTokens: 30, OutputTokens: 9},
		StopReason: "tool_calls",
		Model:      "gpt-test-stream",
	}
	if got := wiretest.Compact(reply); got != wiretest.Compact(want) {
		t.Errorf("reply = %s\nwant %s", got, wiretest.Compact(want))
	}
	body := srv.Requests()[0].Body
	if got := wiretest.Compact(body["stream"]); got != "true" {
		t.Errorf("stream = %s, want true", got)
	}
	if got := wiretest.Compact(body["stream_options"]); got != `{"include_usage":true}` {
		t.Errorf("stream_options = %s, want include_usage", got)
	}
}

func TestOpenAIResultSchema(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, textCompletion))
	m := newModel(t, srv)
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
	if _, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "n?"}}, ResultSchema: json.RawMessage(schema)}, nil); err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := `{"json_schema":{"name":"result","schema":{"additionalProperties":false,"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"},"strict":true},"type":"json_schema"}`
	if got := wiretest.Compact(srv.Requests()[0].Body["response_format"]); got != want {
		t.Errorf("response_format = %s\nwant %s", got, want)
	}
}

func TestOpenAIRetries(t *testing.T) {
	rateLimited := func(after string) http.HandlerFunc {
		return wiretest.JSON(429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After", after)
	}
	serverError := wiretest.JSON(500, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`, "Retry-After", "0")
	tests := []struct {
		name       string
		steps      []http.HandlerFunc
		maxRetries int
		wantName   asl.ErrorName // "" for success
		wantStatus int
		wantAfter  time.Duration
		wantMsg    string
	}{
		{name: "429 then success", steps: []http.HandlerFunc{rateLimited("0"), wiretest.JSON(200, textCompletion)}, maxRetries: 1},
		{name: "429 exhausted", steps: []http.HandlerFunc{rateLimited("30")}, maxRetries: 0,
			wantName: asl.ErrRateLimitExceeded, wantStatus: 429, wantAfter: 30 * time.Second, wantMsg: "Rate limit reached"},
		{name: "429 asks too long", steps: []http.HandlerFunc{rateLimited("120")}, maxRetries: 3,
			wantName: asl.ErrRateLimitExceeded, wantStatus: 429, wantAfter: 2 * time.Minute},
		{name: "500 retried then model error", steps: []http.HandlerFunc{serverError, serverError, serverError}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantStatus: 500, wantMsg: "The server had an error"},
		{name: "500 then success", steps: []http.HandlerFunc{serverError, wiretest.JSON(200, textCompletion)}, maxRetries: 2},
		{name: "400 not retried", steps: []http.HandlerFunc{wiretest.JSON(400, `{"error":{"message":"bad temperature","type":"invalid_request_error","param":"temperature","code":null}}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantStatus: 400, wantMsg: "bad temperature"},
		{name: "context overflow", steps: []http.HandlerFunc{wiretest.JSON(400, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)}, maxRetries: 2,
			wantName: asl.ErrAgentContextOverflow, wantStatus: 400, wantMsg: "maximum context length"},
		{name: "malformed body", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id": "chatcmpl-1", "choices": [nope]}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "malformed answer"},
		{name: "null answer", steps: []http.HandlerFunc{wiretest.JSON(200, `null`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "null"},
		{name: "no choices", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "no choices"},
		{name: "refusal", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that"}}]}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "refused: I can't help with that"},
		{name: "bad tool arguments", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"weather","arguments":"{\"city\":"}}]}}]}`)}, maxRetries: 2,
			wantName: asl.ErrAgentInvalidOutput, wantMsg: "tool call 0 (weather)"},
		{name: "key echoed", steps: []http.HandlerFunc{wiretest.JSON(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantStatus: 401, wantMsg: "Incorrect API key provided: [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.steps...)
			m := newModel(t, srv, func(c *models.Config) { c.MaxRetries = tt.maxRetries })
			reply, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, nil)
			if got := len(srv.Requests()); got != len(tt.steps) {
				t.Errorf("%d requests, want %d", got, len(tt.steps))
			}
			if tt.wantName == "" {
				if err != nil || reply.Text != "Hello there" {
					t.Fatalf("Send = %v, %v; want the text reply", reply, err)
				}
				return
			}
			me := modelError(t, err)
			if me.Name != tt.wantName || me.Status != tt.wantStatus || me.RetryAfter != tt.wantAfter || me.Provider != "openai" || me.Model != "gpt-test" {
				t.Errorf("error = %+v, want name %s, status %d, RetryAfter %s from openai gpt-test", me, tt.wantName, tt.wantStatus, tt.wantAfter)
			}
			if !strings.Contains(me.Message, tt.wantMsg) {
				t.Errorf("Message = %q, want it to hold %q", me.Message, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), "openai") {
				t.Errorf("error %q does not name the provider", err)
			}
		})
	}
}

func TestOpenAICancelMidStream(t *testing.T) {
	ended := make(chan struct{})
	srv := wiretest.New(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		wiretest.SSE(chunk(map[string]any{"content": "first"}, nil))(w, r)
		<-r.Context().Done() // the client goes away
	})
	m := newModel(t, srv, func(c *models.Config) { c.MaxRetries = 3 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := m.Send(ctx, &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	modelError(t, err)
	<-ended // the connection was closed: the handler saw it
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("%d requests, want 1 (no retry after cancel)", got)
	}
}

func TestOpenAIAttemptTimeout(t *testing.T) {
	srv := wiretest.New(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	m := newModel(t, srv, func(c *models.Config) { c.Timeout = 50 * time.Millisecond })
	_, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, nil)
	if me := modelError(t, err); me.Name != asl.ErrTimeout {
		t.Errorf("Name = %s, want %s (%v)", me.Name, asl.ErrTimeout, err)
	}
}

func TestOpenAIKeyEnvUnset(t *testing.T) {
	srv := wiretest.New(t)
	m := newModel(t, srv, func(c *models.Config) { c.APIKeyEnv = "OPENAI_TEST_UNSET_KEY" })
	_, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, nil)
	if me := modelError(t, err); me.Name != asl.ErrAgentModelError || !strings.Contains(err.Error(), "OPENAI_TEST_UNSET_KEY") {
		t.Errorf("err = %v, want Agent.ModelError naming OPENAI_TEST_UNSET_KEY", err)
	}
}

func TestOpenAINoKey(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, textCompletion))
	m := newModel(t, srv, func(c *models.Config) { c.APIKeyEnv = "" })
	if _, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, nil); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
}

func TestOpenAIInvalidTurn(t *testing.T) {
	srv := wiretest.New(t)
	m := newModel(t, srv)
	_, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleTool, Content: "x"}}}, nil)
	if me := modelError(t, err); !strings.Contains(me.Message, "messages[0]") {
		t.Errorf("Message = %q, want it to name messages[0]", me.Message)
	}
}

func TestOpenAINew(t *testing.T) {
	tests := []struct {
		name  string
		cfg   models.Config
		field string
	}{
		{"other provider", models.Config{Provider: "anthropic", Model: "m"}, "Provider"},
		{"no model", models.Config{Provider: "openai"}, "Model"},
		{"bad base URL", models.Config{Model: "m", BaseURL: "ftp://x"}, "BaseURL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openai.New(tt.cfg, nil)
			var ce *models.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Errorf("New = %v, want a ConfigError on %s", err, tt.field)
			}
		})
	}
	if _, err := openai.New(models.Config{Model: "m"}, nil); err != nil {
		t.Errorf("New with an empty Provider: %v", err)
	}
}
