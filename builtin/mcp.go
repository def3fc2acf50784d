package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
// by one or all of a server's as "server.*".
const MCPServersKey = "MCPServers"

const mcpFields = "Comment, Command, Env, Dir, URL, Headers, TimeoutSeconds"

// mcpConfig is one server of the file, as written.
type mcpConfig struct {
	cfg mcp.ServerConfig
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
		if p.err != nil {
			return nil, p.err
		}
		out[name] = mcpConfig{cfg: c}
	}
	return out, nil
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
func mcpTools(entries []string, servers map[string]*mcp.Server) (dynamic func() []tools.Tool, agentNames []string, err error) {
	type pick struct {
		s    *mcp.Server
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
			picks = append(picks, pick{s: s})
			continue
		}
		var names []string
		for _, t := range s.Tools() {
			names = append(names, t.Name)
		}
		if !slices.Contains(names, e) {
			return nil, nil, fmt.Errorf("tool %q: MCP server %s has no such tool (it has %s)", e, server, strings.Join(names, ", "))
		}
		picks = append(picks, pick{s: s, name: e})
	}
	if len(picks) == 0 {
		return nil, agentNames, nil
	}
	return func() []tools.Tool {
		var out []tools.Tool
		for _, p := range picks {
			for _, t := range p.s.Tools() {
				if p.name == "" || t.Name == p.name {
					out = append(out, t)
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

// resolvedMCP is the file's MCPServers with each stdio server's Dir made
// absolute against base, and a Command program given as a relative path
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
