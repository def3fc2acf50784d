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
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// filesystemServer is the npm MCP server tools/mcp's tests pin; .ci/run
// installs it.
const filesystemServer = "../tools/mcp/testdata/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

// TestMCPLoopAgentsFile: an agents file declares the npm filesystem MCP
// server over a folder; a loop agent whose Tools name "fs.*" writes a file
// through it when the model (a fake Chat Completions server) asks, by the
// name the providers accept (fs__write_file); the history names the tool
// fs.write_file.
func TestMCPLoopAgentsFile(t *testing.T) {
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
	dir := t.TempDir()
	target := filepath.Join(dir, "note.txt")
	var mu sync.Mutex
	var offered []string
	chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []map[string]any `json:"messages"`
			Tools    []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		mu.Lock()
		offered = nil
		for _, tl := range body.Tools {
			offered = append(offered, tl.Function.Name)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if body.Messages[len(body.Messages)-1]["role"] != "tool" {
			args, _ := json.Marshal(map[string]string{"path": target, "content": "written by the loop"})
			fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"fs__write_file","arguments":%q}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, args)
			return
		}
		fmt.Fprint(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],"usage":{"prompt_tokens":20,"completion_tokens":2}}`)
	}))
	defer chat.Close()
	file := fmt.Sprintf(`{
	  "Hosts": {"Allow": [%q]},
	  "Models": {"m": {"Provider": "openai", "Model": "x", "BaseURL": %q, "MaxRetries": 0}},
	  "MCPServers": {"fs": {"Command": ["node", %q, %q]}},
	  "Writer": {"Type": "loop", "Model": "m", "Tools": ["fs.*"]}
	}`, strings.TrimPrefix(chat.URL, "http://"), chat.URL+"/v1", node, dir)
	f, err := builtin.ParseAgentsFile([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := states.Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Writer","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	res, err := engine.New(engine.Config{Agents: reg, Store: st}).Run(context.Background(), m, "write a note", engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded || res.Output != "done" {
		t.Fatalf("%s %v (%s: %s)", res.Status, res.Output, res.Error, res.Cause)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "written by the loop" {
		t.Errorf("the file holds %q (%v)", data, err)
	}
	mu.Lock()
	if !strings.Contains(strings.Join(offered, ","), "fs__write_file") {
		t.Errorf("the model was offered %v", offered)
	}
	mu.Unlock()
	hist, _ := st.History(context.Background(), "e")
	found := false
	for _, e := range hist {
		if e.Type == "ToolCallSucceeded" && e.Detail.(map[string]any)["tool"] == "fs.write_file" {
			found = true
		}
	}
	if !found {
		t.Error("no ToolCallSucceeded event of fs.write_file")
	}
}

// TestMCPServersFileErrors: MCPServers entries and loop Tools naming them
// that cannot work are refused at their pointer.
func TestMCPServersFileErrors(t *testing.T) {
	models := `"Models": {"m": {"Provider": "openai", "Model": "x"}}`
	for _, tc := range []struct{ name, file, ptr string }{
		{"not an object", `{"MCPServers": []}`, "/MCPServers"},
		{"bad name", `{"MCPServers": {"a.b": {"Command": ["x"]}}}`, "/MCPServers/a.b"},
		{"neither", `{"MCPServers": {"fs": {}}}`, "/MCPServers/fs/Command"},
		{"both", `{"MCPServers": {"fs": {"Command": ["x"], "URL": "https://mcp.example.com"}}}`, "/MCPServers/fs/URL"},
		{"a literal secret header", `{"MCPServers": {"s": {"URL": "https://mcp.example.com", "Headers": {"Authorization": "Bearer abc"}}}}`, "/MCPServers/s/Headers/Authorization"},
		{"unknown field", `{"MCPServers": {"fs": {"Command": ["x"], "Args": []}}}`, "/MCPServers/fs/Args"},
		{"a tool of no declared server", `{` + models + `, "A": {"Type": "loop", "Model": "m", "Tools": ["git.*"]}}`, "/A/Tools/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := builtin.ParseAgentsFile([]byte(tc.file))
			var fe *builtin.FileError
			if !errors.As(err, &fe) || fe.Pointer != tc.ptr {
				t.Errorf("ParseAgentsFile = %v, want a problem at %s", err, tc.ptr)
			}
		})
	}
}

// TestMCPServersResolved: the agents file stored with an execution has
// each stdio server's Dir and relative program made absolute, so that a
// resume from another directory starts the same server.
func TestMCPServersResolved(t *testing.T) {
	f, err := builtin.ParseAgentsFile([]byte(`{"MCPServers": {
	  "local": {"Command": ["./bin/server", "--root", "data"], "Dir": "srv"},
	  "npx":   {"Command": ["npx", "some-server"]},
	  "web":   {"URL": "https://mcp.example.com/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	data, err := f.Resolved("/base")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		MCPServers map[string]struct {
			Command []string
			Dir     string
			URL     string
		}
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	local, npx, web := got.MCPServers["local"], got.MCPServers["npx"], got.MCPServers["web"]
	if local.Dir != "/base/srv" || local.Command[0] != "/base/srv/bin/server" || local.Command[2] != "data" {
		t.Errorf("local: %+v", local)
	}
	if npx.Dir != "/base" || npx.Command[0] != "npx" {
		t.Errorf("npx: %+v", npx)
	}
	if web.URL != "https://mcp.example.com/mcp" || web.Dir != "" {
		t.Errorf("web: %+v", web)
	}
}
