// Package openai is the models.Model of OpenAI's Chat Completions API, on
// the official SDK (github.com/openai/openai-go/v3). Any server that speaks
// that API works through Config.BaseURL, such as Ollama or vLLM.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/internal/call"
)

// DefaultBaseURL is the API's address when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// model is the Model New returns. It is immutable after New.
type model struct {
	target call.Target
	chat   sdk.ChatCompletionService
}

var _ models.Model = (*model)(nil)

// New returns the Model cfg names (cfg.Provider must be "openai" or empty),
// sending its requests with client (nil means a new http.Client) to
// cfg.BaseURL + "/chat/completions". The key, when Config.APIKeyEnv names
// one, goes in "Authorization: Bearer". The SDK's own retries are off and
// it reads no environment variable: Config alone says what is sent.
//
// Send maps a Turn to one chat completion: System first as a system
// message, tools as function tools, an assistant's ToolCalls as its
// tool_calls, a RoleTool message as a tool message with its tool_call_id,
// Generation as temperature, top_p, max_completion_tokens and stop, and
// ResultSchema as a strict json_schema response_format named "result". A
// streaming Send asks for the usage too (stream_options.include_usage).
//
// Failures beyond those of models.Error: an error status whose code is
// context_length_exceeded is asl.ErrAgentContextOverflow; a refusal is
// asl.ErrAgentModelError.
func New(cfg models.Config, client *http.Client) (models.Model, error) {
	switch cfg.Provider {
	case "":
		cfg.Provider = "openai"
	case "openai":
	default:
		return nil, &models.ConfigError{Field: "Provider", Msg: fmt.Sprintf("%q is not openai", cfg.Provider)}
	}
	if err := models.Validate(cfg); err != nil {
		return nil, err
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if client == nil {
		client = &http.Client{}
	}
	// NewChatCompletionService, unlike NewClient, reads no environment
	// variable (OPENAI_API_KEY, OPENAI_BASE_URL, …).
	chat := sdk.NewChatCompletionService(
		option.WithHTTPClient(client),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	)
	return &model{target: call.Target{Provider: "openai", Config: cfg}, chat: chat}, nil
}

// Send sends t as one chat completion; see New.
func (m *model) Send(ctx context.Context, t *models.Turn, stream func(delta string)) (*models.Reply, error) {
	if err := call.Check(t); err != nil {
		return nil, m.target.Error(asl.ErrAgentModelError, 0, "invalid turn: "+err.Error(), "")
	}
	key, kerr := m.target.Key()
	if kerr != nil {
		return nil, kerr
	}
	params, err := m.params(t, stream != nil)
	if err != nil {
		return nil, m.target.Error(asl.ErrAgentModelError, 0, "invalid turn: "+err.Error(), "")
	}
	var opts []option.RequestOption
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	var reply *models.Reply
	err = m.target.Do(ctx, func(ctx context.Context) *call.Failure {
		var f *call.Failure
		if stream == nil {
			reply, f = m.complete(ctx, params, opts, key)
		} else {
			reply, f = m.stream(ctx, params, opts, key, stream)
		}
		return f
	})
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// params builds the request body of t.
func (m *model) params(t *models.Turn, streaming bool) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.target.Config.Model)}
	if t.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(t.System))
	}
	for _, msg := range t.Messages {
		switch msg.Role {
		case models.RoleSystem:
			p.Messages = append(p.Messages, sdk.SystemMessage(msg.Content))
		case models.RoleUser:
			p.Messages = append(p.Messages, sdk.UserMessage(msg.Content))
		case models.RoleTool:
			p.Messages = append(p.Messages, sdk.ToolMessage(msg.Content, msg.ToolCallID))
		case models.RoleAssistant:
			var a sdk.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				args, _ := call.Arguments(string(c.Arguments)) // checked by call.Check
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(args)},
					},
				})
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, s := range t.Tools {
		schema, err := call.Schema(s.Schema)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", s.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: s.Name, Parameters: shared.FunctionParameters(schema)}
		if s.Description != "" {
			fn.Description = param.NewOpt(s.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	g := t.Generation
	if g.Temperature != nil {
		p.Temperature = param.NewOpt(*g.Temperature)
	}
	if g.TopP != nil {
		p.TopP = param.NewOpt(*g.TopP)
	}
	if g.MaxTokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(int64(g.MaxTokens))
	}
	if len(g.StopSequences) > 0 {
		p.Stop.OfStringArray = slices.Clone(g.StopSequences)
	}
	if t.ResultSchema != nil {
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   "result",
				Strict: param.NewOpt(true),
				Schema: json.RawMessage(slices.Clone(t.ResultSchema)),
			},
		}
	}
	if streaming {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return p, nil
}

// complete makes one non-streaming attempt.
func (m *model) complete(ctx context.Context, p sdk.ChatCompletionNewParams, opts []option.RequestOption, key string) (*models.Reply, *call.Failure) {
	resp, err := m.chat.New(ctx, p, opts...)
	if err != nil {
		return nil, m.failure(ctx, err, key)
	}
	if resp == nil {
		return nil, m.malformed("the answer is null", key)
	}
	if len(resp.Choices) == 0 {
		return nil, m.malformed("the answer has no choices", key)
	}
	c := resp.Choices[0]
	if c.Message.Refusal != "" {
		return nil, &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, "refused: "+c.Message.Refusal, key)}
	}
	reply := &models.Reply{
		Text:       c.Message.Content,
		Usage:      models.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens},
		StopReason: c.FinishReason,
		Model:      resp.Model,
	}
	for i, tc := range c.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, m.malformed(fmt.Sprintf("tool call %d is of type %q, not function", i, tc.Type), key)
		}
		tcall, f := m.toolCall(i, tc.ID, tc.Function.Name, tc.Function.Arguments, key)
		if f != nil {
			return nil, f
		}
		reply.ToolCalls = append(reply.ToolCalls, tcall)
	}
	return reply, nil
}

// partial is a tool call being assembled from stream deltas.
type partial struct {
	index    int64
	id, name string
	args     strings.Builder
}

// stream makes one streaming attempt. A failure after text was passed to
// deliver is not retried: the text cannot be taken back.
func (m *model) stream(ctx context.Context, p sdk.ChatCompletionNewParams, opts []option.RequestOption, key string, deliver func(string)) (*models.Reply, *call.Failure) {
	s := m.chat.NewStreaming(ctx, p, opts...)
	defer s.Close()
	var (
		reply    models.Reply
		text     strings.Builder
		refusal  strings.Builder
		calls    []*partial
		streamed bool
	)
	for s.Next() {
		chunk := s.Current()
		if chunk.Model != "" {
			reply.Model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			reply.Usage = models.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if d := c.Delta.Content; d != "" {
				text.WriteString(d)
				streamed = true
				deliver(d)
			}
			refusal.WriteString(c.Delta.Refusal)
			for _, tc := range c.Delta.ToolCalls {
				i := slices.IndexFunc(calls, func(q *partial) bool { return q.index == tc.Index })
				if i < 0 {
					calls = append(calls, &partial{index: tc.Index})
					i = len(calls) - 1
				}
				q := calls[i]
				if tc.ID != "" {
					q.id = tc.ID
				}
				if tc.Function.Name != "" && q.name == "" {
					q.name = tc.Function.Name
				}
				q.args.WriteString(tc.Function.Arguments)
			}
			if c.FinishReason != "" {
				reply.StopReason = c.FinishReason
			}
		}
	}
	if err := s.Err(); err != nil {
		f := m.failure(ctx, err, key)
		f.Retry = f.Retry && !streamed
		return nil, f
	}
	if ctx.Err() != nil { // a body cut by the context can end like a short stream
		return nil, m.target.Transport(ctx, ctx.Err(), key)
	}
	if refusal.Len() > 0 {
		return nil, &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, "refused: "+refusal.String(), key)}
	}
	reply.Text = text.String()
	slices.SortStableFunc(calls, func(a, b *partial) int { return int(a.index - b.index) })
	for i, q := range calls {
		tcall, f := m.toolCall(i, q.id, q.name, q.args.String(), key)
		if f != nil {
			return nil, f
		}
		reply.ToolCalls = append(reply.ToolCalls, tcall)
	}
	return &reply, nil
}

// toolCall checks and returns the i-th tool call of a reply.
func (m *model) toolCall(i int, id, name, args, key string) (models.ToolCall, *call.Failure) {
	if id == "" || name == "" {
		return models.ToolCall{}, m.malformed(fmt.Sprintf("tool call %d has no id or no name", i), key)
	}
	raw, err := call.Arguments(args)
	if err != nil {
		return models.ToolCall{}, &call.Failure{Err: m.target.Error(asl.ErrAgentInvalidOutput, 0, fmt.Sprintf("tool call %d (%s): %v", i, name, err), key)}
	}
	return models.ToolCall{ID: id, Name: name, Arguments: raw}, nil
}

// malformed is the failure of an answer that does not make sense: not
// retried.
func (m *model) malformed(msg, key string) *call.Failure {
	return &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, "malformed answer: "+msg, key)}
}

// failure classifies an error of the SDK.
func (m *model) failure(ctx context.Context, err error, key string) *call.Failure {
	var api *sdk.Error
	if errors.As(err, &api) {
		msg := api.Message
		if msg == "" {
			msg = http.StatusText(api.StatusCode)
		}
		var header http.Header
		if api.Response != nil {
			header = api.Response.Header
		}
		f := m.target.Status(api.StatusCode, header, msg, key)
		if api.Code == "context_length_exceeded" {
			f.Err.Name, f.Retry = asl.ErrAgentContextOverflow, false
		}
		return f
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) { // an error event inside a stream
		return &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, se.Message, key), Retry: true}
	}
	if ctx.Err() != nil || network(err) {
		return m.target.Transport(ctx, err, key)
	}
	return m.malformed(err.Error(), key)
}

// network reports whether err is a failure to reach the server or to read
// its whole answer.
func network(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
