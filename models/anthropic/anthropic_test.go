package anthropic_test

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
	"github.com/aslrun/aslrun/models/anthropic"
	"github.com/aslrun/aslrun/models/internal/wiretest"
)

const testKey = "sk-ant-test-secret-1234"

// newModel returns a Model talking to srv with the key in ANTHROPIC_TEST_KEY.
func newModel(t *testing.T, srv *wiretest.Server, edit ...func(*models.Config)) models.Model {
	t.Helper()
	t.Setenv("ANTHROPIC_TEST_KEY", testKey)
	cfg := models.Config{Provider: "anthropic", Model: "claude-test", BaseURL: srv.URL, APIKeyEnv: "ANTHROPIC_TEST_KEY"}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := anthropic.New(cfg, srv.Client())
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

func apiError(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
}

const textMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-20250101",
 "content":[{"type":"text","text":"Hello "},{"type":"text","text":"there"}],
 "stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":12,"output_tokens":3,"cache_creation_input_tokens":4,"cache_read_input_tokens":1}}`

func TestModelLoopAnthropicText(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, textMessage))
	m := newModel(t, srv)
	temp, topP := 0.5, 0.75
	reply, err := m.Send(t.Context(), &models.Turn{
		System:     "Be brief.",
		Messages:   []models.Message{{Role: models.RoleUser, Content: "Hi"}},
		Generation: models.Generation{Temperature: &temp, TopP: &topP, StopSequences: []string{"END"}},
	}, nil)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := models.Reply{Text: "Hello there", Usage: models.Usage{InputTokens: 17, OutputTokens: 3}, StopReason: "end_turn", Model: "claude-test-20250101"}
	if got := wiretest.Compact(reply); got != wiretest.Compact(want) {
		t.Errorf("reply = %s, want %s", got, wiretest.Compact(want))
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key = %q, want the key", got)
	}
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	checks := []struct {
		path []any
		want string
	}{
		{[]any{"model"}, `"claude-test"`},
		{[]any{"system"}, `[{"text":"Be brief.","type":"text"}]`},
		{[]any{"messages"}, `[{"content":[{"text":"Hi","type":"text"}],"role":"user"}]`},
		{[]any{"max_tokens"}, `4096`},
		{[]any{"temperature"}, `0.5`},
		{[]any{"top_p"}, `0.75`},
		{[]any{"stop_sequences"}, `["END"]`},
		{[]any{"stream"}, `null`},
		{[]any{"tools"}, `null`},
	}
	for _, c := range checks {
		if got := wiretest.Compact(wiretest.Get(r.Body, c.path...)); got != c.want {
			t.Errorf("body %v = %s, want %s", c.path, got, c.want)
		}
	}
}

const toolUseMessage = `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test",
 "content":[{"type":"text","text":"Checking."},
  {"type":"tool_use","id":"toolu_a","name":"weather","input":{"city":"Paris"}},
  {"type":"tool_use","id":"toolu_b","name":"time","input":{}}],
 "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":20}}`

var tools = []models.ToolSpec{
	{Name: "weather", Description: "The weather in a city.", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
	{Name: "time"},
}

func TestModelLoopAnthropicToolCalls(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, toolUseMessage), wiretest.JSON(200, textMessage))
	m := newModel(t, srv)
	turn := &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Weather and time?"}}, Tools: tools, Generation: models.Generation{MaxTokens: 500}}
	reply, err := m.Send(t.Context(), turn, nil)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := models.Reply{
		Text: "Checking.",
		ToolCalls: []models.ToolCall{
			{ID: "toolu_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "toolu_b", Name: "time", Arguments: json.RawMessage(`{}`)},
		},
		Usage: models.Usage{InputTokens: 40, OutputTokens: 20}, StopReason: "tool_use", Model: "claude-test",
	}
	if got := wiretest.Compact(reply); got != wiretest.Compact(want) {
		t.Errorf("reply = %s\nwant %s", got, wiretest.Compact(want))
	}
	body := srv.Requests()[0].Body
	wantTools := `[{"description":"The weather in a city.","input_schema":{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"weather"},` +
		`{"input_schema":{"properties":{},"type":"object"},"name":"time"}]`
	if got := wiretest.Compact(body["tools"]); got != wantTools {
		t.Errorf("tools = %s\nwant %s", got, wantTools)
	}
	if got := wiretest.Compact(body["max_tokens"]); got != "500" {
		t.Errorf("max_tokens = %s, want 500", got)
	}

	// The next turn: the calls, both results grouped into one user
	// message with the user's next words.
	turn.Messages = append(turn.Messages,
		models.Message{Role: models.RoleAssistant, Content: reply.Text, ToolCalls: reply.ToolCalls},
		models.Message{Role: models.RoleTool, ToolCallID: "toolu_a", Content: `{"temp":21}`},
		models.Message{Role: models.RoleTool, ToolCallID: "toolu_b", Content: "12:00"},
		models.Message{Role: models.RoleUser, Content: "Thanks"},
	)
	if _, err := m.Send(t.Context(), turn, nil); err != nil {
		t.Fatalf("second Send: %v", err)
	}
	msgs := srv.Requests()[1].Body["messages"]
	wantMsgs := `[{"content":[{"text":"Weather and time?","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"Checking.","type":"text"},{"id":"toolu_a","input":{"city":"Paris"},"name":"weather","type":"tool_use"},{"id":"toolu_b","input":{},"name":"time","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":[{"text":"{\"temp\":21}","type":"text"}],"tool_use_id":"toolu_a","type":"tool_result"},{"content":[{"text":"12:00","type":"text"}],"tool_use_id":"toolu_b","type":"tool_result"},{"text":"Thanks","type":"text"}],"role":"user"}]`
	if got := wiretest.Compact(msgs); got != wantMsgs {
		t.Errorf("messages = %s\nwant %s", got, wantMsgs)
	}
}

func event(typ string, v map[string]any) string {
	v["type"] = typ
	return "event: " + typ + "\n" + wiretest.Data(v)
}

func TestModelLoopAnthropicStream(t *testing.T) {
	srv := wiretest.New(t, wiretest.SSE(
		event("message_start", map[string]any{"message": map[string]any{"id": "msg_3", "type": "message", "role": "assistant", "model": "claude-test-stream",
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 30, "output_tokens": 1}}}),
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
		event("ping", map[string]any{}),
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "Let me "}}),
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "check."}}),
		event("content_block_stop", map[string]any{"index": 0}),
		event("content_block_start", map[string]any{"index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": map[string]any{}}}),
		event("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}}),
		event("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `{"ci`}}),
		event("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `ty":"Oslo"}`}}),
		event("content_block_stop", map[string]any{"index": 1}),
		event("content_block_start", map[string]any{"index": 2, "content_block": map[string]any{"type": "tool_use", "id": "toolu_2", "name": "weather", "input": map[string]any{}}}),
		event("content_block_delta", map[string]any{"index": 2, "delta": map[string]any{"type": "input_json_delta", "partial_json": `{"city": "Rome"}`}}),
		event("content_block_stop", map[string]any{"index": 2}),
		event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 9}}),
		event("message_stop", map[string]any{}),
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
			{ID: "toolu_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
			{ID: "toolu_2", Name: "weather", Arguments: json.RawMessage(`{"city": "Rome"}`)},
		},
		Usage:      models.Usage{InputTokens: 30, OutputTokens: 9},
		StopReason: "tool_use",
		Model:      "claude-test-stream",
	}
	if got := wiretest.Compact(reply); got != wiretest.Compact(want) {
		t.Errorf("reply = %s\nwant %s", got, wiretest.Compact(want))
	}
	if got := wiretest.Compact(srv.Requests()[0].Body["stream"]); got != "true" {
		t.Errorf("stream = %s, want true", got)
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	overloaded := wiretest.SSE(
		event("message_start", map[string]any{"message": map[string]any{"id": "msg_4", "type": "message", "role": "assistant", "model": "claude-test",
			"content": []any{}, "usage": map[string]any{"input_tokens": 3, "output_tokens": 1}}}),
		event("error", map[string]any{"error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}}),
	)
	srv := wiretest.New(t, overloaded, overloaded)
	m := newModel(t, srv, func(c *models.Config) { c.MaxRetries = 1 })
	_, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, func(string) {})
	me := modelError(t, err)
	if me.Name != asl.ErrAgentModelError || me.Status != 529 || me.Message != "Overloaded" {
		t.Errorf("error = %+v, want Agent.ModelError 529 Overloaded", me)
	}
	if got := len(srv.Requests()); got != 2 {
		t.Errorf("%d requests, want 2 (retried: nothing was streamed)", got)
	}
}

func TestAnthropicRetries(t *testing.T) {
	rateLimited := func(after string) http.HandlerFunc {
		return wiretest.JSON(429, apiError("rate_limit_error", "Number of requests has exceeded your rate limit"), "Retry-After", after)
	}
	serverError := wiretest.JSON(500, apiError("api_error", "Internal server error"), "Retry-After", "0")
	tests := []struct {
		name       string
		steps      []http.HandlerFunc
		maxRetries int
		wantName   asl.ErrorName // "" for success
		wantStatus int
		wantAfter  time.Duration
		wantMsg    string
	}{
		{name: "429 then success", steps: []http.HandlerFunc{rateLimited("0"), wiretest.JSON(200, textMessage)}, maxRetries: 1},
		{name: "429 exhausted", steps: []http.HandlerFunc{rateLimited("0"), rateLimited("30")}, maxRetries: 1,
			wantName: asl.ErrRateLimitExceeded, wantStatus: 429, wantAfter: 30 * time.Second, wantMsg: "rate limit"},
		{name: "500 retried then model error", steps: []http.HandlerFunc{serverError, serverError}, maxRetries: 1,
			wantName: asl.ErrAgentModelError, wantStatus: 500, wantMsg: "Internal server error"},
		{name: "529 then success", steps: []http.HandlerFunc{wiretest.JSON(529, apiError("overloaded_error", "Overloaded"), "Retry-After", "0"), wiretest.JSON(200, textMessage)}, maxRetries: 1},
		{name: "context overflow", steps: []http.HandlerFunc{wiretest.JSON(400, apiError("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))}, maxRetries: 2,
			wantName: asl.ErrAgentContextOverflow, wantStatus: 400, wantMsg: "prompt is too long"},
		{name: "malformed body", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id": "msg_1", "content": [nope]}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "malformed answer"},
		{name: "null answer", steps: []http.HandlerFunc{wiretest.JSON(200, `null`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "null"},
		{name: "refusal", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`)}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantMsg: "refused"},
		{name: "bad tool input", steps: []http.HandlerFunc{wiretest.JSON(200, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t","name":"weather","input":[1]}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`)}, maxRetries: 2,
			wantName: asl.ErrAgentInvalidOutput, wantMsg: "tool call 0 (weather)"},
		{name: "key echoed", steps: []http.HandlerFunc{wiretest.JSON(401, apiError("authentication_error", "invalid x-api-key "+testKey))}, maxRetries: 2,
			wantName: asl.ErrAgentModelError, wantStatus: 401, wantMsg: "invalid x-api-key [redacted]"},
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
			if me.Name != tt.wantName || me.Status != tt.wantStatus || me.RetryAfter != tt.wantAfter || me.Provider != "anthropic" || me.Model != "claude-test" {
				t.Errorf("error = %+v, want name %s, status %d, RetryAfter %s from anthropic claude-test", me, tt.wantName, tt.wantStatus, tt.wantAfter)
			}
			if !strings.Contains(me.Message, tt.wantMsg) {
				t.Errorf("Message = %q, want it to hold %q", me.Message, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), "anthropic") {
				t.Errorf("error %q does not name the provider", err)
			}
		})
	}
}

func TestAnthropicCancelMidStream(t *testing.T) {
	ended := make(chan struct{})
	srv := wiretest.New(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		wiretest.SSE(
			event("message_start", map[string]any{"message": map[string]any{"id": "m", "type": "message", "role": "assistant", "model": "claude-test", "content": []any{}, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}}),
			event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
			event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "first"}}),
		)(w, r)
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
	<-ended
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}

func TestAnthropicKeyEnvUnset(t *testing.T) {
	srv := wiretest.New(t)
	m := newModel(t, srv, func(c *models.Config) { c.APIKeyEnv = "ANTHROPIC_TEST_UNSET_KEY" })
	_, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}}}, nil)
	if me := modelError(t, err); me.Name != asl.ErrAgentModelError || !strings.Contains(err.Error(), "ANTHROPIC_TEST_UNSET_KEY") {
		t.Errorf("err = %v, want Agent.ModelError naming ANTHROPIC_TEST_UNSET_KEY", err)
	}
}

func TestAnthropicSystemMessageRefused(t *testing.T) {
	srv := wiretest.New(t)
	m := newModel(t, srv)
	_, err := m.Send(t.Context(), &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "Hi"}, {Role: models.RoleSystem, Content: "x"}}}, nil)
	if me := modelError(t, err); !strings.Contains(me.Message, "messages[1]") {
		t.Errorf("Message = %q, want it to name messages[1]", me.Message)
	}
}

func TestAnthropicNew(t *testing.T) {
	if _, err := anthropic.New(models.Config{Provider: "openai", Model: "m"}, nil); err == nil {
		t.Error("New with provider openai: no error")
	}
	var ce *models.ConfigError
	if _, err := anthropic.New(models.Config{Model: "m", MaxRetries: -1}, nil); !errors.As(err, &ce) || ce.Field != "MaxRetries" {
		t.Errorf("New = %v, want a ConfigError on MaxRetries", err)
	}
}
