package builtin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/tools"
)

// mcpGuard applies a state's tool limits (agents.ToolLimits) to the
// calls of one MCP server's tools, before the call reaches the server:
//   - Domains: an HTTP server's host must be one they allow (a stdio
//     server's own connections are its program's, out of their reach);
//   - FileSystem: each path argument the file's PathArgs names is checked
//     against them, relative to the server's PathRoot, and an existing
//     file's size (opened through os.Root, so a link cannot lead out)
//     against MaxFileSize; a stdio server's tool that PathArgs does not
//     list (as taking paths, or none: {}) is refused, as a local process
//     reaches the machine's files and its paths could not be checked (an
//     HTTP server's files are not this machine's);
//   - Sandbox: a stdio server is a process aslrun started outside any
//     state's sandbox, so a sandboxed state cannot call its tools.
type mcpGuard struct {
	server string
	// url is an HTTP server's endpoint; nil for a stdio server.
	url   *url.URL
	hosts *egress.Policy
	// pathArgs maps a tool (as the server names it) to its path
	// arguments and their kind ("file" or "dir"); root is the folder
	// they are relative to.
	pathArgs map[string]map[string]string
	root     string
}

// wrap returns t with its calls guarded; name is the tool's name as the
// server names it.
func (g *mcpGuard) wrap(t tools.Tool) tools.Tool {
	call := t.Call
	name := strings.TrimPrefix(t.Name, g.server+".")
	t.Call = func(ctx context.Context, req *agents.Request, input map[string]any) (any, error) {
		l := agents.ToolLimitsFrom(ctx)
		if l != nil {
			checked, err := g.check(ctx, l, name, input)
			if err != nil {
				return nil, err
			}
			input = checked
		}
		if l == nil || l.Files == nil {
			input = g.absolute(name, input)
		}
		return call(ctx, req, input)
	}
	return t
}

// check applies l to a call of tool with input and returns the input to
// send: with FileSystem, each path argument made the absolute, clean path
// that was checked, so the server opens exactly what was allowed.
func (g *mcpGuard) check(ctx context.Context, l *agents.ToolLimits, tool string, input map[string]any) (map[string]any, error) {
	full := g.server + "." + tool
	if l.Sandbox != nil && g.url == nil {
		return nil, asl.Errorf(asl.ErrPermissions, "state '%s' runs its tools sandboxed (Tools.Sandbox), and %s is a tool of the MCP server %s, a process aslrun started outside any sandbox", l.State, full, g.server)
	}
	if l.Domains != nil && g.url != nil {
		if err := g.checkHost(ctx, l); err != nil {
			return nil, err
		}
	}
	if l.Files != nil && g.url == nil {
		return g.checkPaths(l, tool, input)
	}
	return input, nil
}

// checkHost checks the HTTP server's host against the state's Domains
// (and the owner's hosts, which they narrow).
func (g *mcpGuard) checkHost(ctx context.Context, l *agents.ToolLimits) error {
	what := fmt.Sprintf("the Tools.Domains of state '%s'", l.State)
	p, err := g.hosts.Narrow(what, l.Domains.Allowed, l.Domains.HasAllowed, l.Domains.Denied)
	if err != nil {
		return asl.Errorf(asl.ErrPermissions, "%s: %v", what, err)
	}
	port := g.url.Port()
	if port == "" {
		port = "80"
		if g.url.Scheme == "https" {
			port = "443"
		}
	}
	n, _ := strconv.ParseUint(port, 10, 16)
	if _, err := p.Resolve(ctx, "tcp", g.url.Hostname(), uint16(n)); err != nil {
		var de *egress.DeniedError
		if errors.As(err, &de) {
			return asl.Errorf(asl.ErrPermissions, "the MCP server %s at %s: %v", g.server, net.JoinHostPort(g.url.Hostname(), port), de)
		}
		return asl.Errorf(asl.ErrAgentToolError, "the MCP server %s: %v", g.server, err)
	}
	return nil
}

// absolute returns input with each relative path argument of tool
// joined to PathRoot, as checkPaths sends them, so that a path means the
// same with or without a state's FileSystem.
func (g *mcpGuard) absolute(tool string, input map[string]any) map[string]any {
	args := g.pathArgs[tool]
	if len(args) == 0 || g.root == "" {
		return input
	}
	join := func(v any) any {
		if p, ok := v.(string); ok && p != "" && !filepath.IsAbs(p) {
			return filepath.Join(g.root, filepath.FromSlash(p))
		}
		return v
	}
	out := maps.Clone(input)
	for arg := range args {
		switch x := input[arg].(type) {
		case string:
			out[arg] = join(x)
		case []any:
			list := make([]any, len(x))
			for i, e := range x {
				list[i] = join(e)
			}
			out[arg] = list
		}
	}
	return out
}

// checkPaths checks the tool's path arguments against the state's
// FileSystem and returns the input with each made absolute under the
// server's PathRoot.
func (g *mcpGuard) checkPaths(l *agents.ToolLimits, tool string, input map[string]any) (map[string]any, error) {
	args, ok := g.pathArgs[tool]
	if !ok {
		return nil, asl.Errorf(asl.ErrPermissions, "state '%s' limits files (Tools.FileSystem), and the tool %s.%s has no PathArgs in the agents file, so its paths cannot be checked (a tool that takes no path is declared with {})", l.State, g.server, tool)
	}
	out := maps.Clone(input)
	for _, arg := range slices.Sorted(maps.Keys(args)) {
		v, present := input[arg]
		if !present {
			continue
		}
		dir := args[arg] == "dir"
		switch x := v.(type) {
		case string:
			abs, err := g.checkPath(l, tool, arg, dir, x)
			if err != nil {
				return nil, err
			}
			out[arg] = abs
		case []any:
			list := make([]any, len(x))
			for i, e := range x {
				s, isStr := e.(string)
				if !isStr {
					return nil, asl.Errorf(asl.ErrAgentToolError, "the argument %s of tool %s.%s is a path list holding %s, not only strings", arg, g.server, tool, jsonvalue.TypeName(e))
				}
				abs, err := g.checkPath(l, tool, arg, dir, s)
				if err != nil {
					return nil, err
				}
				list[i] = abs
			}
			out[arg] = list
		default:
			return nil, asl.Errorf(asl.ErrAgentToolError, "the argument %s of tool %s.%s is a path, not %s", arg, g.server, tool, jsonvalue.TypeName(v))
		}
	}
	return out, nil
}

// checkPath checks one path argument (absolute, or relative to PathRoot)
// and returns it absolute and clean.
func (g *mcpGuard) checkPath(l *agents.ToolLimits, tool, arg string, dir bool, p string) (string, error) {
	refuse := func(err error) error {
		return &asl.Error{Name: asl.ErrPermissions, Cause: fmt.Sprintf("state '%s': the argument %s of tool %s.%s: %v", l.State, arg, g.server, tool, err), Err: err}
	}
	rel := p
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(g.root, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "", refuse(fmt.Errorf("path %q is outside the server's PathRoot %s", p, g.root))
		}
		rel = r
	}
	rel = filepath.ToSlash(rel)
	if err := l.Files.Check(rel, dir); err != nil {
		return "", refuse(err)
	}
	abs := filepath.Join(g.root, filepath.FromSlash(rel))
	root, err := os.OpenRoot(g.root)
	if err != nil {
		return "", asl.Errorf(asl.ErrAgentToolError, "the MCP server %s's PathRoot: %v", g.server, err)
	}
	defer root.Close()
	fi, err := root.Stat(filepath.FromSlash(path.Clean(rel)))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return abs, nil // a file to be made: the server says what it makes
	case err != nil:
		return "", refuse(fmt.Errorf("path %q cannot be opened inside the server's PathRoot: %w", p, err))
	case !dir && fi.Mode().IsRegular():
		if err := l.Files.CheckSize(fi.Size()); err != nil {
			return "", refuse(err)
		}
	}
	return abs, nil
}
