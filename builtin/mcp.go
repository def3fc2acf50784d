package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/tools"
	"github.com/aslrun/aslrun/tools/mcp"
)

// MCPServersKey is the reserved key of an agents file that declares the
// MCP servers whose tools its loop agents may call:
//
//	"MCPServers": {
//	  "fs":     {"Command": ["npx", "@modelcontextprotocol/server-filesystem", "./data"]},
//	  "search": {"URL": "https://mcp.example.com/mcp", "Headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
//	}
//
// A server is a stdio Command (with Env, whose values may be ${VAR}
// references, and Dir, relative to the file's directory) or a streamable
// HTTP URL (with Headers, secrets as references; its host must be one the
// file's Hosts grants), and TimeoutSeconds for each call (default 60).
// Its tools are named "server.tool"; a loop agent's Tools names them one
// by one or all of a server's as "server.*". A stdio server over files
// says which arguments of which tools are paths, and the folder they are
// relative to, so that a state's Tools.FileSystem is checked on them
// before the call (see mcpGuard):
//
//	"fs": {"Command": ["npx", "@modelcontextprotocol/server-filesystem", "./data"], "PathRoot": "./data",
//	       "PathArgs": {"read_text_file": {"path": "file"}, "list_directory": {"path": "dir"}}}
const MCPServersKey = "MCPServers"

const mcpFields = "Comment, Command, Env, Dir, URL, Headers, TimeoutSeconds, PathArgs, PathRoot"

// mcpConfig is one server of the file, as written.
type mcpConfig struct {
	cfg mcp.ServerConfig
	// pathArgs maps a tool to its path arguments and their kind ("file"
	// or "dir"); pathRoot, as written, is the folder they are relative
	// to (see mcpGuard).
	pathArgs map[string]map[string]string
	pathRoot string
}

// parseMCPServers reads the file's MCPServers.
func parseMCPServers(ptr string, v any) (map[string]mcpConfig, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fileErrorf(ptr, "MCPServers must be an object mapping server names to their configuration, not %s", jsonvalue.TypeName(v))
	}
	out := make(map[string]mcpConfig, len(obj))
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		at := ptr + "/" + jsonvalue.EscapePointer(name)
		if !validServerName(name) {
			return nil, fileErrorf(at, "a server name is 1 to 32 letters, digits, '_' and '-' (its tools are named NAME.tool)")
		}
		m, ok := obj[name].(map[string]any)
		if !ok {
			return nil, fileErrorf(at, "a server's configuration must be an object with a Command or a URL, not %s", jsonvalue.TypeName(obj[name]))
		}
		p := &fieldParser{ptr: at, obj: m}
		p.unknown("MCP server", mcpFields)
		c := mcp.ServerConfig{Name: name, Env: p.strMap("Env"), Dir: p.str("Dir", false), URL: p.str("URL", false),
			Header: p.strMap("Headers"), Timeout: p.seconds("TimeoutSeconds")}
		if _, ok := m["Command"]; ok {
			c.Command = p.words("Command")
		}
		if p.err == nil {
			switch {
			case len(c.Command) == 0 && c.URL == "":
				p.fail("Command", "a server needs a Command (stdio) or a URL (streamable HTTP)")
			case len(c.Command) > 0 && c.URL != "":
				p.fail("URL", "give a Command or a URL, not both")
			case c.URL != "":
				if _, err := checkURL(c.URL); err != nil {
					p.fail("URL", "%v", err)
				}
			}
		}
		for _, h := range slices.Sorted(maps.Keys(c.Header)) {
			rel := "Headers/" + jsonvalue.EscapePointer(h)
			if err := checkHeader(h, c.Header[h]); err != nil {
				p.fail(rel, "%v", err)
			} else if secretName(h) && !refersToSecret(c.Header[h]) {
				p.failSecret(rel, `header %s carries a secret, and the agents file is stored with every execution: write it as a reference, like "Bearer ${TOKEN}"`, h)
			}
		}
		pathArgs, pathRoot := p.pathArgs(), p.str("PathRoot", false)
		switch {
		case p.err != nil:
		case pathArgs != nil && c.URL != "":
			p.fail("PathArgs", "PathArgs is for stdio servers, whose files are on this machine under a PathRoot")
		case hasPaths(pathArgs) && pathRoot == "":
			p.fail("PathRoot", "PathRoot is required with path arguments in PathArgs: the folder the server's paths are relative to")
		case !hasPaths(pathArgs) && pathRoot != "":
			p.fail("PathArgs", "PathRoot needs PathArgs naming the path arguments of the server's tools")
		}
		if p.err != nil {
			return nil, p.err
		}
		for tool, args := range pathArgs {
			if c.PathArgs == nil {
				c.PathArgs = make(map[string][]string)
			}
			c.PathArgs[tool] = slices.Sorted(maps.Keys(args))
		}
		out[name] = mcpConfig{cfg: c, pathArgs: pathArgs, pathRoot: pathRoot}
	}
	return out, nil
}

// pathArgs reads a server's PathArgs: {tool: {argument: "file" | "dir"}},
// {} for a tool that takes no path.
func (p *fieldParser) pathArgs() map[string]map[string]string {
	v, ok := p.obj["PathArgs"]
	if !ok || p.err != nil {
		return nil
	}
	obj, isObj := v.(map[string]any)
	if !isObj || len(obj) == 0 {
		p.fail("PathArgs", `PathArgs must be a non-empty object mapping tools to their path arguments, like {"read_text_file": {"path": "file"}}, not %s`, describe(v))
		return nil
	}
	out := make(map[string]map[string]string, len(obj))
	for _, tool := range slices.Sorted(maps.Keys(obj)) {
		rel := "PathArgs/" + jsonvalue.EscapePointer(tool)
		args, isObj := obj[tool].(map[string]any)
		if !isObj {
			p.fail(rel, `the path arguments of a tool must be an object mapping each argument to "file" or "dir" ({} for a tool that takes no path), not %s`, describe(obj[tool]))
			return nil
		}
		out[tool] = make(map[string]string, len(args))
		for _, arg := range slices.Sorted(maps.Keys(args)) {
			kind, _ := args[arg].(string)
			if kind != "file" && kind != "dir" {
				p.fail(rel+"/"+jsonvalue.EscapePointer(arg), `the kind of a path argument is "file" or "dir", not %s`, describe(args[arg]))
				return nil
			}
			out[tool][arg] = kind
		}
	}
	return out
}

// hasPaths reports whether a PathArgs names any path argument.
func hasPaths(pathArgs map[string]map[string]string) bool {
	for _, args := range pathArgs {
		if len(args) > 0 {
			return true
		}
	}
	return false
}

func validServerName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// startMCP starts the servers the loop agents name, with their
// references read from the environment now, and returns them by name.
func startMCP(servers map[string]mcpConfig, needed []string, base string, hosts *egress.Policy, log *slog.Logger) (map[string]*mcp.Server, error) {
	out := make(map[string]*mcp.Server)
	for _, name := range needed {
		if _, started := out[name]; started {
			continue
		}
		c := servers[name].cfg
		var err error
		if c.Env, err = expandAll(c.Env); err != nil {
			closeAll(out)
			return nil, fmt.Errorf("MCP server %s: Env: %w", name, err)
		}
		if c.Header, err = expandAll(c.Header); err != nil {
			closeAll(out)
			return nil, fmt.Errorf("MCP server %s: Headers: %w", name, err)
		}
		if len(c.Command) > 0 {
			c.Dir = resolveDir(base, c.Dir)
			if prog := c.Command[0]; strings.ContainsRune(prog, '/') && !filepath.IsAbs(prog) {
				c.Command = append([]string{filepath.Join(c.Dir, prog)}, c.Command[1:]...)
			}
		}
		s, err := mcp.Start(context.Background(), c, policyClient(hosts), log)
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}

// mcpGuards makes the guard of each server (see mcpGuard), PathRoot
// resolved against base.
func mcpGuards(servers map[string]mcpConfig, base string, hosts *egress.Policy) map[string]*mcpGuard {
	out := make(map[string]*mcpGuard, len(servers))
	for name, c := range servers {
		g := &mcpGuard{server: name, hosts: hosts, pathArgs: c.pathArgs}
		if c.cfg.URL != "" {
			g.url, _ = url.Parse(c.cfg.URL) // parseMCPServers checked it
		}
		if c.pathRoot != "" {
			g.root = resolveDir(base, c.pathRoot)
		}
		out[name] = g
	}
	return out
}

func expandAll(m map[string]string) (map[string]string, error) {
	if len(m) == 0 {
		return m, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		x, err := expand(v, os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

func closeAll(servers map[string]*mcp.Server) {
	for _, s := range servers {
		s.Close()
	}
}

// mcpTools resolves a loop agent's Tools entries that name MCP tools
// ("server.tool", "server.*") against the started servers: the function
// that lists them as the servers have them now (a list change reaches the
// next call), and the other entries, which are agents. A named tool the
// server does not have at start is an error.
func mcpTools(entries []string, servers map[string]*mcp.Server, guards map[string]*mcpGuard) (dynamic func() []tools.Tool, agentNames []string, err error) {
	type pick struct {
		s    *mcp.Server
		g    *mcpGuard
		name string // "" for every tool
	}
	var picks []pick
	for _, e := range entries {
		server, tool, isMCP := strings.Cut(e, ".")
		if !isMCP {
			agentNames = append(agentNames, e)
			continue
		}
		s, ok := servers[server]
		if !ok {
			return nil, nil, fmt.Errorf("tool %q: no MCP server %q in the file's %s", e, server, MCPServersKey)
		}
		if tool == "*" {
			picks = append(picks, pick{s: s, g: guards[server]})
			continue
		}
		var names []string
		for _, t := range s.Tools() {
			names = append(names, t.Name)
		}
		if !slices.Contains(names, e) {
			return nil, nil, fmt.Errorf("tool %q: MCP server %s has no such tool (it has %s)", e, server, strings.Join(names, ", "))
		}
		picks = append(picks, pick{s: s, g: guards[server], name: e})
	}
	if len(picks) == 0 {
		return nil, agentNames, nil
	}
	return func() []tools.Tool {
		var out []tools.Tool
		for _, p := range picks {
			for _, t := range p.s.Tools() {
				if p.name == "" || t.Name == p.name {
					out = append(out, p.g.wrap(t))
				}
			}
		}
		return out
	}, agentNames, nil
}

// Close stops the MCP servers Register started; the agents it built then
// fail their MCP tool calls.
func (f *AgentsFile) Close() error {
	var errs []error
	for _, s := range f.started {
		errs = append(errs, s.Close())
	}
	f.started = nil
	return errors.Join(errs...)
}

// resolvedMCP is the file's MCPServers with each stdio server's Dir and
// PathRoot made absolute against base, and a Command program given as a relative path
// with a slash joined to it, as startMCP resolves them.
func resolvedMCP(servers map[string]any, base string) map[string]any {
	out := make(map[string]any, len(servers))
	for name, v := range servers {
		obj, _ := v.(map[string]any)
		words, isCmd := obj["Command"].([]any)
		if !isCmd || len(words) == 0 {
			out[name] = v
			continue
		}
		obj = maps.Clone(obj)
		if root, ok := obj["PathRoot"].(string); ok {
			obj["PathRoot"] = resolveDir(base, root)
		}
		dir, _ := obj["Dir"].(string)
		dir = resolveDir(base, dir)
		obj["Dir"] = dir
		if prog, _ := words[0].(string); strings.ContainsRune(prog, '/') && !filepath.IsAbs(prog) {
			words = slices.Clone(words)
			words[0] = filepath.Join(dir, prog)
			obj["Command"] = words
		}
		out[name] = obj
	}
	return out
}
