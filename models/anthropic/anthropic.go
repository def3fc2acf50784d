// Package anthropic is the models.Model of Anthropic's Messages API, on the
// official SDK (github.com/anthropics/anthropic-sdk-go/v2).
package anthropic

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

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/internal/call"
)

// DefaultBaseURL is the API's address when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is max_tokens when Generation.MaxTokens is zero: the
// Messages API requires one.
const DefaultMaxTokens = 4096

// model is the Model New returns. It is immutable after New.
type model struct {
	target   call.Target
	messages sdk.MessageService
}

var _ models.Model = (*model)(nil)

// New returns the Model cfg names (cfg.Provider must be "anthropic" or
// empty), sending its requests with client (nil means a new http.Client) to
// cfg.BaseURL + "/v1/messages". The key, when Config.APIKeyEnv names one,
// goes in the x-api-key header. The SDK's own retries are off and it reads
// no environment variable: Config alone says what is sent.
//
// Send maps a Turn to one Messages request: System as the top-level system
// prompt, tools with their input_schema, an assistant's ToolCalls as
// tool_use blocks, RoleTool messages as tool_result blocks (consecutive ones,
// and a user message right after them, grouped into one user message, as
// the API requires), Generation as temperature, top_p, max_tokens (default
// DefaultMaxTokens) and stop_sequences. A RoleSystem message inside
// Turn.Messages is refused (the API has no place for it), and an assistant
// message with neither text nor tool calls is left out (the API refuses
// empty content). ResultSchema sends nothing: the caller instructs the
// model and validates the answer.
//
// Usage.InputTokens counts every input token: input_tokens plus the cache's
// creation and read tokens. Failures beyond those of models.Error: a 400
// whose message says the prompt is too long is asl.ErrAgentContextOverflow;
// a refusal (stop_reason "refusal") is asl.ErrAgentModelError; an error
// event inside a stream is named by its type (rate_limit_error as a 429,
// overloaded_error and api_error as a 5xx).
func New(cfg models.Config, client *http.Client) (models.Model, error) {
	switch cfg.Provider {
	case "":
		cfg.Provider = "anthropic"
	case "anthropic":
	default:
		return nil, &models.ConfigError{Field: "Provider", Msg: fmt.Sprintf("%q is not anthropic", cfg.Provider)}
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
	c := sdk.NewClient(
		option.WithoutEnvironmentDefaults(), // no ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, …
		option.WithHTTPClient(client),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	)
	return &model{target: call.Target{Provider: "anthropic", Config: cfg}, messages: c.Messages}, nil
}

// Send sends t as one Messages request; see New.
func (m *model) Send(ctx context.Context, t *models.Turn, stream func(delta string)) (*models.Reply, error) {
	if err := call.Check(t); err != nil {
		return nil, m.target.Error(asl.ErrAgentModelError, 0, "invalid turn: "+err.Error(), "")
	}
	key, kerr := m.target.Key()
	if kerr != nil {
		return nil, kerr
	}
	params, err := m.params(t)
	if err != nil {
		return nil, m.target.Error(asl.ErrAgentModelError, 0, "invalid turn: "+err.Error(), "")
	}
	timeout := m.target.Config.Timeout
	if timeout == 0 {
		timeout = call.DefaultTimeout
	}
	// A timeout of our own also keeps the SDK from refusing a large
	// max_tokens without streaming.
	opts := []option.RequestOption{option.WithRequestTimeout(timeout)}
	if key != "" {
		opts = append(opts, option.WithHeader("x-api-key", key))
	}
	if g := t.Generation; g.Temperature != nil {
		opts = append(opts, option.WithJSONSet("temperature", *g.Temperature))
	}
	if g := t.Generation; g.TopP != nil {
		opts = append(opts, option.WithJSONSet("top_p", *g.TopP))
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

// params builds the request body of t (but temperature and top_p, which
// the SDK's parameters no longer carry).
func (m *model) params(t *models.Turn) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(m.target.Config.Model), MaxTokens: DefaultMaxTokens}
	if t.Generation.MaxTokens > 0 {
		p.MaxTokens = int64(t.Generation.MaxTokens)
	}
	if t.System != "" {
		p.System = []sdk.TextBlockParam{{Text: t.System}}
	}
	results := false // whether the last message holds tool results
	for i, msg := range t.Messages {
		switch msg.Role {
		case models.RoleSystem:
			return p, fmt.Errorf("messages[%d]: anthropic takes a system prompt in Turn.System only", i)
		case models.RoleUser:
			if results { // tool results then text: one user message
				last := p.Messages[len(p.Messages)-1].OfUser
				last.Content = append(last.Content, sdk.NewTextBlock(msg.Content))
			} else {
				p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(msg.Content)))
			}
			results = false
		case models.RoleTool:
			block := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.Content != "" {
				block.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
			}
			b := sdk.ContentBlockParamUnion{OfToolResult: &block}
			if results {
				last := p.Messages[len(p.Messages)-1].OfUser
				last.Content = append(last.Content, b)
			} else {
				p.Messages = append(p.Messages, sdk.NewUserMessage(b))
			}
			results = true
		case models.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				args, _ := call.Arguments(string(c.Arguments)) // checked by call.Check
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, args, c.Name))
			}
			if len(blocks) > 0 {
				p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
			}
			results = false
		}
	}
	for _, s := range t.Tools {
		schema, err := inputSchema(s.Schema)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", s.Name, err)
		}
		tool := sdk.ToolParam{Name: s.Name, InputSchema: schema}
		if s.Description != "" {
			tool.Description = param.NewOpt(s.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	p.StopSequences = slices.Clone(t.Generation.StopSequences)
	return p, nil
}

// inputSchema turns a tool's JSON Schema into the SDK's input_schema, every
// member kept as its JSON text.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	members, err := call.Schema(raw)
	if err != nil {
		return s, err
	}
	for k, v := range members {
		switch k {
		case "type": // always "object"
		case "properties":
			s.Properties = v
		case "required":
			r, _ := v.(json.RawMessage)
			if err := json.Unmarshal(r, &s.Required); err != nil {
				return s, errors.New("the schema's required is not an array of strings")
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = make(map[string]any)
			}
			s.ExtraFields[k] = v
		}
	}
	if s.Properties == nil && s.Required == nil && s.ExtraFields == nil {
		// The SDK leaves out an input_schema it sees as empty; the API
		// requires one.
		s.Properties = json.RawMessage(`{}`)
	}
	return s, nil
}

// complete makes one non-streaming attempt.
func (m *model) complete(ctx context.Context, p sdk.MessageNewParams, opts []option.RequestOption, key string) (*models.Reply, *call.Failure) {
	msg, err := m.messages.New(ctx, p, opts...)
	if err != nil {
		return nil, m.failure(ctx, err, key)
	}
	if msg == nil {
		return nil, &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, "malformed answer: the answer is null", key)}
	}
	if msg.StopReason == sdk.StopReasonRefusal {
		return nil, &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, "refused", key)}
	}
	u := msg.Usage
	reply := &models.Reply{
		Usage:      models.Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens},
		StopReason: string(msg.StopReason),
		Model:      string(msg.Model),
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			c, f := m.toolCall(len(reply.ToolCalls), b.ID, b.Name, string(b.Input), key)
			if f != nil {
				return nil, f
			}
			reply.ToolCalls = append(reply.ToolCalls, c)
		}
	}
	reply.Text = text.String()
	return reply, nil
}

// block is a content block being assembled from stream events.
type block struct {
	kind, id, name string
	input          strings.Builder
}

// stream makes one streaming attempt. A failure after text was passed to
// deliver is not retried: the text cannot be taken back.
func (m *model) stream(ctx context.Context, p sdk.MessageNewParams, opts []option.RequestOption, key string, deliver func(string)) (*models.Reply, *call.Failure) {
	s := m.messages.NewStreaming(ctx, p, opts...)
	defer s.Close()
	var (
		reply    models.Reply
		text     strings.Builder
		blocks   = map[int64]*block{}
		order    []int64
		streamed bool
		stopped  bool
	)
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			reply.Model = string(ev.Message.Model)
			reply.Usage = models.Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
		case "content_block_start":
			b := &block{kind: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			if b.kind == "text" && ev.ContentBlock.Text != "" {
				text.WriteString(ev.ContentBlock.Text)
				streamed = true
				deliver(ev.ContentBlock.Text)
			}
			if _, dup := blocks[ev.Index]; !dup {
				order = append(order, ev.Index)
			}
			blocks[ev.Index] = b
		case "content_block_delta":
			b := blocks[ev.Index]
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					text.WriteString(ev.Delta.Text)
					streamed = true
					deliver(ev.Delta.Text)
				}
			case "input_json_delta":
				if b == nil || b.kind != "tool_use" {
					return nil, m.malformed(fmt.Sprintf("input_json_delta for block %d, which is no tool_use", ev.Index), key)
				}
				b.input.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			reply.StopReason = string(ev.Delta.StopReason)
			if ev.Usage.InputTokens > 0 {
				u := ev.Usage
				reply.Usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			}
			reply.Usage.OutputTokens = ev.Usage.OutputTokens
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		f := m.failure(ctx, err, key)
		f.Retry = f.Retry && !streamed
		return nil, f
	}
	if ctx.Err() != nil {
		return nil, m.target.Transport(ctx, ctx.Err(), key)
	}
	if !stopped {
		f := m.target.Transport(ctx, errors.New("the stream ended before message_stop"), key)
		f.Retry = !streamed
		return nil, f
	}
	if reply.StopReason == string(sdk.StopReasonRefusal) {
		return nil, &call.Failure{Err: m.target.Error(asl.ErrAgentModelError, 0, "refused", key)}
	}
	reply.Text = text.String()
	slices.Sort(order)
	for _, i := range order {
		b := blocks[i]
		if b.kind != "tool_use" {
			continue
		}
		c, f := m.toolCall(len(reply.ToolCalls), b.id, b.name, b.input.String(), key)
		if f != nil {
			return nil, f
		}
		reply.ToolCalls = append(reply.ToolCalls, c)
	}
	return &reply, nil
}

// toolCall checks and returns the i-th tool call of a reply.
func (m *model) toolCall(i int, id, name, args, key string) (models.ToolCall, *call.Failure) {
	if id == "" || name == "" {
		return models.ToolCall{}, m.malformed(fmt.Sprintf("tool_use %d has no id or no name", i), key)
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

// streamStatus returns the status an error event of type typ inside a
// stream stands for, or 0.
func streamStatus(typ string) int {
	switch typ {
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "overloaded_error":
		return 529
	case "api_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	}
	return 0
}

// failure classifies an error of the SDK.
func (m *model) failure(ctx context.Context, err error, key string) *call.Failure {
	var api *sdk.Error
	if errors.As(err, &api) {
		status, typ := api.StatusCode, string(api.Type())
		if s := streamStatus(typ); s != 0 && status < 400 { // an error event inside a stream
			status = s
		}
		msg := api.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		var header http.Header
		if api.Response != nil && api.StatusCode >= 400 {
			header = api.Response.Header
		}
		f := m.target.Status(status, header, msg, key)
		if status == http.StatusBadRequest && strings.Contains(msg, "prompt is too long") {
			f.Err.Name, f.Retry = asl.ErrAgentContextOverflow, false
		}
		return f
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
