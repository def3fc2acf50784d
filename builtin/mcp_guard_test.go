package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// scriptedChat is a Chat Completions server whose model calls the tool
// the user's message names ({"tool": wire name, "args": {…}}) and then
// answers with what the tool returned.
func scriptedChat(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			t.Errorf("chat: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		last := body.Messages[len(body.Messages)-1]
		if last["role"] == "tool" {
			content, _ := json.Marshal(last["content"])
			fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":20,"completion_tokens":2}}`, content)
			return
		}
		var ask struct {
			Tool string         `json:"tool"`
			Args map[string]any `json:"args"`
		}
		if err := json.Unmarshal([]byte(last["content"].(string)), &ask); err != nil {
			t.Errorf("chat: the user's message %v: %v", last["content"], err)
		}
		args, _ := json.Marshal(ask.Args)
		fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":%q,"arguments":%q}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, ask.Tool, args)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestMCPFileSystemLimits: against the npm filesystem server, a state's
// Tools.FileSystem is checked on the path arguments the agents file's
// PathArgs names, before the call reaches the server: an allowed file is
// read (by its absolute path or one relative to PathRoot), a denied one, one with another extension, one too large, one
// outside PathRoot and one through a link leading out fail the state with
// States.Permissions naming the rule, and a tool without PathArgs is
// refused; a sandboxed state cannot call a stdio server's tools.
func TestMCPFileSystemLimits(t *testing.T) {
	if _, err := os.Stat(filesystemServer); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the npm MCP server is not installed (.ci/run runs npm ci): %v", err)
		}
		t.Skipf("the npm MCP server is not installed (cd tools/mcp/testdata/npm && npm ci): %v", err)
	}
	node, err := filepath.Abs(filesystemServer)
	if err != nil {
		t.Fatal(err)
	}
	dir, outside := t.TempDir(), t.TempDir()
	for name, text := range map[string]string{"notes/a.md": "alpha", "notes/big.md": strings.Repeat("x", 2048), "notes/b.txt": "beta", "secret/k.md": "key"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "o.md"), []byte("outside"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "o.md"), filepath.Join(dir, "notes", "link.md")); err != nil {
		t.Fatal(err)
	}
	chat := scriptedChat(t)
	file := fmt.Sprintf(`{
	  "Hosts": {"Allow": [%q]},
	  "Models": {"m": {"Provider": "openai", "Model": "x", "BaseURL": %q, "MaxRetries": 0}},
	  "MCPServers": {"fs": {"Command": ["node", %q, %q], "PathRoot": %q,
	    "PathArgs": {"read_text_file": {"path": "file"}, "list_directory": {"path": "dir"}, "list_allowed_directories": {}}},
	    "bare": {"Command": ["node", %q, %q]}},
	  "Reader": {"Type": "loop", "Model": "m", "Tools": ["fs.*", "bare.*"]}
	}`, strings.TrimPrefix(chat.URL, "http://"), chat.URL+"/v1", node, dir, dir, node, dir)
	f, err := builtin.ParseAgentsFile([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := engine.New(engine.Config{Agents: reg})
	limits := `"FileSystem": {"AllowedPaths": ["notes/**"], "DeniedPaths": ["secret/**"], "AllowedExtensions": ["md"], "MaxFileSize": "1K"}`
	run := func(t *testing.T, tools, tool string, args map[string]any) *engine.Result {
		t.Helper()
		m, err := states.Parse([]byte(`{"StartAt":"R","States":{"R":{"Type":"Task","Agent":"Reader","End":true,"Tools":{` + tools + `}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		ask, _ := json.Marshal(map[string]any{"tool": tool, "args": args})
		res, err := x.Run(context.Background(), m, string(ask), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("allowed", func(t *testing.T) {
		res := run(t, limits, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes/a.md")})
		if res.Status != engine.StatusSucceeded || !strings.Contains(fmt.Sprint(res.Output), "alpha") {
			t.Fatalf("%s %v (%s: %s), want the file's text", res.Status, res.Output, res.Error, res.Cause)
		}
		// A relative path is relative to PathRoot, and the server is sent
		// the absolute path that was checked.
		res = run(t, limits, "fs__read_text_file", map[string]any{"path": "notes/a.md"})
		if res.Status != engine.StatusSucceeded || !strings.Contains(fmt.Sprint(res.Output), "alpha") {
			t.Fatalf("relative: %s %v (%s: %s), want the file's text", res.Status, res.Output, res.Error, res.Cause)
		}
		res = run(t, limits, "fs__list_allowed_directories", map[string]any{})
		if res.Status != engine.StatusSucceeded {
			t.Fatalf("a tool declared as taking no path: %s (%s: %s)", res.Status, res.Error, res.Cause)
		}
		res = run(t, limits, "fs__list_directory", map[string]any{"path": filepath.Join(dir, "notes")})
		if res.Status != engine.StatusSucceeded || !strings.Contains(fmt.Sprint(res.Output), "a.md") {
			t.Fatalf("list: %s %v (%s: %s)", res.Status, res.Output, res.Error, res.Cause)
		}
	})
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		cause      string
	}{
		{"denied", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "secret/k.md")}, `DeniedPaths glob "secret/**"`},
		{"extension", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes/b.txt")}, "AllowedExtensions"},
		{"too large", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes/big.md")}, "MaxFileSize of 1024"},
		{"outside PathRoot", "fs__read_text_file", map[string]any{"path": filepath.Join(outside, "o.md")}, "outside the server's PathRoot"},
		{"relative escape", "fs__read_text_file", map[string]any{"path": "../o.md"}, "o.md"},
		{"a link leading out", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes/link.md")}, "cannot be opened inside the server's PathRoot"},
		{"a tool without PathArgs", "fs__get_file_info", map[string]any{"path": filepath.Join(dir, "notes/a.md")}, "has no PathArgs"},
		{"a stdio server without PathArgs", "bare__list_allowed_directories", map[string]any{}, "tool bare.list_allowed_directories has no PathArgs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, limits, tc.tool, tc.args)
			if res.Status != engine.StatusFailed || res.Error != "States.Permissions" || !strings.Contains(res.Cause, tc.cause) {
				t.Fatalf("%s %s: %s, want States.Permissions containing %q", res.Status, res.Error, res.Cause, tc.cause)
			}
		})
	}
	t.Run("relative without FileSystem", func(t *testing.T) {
		res := run(t, `"Allowed": ["fs.read_text_file"]`, "fs__read_text_file", map[string]any{"path": "notes/b.txt"})
		if res.Status != engine.StatusSucceeded || !strings.Contains(fmt.Sprint(res.Output), "beta") {
			t.Fatalf("%s %v (%s: %s), want the file's text: a relative path is relative to PathRoot without limits too", res.Status, res.Output, res.Error, res.Cause)
		}
	})
	t.Run("sandboxed state", func(t *testing.T) {
		res := run(t, `"Sandboxed": true`, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes/a.md")})
		if res.Status != engine.StatusFailed || res.Error != "States.Permissions" || !strings.Contains(res.Cause, "outside any sandbox") {
			t.Fatalf("%s %s: %s, want States.Permissions: a stdio server is outside the sandbox", res.Status, res.Error, res.Cause)
		}
	})
}

// TestMCPPathArgsFileErrors: PathArgs and PathRoot that cannot work are
// refused at their pointer.
func TestMCPPathArgsFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, server, ptr string }{
		{"PathArgs not an object", `{"Command": ["x"], "PathRoot": ".", "PathArgs": []}`, "/MCPServers/fs/PathArgs"},
		{"a tool's arguments not an object", `{"Command": ["x"], "PathRoot": ".", "PathArgs": {"read": ["path"]}}`, "/MCPServers/fs/PathArgs/read"},
		{"PathRoot with no path argument", `{"Command": ["x"], "PathRoot": ".", "PathArgs": {"search": {}}}`, "/MCPServers/fs/PathArgs"},
		{"a bad kind", `{"Command": ["x"], "PathRoot": ".", "PathArgs": {"read": {"path": "folder"}}}`, "/MCPServers/fs/PathArgs/read/path"},
		{"no PathRoot", `{"Command": ["x"], "PathArgs": {"read": {"path": "file"}}}`, "/MCPServers/fs/PathRoot"},
		{"PathRoot alone", `{"Command": ["x"], "PathRoot": "."}`, "/MCPServers/fs/PathArgs"},
		{"an HTTP server", `{"URL": "https://mcp.example.com", "PathRoot": ".", "PathArgs": {"read": {"path": "file"}}}`, "/MCPServers/fs/PathArgs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := builtin.ParseAgentsFile([]byte(`{"MCPServers": {"fs": ` + tc.server + `}}`))
			var fe *builtin.FileError
			if !asFileError(err, &fe) || fe.Pointer != tc.ptr {
				t.Errorf("ParseAgentsFile = %v, want a problem at %s", err, tc.ptr)
			}
		})
	}
}

func asFileError(err error, fe **builtin.FileError) bool { return errors.As(err, fe) }
