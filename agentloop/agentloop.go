// Package agentloop is the model ↔ tools loop as an agent: it sends the
// conversation to a model, runs the tools the model asks for, sends their
// results back, and so on until the model answers without asking for a
// tool or MaxTurns is reached.
//
// Every model turn and every tool call is a durable step of the call
// (agents.Request.Journal): the engine commits it, with a ModelTurn… or
// ToolCall… history event, before the loop goes on, and an execution
// resumed after a crash replays the recorded turns and tool calls instead
// of sending or running them again. The Task's Model block picks the
// models (its Fallback tried in order on its FallbackOn errors) and its
// Generation overrides the agent's sampling settings, field by field.
package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/tools"
)

// DefaultMaxTurns is Config.MaxTurns when it is zero.
const DefaultMaxTurns = 10

// ErrMaxTurns is the error of a loop that reached its MaxTurns with the
// model still asking for tools.
const ErrMaxTurns asl.ErrorName = "Agent.MaxTurnsExceeded"

// Model is a model the loop may use, under the name the agents file's
// Models map gives it.
type Model struct {
	Model models.Model
	// Config is the model's configuration: its prices make each turn's
	// cost (models.Config.Cost).
	Config models.Config
}

// Config configures a loop.
type Config struct {
	// Models are the models the loop may use, by name; Model names the one
	// it uses when the Task has no Model block.
	Models map[string]Model
	Model  string
	// System is the system prompt.
	System string
	// Tools are the tools the model may call (tools.Tool: each checked,
	// its arguments and result validated against its schemas); a call's
	// Request.Tools (the Task's Tools block) narrows them further.
	Tools []tools.Tool
	// Dynamic, when set, gives more tools at the start of every call (an
	// MCP server's list as it is now); they must have passed Check. One
	// whose name or wire name a tool of Tools has is left out.
	Dynamic func() []tools.Tool
	// MaxTurns bounds the model turns of one call; 0 means DefaultMaxTurns.
	MaxTurns int
	// Generation holds the sampling settings; a Task's Generation
	// overrides them field by field.
	Generation models.Generation
	// JSON decodes the final answer as JSON (Agent.InvalidOutput when it
	// is not); ResultSchema, when set, also asks the model for a value of
	// that JSON Schema (where the provider can) and implies JSON.
	JSON         bool
	ResultSchema json.RawMessage
}

// Agent is the loop; New makes one.
type Agent struct {
	cfg   Config
	tools map[string]*tools.Tool
	// wire maps the name the model knows a tool by to the tool: the
	// providers allow only letters, digits, '_' and '-' in a tool's name,
	// so "fs.read_file" is sent as "fs__read_file" (wireName).
	wire   map[string]*tools.Tool
	result *jsonschema.Schema // ResultSchema compiled
}

// New checks cfg and returns its loop.
func New(cfg Config) (*Agent, error) {
	if len(cfg.Models) == 0 {
		return nil, errors.New("agentloop: no models")
	}
	if _, ok := cfg.Models[cfg.Model]; !ok {
		return nil, fmt.Errorf("agentloop: model %q is not one of the models", cfg.Model)
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("agentloop: MaxTurns %d: want 0 (the default, %d) or more", cfg.MaxTurns, DefaultMaxTurns)
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	cfg.Tools = slices.Clone(cfg.Tools) // Check keeps compiled schemas in them
	a := &Agent{cfg: cfg, tools: make(map[string]*tools.Tool, len(cfg.Tools)), wire: make(map[string]*tools.Tool, len(cfg.Tools))}
	if len(cfg.ResultSchema) > 0 {
		s, err := tools.CompileSchema(cfg.ResultSchema)
		if err != nil {
			return nil, fmt.Errorf("agentloop: ResultSchema: %w", err)
		}
		a.result, a.cfg.JSON = s, true
	}
	for i := range cfg.Tools {
		t := &a.cfg.Tools[i]
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("agentloop: %w", err)
		}
		if _, dup := a.tools[t.Name]; dup {
			return nil, fmt.Errorf("agentloop: tool %q given twice", t.Name)
		}
		if other, clash := a.wire[wireName(t.Name)]; clash {
			return nil, fmt.Errorf("agentloop: tools %q and %q would both be sent to the model as %q", other.Name, t.Name, wireName(t.Name))
		}
		a.tools[t.Name] = t
		a.wire[wireName(t.Name)] = t
	}
	return a, nil
}

// wireName is the name a tool is sent to a model by: its name with each
// '.' written "__" (OpenAI and Anthropic take only letters, digits, '_'
// and '-').
func wireName(name string) string { return strings.ReplaceAll(name, ".", "__") }

// Invoke runs the loop for one call.
func (a *Agent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	msgs, err := a.firstMessages(req)
	if err != nil {
		return nil, err
	}
	names := []string{a.cfg.Model}
	var fallbackOn []asl.ErrorName
	if m := req.Model; m != nil && len(m.Models) > 0 {
		names, fallbackOn = m.Models, m.FallbackOn
	}
	for _, n := range names {
		if _, ok := a.cfg.Models[n]; !ok {
			return nil, asl.Errorf(asl.ErrAgentModelError, "agent %s: model %q is not in the agents file's Models (%s)", req.Agent, n, strings.Join(a.modelNames(), ", "))
		}
	}
	ts := a.toolset()
	turn := models.Turn{System: a.cfg.System, Tools: a.toolSpecs(req, ts), Generation: a.generation(req), ResultSchema: a.cfg.ResultSchema}
	for n := 1; n <= a.cfg.MaxTurns; n++ {
		// A budget the call has used up: the turn is not sent.
		if err := req.CheckBudget(); err != nil {
			return nil, err
		}
		turn.Messages = msgs
		reply, err := a.send(ctx, req, n, &turn, names, fallbackOn)
		if err != nil {
			return nil, err
		}
		if len(reply.ToolCalls) == 0 {
			return a.answer(req, reply.Text)
		}
		msgs = append(msgs, models.Message{Role: models.RoleAssistant, Content: reply.Text, ToolCalls: reply.ToolCalls})
		results, err := a.runTools(ctx, req, n, reply.ToolCalls, ts)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, results...)
	}
	return nil, asl.Errorf(ErrMaxTurns, "agent %s: the model still asked for tools after %d turns (MaxTurns)", req.Agent, a.cfg.MaxTurns)
}

func (a *Agent) modelNames() []string {
	var out []string
	for n := range a.cfg.Models {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// turnRecord is a model turn as the journal records it.
type turnRecord struct {
	Model        string            `json:"model"`
	Text         string            `json:"text,omitempty"`
	ToolCalls    []models.ToolCall `json:"toolCalls,omitempty"`
	InputTokens  int64             `json:"inputTokens"`
	OutputTokens int64             `json:"outputTokens"`
	Cost         float64           `json:"cost"`
	StopReason   string            `json:"stopReason,omitempty"`
	// FellBack lists the models that failed before Model answered, with
	// their errors.
	FellBack []map[string]string `json:"fellBack,omitempty"`
}

// send runs turn n as a journal step: the models in order, the next on
// an error the Task's FallbackOn names. The turn's usage is reported,
// recorded or not, so that a resumed call counts what was paid for.
func (a *Agent) send(ctx context.Context, req *agents.Request, n int, turn *models.Turn, names []string, fallbackOn []asl.ErrorName) (*turnRecord, error) {
	spec := agents.StepSpec{Name: "turn " + strconv.Itoa(n), Kind: "ModelTurn", Input: turnInput(turn), Detail: map[string]any{"turn": n, "model": names[0]}}
	out, err := req.Journal(ctx, spec, func(ctx context.Context) (any, error) {
		rec := &turnRecord{}
		var stream func(string)
		if req.Streaming() {
			// The state streams: the provider's deltas go out as they
			// come (a fallback model's text follows a failed one's).
			stream = func(delta string) { req.StreamText(n, delta) }
		}
		for i, name := range names {
			m := a.cfg.Models[name]
			reply, err := m.Model.Send(ctx, turn, stream)
			if err != nil {
				var me *models.Error
				if errors.As(err, &me) && i+1 < len(names) && slices.Contains(fallbackOn, me.Name) && ctx.Err() == nil {
					rec.FellBack = append(rec.FellBack, map[string]string{"model": name, "error": string(me.Name), "cause": me.Error()})
					continue
				}
				return nil, asError(err)
			}
			rec.Model, rec.Text, rec.ToolCalls, rec.StopReason = name, reply.Text, reply.ToolCalls, reply.StopReason
			rec.InputTokens, rec.OutputTokens = reply.Usage.InputTokens, reply.Usage.OutputTokens
			rec.Cost = m.Config.Cost(reply.Usage)
			return toValue(rec)
		}
		return nil, asl.Errorf(asl.ErrAgentModelError, "no model to send turn %d to", n)
	})
	if err != nil {
		return nil, err
	}
	var rec turnRecord
	if err := fromValue(out, &rec); err != nil {
		return nil, asl.Errorf(asl.ErrAgentModelError, "agent %s: turn %d: its record does not read back: %v", req.Agent, n, err)
	}
	req.ReportUsage(agents.Usage{InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens, Cost: rec.Cost})
	return &rec, nil
}

// turnInput is what a turn's step records as its input: enough to tell
// that a resumed call sends the same conversation.
func turnInput(t *models.Turn) map[string]any {
	msgs := make([]any, len(t.Messages))
	for i, m := range t.Messages {
		e := map[string]any{"role": string(m.Role)}
		if m.Content != "" {
			e["content"] = m.Content
		}
		if m.ToolCallID != "" {
			e["toolCallId"] = m.ToolCallID
		}
		if len(m.ToolCalls) > 0 {
			var calls []any
			for _, c := range m.ToolCalls {
				calls = append(calls, map[string]any{"id": c.ID, "name": c.Name, "arguments": string(c.Arguments)})
			}
			e["toolCalls"] = calls
		}
		msgs[i] = e
	}
	return map[string]any{"messages": msgs}
}

// runTools runs turn n's tool calls at once, each a journal step, and
// returns their results as tool messages in the calls' order.
func (a *Agent) runTools(ctx context.Context, req *agents.Request, n int, calls []models.ToolCall, ts *toolset) ([]models.Message, error) {
	out := make([]models.Message, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			content, err := a.runTool(ctx, req, n, i, c, ts)
			out[i] = models.Message{Role: models.RoleTool, Content: content, ToolCallID: c.ID}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// runTool runs one tool call as a journal step and returns what the model
// is told. An unknown tool, arguments that are not an object and a tool's
// own failure are told to the model as the tool's error (and recorded as
// a failed call), for it to recover from; a tool the state's Tools refuse
// fails the call (States.Permissions), as a stopping run or a failed
// commit ends it.
func (a *Agent) runTool(ctx context.Context, req *agents.Request, n, i int, c models.ToolCall, ts *toolset) (string, error) {
	id := c.ID
	if id == "" {
		id = strconv.Itoa(i)
	}
	var args map[string]any
	argsErr := error(nil)
	if v, err := jsonvalue.Decode(c.Arguments); err != nil {
		argsErr = fmt.Errorf("the arguments are not JSON: %v", err)
	} else if obj, ok := v.(map[string]any); !ok {
		argsErr = fmt.Errorf("the arguments must be a JSON object, not %s", jsonvalue.TypeName(v))
	} else {
		args = obj
	}
	var input any = string(c.Arguments)
	if args != nil {
		input = args
	}
	tool := c.Name
	if t, ok := ts.wire[c.Name]; ok {
		tool = t.Name
	}
	spec := agents.StepSpec{Name: fmt.Sprintf("turn %d/tool %s", n, id), Kind: "ToolCall", Input: input, Detail: map[string]any{"turn": n, "tool": tool}}
	out, err := req.Journal(ctx, spec, func(ctx context.Context) (any, error) {
		t, ok := ts.wire[c.Name]
		if !ok {
			return nil, asl.Errorf(asl.ErrAgentToolError, "there is no tool %q (the tools are %s)", c.Name, strings.Join(a.allowedNames(req, ts), ", "))
		}
		name := t.Name
		// The state's Tools: a tool outside them fails the call
		// (States.Permissions, recorded by the engine); rate limits wait;
		// its Timeout bounds the call.
		out, err := req.Tools.Run(ctx, name, args, func(ctx context.Context, input map[string]any) (any, error) {
			if argsErr != nil {
				return nil, asl.Errorf(asl.ErrAgentInvalidInput, "tool %q: %v", name, argsErr)
			}
			return t.Run(ctx, req, input)
		})
		if err != nil {
			return nil, err
		}
		// The state's output guardrails see every tool result before the
		// model does.
		return req.CheckToolResult(ctx, name, out)
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var ae *asl.Error
		if !errors.As(err, &ae) {
			return "", err
		}
		if ae.Name == asl.ErrRuntime || ae.Name == asl.ErrPermissions || ae.Name == asl.ErrRateLimitExceeded {
			// The journal's own refusal, or the state's Tools: not the
			// tool's failure, the call's.
			return "", err
		}
		return "error: " + ae.Cause, nil
	}
	if s, ok := out.(string); ok {
		return s, nil
	}
	data, err := jsonvalue.Marshal(out)
	if err != nil {
		return "", asl.Errorf(asl.ErrAgentToolError, "tool %q: its result does not encode: %v", c.Name, err)
	}
	return string(data), nil
}

// toolset is the tools of one call: the agent's, and the Dynamic ones
// as they were when the call started.
type toolset struct {
	list []*tools.Tool
	wire map[string]*tools.Tool
}

// toolset gathers the tools of a call.
func (a *Agent) toolset() *toolset {
	ts := &toolset{wire: a.wire}
	for i := range a.cfg.Tools {
		ts.list = append(ts.list, &a.cfg.Tools[i])
	}
	if a.cfg.Dynamic == nil {
		return ts
	}
	more := a.cfg.Dynamic()
	if len(more) == 0 {
		return ts
	}
	ts.wire = maps.Clone(a.wire)
	for i := range more {
		t := &more[i]
		if _, taken := a.tools[t.Name]; taken {
			continue
		}
		if _, taken := ts.wire[wireName(t.Name)]; taken {
			continue
		}
		ts.wire[wireName(t.Name)] = t
		ts.list = append(ts.list, t)
	}
	return ts
}

// toolSpecs are the tools the call may use, as the model is told of them.
func (a *Agent) toolSpecs(req *agents.Request, ts *toolset) []models.ToolSpec {
	var out []models.ToolSpec
	for _, t := range ts.list {
		if req.Tools != nil && !req.Tools.Allows(t.Name) {
			continue
		}
		out = append(out, models.ToolSpec{Name: wireName(t.Name), Description: t.Description, Schema: t.Input})
	}
	return out
}

func (a *Agent) allowedNames(req *agents.Request, ts *toolset) []string {
	var out []string
	for _, t := range a.toolSpecs(req, ts) {
		out = append(out, t.Name)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// generation is the agent's settings with the Task's over them.
func (a *Agent) generation(req *agents.Request) models.Generation {
	g := a.cfg.Generation
	if tg := req.Generation; tg != nil {
		if tg.Temperature != nil {
			g.Temperature = tg.Temperature
		}
		if tg.TopP != nil {
			g.TopP = tg.TopP
		}
		if tg.MaxTokens > 0 {
			g.MaxTokens = tg.MaxTokens
		}
		if tg.StopSequences != nil {
			g.StopSequences = tg.StopSequences
		}
	}
	return g
}

// firstMessages is the conversation a call starts with: the input's
// "messages" (objects with a role and a string content), its "prompt",
// the input itself when it is a string, or else its JSON; then, when the
// state runs again because governance refused its previous answer, what
// was refused.
func (a *Agent) firstMessages(req *agents.Request) ([]models.Message, error) {
	var msgs []models.Message
	in, _ := req.Input.(map[string]any)
	if given, ok := in["messages"]; ok {
		list, isArr := given.([]any)
		if !isArr {
			return nil, asl.Errorf(asl.ErrAgentInvalidInput, "agent %s: input.messages must be an array of {role, content} objects, not %s", req.Agent, jsonvalue.TypeName(given))
		}
		for i, m := range list {
			obj, _ := m.(map[string]any)
			role, _ := obj["role"].(string)
			content, isText := obj["content"].(string)
			switch models.Role(role) {
			case models.RoleUser, models.RoleAssistant:
			default:
				return nil, asl.Errorf(asl.ErrAgentInvalidInput, "agent %s: input.messages[%d].role must be \"user\" or \"assistant\", not %q", req.Agent, i, role)
			}
			if !isText {
				return nil, asl.Errorf(asl.ErrAgentInvalidInput, "agent %s: input.messages[%d].content must be a string", req.Agent, i)
			}
			msgs = append(msgs, models.Message{Role: models.Role(role), Content: content})
		}
		if len(msgs) == 0 {
			return nil, asl.Errorf(asl.ErrAgentInvalidInput, "agent %s: input.messages is empty", req.Agent)
		}
	} else if prompt, ok := in["prompt"].(string); ok {
		msgs = append(msgs, models.Message{Role: models.RoleUser, Content: prompt})
	} else if s, ok := req.Input.(string); ok {
		msgs = append(msgs, models.Message{Role: models.RoleUser, Content: s})
	} else {
		data, err := jsonvalue.Marshal(req.Input)
		if err != nil {
			return nil, asl.Errorf(asl.ErrAgentInvalidInput, "agent %s: its input does not encode: %v", req.Agent, err)
		}
		msgs = append(msgs, models.Message{Role: models.RoleUser, Content: string(data)})
	}
	if req.Violation != nil {
		detail, err := jsonvalue.Marshal(req.Violation)
		if err != nil {
			return nil, asl.Errorf(asl.ErrAgentInvalidInput, "agent %s: the violation does not encode: %v", req.Agent, err)
		}
		msgs = append(msgs, models.Message{Role: models.RoleUser, Content: "The workflow refused what your previous answer wrote: " + string(detail) + ". Answer again so that your answer respects that rule."})
	}
	return msgs, nil
}

// answer is the call's result: the final text, or its JSON decoded.
func (a *Agent) answer(req *agents.Request, text string) (any, error) {
	if !a.cfg.JSON {
		return text, nil
	}
	v, err := jsonvalue.Decode([]byte(strings.TrimSpace(text)))
	if err != nil {
		return nil, asl.Errorf(asl.ErrAgentInvalidOutput, "agent %s: the model's answer is not JSON: %v", req.Agent, err)
	}
	if a.result != nil {
		if err := a.result.Validate(v); err != nil {
			msg := err.Error()
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = strings.TrimSpace(msg[i+1:])
			}
			return nil, asl.Errorf(asl.ErrAgentInvalidOutput, "agent %s: the model's answer does not match the ResultSchema: %s", req.Agent, msg)
		}
	}
	return v, nil
}

// asError is a model's failure as the ASL error it raises.
func asError(err error) error {
	var me *models.Error
	if errors.As(err, &me) {
		return &asl.Error{Name: me.Name, Cause: me.Error()}
	}
	return err
}

// toValue and fromValue carry a record through the journal, which keeps
// JSON values.
func toValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonvalue.Decode(data)
}

func fromValue(v any, into any) error {
	data, err := jsonvalue.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}
