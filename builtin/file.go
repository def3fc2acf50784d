package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/agentloop"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/tools/mcp"
)

// maxFileSeconds is the largest TimeoutSeconds an agents file accepts.
const maxFileSeconds = 86400

// AgentsFile is a parsed agents file: the built-in agents the command line
// runs a workflow with, by name. The file is a JSON object mapping each
// agent name to its configuration, whose "Type" is "llm", "loop", "exec",
// "http" or "file":
//
//	{
//	  "Classifier": {"Type": "llm", "Model": "gpt-4o-mini", "APIKeyEnv": "OPENAI_API_KEY", "JSON": true},
//	  "Linter":     {"Type": "exec", "Command": ["python3", "lint.py"], "TimeoutSeconds": 30},
//	  "Notify":     {"Type": "http", "URL": "https://hooks.example.com/x", "Headers": {"Authorization": "Bearer ${HOOK_TOKEN}"}},
//	  "Web":        {"Type": "http", "Methods": ["GET"], "Description": "Read a web page"},
//	  "Notes":      {"Type": "file", "Root": "./notes", "Operations": ["read", "list"]}
//	}
//
// An http agent without a URL is a request tool the model directs
// (HTTPRequestConfig: Methods, URLPrefixes, Headers, MaxBytes); a file
// agent is the file tool of package tools/files over Root (relative to
// the file's directory), with Operations (read, write, list, stat;
// default read, list and stat) and MaxFileSize (bytes, or "10MB"). Any
// agent may say how a loop agent offers it to a model as a tool, with
// "Description" and "InputSchema" (a JSON Schema of an object); the
// request and file tools describe themselves. The keys "Models" and
// "MCPServers" are reserved too: the models of loop agents (see
// ModelsKey) and the MCP servers whose tools they call (see
// MCPServersKey).
//
// The key "Resources" is reserved: it maps the Resource ARNs of Task
// states written for AWS Step Functions, and Lambda functions (by name or
// ARN, as lambda:invoke's FunctionName writes them), to the names of the
// agents that run them, which may be agents of the file, mocked or
// registered from Go:
//
//	"Resources": {
//	  "arn:aws:states:::dynamodb:putItem": "Store",
//	  "arn:aws:lambda:us-east-1:123456789012:function:classify": "Classifier"
//	}
//
// The key "Buckets" is reserved too: it maps the buckets that
// Distributed Maps read (ItemReader) and write (ResultWriter) to local
// folders, relative to the file's directory (see BucketsKey):
//
//	"Buckets": {"orders": {"Dir": "./data/orders"}}
//
// The key "Embedder" is reserved too: the embedder of semantic memory
// and semantic context (see EmbedderKey).
//
// The key "Hosts" is reserved too: it lists the hosts the file's llm and
// http agents may reach beside public addresses (see HostsKey), and with
// "Only": true the only hosts they may reach:
//
//	"Hosts": {"Allow": ["localhost:11434", "*.corp.example.com"], "Only": false}
//
// The fields are those of LLMConfig, ExecConfig and HTTPConfig (but
// Hosts, HTTPClient and Logger), with TimeoutSeconds (from 0.001 to 86400) for
// Timeout, and an optional "Comment" string. In an llm agent
// "MaxRetries": 0 means no retries (the field left out means 2).
//
// The command line stores the file with each execution (the text of
// Resolved, whose paths no longer depend on the working directory), so
// that a resumed execution calls the same agents. So the file may refer
// to secrets but never hold one; each reference is read from the
// environment of the process that runs the agent, when the agent is
// called, and its value is never stored:
//   - an llm agent names the variable holding its API key with APIKeyEnv
//     ("APIKeyEnv": "OPENAI_API_KEY"), or, the same, writes APIKey as one
//     reference ("APIKey": "${OPENAI_API_KEY}"). An APIKey holding
//     anything else is refused: LLMConfig.APIKey, the key itself, is for
//     Go callers only;
//   - an http agent's header whose name says it carries a secret
//     (Authorization, Proxy-Authorization, X-Api-Key, Api-Key, Cookie, or
//     any name holding token, secret, key, auth, password, passwd,
//     credential or cookie, in any case) must hold a ${VAR} reference for
//     the secret, like "Bearer ${TOKEN}" or "${API_KEY}"; beside its
//     references it may only hold a scheme or names and separators: ASCII
//     letters, '-', '_' and '.' in words of at most 32 characters,
//     spaces, '=', ';', ',' and ':' (so "session=${SESSION}" is fine, but
//     not "Bearer sk-123" nor "${USER}:hunter2"). Other headers
//     (Content-Type, Accept, …) may be literal;
//   - an exec agent's Env entry whose name holds one of the same words
//     (API_KEY, GITHUB_TOKEN, DB_PASSWORD, …) obeys the same rule as a
//     secret header; other entries may be literal.
//
// A file breaking these rules is refused with a *FileError naming the
// field's JSON Pointer and wrapping ErrLiteralSecret. A value refused
// although it is no secret (that of a header named X-Key-Id, say) can be
// put in a variable too: "${KEY_ID}".
//
// An AgentsFile is immutable and safe for concurrent use.
type AgentsFile struct {
	names  []string
	agents map[string]fileAgent
	// resources maps Task Resource ARNs and Lambda functions to agent
	// names (the file's "Resources").
	resources map[string]string
	// buckets maps bucket names to local folders (the file's "Buckets"),
	// as written (relative to the file's directory).
	buckets map[string]string
	// hosts is the file's "Hosts", merged with what WithHosts added.
	hosts egress.Config
	// models is the file's "Models".
	models map[string]models.Config
	// embedder is the file's "Embedder"; nil when it has none.
	embedder *embedderConfig
	// mcp is the file's "MCPServers", and started the servers Register
	// started (Close stops them).
	mcp     map[string]mcpConfig
	started map[string]*mcp.Server
	// raw is the decoded file, for Resolved.
	raw map[string]any
}

// fileAgent is one agent of the file; exactly one configuration is set.
type fileAgent struct {
	llm     *LLMConfig
	exec    *ExecConfig
	http    *HTTPConfig
	request *HTTPRequestConfig
	file    *fileToolConfig
	loop    *loopConfig
	// workflow is a workflow agent's Workflow ("name[@ref]").
	workflow string
	// meta is what a loop agent offering this agent as a tool tells the
	// model.
	meta toolMeta
}

// FileError reports a problem in an agents file at a JSON Pointer, like
// "/Classifier/Model".
type FileError struct {
	Pointer string
	Msg     string
	// Err is ErrLiteralSecret when the file writes a secret itself, and
	// nil otherwise. Msg says everything Err does.
	Err error
}

// Error returns "agents file POINTER: MSG" ("agents file: MSG" for the
// whole file).
func (e *FileError) Error() string {
	if e.Pointer == "" {
		return "agents file: " + e.Msg
	}
	return fmt.Sprintf("agents file %s: %s", e.Pointer, e.Msg)
}

// Unwrap returns e.Err.
func (e *FileError) Unwrap() error { return e.Err }

func fileErrorf(ptr, format string, args ...any) *FileError {
	return &FileError{Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
}

// ParseAgentsFile strictly decodes and validates an agents file (see
// AgentsFile). Unknown fields, fields of the wrong type and missing
// required fields are errors; the error is a *FileError naming the JSON
// Pointer of the first problem found (agents are checked in name order),
// or wraps a *jsonvalue.JSONError when the text is not strict JSON.
func ParseAgentsFile(data []byte) (*AgentsFile, error) {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fileErrorf("", "an agents file must be an object mapping agent names to their configuration, not %s", jsonvalue.TypeName(v))
	}
	f := &AgentsFile{agents: make(map[string]fileAgent, len(top)), raw: top}
	for _, name := range slices.Sorted(maps.Keys(top)) {
		ptr := "/" + jsonvalue.EscapePointer(name)
		if name == ResourcesKey {
			if f.resources, err = parseResources(ptr, top[name]); err != nil {
				return nil, err
			}
			continue
		}
		if name == BucketsKey {
			if f.buckets, err = parseBuckets(ptr, top[name]); err != nil {
				return nil, err
			}
			continue
		}
		if name == HostsKey {
			if f.hosts, err = parseHosts(ptr, top[name]); err != nil {
				return nil, err
			}
			continue
		}
		if name == MCPServersKey {
			if f.mcp, err = parseMCPServers(ptr, top[name]); err != nil {
				return nil, err
			}
			continue
		}
		if name == ModelsKey {
			if f.models, err = parseModels(ptr, top[name]); err != nil {
				return nil, err
			}
			continue
		}
		if name == EmbedderKey {
			if f.embedder, err = parseEmbedder(ptr, top[name]); err != nil {
				return nil, err
			}
			continue
		}
		if name == "" {
			return nil, fileErrorf(ptr, "an agent name must not be empty")
		}
		fa, err := parseAgent(ptr, top[name])
		if err != nil {
			return nil, err
		}
		f.names = append(f.names, name)
		f.agents[name] = fa
	}
	for _, name := range f.names {
		if l := f.agents[name].loop; l != nil {
			if _, ok := f.models[l.model]; !ok {
				return nil, fileErrorf("/"+jsonvalue.EscapePointer(name)+"/Model", "model %q is not in the file's %s", l.model, ModelsKey)
			}
			for i, t := range l.tools {
				if server, _, isMCP := strings.Cut(t, "."); isMCP {
					if _, ok := f.mcp[server]; !ok {
						return nil, fileErrorf(fmt.Sprintf("/%s/Tools/%d", jsonvalue.EscapePointer(name), i), "%q names the MCP server %q, which the file's %s does not declare", t, server, MCPServersKey)
					}
				}
			}
		}
	}
	return f, nil
}

// Names returns the file's agent names in sorted order.
func (f *AgentsFile) Names() []string { return append([]string(nil), f.names...) }

// Register builds every agent of the file and adds it to reg under its
// name. Relative paths of exec agents are resolved against baseDir
// (normally the directory holding the file; empty means the current
// directory): Dir against baseDir, and Dir defaults to baseDir; a Command
// program given as a relative path with a slash ("./lint.sh",
// "tools/lint") is relative to that Dir, as in a shell; program names
// without a slash are looked up in PATH. logger receives the stderr of exec
// agents; nil means slog.Default(). When a name is already taken, nothing
// is registered.
func (f *AgentsFile) Register(reg *agents.Registry, baseDir string, logger *slog.Logger) error {
	if reg == nil {
		return errors.New("agents file: register: nil registry")
	}
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return fmt.Errorf("agents file: base directory %q: %w", baseDir, err)
	}
	hosts, err := egress.New(f.hosts)
	if err != nil {
		return fmt.Errorf("agents file: %s: %w", HostsKey, err) // parseHosts checked them
	}
	built := make([]agents.Agent, len(f.names))
	var ms map[string]agentloop.Model
	if len(f.models) > 0 {
		if ms, err = buildModels(f.models, hosts); err != nil {
			return fmt.Errorf("agents file: %s: %w", ModelsKey, err)
		}
	}
	var needed []string
	for _, name := range f.names {
		if l := f.agents[name].loop; l != nil {
			for _, t := range l.tools {
				if server, _, isMCP := strings.Cut(t, "."); isMCP {
					needed = append(needed, server)
				}
			}
		}
	}
	servers, err := startMCP(f.mcp, needed, base, hosts, logger)
	if err != nil {
		return fmt.Errorf("agents file: %s: %w", MCPServersKey, err)
	}
	guards := mcpGuards(f.mcp, base, hosts)
	registered := false
	defer func() {
		if !registered {
			closeAll(servers)
		}
	}()
	// The loop agents last: they describe the agents they call as tools.
	byName := make(map[string]agents.Agent, len(f.names))
	for _, loops := range []bool{false, true} {
		for i, name := range f.names {
			l := f.agents[name].loop
			if (l != nil) != loops {
				continue
			}
			var a agents.Agent
			var err error
			if l != nil {
				a, err = l.build(name, ms, reg, servers, guards, func(tool string) (string, json.RawMessage) { return f.toolOf(tool, byName, reg) })
			} else {
				a, err = f.agents[name].build(base, logger, hosts)
			}
			if err != nil {
				return fmt.Errorf("agents file: agent %q: %w", name, err)
			}
			built[i], byName[name] = a, a
		}
	}
	for _, name := range f.names {
		if _, taken := reg.Lookup(name); taken {
			return fmt.Errorf("agents file: register agent %q: %w", name, agents.ErrDuplicate)
		}
	}
	for key := range f.resources {
		if _, taken := reg.MappedResource(key); taken {
			return fmt.Errorf("agents file: register resource %q: %w", key, agents.ErrDuplicate)
		}
	}
	for name := range f.buckets {
		if _, taken := reg.Bucket(name); taken {
			return fmt.Errorf("agents file: register bucket %q: %w", name, agents.ErrDuplicate)
		}
	}
	var embedder models.Embedder
	if f.embedder != nil {
		if embedder, err = f.Embedder(); err != nil {
			return err
		}
		if reg.Embedder() != nil {
			return fmt.Errorf("agents file: %s: the registry has an embedder already", EmbedderKey)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.buckets)) {
		if err := reg.RegisterBucket(name, itemio.Dir(resolveDir(base, f.buckets[name]))); err != nil {
			return fmt.Errorf("agents file: %w", err)
		}
	}
	for i, name := range f.names {
		if err := reg.Register(name, built[i]); err != nil {
			return fmt.Errorf("agents file: %w", err)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(f.resources)) {
		if err := reg.RegisterResource(key, f.resources[key]); err != nil {
			return fmt.Errorf("agents file: %w", err)
		}
	}
	if embedder != nil {
		reg.SetEmbedder(models.NewCachedEmbedder(embedder, 0))
	}
	registered = true
	if len(servers) > 0 {
		if f.started == nil {
			f.started = make(map[string]*mcp.Server)
		}
		maps.Copy(f.started, servers)
	}
	return nil
}

// BucketsKey is the reserved key of an agents file that maps the buckets
// of Distributed Maps (ItemReader, ResultWriter) to local folders:
//
//	"Buckets": {"my-bucket": {"Dir": "./data"}}
//
// A relative Dir is relative to the file's directory.
const BucketsKey = "Buckets"

// parseBuckets reads the file's Buckets: an object mapping each bucket
// name to {"Dir": folder}.
func parseBuckets(ptr string, v any) (map[string]string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fileErrorf(ptr, "Buckets must be an object mapping bucket names to {\"Dir\": folder}, not %s", jsonvalue.TypeName(v))
	}
	out := make(map[string]string, len(obj))
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		at := ptr + "/" + jsonvalue.EscapePointer(name)
		if name == "" || strings.ContainsAny(name, "/:") {
			return nil, fileErrorf(at, "a bucket name must be non-empty, without '/' or ':' (write the name, not s3://name)")
		}
		b, ok := obj[name].(map[string]any)
		if !ok {
			return nil, fileErrorf(at, "a bucket must be an object {\"Dir\": folder}, not %s", describe(obj[name]))
		}
		for k := range b {
			if k != "Dir" && k != "Comment" {
				return nil, fileErrorf(at+"/"+jsonvalue.EscapePointer(k), "unknown field %q of a bucket (want Dir)", k)
			}
		}
		dir, ok := b["Dir"].(string)
		if !ok || dir == "" {
			return nil, fileErrorf(at+"/Dir", "Dir must be a non-empty folder path, not %s", describe(b["Dir"]))
		}
		out[name] = dir
	}
	return out, nil
}

// HostsKey is the reserved key of an agents file that lists the hosts its
// llm and http agents may reach (see package egress for the patterns and
// what they allow):
//
//	"Hosts": {"Allow": ["localhost:11434", "10.0.0.0/8", "*.corp.example.com"], "Only": true}
//
// Allow lists hosts (names, wildcards, addresses, CIDR blocks, each with
// an optional port) that may be reached although they are loopback,
// private or link-local; Only: true makes them the only hosts reached,
// public ones included. Without the key, public addresses are reached
// and nothing else.
const HostsKey = "Hosts"

// Hosts returns the host policy configuration of the file's llm and http
// agents: the file's Hosts with what WithHosts added.
func (f *AgentsFile) Hosts() egress.Config {
	return egress.Config{Allow: slices.Clone(f.hosts.Allow), Only: f.hosts.Only}
}

// WithHosts returns a copy of f whose agents may also reach what extra
// allows (see egress.Config.Merge: the Allow lists joined, Only when
// either is Only), as the server's owner's --allow-host and
// --only-allowed-hosts add to the file's Hosts. Resolved writes the
// merged Hosts, so an execution keeps them. The patterns of extra are
// checked: the error names the first bad one.
func (f *AgentsFile) WithHosts(extra egress.Config) (*AgentsFile, error) {
	if _, err := egress.New(extra); err != nil {
		return nil, err
	}
	g := *f
	g.hosts = f.hosts.Merge(egress.Config{Allow: extra.Allow, Only: extra.Only})
	return &g, nil
}

// parseHosts reads the file's Hosts: {"Allow": [pattern, …], "Only":
// bool}, both optional.
func parseHosts(ptr string, v any) (egress.Config, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return egress.Config{}, fileErrorf(ptr, `Hosts must be an object like {"Allow": ["localhost:11434"], "Only": false}, not %s`, jsonvalue.TypeName(v))
	}
	var cfg egress.Config
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		at := ptr + "/" + jsonvalue.EscapePointer(k)
		switch k {
		case "Comment":
			if _, isStr := obj[k].(string); !isStr {
				return egress.Config{}, fileErrorf(at, "Comment must be a string, not %s", jsonvalue.TypeName(obj[k]))
			}
		case "Only":
			b, isBool := obj[k].(bool)
			if !isBool {
				return egress.Config{}, fileErrorf(at, "Only must be true or false, not %s", describe(obj[k]))
			}
			cfg.Only = b
		case "Allow":
			list, isArr := obj[k].([]any)
			if !isArr {
				return egress.Config{}, fileErrorf(at, `Allow must be an array of host patterns like ["localhost:11434", "10.0.0.0/8", "*.example.com"], not %s`, describe(obj[k]))
			}
			for i, e := range list {
				s, isStr := e.(string)
				if !isStr {
					return egress.Config{}, fileErrorf(fmt.Sprintf("%s/%d", at, i), "a host pattern must be a string, not %s", jsonvalue.TypeName(e))
				}
				if _, err := egress.ParsePattern(s); err != nil {
					return egress.Config{}, fileErrorf(fmt.Sprintf("%s/%d", at, i), "%v", err)
				}
				cfg.Allow = append(cfg.Allow, s)
			}
		default:
			return egress.Config{}, fileErrorf(at, "unknown field %q of Hosts (want Allow, Only)", k)
		}
	}
	return cfg, nil
}

// resolveDir makes dir absolute against base.
func resolveDir(base, dir string) string {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(base, dir)
}

// ResourcesKey is the reserved key of an agents file that maps resources
// to agents (see AgentsFile); no agent may be named so.
const ResourcesKey = "Resources"

// Resources returns the file's map of resources to agent names (a copy);
// nil when it has none.
func (f *AgentsFile) Resources() map[string]string { return maps.Clone(f.resources) }

// parseResources reads the file's Resources: an object mapping each
// resource (an ARN or a Lambda function name) to an agent name.
func parseResources(ptr string, v any) (map[string]string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fileErrorf(ptr, "Resources must be an object mapping resource ARNs or Lambda function names to agent names, not %s", jsonvalue.TypeName(v))
	}
	out := make(map[string]string, len(obj))
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		at := ptr + "/" + jsonvalue.EscapePointer(key)
		if key == "" {
			return nil, fileErrorf(at, "a resource must not be empty")
		}
		name, ok := obj[key].(string)
		if !ok || name == "" {
			return nil, fileErrorf(at, "the agent of a resource must be a non-empty agent name, not %s", describe(obj[key]))
		}
		out[key] = name
	}
	return out, nil
}

// Resolved returns the file's text with the paths of its exec agents made
// absolute against baseDir, as Register resolves them: each exec agent's
// Dir is set, and a Command program given as a relative path with a slash
// is joined to it. Registering the result with any base directory builds
// the same agents as registering f with baseDir, so it is the text to
// store with an execution that a resume, a worker or another working
// directory must rebuild. Everything else is kept as written: the ${VAR}
// references and APIKeyEnv stay references, never the values they had
// when the file was parsed or an agent was called, and ParseAgentsFile
// refused any secret written in the file (see AgentsFile).
func (f *AgentsFile) Resolved(baseDir string) ([]byte, error) {
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("agents file: base directory %q: %w", baseDir, err)
	}
	out := make(map[string]any, len(f.raw))
	for name, v := range f.raw {
		if name == BucketsKey {
			dirs := make(map[string]any, len(f.buckets))
			for b, dir := range f.buckets {
				dirs[b] = map[string]any{"Dir": resolveDir(base, dir)}
			}
			out[name] = dirs
			continue
		}
		if name == HostsKey {
			continue // written below, with what WithHosts added
		}
		if name == MCPServersKey {
			out[name] = resolvedMCP(v.(map[string]any), base)
			continue
		}
		fa := f.agents[name]
		if fa.file != nil {
			obj := maps.Clone(v.(map[string]any))
			obj["Root"] = resolveDir(base, fa.file.root)
			out[name] = obj
			continue
		}
		if fa.exec == nil {
			out[name] = v
			continue
		}
		dir, command := fa.exec.resolve(base)
		obj := maps.Clone(v.(map[string]any))
		obj["Dir"] = dir
		words := make([]any, len(command))
		for i, w := range command {
			words[i] = w
		}
		obj["Command"] = words
		out[name] = obj
	}
	if len(f.hosts.Allow) > 0 || f.hosts.Only {
		allow := make([]any, len(f.hosts.Allow))
		for i, s := range f.hosts.Allow {
			allow[i] = s
		}
		out[HostsKey] = map[string]any{"Allow": allow, "Only": f.hosts.Only}
	}
	data, err := jsonvalue.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("agents file: encode: %w", err)
	}
	return data, nil
}

// build makes the agent, resolving exec paths against base; llm and http
// agents reach the hosts hosts allows.
func (fa fileAgent) build(base string, logger *slog.Logger, hosts *egress.Policy) (agents.Agent, error) {
	switch {
	case fa.llm != nil:
		cfg := *fa.llm
		cfg.Hosts = hosts
		return LLM(cfg)
	case fa.http != nil:
		cfg := *fa.http
		cfg.Hosts = hosts
		return HTTP(cfg)
	case fa.request != nil:
		cfg := *fa.request
		cfg.Hosts = hosts
		return HTTPRequest(cfg)
	case fa.file != nil:
		return fa.file.build(base)
	case fa.workflow != "":
		return Workflow(fa.workflow), nil
	}
	cfg := *fa.exec
	cfg.Logger = logger
	cfg.Dir, cfg.Command = fa.exec.resolve(base)
	return Exec(cfg)
}

// resolve returns the working directory and the command of an exec agent
// of the file: Dir joined to the absolute base (base when Dir is empty),
// and a program given as a relative path with a slash joined to that
// directory. Program names without a slash are left for PATH.
func (c *ExecConfig) resolve(base string) (dir string, command []string) {
	dir = base
	if c.Dir != "" {
		dir = filepath.Join(base, c.Dir)
		if filepath.IsAbs(c.Dir) {
			dir = filepath.Clean(c.Dir)
		}
	}
	command = append([]string(nil), c.Command...)
	if prog := command[0]; strings.ContainsRune(prog, '/') && !filepath.IsAbs(prog) {
		command[0] = filepath.Join(dir, prog)
	}
	return dir, command
}

// The fields each type accepts, for the unknown-field message.
const (
	llmFields  = "Type, Comment, Description, InputSchema, BaseURL, Model, APIKey, APIKeyEnv, System, Temperature, MaxTokens, JSON, TimeoutSeconds, MaxRetries, InputCostPerMTok, OutputCostPerMTok"
	execFields = "Type, Comment, Description, InputSchema, Command, Dir, Env, TimeoutSeconds"
	httpFields = "Type, Comment, Description, InputSchema, URL, Headers, TimeoutSeconds"
)

// parseAgent reads one agent's configuration.
func parseAgent(ptr string, v any) (fileAgent, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return fileAgent{}, fileErrorf(ptr, "an agent's configuration must be an object with a Type, not %s", jsonvalue.TypeName(v))
	}
	typ, ok := obj["Type"]
	if !ok {
		return fileAgent{}, fileErrorf(ptr+"/Type", "Type is required: llm, loop, exec, http, file or workflow")
	}
	if c, ok := obj["Comment"]; ok {
		if _, isStr := c.(string); !isStr {
			return fileAgent{}, fileErrorf(ptr+"/Comment", "Comment must be a string, not %s", jsonvalue.TypeName(c))
		}
	}
	p := &fieldParser{ptr: ptr, obj: obj}
	var fa fileAgent
	switch typ {
	case "llm":
		fa.llm = p.llm()
	case "exec":
		fa.exec = p.exec()
	case "http":
		if _, hasURL := obj["URL"]; hasURL {
			fa.http = p.http()
		} else {
			fa.request = p.request()
		}
	case "file":
		fa.file = p.file()
	case "loop":
		fa.loop = p.loop()
	case "workflow":
		fa.workflow = p.workflowAgent()
	default:
		if s, isStr := typ.(string); isStr {
			return fileAgent{}, fileErrorf(ptr+"/Type", "unknown agent type %q: llm, loop, exec, http, file or workflow", s)
		}
		return fileAgent{}, fileErrorf(ptr+"/Type", "Type must be a string (llm, loop, exec, http, file or workflow), not %s", jsonvalue.TypeName(typ))
	}
	fa.meta = p.toolMeta()
	if p.err != nil {
		return fileAgent{}, p.err
	}
	return fa, nil
}

// fieldParser reads the fields of one agent's object; the first problem
// is kept in err and later reads do nothing.
type fieldParser struct {
	ptr string
	obj map[string]any
	err *FileError
}

// fail records a problem at the pointer p.ptr + "/" + rel; rel is
// already escaped ("Command/0", "Env/A~1B").
func (p *fieldParser) fail(rel, format string, args ...any) {
	if p.err == nil {
		p.err = fileErrorf(p.ptr+"/"+rel, format, args...)
	}
}

// failSecret records that the field at rel writes a secret itself.
func (p *fieldParser) failSecret(rel, format string, args ...any) {
	if p.err == nil {
		p.err = &FileError{Pointer: p.ptr + "/" + rel, Msg: fmt.Sprintf(format, args...), Err: ErrLiteralSecret}
	}
}

// unknown reports the first field of the object that is not in known.
func (p *fieldParser) unknown(kind, known string) {
	allowed := strings.Split(known, ", ")
	article := "a"
	if strings.ContainsAny(kind[:1], "aeiou") || kind == "llm" || kind == "http" {
		article = "an"
	}
	for _, k := range slices.Sorted(maps.Keys(p.obj)) {
		if !slices.Contains(allowed, k) {
			p.fail(jsonvalue.EscapePointer(k), "unknown field %q (%s %s agent has %s)", k, article, kind, known)
			return
		}
	}
}

func (p *fieldParser) llm() *LLMConfig {
	p.unknown("llm", llmFields)
	c := &LLMConfig{
		BaseURL:           p.str("BaseURL", false),
		Model:             p.str("Model", true),
		APIKey:            p.str("APIKey", false),
		APIKeyEnv:         p.str("APIKeyEnv", false),
		System:            p.str("System", false),
		JSON:              p.boolean("JSON"),
		Timeout:           p.seconds("TimeoutSeconds"),
		InputCostPerMTok:  p.number("InputCostPerMTok"),
		OutputCostPerMTok: p.number("OutputCostPerMTok"),
	}
	if _, ok := p.obj["Temperature"]; ok {
		t := p.number("Temperature")
		c.Temperature = &t
	}
	c.MaxTokens = p.integer("MaxTokens", 1, 1<<31-1)
	if _, ok := p.obj["MaxRetries"]; ok {
		c.MaxRetries = p.integer("MaxRetries", 0, 10)
		if c.MaxRetries == 0 {
			c.MaxRetries = -1 // LLMConfig's zero means the default
		}
	}
	if p.err != nil {
		return c
	}
	switch {
	case c.APIKey != "" && c.APIKeyEnv != "":
		p.fail("APIKey", "give APIKey or APIKeyEnv, not both")
	case c.APIKey != "":
		// APIKey may only name the variable, as APIKeyEnv does.
		name, ok := singleReference(c.APIKey)
		if !ok {
			p.failSecret("APIKey", `APIKey must not hold the key itself, since the agents file is stored with every execution: write "APIKeyEnv": "OPENAI_API_KEY" or "APIKey": "${OPENAI_API_KEY}", read from the environment when the agent is called`)
		}
		c.APIKey, c.APIKeyEnv = "", name
	case c.APIKeyEnv != "" && !validEnvName(c.APIKeyEnv):
		p.fail("APIKeyEnv", "%q is not an environment variable name", c.APIKeyEnv)
	}
	if c.BaseURL != "" {
		if _, err := checkURL(c.BaseURL); err != nil {
			p.fail("BaseURL", "%v", err)
		}
	}
	return c
}

func (p *fieldParser) exec() *ExecConfig {
	p.unknown("exec", execFields)
	c := &ExecConfig{
		Command: p.words("Command"),
		Dir:     p.str("Dir", false),
		Env:     p.strMap("Env"),
		Timeout: p.seconds("TimeoutSeconds"),
	}
	for i, w := range c.Command {
		if err := checkWord(w); err != nil {
			p.fail(fmt.Sprintf("Command/%d", i), "%v", err)
		}
	}
	if len(c.Command) > 0 && c.Command[0] == "" {
		p.fail("Command/0", "the program must not be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		rel := "Env/" + jsonvalue.EscapePointer(k)
		if err := checkEnv(k, c.Env[k]); err != nil {
			p.fail(rel, "%v", err)
		} else if secretName(k) && !refersToSecret(c.Env[k]) {
			p.failSecret(rel, `Env %s is named like a secret, and the agents file is stored with every execution: write it as a reference read from the environment when the agent is called, like "${%s}", or leave it out (the command inherits aslrun's environment)%s`, k, k, besideHint(c.Env[k]))
		}
	}
	return c
}

func (p *fieldParser) http() *HTTPConfig {
	p.unknown("http", httpFields)
	c := &HTTPConfig{
		URL:     p.str("URL", true),
		Headers: p.strMap("Headers"),
		Timeout: p.seconds("TimeoutSeconds"),
	}
	if c.URL != "" {
		if _, err := checkURL(c.URL); err != nil {
			p.fail("URL", "%v", err)
		}
	}
	p.headers(c.Headers)
	return c
}

// besideHint explains why a secret's value holding references was still
// refused; it never quotes the value.
func besideHint(value string) string {
	if !strings.Contains(value, "${") {
		return ""
	}
	return "; beside its references this value holds more than a scheme or names and separators (words of letters, -, _ and ., at most 32 long, between spaces, =, ;, , and :)"
}

// str reads a string field; a present one must not be empty.
func (p *fieldParser) str(key string, required bool) string {
	v, ok := p.obj[key]
	if !ok {
		if required {
			p.fail(key, "%s is required", key)
		}
		return ""
	}
	s, isStr := v.(string)
	if !isStr || s == "" {
		p.fail(key, "%s must be a non-empty string, not %s", key, describe(v))
	}
	return s
}

func (p *fieldParser) boolean(key string) bool {
	v, ok := p.obj[key]
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		p.fail(key, "%s must be true or false, not %s", key, jsonvalue.TypeName(v))
	}
	return b
}

// number reads a finite number ≥ 0.
func (p *fieldParser) number(key string) float64 {
	v, ok := p.obj[key]
	if !ok {
		return 0
	}
	n, _ := v.(json.Number)
	f, valid := jsonvalue.Float64(n)
	if !valid || f < 0 {
		p.fail(key, "%s must be a number ≥ 0, not %s", key, describe(v))
		return 0
	}
	return f
}

// integer reads an integer between lo and hi.
func (p *fieldParser) integer(key string, lo, hi int64) int {
	v, ok := p.obj[key]
	if !ok {
		return 0
	}
	n, _ := v.(json.Number)
	i, valid := jsonvalue.Int64(n)
	if !valid || i < lo || i > hi {
		p.fail(key, "%s must be an integer from %d to %d, not %s", key, lo, hi, describe(v))
		return 0
	}
	return int(i)
}

// seconds reads a number of seconds from a millisecond to a day.
func (p *fieldParser) seconds(key string) time.Duration {
	v, ok := p.obj[key]
	if !ok {
		return 0
	}
	n, _ := v.(json.Number)
	f, valid := jsonvalue.Float64(n)
	if !valid || f < 0.001 || f > maxFileSeconds {
		p.fail(key, "%s must be a number of seconds from 0.001 to %d, not %s", key, maxFileSeconds, describe(v))
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// words reads a non-empty array of strings.
func (p *fieldParser) words(key string) []string {
	v, ok := p.obj[key]
	if !ok {
		p.fail(key, "%s is required: an array with the program and its arguments, like [\"python3\", \"lint.py\"]", key)
		return nil
	}
	list, isArr := v.([]any)
	if !isArr || len(list) == 0 {
		p.fail(key, "%s must be a non-empty array of strings, not %s", key, describe(v))
		return nil
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr {
			p.fail(fmt.Sprintf("%s/%d", key, i), "each word of %s must be a string, not %s", key, jsonvalue.TypeName(e))
			return nil
		}
		out[i] = s
	}
	return out
}

// strMap reads an object of strings.
func (p *fieldParser) strMap(key string) map[string]string {
	v, ok := p.obj[key]
	if !ok {
		return nil
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		p.fail(key, "%s must be an object of strings, not %s", key, jsonvalue.TypeName(v))
		return nil
	}
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		s, isStr := obj[k].(string)
		if !isStr {
			p.fail(key+"/"+jsonvalue.EscapePointer(k), "%s values must be strings, not %s", key, jsonvalue.TypeName(obj[k]))
			return nil
		}
		out[k] = s
	}
	return out
}

// describe names a wrong value in a message: its type, or an empty string.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "an empty string"
		}
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return string(x)
	}
	return jsonvalue.TypeName(v)
}
