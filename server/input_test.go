package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

const passDef = `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`

// TestStrictFieldNames: every route that takes a JSON body refuses a
// member whose name is a field's in another case, naming it and the field
// it resembles.
func TestStrictFieldNames(t *testing.T) {
	ts := newTestServer(t)
	approval := "/v1/approvals/" + ts.waitingReview(t, "review").ID
	for _, tc := range []struct {
		role          Role
		path, body    string
		pointer, hint string
	}{
		{RoleOperator, "/v1/executions", `{"definition":` + passDef + `,"Input":{"a":1}}`, "/Input", "/input"},
		{RoleOperator, "/v1/executions", `{"definition":` + passDef + `,"NAME":"x"}`, "/NAME", "/name"},
		{RoleOperator, "/v1/executions", `{"definition":` + passDef + `,"maxpayload":-1}`, "/maxpayload", "/maxPayload"},
		{RoleOperator, "/v1/executions", `{"definition":` + passDef + `,"inputs":{}}`, "/inputs", ""},
		{RoleViewer, "/v1/workflows/validate", `{"Definition":` + passDef + `}`, "/Definition", "/definition"},
		{RoleAdmin, "/v1/workflows", `{"Name":"w","definition":` + passDef + `}`, "/Name", "/name"},
		{RoleApprover, approval + "/decision", `{"Option":"approve"}`, "/Option", "/option"},
		{RoleApprover, approval + "/check", `{"option":"approve","onbehalfof":"x"}`, "/onbehalfof", "/onBehalfOf"},
		{RoleOperator, "/v1/executions/x/rollback", `{"CheckPoint":"c"}`, "/CheckPoint", "/checkpoint"},
		{RoleOperator, "/v1/executions/x/fork", `{"checkpoint":"c","Name":"y"}`, "/Name", "/name"},
		{RoleOperator, "/v1/executions/x/redrive", `{"PATCH":[]}`, "/PATCH", "/patch"},
		{RoleOperator, "/v1/executions/x/stop", `{"Cause":"c"}`, "/Cause", "/cause"},
		{RoleWorker, "/v1/task-tokens/success", `{"Token":"t","output":1}`, "/Token", "/token"},
		{RoleWorker, "/v1/task-tokens/failure", `{"token":"t","Error":"E"}`, "/Error", "/error"},
		{RoleWorker, "/v1/task-tokens/heartbeat", `{"tOKEN":"t"}`, "/tOKEN", "/token"},
		{RoleWorker, "/v1/activities/a/poll", `{"workername":"w"}`, "/workername", "/workerName"},
		{RoleOperator, "/v1/executions", `{"definition":` + passDef + `,"a/b~c":1}`, "/a~1b~0c", ""},
	} {
		t.Run(tc.path+tc.pointer, func(t *testing.T) {
			code, body := ts.call(t, tc.role, "POST", tc.path, tc.body, nil)
			p := problemIn(t, body)
			if code != http.StatusBadRequest || p.Type != api.ProblemType+"bad-request" {
				t.Fatalf("%d %s, want 400 bad-request", code, body)
			}
			if len(p.Errors) != 1 || p.Errors[0].Pointer != tc.pointer {
				t.Fatalf("problem %s, want one error at %s", body, tc.pointer)
			}
			if !strings.Contains(p.Detail, "unknown field "+tc.pointer) {
				t.Errorf("detail %q names no unknown field %s", p.Detail, tc.pointer)
			}
			if tc.hint != "" && !strings.Contains(p.Detail, "did you mean "+tc.hint+"?") {
				t.Errorf("detail %q, want the hint %s", p.Detail, tc.hint)
			}
		})
	}
	// Nothing was started under the mis-cased name, nor decided.
	if code, _ := ts.call(t, RoleViewer, "GET", "/v1/executions/x", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET /v1/executions/x: %d, want 404", code)
	}
	ts.checkPending(t, "review", 1)
}

// TestCheckFields: the walk goes into nested structs, slices and maps,
// follows embedded structs, and stops at values that decode themselves.
func TestCheckFields(t *testing.T) {
	type inner struct {
		Value string `json:"value"`
	}
	type Embedded struct {
		Shared string `json:"shared"`
	}
	type outer struct {
		Embedded
		Inner   inner            `json:"inner"`
		List    []inner          `json:"list"`
		ByKey   map[string]inner `json:"byKey"`
		Ptr     *inner           `json:"ptr"`
		Doc     json.RawMessage  `json:"doc"`
		When    time.Time        `json:"when"`
		Skipped string           `json:"-"`
		Plain   string
		hidden  string
	}
	_ = outer{}.hidden
	for _, tc := range []struct {
		body, want string // want: the pointer refused; "" for none
	}{
		{`{"shared":"a","inner":{"value":"v"},"list":[{"value":"v"}],"byKey":{"k":{"value":"v"}},"ptr":{"value":"v"},"doc":{"Any":1},"when":"2026-01-01T00:00:00Z","Plain":"p"}`, ""},
		{`{"inner":{"Value":"v"}}`, "/inner/Value"},
		{`{"list":[{"value":"v"},{"vaLue":"v"}]}`, "/list/1/vaLue"},
		{`{"byKey":{"a/b":{"x":1}}}`, "/byKey/a~1b/x"},
		{`{"ptr":{"VALUE":1}}`, "/ptr/VALUE"},
		{`{"Shared":"a"}`, "/Shared"},
		{`{"Embedded":{}}`, "/Embedded"},
		{`{"Skipped":"a"}`, "/Skipped"},
		{`{"-":"a"}`, "/-"},
		{`{"plain":"a"}`, "/plain"},
		{`{"hidden":"a"}`, "/hidden"},
		{`{"inner":"not an object","list":{"a":1}}`, ""}, // the decoder refuses the kinds
	} {
		doc, err := jsonvalue.Decode([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if u := checkFields(doc, reflect.TypeFor[outer](), ""); u != nil {
			got = u.pointer
		}
		if got != tc.want {
			t.Errorf("checkFields(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzDecodeBody: the request decoder never panics, and whatever it
// accepts has only member names that are exactly the fields'.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"definition":` + passDef + `,"input":{"a":1},"name":"n","maxPayload":5}`,
		`{"Input":1}`, `{"input":{"Input":1}}`, `{"mock":{"A":[{"Return":1}]}}`, `{"name":"a\u0000"}`,
		`[]`, `null`, `{"definition":1e999}`, `{"maxPayload":"x"}`, `{"a":{"b":{"c":[1,{"d":2}]}}}`, `{"name":"x","name":"y"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []any{&api.StartExecution{}, &api.Decision{}, &api.Fork{}, &api.TaskSuccess{}} {
			r := httptest.NewRequest("POST", "/", bytes.NewReader(data))
			if err := decodeBody(r, v); err != nil {
				var p *problem
				if !errors.As(err, &p) || p.status != http.StatusBadRequest {
					t.Fatalf("decodeBody(%q) = %v, want a 400 problem", data, err)
				}
				continue
			}
			doc, err := jsonvalue.Decode(data)
			if err != nil {
				t.Fatalf("decodeBody accepted %q, which is not strict JSON: %v", data, err)
			}
			obj, ok := doc.(map[string]any)
			if !ok {
				continue // null
			}
			fields := jsonFields(reflect.TypeOf(v).Elem())
			for k := range obj {
				if _, ok := fields[k]; !ok {
					t.Fatalf("decodeBody(%q) into %T accepted the member %q", data, v, k)
				}
			}
		}
	})
}

// TestBearerScheme: the Authorization scheme's name is case-insensitive;
// anything but Bearer and a token is not a bearer token.
func TestBearerScheme(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.tokens[RoleViewer]
	for _, tc := range []struct {
		header string
		want   int
	}{
		{"Bearer " + tok, 200},
		{"bearer " + tok, 200},
		{"BEARER " + tok, 200},
		{"bEaReR   " + tok, 200},
		{"Basic " + tok, 401},
		{"Bearer" + tok, 401},
		{"Bearer ", 401},
		{"Bearer  ", 401},
		{tok, 401},
		{"Bearer x" + tok, 401},
	} {
		req, err := http.NewRequest("GET", ts.URL+"/v1/executions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", tc.header)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: %d, want %d", strings.Replace(tc.header, tok, "TOKEN", 1), resp.StatusCode, tc.want)
		}
	}
}

// TestForbiddenText: a refused role is told the route and the role it
// needs, the method once.
func TestForbiddenText(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		role         Role
		method, path string
		want         string
	}{
		{RoleViewer, "POST", "/v1/executions", "viewer-bot has the role viewer; POST /v1/executions needs operator"},
		{RoleOperator, "POST", "/v1/workflows", "operator-bot has the role operator; POST /v1/workflows needs admin"},
		{RoleViewer, "POST", "/v1/approvals/x/decision", "viewer-bot has the role viewer; POST /v1/approvals/{id}/decision needs approver"},
		{RoleApprover, "POST", "/v1/task-tokens/heartbeat", "approver-bot has the role approver; POST /v1/task-tokens/heartbeat needs worker, operator or admin"},
		{RoleWorker, "GET", "/v1/executions", "worker-bot has the role worker; GET /v1/executions needs viewer"},
	} {
		code, body := ts.call(t, tc.role, tc.method, tc.path, `{}`, nil)
		if p := problemIn(t, body); code != http.StatusForbidden || p.Detail != tc.want {
			t.Errorf("%v %s %s: %d %q, want 403 %q", tc.role, tc.method, tc.path, code, p.Detail, tc.want)
		}
	}
}

// TestMaxPayloadByRole: an operator may keep or lower the server's
// payload limit; only an admin may raise it or lift it.
func TestMaxPayloadByRole(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.Executor = engine.New(engine.Config{Store: c.Store.(*store.Memory), MaxPayloadSize: 1000, AgentsFor: storedMocks})
	})
	for _, tc := range []struct {
		role       Role
		maxPayload int
		want       int
	}{
		{RoleOperator, 0, http.StatusCreated},
		{RoleOperator, 100, http.StatusCreated},
		{RoleOperator, 1000, http.StatusCreated},
		{RoleOperator, 1001, http.StatusForbidden},
		{RoleOperator, -1, http.StatusForbidden},
		{RoleOperator, 1 << 30, http.StatusForbidden},
		{RoleAdmin, 1001, http.StatusCreated},
		{RoleAdmin, -1, http.StatusCreated},
		{RoleAdmin, 500, http.StatusCreated},
	} {
		body := `{"definition":` + passDef + `,"maxPayload":` + jsonInt(tc.maxPayload) + `}`
		code, data := ts.call(t, tc.role, "POST", "/v1/executions", body, nil)
		if code != tc.want {
			t.Errorf("%v maxPayload %d: %d %s, want %d", tc.role, tc.maxPayload, code, data, tc.want)
			continue
		}
		if code == http.StatusForbidden {
			p := problemIn(t, data)
			if len(p.Errors) != 1 || p.Errors[0].Pointer != "/maxPayload" || !strings.Contains(p.Detail, "needs admin") || !strings.Contains(p.Detail, "1000 bytes") {
				t.Errorf("%v maxPayload %d: problem %s, want /maxPayload, the server's limit and the role needed", tc.role, tc.maxPayload, data)
			}
		}
	}
	// A server with no limit has nothing to raise.
	open := newTestServer(t, func(c *Config) {
		c.Executor = engine.New(engine.Config{Store: c.Store.(*store.Memory), MaxPayloadSize: -1, AgentsFor: storedMocks})
	})
	for _, n := range []int{-1, 1 << 30} {
		if code, data := open.call(t, RoleOperator, "POST", "/v1/executions", `{"definition":`+passDef+`,"maxPayload":`+jsonInt(n)+`}`, nil); code != http.StatusCreated {
			t.Errorf("operator maxPayload %d on a server with no limit: %d %s, want 201", n, code, data)
		}
	}
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// local serves the server on a unix socket, whose peer is the local
// admin, and returns a client of it.
func (ts *testServer) local(t *testing.T) *http.Client {
	t.Helper()
	path := filepath.Join(socketDir(t), "s.sock")
	ln := listenSocket(t, path)
	hs := &http.Server{Handler: ts.s.Handler(), ConnContext: ConnContext}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// TestNamesRefused: a name with a control, bidirectional formatting or
// separator character is refused at /name (a start, a fork) or at
// /onBehalfOf (a decision), and nothing is created.
func TestNamesRefused(t *testing.T) {
	ts := newTestServer(t)
	bad := []string{"a\nb\u001b[31m", "invoice\u202efdp.exe", "a\u2066b", "a\u200fb", "a\x7fb", "a\u0085b", "a\rb", "a\u2028b", "a/b"}
	for _, name := range bad {
		body := map[string]any{"definition": json.RawMessage(passDef), "name": name}
		code, data := ts.call(t, RoleOperator, "POST", "/v1/executions", body, nil)
		p := problemIn(t, data)
		if code != http.StatusBadRequest || p.Type != api.ProblemType+"bad-request" || len(p.Errors) != 1 || p.Errors[0].Pointer != "/name" {
			t.Errorf("start named %q: %d %s, want 400 bad-request at /name", name, code, data)
		}
		if code, data := ts.call(t, RoleOperator, "POST", "/v1/executions/none/fork", map[string]any{"checkpoint": "c", "name": name}, nil); code != http.StatusBadRequest || problemIn(t, data).Errors[0].Pointer != "/name" {
			t.Errorf("fork named %q: %d %s, want 400 at /name", name, code, data)
		}
	}
	var list api.ExecutionList
	if ts.call(t, RoleViewer, "GET", "/v1/executions", nil, &list); len(list.Executions) != 0 {
		t.Errorf("executions %+v, want none", list.Executions)
	}
	// A name of letters from anywhere is fine.
	if code, data := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(passDef), "name": "Bestellung für Müller 注文"}, nil); code != http.StatusCreated {
		t.Errorf("start named in Unicode: %d %s", code, data)
	}
	// The local admin decides on behalf of a name, checked the same way.
	ap := ts.waitingReview(t, "review")
	c := ts.local(t)
	for _, who := range bad {
		data, _ := json.Marshal(map[string]any{"option": "publish", "onBehalfOf": who})
		resp, err := c.Post("http://aslrun/v1/approvals/"+ap.ID+"/decision", "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		code, body, _ := read(t, resp)
		if p := problemIn(t, []byte(body)); code != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Pointer != "/onBehalfOf" {
			t.Errorf("decide on behalf of %q: %d %s, want 400 at /onBehalfOf", who, code, body)
		}
	}
	ts.checkPending(t, "review", 1)
}

// FuzzBearerToken: the Authorization header's parser never panics, and
// gives a token only for the Bearer scheme, in any case, and never an
// empty one or one starting with a space.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer aslrun_x", "bearer x", "BEARER  x", "Basic x", "Bearer", "Bearer ", "", "Bearerx y", "bEaReR \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := bearerToken(header)
		if !ok {
			return
		}
		scheme, _, _ := strings.Cut(header, " ")
		if !strings.EqualFold(scheme, "Bearer") || tok == "" || tok[0] == ' ' || !strings.HasSuffix(header, tok) {
			t.Fatalf("bearerToken(%q) = %q", header, tok)
		}
	})
}
