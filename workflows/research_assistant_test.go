package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// The research-assistant example run for real, but for the model: its
// workflow.json and agents.json, the npm filesystem MCP server (node
// instead of npx, so nothing is downloaded), the http request tool
// against a fake docs server, and a fake Chat Completions server
// answering with the recorded-shaped responses of
// research-assistant/testdata/chat (see testdata/README.md there).

const (
	raDir = "research-assistant"
	// raServer is the npm filesystem MCP server tools/mcp/testdata/npm
	// installs.
	raServer = "../tools/mcp/testdata/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	// raKey is the API key the test puts in OPENAI_API_KEY, which the
	// fake wants as the bearer token.
	raKey = "sk-test-research-assistant"
	// raSecret is the text of the files no state may read.
	raSecret = "sk-live-DO-NOT-LEAK"
)

// chatRequest is what the fake saw of one request.
type chatRequest struct {
	agent string // "researcher" or "writer"
	turn  int
	tools []string
	body  string
}

// fakeChat is a Chat Completions server answering, turn by turn, with the
// files of one script folder (AGENT-TURN.json), after replacing the
// recorded URLs with the test servers' (replace).
type fakeChat struct {
	t       *testing.T
	dir     string
	replace *strings.Replacer

	mu       sync.Mutex
	requests []chatRequest
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(format string, args ...any) {
		f.t.Errorf("fake chat: "+format, args...)
		http.Error(w, `{"error":{"message":"not in the script","type":"invalid_request_error"}}`, http.StatusBadRequest)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		fail("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+raKey {
		fail("Authorization %q, want the key of OPENAI_API_KEY", got)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		fail("read the request: %v", err)
		return
	}
	var body struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		fail("the request is not JSON: %v", err)
		return
	}
	req := chatRequest{agent: "researcher", turn: 1, body: string(data)}
	for _, m := range body.Messages {
		if m.Role == "assistant" {
			req.turn++
		}
	}
	for _, t := range body.Tools {
		req.tools = append(req.tools, t.Function.Name)
		if t.Function.Name == "fs__write_file" {
			req.agent = "writer"
		}
	}
	slices.Sort(req.tools)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	reply, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("%s-%d.json", req.agent, req.turn)))
	if err != nil {
		fail("turn %d of the %s is not scripted: %v", req.turn, req.agent, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(f.replace.Replace(string(reply))))
}

// seen returns the requests the fake got.
func (f *fakeChat) seen() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// counter is an HTTP server counting its requests: the fake docs server
// and the one no state may reach.
type counter struct {
	mu   sync.Mutex
	hits []string
	page []byte
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.hits = append(c.hits, r.Method+" "+r.URL.RequestURI())
	c.mu.Unlock()
	if c.page == nil || r.URL.Path != "/3/library/asyncio-eventloop.html" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(c.page)
}

func (c *counter) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.hits)
}

// raRun is one run of the example: its executor, store, workspace and
// fake servers.
type raRun struct {
	x         *engine.Executor
	st        *store.Memory
	m         *states.Machine
	input     any
	workspace string
	chat      *fakeChat
	docs      *counter
	docsURL   string // http://localhost:PORT
	elsewhere *counter
}

// newRARun sets up the example with the chat script of testdata/chat/script:
// the workspace copied into a temporary folder (with files no state may
// read added), the fake servers, and the example's agents file with the
// model, the MCP server's command and the hosts pointed at them.
func newRARun(t *testing.T, script string) *raRun {
	t.Helper()
	server, err := filepath.Abs(raServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(server); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the npm MCP server is not installed (.ci/run runs npm ci in tools/mcp/testdata/npm): %v", err)
		}
		t.Skipf("the npm MCP server is not installed (cd tools/mcp/testdata/npm && npm ci --ignore-scripts): %v", err)
	}
	if _, err := os.Stat(filepath.Join(raDir, "testdata", "chat", script)); err != nil {
		t.Fatalf("chat script %s: %v", script, err)
	}
	t.Setenv("OPENAI_API_KEY", raKey)

	workspace := filepath.Join(t.TempDir(), "workspace")
	if err := os.CopyFS(workspace, os.DirFS(filepath.Join(raDir, "workspace"))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secret/keys.md", "notes/private/keys.md"} {
		p := filepath.Join(workspace, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(raSecret+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	page, err := os.ReadFile(filepath.Join(raDir, "testdata", "docs", "asyncio-eventloop.html"))
	if err != nil {
		t.Fatal(err)
	}
	r := &raRun{workspace: workspace, docs: &counter{page: page}, elsewhere: &counter{}}
	docs := httptest.NewServer(r.docs)
	t.Cleanup(docs.Close)
	elsewhere := httptest.NewServer(r.elsewhere)
	t.Cleanup(elsewhere.Close)
	r.docsURL = strings.Replace(docs.URL, "127.0.0.1", "localhost", 1)
	r.chat = &fakeChat{t: t, dir: filepath.Join(raDir, "testdata", "chat", script),
		replace: strings.NewReplacer("https://docs.python.org", r.docsURL, "https://attacker.example", elsewhere.URL)}
	chat := httptest.NewServer(r.chat)
	t.Cleanup(chat.Close)

	// The example's agents file, with what differs in the test.
	var file map[string]any
	if err := json.Unmarshal(mustRead(t, filepath.Join(raDir, "agents.json")), &file); err != nil {
		t.Fatal(err)
	}
	model := file["Models"].(map[string]any)["main"].(map[string]any)
	model["BaseURL"] = chat.URL + "/v1"
	model["MaxRetries"] = 0
	fsServer := file["MCPServers"].(map[string]any)["fs"].(map[string]any)
	fsServer["Command"] = []string{"node", server, workspace}
	fsServer["PathRoot"] = workspace
	file["Hosts"] = map[string]any{"Allow": []string{
		strings.TrimPrefix(chat.URL, "http://"),
		strings.TrimPrefix(r.docsURL, "http://"),
		strings.TrimPrefix(elsewhere.URL, "http://"),
	}}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := builtin.ParseAgentsFile(data)
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, filepath.Dir(workspace), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })

	if r.m, err = states.Parse(mustRead(t, filepath.Join(raDir, "workflow.json"))); err != nil {
		t.Fatal(err)
	}
	r.input = readJSON(t, filepath.Join(raDir, "input.json"))
	r.st = store.NewMemory()
	r.x = engine.New(engine.Config{Agents: reg, Store: r.st})
	return r
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// runToApproval runs the example until it waits at ApproveWrite.
func (r *raRun) runToApproval(t *testing.T) *engine.Result {
	t.Helper()
	res, err := r.x.Run(context.Background(), r.m, r.input, engine.StartOptions{MachineName: raDir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusWaiting || len(res.Approvals) != 1 || res.Approvals[0].State != "ApproveWrite" {
		t.Fatalf("Run = %s at %v (%s: %s), want WAITING at ApproveWrite", res.Status, res.Approvals, res.Error, res.Cause)
	}
	return res
}

// history returns the execution's events.
func (r *raRun) history(t *testing.T, id string) []engine.Event {
	t.Helper()
	hist, err := r.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// toolCalls returns "TYPE tool" for each tool-call event of hist.
func toolCalls(hist []engine.Event) []string {
	var out []string
	for _, e := range hist {
		if e.Type != "ToolCallSucceeded" && e.Type != "ToolCallFailed" {
			continue
		}
		d, _ := e.Detail.(map[string]any)
		out = append(out, fmt.Sprintf("%s %v", e.Type, d["tool"]))
	}
	return out
}

// reports lists the files in the workspace's reports folder.
func (r *raRun) reports(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.workspace, "reports"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestResearchAssistantDefinition: the example's workflow and agents
// file are valid, and each Task allows exactly the tools its agent offers
// the model.
func TestResearchAssistantDefinition(t *testing.T) {
	m, err := states.Parse(mustRead(t, filepath.Join(raDir, "workflow.json")))
	if err != nil {
		t.Fatalf("workflow.json: %v", err)
	}
	if _, err := builtin.ParseAgentsFile(mustRead(t, filepath.Join(raDir, "agents.json"))); err != nil {
		t.Fatalf("agents.json: %v", err)
	}
	var file, local map[string]any
	if err := json.Unmarshal(mustRead(t, filepath.Join(raDir, "agents.json")), &file); err != nil {
		t.Fatal(err)
	}
	// agents-local.json is agents.json with a local model server: only
	// its Models and Hosts differ.
	if _, err := builtin.ParseAgentsFile(mustRead(t, filepath.Join(raDir, "agents-local.json"))); err != nil {
		t.Fatalf("agents-local.json: %v", err)
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(raDir, "agents-local.json")), &local); err != nil {
		t.Fatal(err)
	}
	for _, key := range slices.Sorted(maps.Keys(local)) {
		if key != "Models" && key != "Hosts" && !jsonvalue.Equal(local[key], file[key]) {
			t.Errorf("agents-local.json's %s differs from agents.json's", key)
		}
	}
	if len(local) != len(file)+1 {
		t.Errorf("agents-local.json has %d keys, want those of agents.json and Hosts", len(local))
	}
	for state, agent := range map[string]string{"Research": "Researcher", "WriteReport": "Writer"} {
		task, ok := m.States[state].(*states.Task)
		if !ok {
			t.Fatalf("state %s is %T, want a Task", state, m.States[state])
		}
		var offered []string
		for _, name := range file[agent].(map[string]any)["Tools"].([]any) {
			offered = append(offered, name.(string))
		}
		if task.Tools == nil || !slices.Equal(task.Tools.Allowed, offered) {
			t.Fatalf("state %s allows %v, want the tools its agent %s offers: %v", state, task.Tools, agent, offered)
		}
		if task.Tools.FileSystem == nil || len(task.Tools.FileSystem.AllowedPaths) == 0 {
			t.Errorf("state %s has no Tools.FileSystem.AllowedPaths", state)
		}
	}
}

// TestResearchAssistantEndToEnd: the Researcher lists the notes, reads
// two of them through the MCP server and GETs the docs page they point
// to; its draft is checkpointed and waits for approval; approved, the
// Writer writes reports/asyncio-event-loop.md with the draft in it.
func TestResearchAssistantEndToEnd(t *testing.T) {
	r := newRARun(t, "research")
	ctx := context.Background()
	res := r.runToApproval(t)
	pa := res.Approvals[0]
	if !slices.Equal(pa.Options, []string{"approve", "reject"}) {
		t.Errorf("options %v, want approve and reject", pa.Options)
	}
	prompt, _ := jsonvalue.Marshal(pa.Prompt)
	if !bytes.Contains(prompt, []byte(`How asyncio's event loop picks what runs next`)) || !bytes.Contains(prompt, []byte("reports/asyncio-event-loop.md")) {
		t.Errorf("the approval's prompt %s does not show the draft's title and the report's path", prompt)
	}
	if got := r.reports(t); !slices.Equal(got, []string{".gitkeep"}) {
		t.Fatalf("before the approval, reports/ holds %v, want nothing written", got)
	}
	cps, err := r.st.ListCheckpoints(ctx, res.ID)
	if err != nil || len(cps) != 1 || cps[0].Name != "drafted" {
		t.Fatalf("Checkpoints = %v, %v; want the checkpoint drafted", cps, err)
	}

	res, err = r.x.Decide(ctx, res.ID, engine.Decision{Approval: "approve", ApprovalID: pa.ID, Approver: "ana@example.com"}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("after approve: %s (%s: %s), want SUCCEEDED", res.Status, res.Error, res.Cause)
	}

	// The output, the draft the Researcher answered, and the report.
	out := res.Output.(map[string]any)
	docsPage := r.docsURL + "/3/library/asyncio-eventloop.html"
	wantSources := []any{"notes/asyncio.md", "notes/reading-list.txt", docsPage}
	if out["written"] != true || out["report"] != "reports/asyncio-event-loop.md" || !jsonvalue.Equal(out["sources"], wantSources) {
		t.Errorf("output = %v, want the report written with the draft's sources %v", out, wantSources)
	}
	report, err := os.ReadFile(filepath.Join(r.workspace, "reports", "asyncio-event-loop.md"))
	if err != nil {
		t.Fatalf("the report was not written: %v", err)
	}
	for _, want := range append([]any{"# " + out["title"].(string), "call_soon()"}, wantSources...) {
		if !strings.Contains(string(report), want.(string)) {
			t.Errorf("the report does not hold %q:\n%s", want, report)
		}
	}

	// The history: every tool call, and the checkpoint.
	hist := r.history(t, res.ID)
	wantCalls := []string{
		"ToolCallSucceeded fs.list_directory",
		"ToolCallSucceeded fs.read_text_file",
		"ToolCallSucceeded fs.read_text_file",
		"ToolCallSucceeded Web",
		"ToolCallSucceeded fs.write_file",
	}
	if got := toolCalls(hist); !slices.Equal(got, wantCalls) {
		t.Errorf("tool calls %v, want %v", got, wantCalls)
	}
	saved := 0
	for _, e := range hist {
		if e.Type == engine.EventCheckpointSaved && e.State == "Drafted" {
			saved++
		}
	}
	if saved != 1 {
		t.Errorf("%d CheckpointSaved events of Drafted, want 1", saved)
	}

	// The model's side: each agent was offered only its state's tools, the
	// docs page reached the Researcher, and the draft the Writer.
	if got := r.docs.requests(); !slices.Equal(got, []string{"GET /3/library/asyncio-eventloop.html"}) {
		t.Errorf("the docs server got %v, want one GET of the page", got)
	}
	var turns []string
	for _, q := range r.chat.seen() {
		turns = append(turns, fmt.Sprintf("%s-%d", q.agent, q.turn))
		want := []string{"Web", "fs__get_file_info", "fs__list_directory", "fs__read_text_file"}
		if q.agent == "writer" {
			want = []string{"fs__write_file"}
		}
		if !slices.Equal(q.tools, want) {
			t.Errorf("%s turn %d was offered %v, want %v", q.agent, q.turn, q.tools, want)
		}
		switch {
		case q.agent == "researcher" && q.turn == 4:
			if !strings.Contains(q.body, "Callbacks are called in the order in which they are") || !strings.Contains(q.body, "Open question") {
				t.Errorf("the Researcher's last turn did not see the docs page and the notes: %s", q.body)
			}
		case q.agent == "writer" && q.turn == 1:
			if !strings.Contains(q.body, "reports/asyncio-event-loop.md") || !strings.Contains(q.body, "picks what runs next") {
				t.Errorf("the Writer was not asked to write the draft to reports/asyncio-event-loop.md: %s", q.body)
			}
		}
		if strings.Contains(q.body, raSecret) {
			t.Errorf("%s turn %d saw a file no state may read", q.agent, q.turn)
		}
	}
	if want := []string{"researcher-1", "researcher-2", "researcher-3", "researcher-4", "writer-1", "writer-2"}; !slices.Equal(turns, want) {
		t.Errorf("model turns %v, want %v", turns, want)
	}
}

// TestResearchAssistantRejected: rejected at the approval, the execution
// succeeds without calling the Writer, and nothing is written.
func TestResearchAssistantRejected(t *testing.T) {
	r := newRARun(t, "research")
	res := r.runToApproval(t)
	res, err := r.x.Decide(context.Background(), res.ID, engine.Decision{Approval: "reject", ApprovalID: res.Approvals[0].ID, Comment: "cite the task docs too"}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"written": false, "title": "How asyncio's event loop picks what runs next"}
	if res.Status != engine.StatusSucceeded || !jsonvalue.Equal(res.Output, want) {
		t.Fatalf("after reject: %s %v (%s: %s), want SUCCEEDED with %v", res.Status, res.Output, res.Error, res.Cause, want)
	}
	if got := r.reports(t); !slices.Equal(got, []string{".gitkeep"}) {
		t.Errorf("reports/ holds %v, want nothing written", got)
	}
	for _, q := range r.chat.seen() {
		if q.agent == "writer" {
			t.Errorf("the Writer's model was asked (turn %d) after a rejection", q.turn)
		}
	}
	for _, c := range toolCalls(r.history(t, res.ID)) {
		if strings.HasSuffix(c, "fs.write_file") {
			t.Errorf("history holds %s after a rejection", c)
		}
	}
}

// TestResearchAssistantRefusesOutsideLimits: a model reaching for a file
// outside the Research state's FileSystem, or a host outside its Domains,
// fails the state with States.Permissions naming the rule, before the call
// reaches the MCP server or the host; no draft is made, nothing waits
// for approval, and the secret never reaches the model.
func TestResearchAssistantRefusesOutsideLimits(t *testing.T) {
	for _, tc := range []struct {
		script string
		// tool is the refused call's tool; cause what the cause must say.
		tool, cause string
		// before are the tool calls that succeeded before it.
		before []string
	}{
		{"read-secret", "fs.read_text_file", `path "secret/keys.md" matches no FileSystem.AllowedPaths glob`,
			[]string{"ToolCallSucceeded fs.list_directory"}},
		{"read-private", "fs.read_text_file", `path "notes/private/keys.md" matches the FileSystem.DeniedPaths glob "notes/private/**"`, nil},
		{"foreign-host", "Web", "the Tools.Domains of state 'Research'",
			[]string{"ToolCallSucceeded fs.read_text_file"}},
	} {
		t.Run(tc.script, func(t *testing.T) {
			r := newRARun(t, tc.script)
			res, err := r.x.Run(context.Background(), r.m, r.input, engine.StartOptions{MachineName: raDir})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != engine.StatusFailed || res.Error != "States.Permissions" || !strings.Contains(res.Cause, tc.cause) || !strings.Contains(res.Cause, "Research") {
				t.Fatalf("Run = %s %s: %s; want FAILED with States.Permissions naming the state and %q", res.Status, res.Error, res.Cause, tc.cause)
			}
			hist := r.history(t, res.ID)
			want := append(slices.Clone(tc.before), "ToolCallFailed "+tc.tool)
			if got := toolCalls(hist); !slices.Equal(got, want) {
				t.Errorf("tool calls %v, want %v", got, want)
			}
			for _, e := range hist {
				if e.Type == engine.EventCheckpointSaved || e.State == "ApproveWrite" {
					t.Errorf("event %s of %s after a refused Research", e.Type, e.State)
				}
			}
			if got := r.elsewhere.requests(); len(got) != 0 {
				t.Errorf("the host outside Domains was reached: %v", got)
			}
			if got := r.docs.requests(); len(got) != 0 {
				t.Errorf("the docs server was reached: %v", got)
			}
			for _, q := range r.chat.seen() {
				if strings.Contains(q.body, raSecret) {
					t.Errorf("%s turn %d saw the secret file", q.agent, q.turn)
				}
			}
			err = filepath.WalkDir(filepath.Join(r.workspace, "reports"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Name() != ".gitkeep" {
					t.Errorf("%s was written", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
