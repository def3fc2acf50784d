package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agentloop"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/anthropic"
	"github.com/aslrun/aslrun/models/openai"
	"github.com/aslrun/aslrun/tools"
	"github.com/aslrun/aslrun/tools/mcp"
)

// ModelsKey is the reserved key of an agents file that names the models
// its loop agents use:
//
//	"Models": {
//	  "fast":  {"Provider": "openai", "Model": "gpt-4o-mini", "APIKeyEnv": "OPENAI_API_KEY",
//	            "InputCostPerMTok": 0.15, "OutputCostPerMTok": 0.6},
//	  "smart": {"Provider": "anthropic", "Model": "claude-sonnet-4-5", "APIKeyEnv": "ANTHROPIC_API_KEY"},
//	  "local": {"Provider": "openai", "Model": "llama3", "BaseURL": "http://localhost:11434/v1"}
//	}
//
// Fields: Provider ("openai", for any Chat Completions server, or
// "anthropic"), Model (the provider's model id, required), BaseURL,
// APIKeyEnv (or APIKey as one ${VAR} reference, as for llm agents),
// InputCostPerMTok and OutputCostPerMTok (the price of a million tokens,
// for the Budget), TimeoutSeconds (each request) and MaxRetries (429, 5xx
// and network failures; default 2), and Comment. Every model reaches only
// the hosts the file's Hosts allow.
const ModelsKey = "Models"

const (
	modelFields = "Provider, Comment, Model, BaseURL, APIKey, APIKeyEnv, InputCostPerMTok, OutputCostPerMTok, TimeoutSeconds, MaxRetries"
	loopFields  = "Type, Comment, Description, InputSchema, Model, System, Tools, MaxTurns, Temperature, TopP, MaxTokens, StopSequences, JSON, ResultSchema"
)

// defaultModelRetries is a model's MaxRetries when the file leaves it out.
const defaultModelRetries = 2

// parseModels reads the file's Models.
func parseModels(ptr string, v any) (map[string]models.Config, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fileErrorf(ptr, "Models must be an object mapping model names to their configuration, not %s", jsonvalue.TypeName(v))
	}
	out := make(map[string]models.Config, len(obj))
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		at := ptr + "/" + jsonvalue.EscapePointer(name)
		if name == "" || len(name) > 128 {
			return nil, fileErrorf(at, "a model name is 1 to 128 characters")
		}
		m, ok := obj[name].(map[string]any)
		if !ok {
			return nil, fileErrorf(at, "a model's configuration must be an object with a Provider and a Model, not %s", jsonvalue.TypeName(obj[name]))
		}
		p := &fieldParser{ptr: at, obj: m}
		p.unknown("model", modelFields)
		cfg := models.Config{
			Provider:    p.str("Provider", true),
			Model:       p.str("Model", true),
			BaseURL:     p.str("BaseURL", false),
			APIKeyEnv:   p.str("APIKeyEnv", false),
			InputPrice:  p.number("InputCostPerMTok") / 1e6,
			OutputPrice: p.number("OutputCostPerMTok") / 1e6,
			Timeout:     p.seconds("TimeoutSeconds"),
			MaxRetries:  defaultModelRetries,
		}
		if _, ok := m["MaxRetries"]; ok {
			cfg.MaxRetries = p.integer("MaxRetries", 0, 10)
		}
		if c, ok := m["Comment"]; ok {
			if _, isStr := c.(string); !isStr {
				p.fail("Comment", "Comment must be a string, not %s", jsonvalue.TypeName(c))
			}
		}
		p.apiKeyRef(&cfg.APIKeyEnv, "ANTHROPIC_API_KEY")
		if p.err != nil {
			return nil, p.err
		}
		switch cfg.Provider {
		case "openai", "anthropic":
		default:
			return nil, fileErrorf(at+"/Provider", "unknown provider %q: openai (any Chat Completions server) or anthropic", cfg.Provider)
		}
		if err := models.Validate(cfg); err != nil {
			return nil, fileErrorf(at, "%v", err)
		}
		out[name] = cfg
	}
	return out, nil
}

// apiKeyRef reads APIKey, which may only name the variable holding the
// key ("${NAME}"), into env (APIKeyEnv, read already): giving both, or a
// key itself, is refused (example names a variable in the message).
func (p *fieldParser) apiKeyRef(env *string, example string) {
	key := p.str("APIKey", false)
	if key == "" || p.err != nil {
		return
	}
	if *env != "" {
		p.fail("APIKey", "give APIKey or APIKeyEnv, not both")
	} else if name, ok := singleReference(key); ok {
		*env = name
	} else {
		p.failSecret("APIKey", `APIKey must not hold the key itself, since the agents file is stored with every execution: write "APIKeyEnv": "%s" or "APIKey": "${%s}"`, example, example)
	}
}

// loopConfig is a loop agent of the file.
type loopConfig struct {
	model      string
	system     string
	tools      []string
	maxTurns   int
	generation models.Generation
	json       bool
	schema     json.RawMessage
}

func (p *fieldParser) loop() *loopConfig {
	p.unknown("loop", loopFields)
	c := &loopConfig{
		model:    p.str("Model", true),
		system:   p.str("System", false),
		tools:    p.strList("Tools"),
		json:     p.boolean("JSON"),
		maxTurns: p.integer("MaxTurns", 1, 100),
	}
	if _, ok := p.obj["Temperature"]; ok {
		t := p.number("Temperature")
		if t < 0 || t > 2 {
			p.fail("Temperature", "Temperature must be between 0 and 2, not %v", t)
		}
		c.generation.Temperature = &t
	}
	if _, ok := p.obj["TopP"]; ok {
		t := p.number("TopP")
		if t < 0 || t > 1 {
			p.fail("TopP", "TopP must be between 0 and 1, not %v", t)
		}
		c.generation.TopP = &t
	}
	if v, ok := p.obj["ResultSchema"]; ok && p.err == nil {
		if _, isObj := v.(map[string]any); !isObj {
			p.fail("ResultSchema", "ResultSchema must be a JSON Schema object, not %s", jsonvalue.TypeName(v))
		} else if data, err := jsonvalue.Marshal(v); err == nil {
			c.schema = data
		}
	}
	c.generation.MaxTokens = p.integer("MaxTokens", 1, 1_000_000)
	c.generation.StopSequences = p.strList("StopSequences")
	for i, name := range c.tools {
		if server, rest, ok := strings.Cut(name, "."); ok && rest == "*" && validServerName(server) {
			continue // every tool of an MCP server
		}
		if !validToolName(name) {
			p.fail(fmt.Sprintf("Tools/%d", i), "%q is not a tool name: 1 to 64 letters, digits, '_', '-' and '.'", name)
		}
	}
	return c
}

// validToolName reports whether s may name a tool (tools.Tool.Check).
func validToolName(s string) bool {
	t := tools.Tool{Name: s, Call: func(context.Context, *agents.Request, map[string]any) (any, error) { return nil, nil }}
	return t.Check() == nil
}

// buildModels makes the file's models, each reaching the hosts hosts
// allows.
func buildModels(cfgs map[string]models.Config, hosts *egress.Policy) (map[string]agentloop.Model, error) {
	client := *policyClient(hosts)
	client.Transport = noteDenied{base: client.Transport}
	out := make(map[string]agentloop.Model, len(cfgs))
	for name, cfg := range cfgs {
		var m models.Model
		var err error
		switch cfg.Provider {
		case "anthropic":
			m, err = anthropic.New(cfg, &client)
		default:
			m, err = openai.New(cfg, &client)
		}
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		out[name] = agentloop.Model{Model: confined{m}, Config: cfg}
	}
	return out, nil
}

// buildLoop makes a loop agent: its tools are agents of reg, looked up
// when the model calls them (so Go agents and agents of the file alike).
func (c *loopConfig) build(name string, ms map[string]agentloop.Model, reg *agents.Registry, servers map[string]*mcp.Server, guards map[string]*mcpGuard, describe func(string) (string, json.RawMessage)) (agents.Agent, error) {
	if _, ok := ms[c.model]; !ok {
		return nil, fmt.Errorf("model %q is not in the file's Models (%s)", c.model, namesOf(ms))
	}
	dynamic, agentTools, err := mcpTools(c.tools, servers, guards)
	if err != nil {
		return nil, err
	}
	var ts []tools.Tool
	for _, tool := range agentTools {
		if tool == name {
			return nil, fmt.Errorf("tool %q is the agent itself", tool)
		}
		// The agent is looked up when the model calls it: agents of the
		// file and agents registered from Go alike.
		description, schema := describe(tool)
		t, err := tools.FromAgent(tool, description, schema, agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			a, ok := reg.Lookup(tool)
			if !ok {
				return nil, asl.Errorf(asl.ErrAgentToolError, "tool %q: no agent of that name is registered", tool)
			}
			return a.Invoke(ctx, req)
		}))
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return agentloop.New(agentloop.Config{Models: ms, Model: c.model, System: c.system, Tools: ts, Dynamic: dynamic,
		MaxTurns: c.maxTurns, Generation: c.generation, JSON: c.json, ResultSchema: c.schema})
}

func namesOf(ms map[string]agentloop.Model) string {
	names := slices.Sorted(maps.Keys(ms))
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprint(names)
}

// strList reads an optional array of non-empty strings.
func (p *fieldParser) strList(key string) []string {
	v, ok := p.obj[key]
	if !ok || p.err != nil {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		p.fail(key, "%s must be an array of strings, not %s", key, jsonvalue.TypeName(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok || s == "" {
			p.fail(fmt.Sprintf("%s/%d", key, i), "%s must hold non-empty strings, not %s", key, describe(e))
			return nil
		}
		out = append(out, s)
	}
	return out
}

// confined is a model whose refused hosts are States.Permissions, as an
// llm or http agent's are, rather than a model error (not retried, and
// not a reason to fall back). Its client's transport notes a refusal in
// the request's context (deniedSlot), since a model reports failures in
// its own words.
type confined struct{ models.Model }

type deniedKey struct{}

type deniedSlot struct {
	mu  sync.Mutex
	err *egress.DeniedError
}

func (c confined) Send(ctx context.Context, t *models.Turn, stream func(string)) (*models.Reply, error) {
	slot := &deniedSlot{}
	r, err := c.Model.Send(context.WithValue(ctx, deniedKey{}, slot), t, stream)
	slot.mu.Lock()
	de := slot.err
	slot.mu.Unlock()
	if err != nil && de != nil {
		e := &models.Error{Name: asl.ErrPermissions, Message: de.Error(), Err: de}
		var me *models.Error
		if errors.As(err, &me) {
			e.Provider, e.Model = me.Provider, me.Model
		}
		return nil, e
	}
	return r, err
}

// noteDenied is a transport that notes a host refusal in its request's
// deniedSlot.
type noteDenied struct{ base http.RoundTripper }

func (n noteDenied) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := n.base.RoundTrip(req)
	var de *egress.DeniedError
	if err != nil && errors.As(err, &de) {
		if slot, ok := req.Context().Value(deniedKey{}).(*deniedSlot); ok {
			slot.mu.Lock()
			slot.err = de
			slot.mu.Unlock()
		}
	}
	return resp, err
}
