package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// testServer is a Server over the memory store behind a real HTTP server,
// with a token per role.
type testServer struct {
	*httptest.Server
	s      *Server
	st     *store.Memory
	tokens map[Role]string
}

// newTestServer starts a test server; each option may change its Config
// (whose Store is the memory store) before it is made.
func newTestServer(t *testing.T, options ...func(*Config)) *testServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	tokens := map[Role]string{}
	for _, r := range []Role{RoleWorker, RoleViewer, RoleApprover, RoleOperator, RoleAdmin} {
		tok, err := CreateToken(path, r.String()+"-bot", r)
		if err != nil {
			t.Fatal(err)
		}
		tokens[r] = tok
	}
	ts, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	cfg := Config{Store: st, Executor: engine.New(engine.Config{Store: st, OnEscalation: quietEscalation, AgentsFor: storedMocks}), Tokens: ts,
		Logger: nil, MaxBody: 64 << 10, Poll: 10 * time.Millisecond}
	for _, o := range options {
		o(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.log = discardLogger()
	hs := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-done
		s.Close()
	})
	return &testServer{Server: hs, s: s, st: st, tokens: tokens}
}

// quietEscalation drops the test servers' escalation notices.
func quietEscalation(context.Context, engine.EscalationNotice) error { return nil }

// withAgents is an option of newTestServer: extra, by name, are the
// server's own agents, which executions started without a mock get.
func withAgents(t *testing.T, extra map[string]agents.Agent) func(*Config) {
	return func(c *Config) {
		reg := agents.NewRegistry()
		for name, a := range extra {
			if err := reg.Register(name, a); err != nil {
				t.Fatal(err)
			}
		}
		es, ok := c.Store.(engine.Store)
		if !ok {
			t.Fatalf("the test server's store %T is not an engine.Store", c.Store)
		}
		c.Agents = reg
		c.Executor = engine.New(engine.Config{Store: es, OnEscalation: quietEscalation, AgentsFor: func(e *engine.Execution) (*agents.Registry, error) {
			if e.AgentsKind == "mock" {
				return storedMocks(e)
			}
			return reg, nil
		}})
	}
}

// gate is an agent whose calls answer result once the test opens it (or
// end with their context): an execution stays RUNNING in it for as long
// as a test needs, with no delay of the clock. It is safe for concurrent
// use.
type gate struct {
	result any
	opened chan struct{}
	once   sync.Once
}

// newGate returns a closed gate answering result, opened when t ends at
// the latest.
func newGate(t *testing.T, result any) *gate {
	g := &gate{result: result, opened: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

// open lets the calls waiting and to come answer.
func (g *gate) open() { g.once.Do(func() { close(g.opened) }) }

// Invoke waits for the gate to open.
func (g *gate) Invoke(ctx context.Context, _ *agents.Request) (any, error) {
	select {
	case <-g.opened:
		return g.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// call sends a request as role (0: no token) and decodes the answer into
// out when given; it returns the status and the body.
func (ts *testServer) call(t *testing.T, role Role, method, path string, body any, out any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if role != 0 {
		req.Header.Set("Authorization", "Bearer "+ts.tokens[role])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.StatusCode, data
}

// storedMocks rebuilds the agents of an execution started with a mock, as
// aslrun serve's executor does (cmd/aslrun's agentsOf).
func storedMocks(e *engine.Execution) (*agents.Registry, error) {
	reg := agents.NewRegistry()
	if e.AgentsKind != "mock" {
		return reg, nil
	}
	mocks, err := agents.ParseMocks(e.Agents)
	if err != nil {
		return nil, err
	}
	return reg, mocks.Register(reg)
}

// roleCase is a request as a role and the status it must get.
type roleCase struct {
	role         Role
	method, path string
	body         any
	want         int
}

// checkRoles sends each request and checks its status (a refusal is a
// problem document with that status).
func (ts *testServer) checkRoles(t *testing.T, cases []roleCase) {
	t.Helper()
	for _, tc := range cases {
		code, body := ts.call(t, tc.role, tc.method, tc.path, tc.body, nil)
		if code != tc.want {
			t.Errorf("%v %s %s: %d %s, want %d", tc.role, tc.method, tc.path, code, body, tc.want)
		}
		if code >= 400 {
			if p := problemIn(t, body); p.Status != code {
				t.Errorf("%v %s %s: problem status %d", tc.role, tc.method, tc.path, p.Status)
			}
		}
	}
}

// problemOf decodes a problem answer.
func problemIn(t *testing.T, data []byte) api.Problem {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("not a problem document: %s", data)
	}
	return p
}

// waitFor polls an execution until cond holds.
func (ts *testServer) waitFor(t *testing.T, id string, cond func(api.Execution) bool) api.Execution {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var e api.Execution
		if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/"+id, nil, &e); code != 200 {
			t.Fatalf("GET execution %s: %d %s", id, code, body)
		}
		if cond(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s stays %+v", id, e)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const reviewFlow = `{"StartAt":"Write","Governance":{"WritePolicy":{"Rules":[{"Deny":"value == 'forbidden'","Reason":"not that word"}]}},"States":{
	"Write":{"Type":"Task","Agent":"Writer","ResultPath":"$.draft","Next":"Review"},
	"Review":{"Type":"Approval","Prompt":"publish?","Options":["publish","reject"],"Editable":{"Fields":["$.draft.title"],"ResultPath":"$.edited"},"ResultPath":"$.review","Next":"Done"},
	"Done":{"Type":"Pass","End":true}}}`

const reviewMock = `{"Writer":{"0":{"Return":{"title":"Hello"}}}}`

func TestStartDecideAndHistory(t *testing.T) {
	ts := newTestServer(t)
	start := map[string]any{"definition": json.RawMessage(reviewFlow), "input": json.RawMessage(`{"topic":"x"}`), "mock": json.RawMessage(reviewMock), "name": "r1"}
	var e api.Execution
	code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, &e)
	if code != http.StatusCreated || e.ID != "r1" {
		t.Fatalf("start: %d %s", code, body)
	}
	e = ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "WAITING" })
	if len(e.Approvals) != 1 || e.Approvals[0].State != "Review" || e.Approvals[0].Digest == "" {
		t.Fatalf("waiting execution %+v", e)
	}
	// The same start again gives the same execution; another input is a
	// conflict.
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusOK {
		t.Errorf("the same start again: %d %s, want 200", code, body)
	}
	other := map[string]any{"definition": json.RawMessage(reviewFlow), "input": json.RawMessage(`{"topic":"y"}`), "mock": json.RawMessage(reviewMock), "name": "r1"}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", other, nil); code != http.StatusConflict {
		t.Errorf("another input under the name: %d %s, want 409", code, body)
	}

	var inbox api.ApprovalList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/approvals", nil, &inbox); code != 200 || len(inbox.Approvals) != 1 {
		t.Fatalf("inbox: %d %s", code, body)
	}
	ap := inbox.Approvals[0]
	var check api.Check
	ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/check", map[string]any{"option": "publish", "edit": map[string]any{"draft": map[string]any{"title": "Hi"}}}, &check)
	if !check.OK {
		t.Errorf("check of a good edit: %+v", check)
	}
	ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/check", map[string]any{"option": "publish", "edit": map[string]any{"draft": map[string]any{"title": "forbidden"}}}, &check)
	if check.OK || check.Error != "Governance.WriteDenied" {
		t.Errorf("check of a refused edit: %+v", check)
	}
	ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/check", map[string]any{"option": "ship"}, &check)
	if check.OK || check.Refused == "" {
		t.Errorf("check of an option not offered: %+v", check)
	}
	// A stale digest is refused, and so is a decision on behalf of someone.
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/decision", map[string]any{"option": "publish", "digest": "0000"}, nil); code != http.StatusConflict {
		t.Errorf("stale digest: %d %s, want 409", code, body)
	}
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/decision", map[string]any{"option": "publish", "onBehalfOf": "boss"}, nil); code != http.StatusForbidden {
		t.Errorf("on behalf over TCP: %d %s, want 403", code, body)
	}
	code, body = ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/decision", map[string]any{"option": "publish", "comment": "ok", "digest": ap.Digest, "edit": map[string]any{"draft": map[string]any{"title": "Hi"}}}, nil)
	if code != http.StatusAccepted {
		t.Fatalf("decide: %d %s", code, body)
	}
	e = ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	var out map[string]any
	if err := json.Unmarshal(e.Output, &out); err != nil {
		t.Fatal(err)
	}
	review := out["review"].(map[string]any)
	if review["approver"] != "approver-bot" || review["approval"] != "publish" || out["edited"].(map[string]any)["draft"].(map[string]any)["title"] != "Hi" {
		t.Errorf("output %s: want the caller recorded as the approver and the edit applied", e.Output)
	}
	if code, _ := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+ap.ID+"/decision", map[string]any{"option": "publish"}, nil); code != http.StatusNotFound {
		t.Errorf("a second decision: %d, want 404 (nothing pending)", code)
	}

	// History, paged, verified.
	var all []api.Event
	after := ""
	for {
		var h api.History
		path := "/v1/executions/r1/history?limit=3&verify=true"
		if after != "" {
			path += "&after=" + after
		}
		if code, body := ts.call(t, RoleViewer, "GET", path, nil, &h); code != 200 || !h.Verified {
			t.Fatalf("history: %d %s", code, body)
		}
		all = append(all, h.Events...)
		if h.Next == "" {
			break
		}
		after = h.Next
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if all[0].Type != "ExecutionStarted" || all[len(all)-1].Type != "ExecutionSucceeded" {
		t.Errorf("history from %s to %s", all[0].Type, all[len(all)-1].Type)
	}
	var list api.ExecutionList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions?status=succeeded", nil, &list); code != 200 || len(list.Executions) != 1 {
		t.Errorf("list: %d %s", code, body)
	}
	// A finished name is taken for good.
	if code, _ := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusConflict {
		t.Errorf("restart of a finished name: %d, want 409", code)
	}
}

// TestRoles: each role is refused what it may not do, a refused request
// changes nothing, and without a token only the health checks answer.
func TestRoles(t *testing.T) {
	ts := newTestServer(t)
	start := map[string]any{"definition": json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)}
	ts.checkRoles(t, []roleCase{
		{0, "GET", "/v1/executions", nil, http.StatusUnauthorized},
		{0, "POST", "/v1/executions", start, http.StatusUnauthorized},
		{0, "GET", "/healthz", nil, http.StatusOK},
		{0, "GET", "/readyz", nil, http.StatusOK},
		{0, "GET", "/v1/openapi.json", nil, http.StatusOK},
		{0, "POST", "/healthz", nil, http.StatusUnauthorized},
		{RoleViewer, "POST", "/v1/executions", start, http.StatusForbidden},
		{RoleApprover, "POST", "/v1/executions", start, http.StatusForbidden},
		{RoleViewer, "POST", "/v1/approvals/eA/decision", map[string]any{"option": "x"}, http.StatusForbidden},
		{RoleViewer, "POST", "/v1/approvals/eA/check", map[string]any{"option": "x"}, http.StatusForbidden},
		{RoleViewer, "POST", "/v1/executions/x/resume", nil, http.StatusForbidden},
		{RoleViewer, "GET", "/v1/executions", nil, http.StatusOK},
	})
	req, _ := http.NewRequest("GET", ts.URL+"/v1/executions", nil)
	req.Header.Set("Authorization", "Bearer not-a-token")
	if resp, err := ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %v %v", resp, err)
	}
	var list api.ExecutionList
	ts.call(t, RoleViewer, "GET", "/v1/executions", nil, &list)
	if len(list.Executions) != 0 {
		t.Errorf("refused starts created %d executions", len(list.Executions))
	}
}

// TestRefusals: bad requests are problems naming the field at fault.
func TestRefusals(t *testing.T) {
	ts := newTestServer(t)
	big := `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"input":{"s":"` + strings.Repeat("x", 70<<10) + `"}}`
	for _, tc := range []struct {
		name    string
		body    any
		status  int
		pointer string
	}{
		{"not JSON", `{"definition":`, http.StatusBadRequest, ""},
		{"duplicate key", `{"definition":{"StartAt":"P","StartAt":"Q"}}`, http.StatusBadRequest, ""},
		{"unknown field", `{"definitoin":{}}`, http.StatusBadRequest, ""},
		{"no definition", `{}`, http.StatusBadRequest, "/definition"},
		{"invalid definition", `{"definition":{"StartAt":"A","States":{"A":{"Type":"Pass"}}}}`, http.StatusUnprocessableEntity, "/definition/States/A"},
		{"unknown agent", `{"definition":{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Ghost","End":true}}}}`, http.StatusUnprocessableEntity, "/definition"},
		{"bad mock", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"mock":{"A":{"0":{}}}}`, http.StatusBadRequest, "/mock/A/0"},
		{"bad input", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"input":"x"}`, 0, ""},
		{"input the schema refuses", `{"definition":{"StartAt":"P","Governance":{"Guard":{"Schema":{"type":"object","required":["order"]}}},"States":{"P":{"Type":"Pass","End":true}}},"input":{}}`, http.StatusUnprocessableEntity, "/input"},
		{"too large", big, http.StatusRequestEntityTooLarge, ""},
		{"bad name", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"name":"a\u0000b"}`, http.StatusBadRequest, "/name"},
		{"negative maxPayload", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"maxPayload":-2}`, http.StatusBadRequest, "/maxPayload"},
		{"absurd maxPayload", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"maxPayload":1073741825}`, http.StatusBadRequest, "/maxPayload"},
		{"overflowing maxPayload", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"maxPayload":1e30}`, http.StatusBadRequest, "/maxPayload"},
		{"fractional maxPayload", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"maxPayload":1.5}`, http.StatusBadRequest, "/maxPayload"},
		{"input over its maxPayload", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"maxPayload":10,"input":{"a":"0123456789"}}`, http.StatusUnprocessableEntity, "/input"},
		{"string maxPayload", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"maxPayload":"1000"}`, http.StatusBadRequest, "/maxPayload"},
		{"durability none", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"durability":"none"}`, http.StatusBadRequest, "/durability"},
		{"unknown durability", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"durability":"fast"}`, http.StatusBadRequest, "/durability"},
		{"number durability", `{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"durability":1}`, http.StatusBadRequest, "/durability"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", tc.body, nil)
			if tc.status == 0 {
				return // accepted: a string is a fine input
			}
			p := problemIn(t, body)
			if code != tc.status || p.Status != tc.status {
				t.Fatalf("%d %s, want %d", code, body, tc.status)
			}
			if tc.pointer != "" && !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool { return e.Pointer == tc.pointer }) {
				t.Errorf("problem %s names no field at %s", body, tc.pointer)
			}
		})
	}
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/nope", nil, nil); code != http.StatusNotFound || problemIn(t, body).Status != 404 {
		t.Errorf("unknown route: %d %s", code, body)
	}
	if code, _ := ts.call(t, RoleViewer, "GET", "/v1/executions/none", nil, nil); code != http.StatusNotFound {
		t.Errorf("unknown execution: %d", code)
	}
	if code, _ := ts.call(t, RoleViewer, "GET", "/v1/approvals/%21%21", nil, nil); code != http.StatusNotFound {
		t.Errorf("bad approval id: %d", code)
	}
	var v api.Validation
	ts.call(t, RoleViewer, "POST", "/v1/workflows/validate", `{"definition":{"StartAt":"A","States":{"A":{"Type":"Pass"},"B":{"Type":"Wait"}}}}`, &v)
	if v.Valid || len(v.Problems) < 2 {
		t.Errorf("validate: %+v, want every problem", v)
	}
}

// TestOpenAPIDescribesTheRoutes: the document has exactly the routes
// the server serves, each with its role.
func TestOpenAPIDescribesTheRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Role string `json:"x-aslrun-role"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	s := &Server{}
	served := map[string]string{}
	for _, rt := range s.table() {
		role := "none"
		if rt.role != 0 {
			role = rt.role.String()
		} else if method, path, _ := strings.Cut(rt.pattern, " "); method != "GET" || !openPaths[path] {
			t.Errorf("%s has no role but the authentication lets it in only for callers", rt.pattern)
		}
		served[rt.pattern] = role
	}
	documented := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = op.Role
		}
	}
	for p, role := range served {
		if documented[p] != role {
			t.Errorf("%s (role %s) is documented with role %q", p, role, documented[p])
		}
	}
	for p := range documented {
		if _, ok := served[p]; !ok {
			t.Errorf("%s is documented but not served", p)
		}
	}
}

// TestServerAgents: an execution started without a mock runs with the
// server's own agents, and stores their file so that a resume rebuilds
// them.
func TestServerAgents(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.Register("Echo", agents.Func(func(ctx context.Context, req *agents.Request) (any, error) { return "echoed", nil })); err != nil {
		t.Fatal(err)
	}
	file := []byte(`{"Echo":{"Type":"exec","Command":["echo"]}}`)
	ts := newTestServer(t, func(c *Config) { c.Agents, c.AgentsFile = reg, file })
	body := map[string]any{"definition": json.RawMessage(`{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Echo","End":true}}}`), "name": "a"}
	if code, b := ts.call(t, RoleOperator, "POST", "/v1/executions", body, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, b)
	}
	if e := ts.waitFor(t, "a", func(e api.Execution) bool { return e.Status != "RUNNING" }); string(e.Output) != `"echoed"` {
		t.Errorf("output %s, want the server's agent's answer", e.Output)
	}
	e, err := ts.st.Load(context.Background(), "a")
	if err != nil || e.AgentsKind != "agents" || string(e.Agents) != string(file) {
		t.Errorf("stored agents %q %s, want the server's agents file", e.AgentsKind, e.Agents)
	}
}

// TestTraceParent: a start request's traceparent header reaches the
// engine, which stores the trace it makes of it with the execution.
func TestTraceParent(t *testing.T) {
	hooks := engine.Hooks{NewTrace: func(parent string) string { return "made-from:" + parent }}
	ts := newTestServer(t, func(c *Config) { c.Executor = engine.New(engine.Config{Store: c.Store.(engine.Store), Hooks: hooks}) })
	req, _ := http.NewRequest("POST", ts.URL+"/v1/executions", strings.NewReader(`{"name":"tp","definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}}`))
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleOperator])
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req.Header.Set("traceparent", parent)
	resp, err := ts.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("start: %v %v", resp, err)
	}
	resp.Body.Close()
	if e, err := ts.st.Load(context.Background(), "tp"); err != nil || e.Trace != "made-from:"+parent {
		t.Errorf("stored trace %q, %v; want the one made from the header", e.Trace, err)
	}
}

// TestRequestLog: the request log is structured and says the route, the
// caller and the execution; a run's end is logged with its status.
func TestRequestLog(t *testing.T) {
	ts := newTestServer(t)
	var buf syncBuffer
	ts.s.log = slog.New(slog.NewJSONHandler(&buf, nil))
	ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "logged", "definition": json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)}, nil)
	ts.waitFor(t, "logged", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	var sawRequest, sawEnd bool
	for deadline := time.Now().Add(5 * time.Second); !(sawRequest && sawEnd) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(buf.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			switch rec["msg"] {
			case "request":
				if rec["route"] == "GET /v1/executions/{id}" && rec["execution"] == "logged" && rec["caller"] == "viewer-bot" && rec["status"] == float64(200) {
					sawRequest = true
				}
			case "execution stopped running":
				if rec["execution"] == "logged" && rec["status"] == "SUCCEEDED" {
					sawEnd = true
				}
			}
		}
	}
	if !sawRequest || !sawEnd {
		t.Errorf("log (request %v, end %v):\n%s", sawRequest, sawEnd, buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStartMaxPayload: a start's maxPayload is the execution's limit,
// stored with it and shown back; without one the server's limit applies
// and none is shown.
func TestStartMaxPayload(t *testing.T) {
	ts := newTestServer(t)
	// Big makes a document of 1,099 bytes.
	def := `{"StartAt":"Big","States":{"Big":{"Type":"Pass","Parameters":{"s.$":"States.ArrayRange(1, 300, 1)"},"End":true}}}`
	for _, tc := range []struct {
		name, extra string
		role        Role // RoleOperator when 0
		want        int
		wantStatus  string
	}{
		{name: "small", extra: `,"maxPayload":100`, want: 100, wantStatus: "FAILED"},
		{name: "none", extra: `,"maxPayload":-1`, role: RoleAdmin, want: -1, wantStatus: "SUCCEEDED"},
		{name: "server's", extra: ``, want: 0, wantStatus: "SUCCEEDED"},
		{name: "zero", extra: `,"maxPayload":0`, want: 0, wantStatus: "SUCCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e api.Execution
			role := tc.role
			if role == 0 {
				role = RoleOperator
			}
			code, body := ts.call(t, role, "POST", "/v1/executions", `{"name":"`+tc.name+`","definition":`+def+tc.extra+`}`, &e)
			if code != http.StatusCreated {
				t.Fatalf("start: %d %s", code, body)
			}
			if e.MaxPayload != tc.want {
				t.Errorf("start answered maxPayload %d, want %d", e.MaxPayload, tc.want)
			}
			if tc.want == 0 && bytes.Contains(body, []byte(`"maxPayload"`)) {
				t.Errorf("start answered %s, want no maxPayload", body)
			}
			e = ts.waitFor(t, e.ID, func(e api.Execution) bool { return e.Status != "RUNNING" })
			if e.Status != tc.wantStatus || e.MaxPayload != tc.want {
				t.Errorf("execution %s %s maxPayload %d, want %s maxPayload %d", e.Status, e.Error, e.MaxPayload, tc.wantStatus, tc.want)
			}
			if stored, err := ts.st.Load(t.Context(), e.ID); err != nil {
				t.Fatal(err)
			} else if stored.MaxPayload != tc.want {
				t.Errorf("stored MaxPayload %d, want %d", stored.MaxPayload, tc.want)
			}
		})
	}
}

// TestStartDurability: a start's durability is stored with the execution
// and shown back; without one the server's applies and none is shown.
func TestStartDurability(t *testing.T) {
	ts := newTestServer(t)
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`
	for _, want := range []string{"batched", "strict", ""} {
		t.Run("durability "+want, func(t *testing.T) {
			extra := ""
			if want != "" {
				extra = `,"durability":"` + want + `"`
			}
			var e api.Execution
			code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", `{"name":"d-`+want+`","definition":`+def+extra+`}`, &e)
			if code != http.StatusCreated || e.Durability != want {
				t.Fatalf("start: %d %s, want durability %q", code, body, want)
			}
			e = ts.waitFor(t, e.ID, func(e api.Execution) bool { return e.Status != "RUNNING" })
			if e.Status != "SUCCEEDED" || e.Durability != want {
				t.Errorf("execution %s durability %q, want SUCCEEDED %q", e.Status, e.Durability, want)
			}
			if stored, err := ts.st.Load(t.Context(), e.ID); err != nil {
				t.Fatal(err)
			} else if string(stored.Durability) != want {
				t.Errorf("stored durability %q, want %q", stored.Durability, want)
			}
		})
	}
}
