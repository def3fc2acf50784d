// Package models sends conversation turns to language models: one Model
// interface (a turn in, a reply out, with streaming and usage), the Turn and
// Reply types it speaks, the Config that names a model as an agents file
// does, and the Error every failure is.
//
// The providers live in sub-packages on the providers' official SDKs:
// models/openai (Chat Completions, and any server that speaks it such as
// Ollama or vLLM) and models/anthropic (Messages). models/fake is a scripted
// Model for tests.
//
// Everything in this package is safe for concurrent use.
package models

import (
	"context"
	"encoding/json"
	"time"
)

// Role is who speaks a Message.
type Role string

// The roles of a Message.
const (
	// RoleSystem is an instruction to the model. Turn.System is the usual
	// place for it; models/anthropic refuses a system message inside
	// Turn.Messages.
	RoleSystem Role = "system"
	// RoleUser is the user's message.
	RoleUser Role = "user"
	// RoleAssistant is a reply of the model: its text, its tool calls or both.
	RoleAssistant Role = "assistant"
	// RoleTool is the result of one tool call: Content is the result and
	// ToolCallID the ToolCall.ID it answers.
	RoleTool Role = "tool"
)

// Message is one message of a conversation.
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID is, for a RoleTool message, the ToolCall.ID it answers.
	ToolCallID string
}

// ToolCall is the model's request to call one tool.
type ToolCall struct {
	// ID is the provider's identifier of the call, echoed back by the
	// RoleTool message that answers it.
	ID string
	// Name is the tool's name, as in its ToolSpec.
	Name string
	// Arguments is a JSON object: the tool's input. A Reply's arguments
	// are always a valid JSON object ({} when the model sent none).
	Arguments json.RawMessage
}

// ToolSpec describes one tool the model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Schema is the JSON Schema (an object) of the tool's Arguments. Nil
	// means {"type": "object"}.
	Schema json.RawMessage
}

// Generation holds the sampling settings of a turn. Zero values leave each
// setting to the provider, except MaxTokens for models/anthropic, which
// requires one and defaults it to 4096.
type Generation struct {
	// Temperature and TopP are sent when non-nil.
	Temperature, TopP *float64
	// MaxTokens bounds the reply's length in tokens when positive.
	MaxTokens int
	// StopSequences end the reply where the model would write one of them.
	StopSequences []string
}

// Turn is what one Send sends: the conversation so far and the settings of
// the next reply.
type Turn struct {
	// System is the system prompt, sent first when set.
	System   string
	Messages []Message
	Tools    []ToolSpec
	// Generation holds the sampling settings.
	Generation Generation
	// ResultSchema, when set, asks for a final answer that is a JSON value
	// matching this JSON Schema. models/openai sends it as a strict
	// json_schema response format (the provider then guarantees the
	// shape; strict mode wants "additionalProperties": false and every
	// property required). models/anthropic has no such mode: it sends
	// nothing for it, so the caller instructs the model (in System) and
	// validates Reply.Text itself. Callers validate in both cases: a
	// compatible server behind models/openai may ignore the format.
	ResultSchema json.RawMessage
}

// Usage counts the tokens of one Send.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Reply is the model's answer to one Turn.
type Reply struct {
	// Text is the reply's text (all its text blocks, concatenated).
	Text string
	// ToolCalls are the tool calls the model made, in its order.
	ToolCalls []ToolCall
	Usage     Usage
	// StopReason is the provider's own reason for stopping, such as
	// "stop" or "tool_calls" (OpenAI) and "end_turn", "tool_use" or
	// "max_tokens" (Anthropic).
	StopReason string
	// Model is the model that answered, as the provider names it.
	Model string
}

// Model is a language model.
//
// Send sends one turn and returns the model's whole reply. When stream is
// non-nil the provider's streaming API is used and each text delta is passed
// to stream as it arrives, in order, on Send's goroutine (stream should not
// block long); the Reply is still the whole answer, with its tool calls
// assembled. Send does not modify t. Every error Send returns is an *Error;
// once ctx is done Send returns promptly, with an *Error that wraps ctx's
// error, and leaves no goroutine behind.
//
// Implementations are safe for concurrent use.
type Model interface {
	Send(ctx context.Context, t *Turn, stream func(delta string)) (*Reply, error)
}

// Config names a model as an agents file does. Validate checks it; the
// providers' New functions call Validate.
type Config struct {
	// Provider is "openai" or "anthropic".
	Provider string
	// Model is the provider's name of the model, like "gpt-4o-mini" or
	// "claude-sonnet-4-5". Required.
	Model string
	// BaseURL is the API's address; default https://api.openai.com/v1 for
	// openai and https://api.anthropic.com for anthropic. Another
	// OpenAI-compatible server works with openai, like Ollama's
	// http://localhost:11434/v1 or vLLM's http://localhost:8000/v1.
	BaseURL string
	// APIKeyEnv names the environment variable that holds the API key,
	// read at every Send: a variable that is unset or empty fails the Send
	// with an *Error naming it. Empty means no key is sent (for a local
	// server that wants none).
	APIKeyEnv string
	// InputPrice and OutputPrice are the costs of one input and one output
	// token, used by Cost. Zero means free.
	InputPrice, OutputPrice float64
	// Timeout bounds each attempt of a Send (the request and reading its
	// whole answer, streamed or not); an attempt over it counts as a
	// network failure: retried, then States.Timeout. Zero means 10 minutes.
	Timeout time.Duration
	// MaxRetries is how many times a Send that got a 429, a 5xx or a
	// network failure tries again, after exponential backoff (0.5 s, 1 s,
	// 2 s, … with jitter, at most 30 s), or after the provider's
	// Retry-After when it gives one. A Retry-After over a minute ends the
	// retries at once, as does a failure after text was streamed. Zero
	// means no retries.
	MaxRetries int
}

// Cost returns what u costs at c's prices.
func (c Config) Cost(u Usage) float64 {
	return float64(u.InputTokens)*c.InputPrice + float64(u.OutputTokens)*c.OutputPrice
}
