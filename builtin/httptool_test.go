package builtin

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
)

// docServer answers GET /docs/* with JSON, /text with text, /big with
// 4 KiB, and echoes a POST's method, headers and body.
func docServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/docs/"):
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			io.WriteString(w, `{"doc": "`+strings.TrimPrefix(r.URL.Path, "/docs/")+`", "n": 1.50}`)
		case r.URL.Path == "/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "plain words")
		case r.URL.Path == "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("é", 2048))
		case r.URL.Path == "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"method": "`+r.Method+`", "type": "`+r.Header.Get("Content-Type")+`", "auth": "`+r.Header.Get("Authorization")+`", "x": "`+r.Header.Get("X-Model")+`", "len": `+strconv.Itoa(len(body))+`}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPRequestTool(t *testing.T) {
	t.Setenv("ASLRUN_TEST_TOOL_TOKEN", "tok")
	srv := docServer(t)
	tool, err := HTTPRequest(HTTPRequestConfig{
		Methods: []string{"GET", "POST"}, URLPrefixes: []string{srv.URL + "/"},
		Headers: map[string]string{"Authorization": "Bearer ${ASLRUN_TEST_TOOL_TOKEN}"},
		Hosts:   allowURL(t, srv.URL), MaxBytes: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, input, want string
	}{
		{"json body decoded", `{"url": "` + srv.URL + `/docs/a"}`, `{"body":{"doc":"a","n":1.50},"contentType":"application/json; charset=utf-8","status":200,"truncated":false}`},
		{"text body", `{"url": "` + srv.URL + `/text", "method": "get"}`, `{"body":"plain words","contentType":"text/plain","status":200,"truncated":false}`},
		{"a 404 is a result", `{"url": "` + srv.URL + `/nothing"}`, `{"body":"404 page not found\n","contentType":"text/plain; charset=utf-8","status":404,"truncated":false}`},
		{"post json with the owner's header over the model's", `{"url": "` + srv.URL + `/echo", "method": "POST", "headers": {"X-Model": "m", "Authorization": "forged"}, "body": {"q": 1}}`,
			`{"body":{"auth":"Bearer tok","len":7,"method":"POST","type":"application/json","x":"m"},"contentType":"application/json","status":200,"truncated":false}`},
		{"string body as it is", `{"url": "` + srv.URL + `/echo", "method": "POST", "body": "abc"}`,
			`{"body":{"auth":"Bearer tok","len":3,"method":"POST","type":"","x":""},"contentType":"application/json","status":200,"truncated":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tool.Invoke(context.Background(), &agents.Request{Agent: "Web", Input: decode(t, tt.input)})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if got := marshal(out); got != tt.want {
				t.Errorf("result = %s\nwant     %s", got, tt.want)
			}
		})
	}
	t.Run("truncated on a character boundary", func(t *testing.T) {
		out, err := tool.Invoke(context.Background(), &agents.Request{Input: decode(t, `{"url": "`+srv.URL+`/big"}`)})
		if err != nil {
			t.Fatal(err)
		}
		m := out.(map[string]any)
		body := m["body"].(string)
		if m["truncated"] != true || len(body) != 1000 || strings.ContainsRune(body, '\uFFFD') {
			t.Errorf("truncated=%v len=%d, want true and 1000 bytes of whole characters", m["truncated"], len(body))
		}
	})
}

func TestHTTPRequestToolRefuses(t *testing.T) {
	srv := docServer(t)
	tool, err := HTTPRequest(HTTPRequestConfig{URLPrefixes: []string{srv.URL + "/docs/"}, Hosts: allowURL(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	open, err := HTTPRequest(HTTPRequestConfig{Hosts: allowURL(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	tests := []struct {
		name   string
		tool   agents.Agent
		input  string
		limits *agents.ToolLimits
		err    asl.ErrorName
		cause  string
	}{
		{"not an object", tool, `"x"`, nil, asl.ErrAgentToolError, "must be an object"},
		{"no url", tool, `{}`, nil, asl.ErrAgentToolError, "url must be a string"},
		{"unknown field", tool, `{"url": "` + srv.URL + `/docs/a", "verb": "GET"}`, nil, asl.ErrAgentToolError, `unknown field "verb"`},
		{"not http", tool, `{"url": "file:///etc/passwd"}`, nil, asl.ErrAgentToolError, "not an http or https URL"},
		{"method not granted", tool, `{"url": "` + srv.URL + `/docs/a", "method": "DELETE"}`, nil, asl.ErrPermissions, "DELETE is not one this tool may use (GET)"},
		{"outside the prefix", tool, `{"url": "` + srv.URL + `/text"}`, nil, asl.ErrPermissions, "does not start with one of the tool's URLPrefixes"},
		{"prefix host lookalike", tool, `{"url": "http://` + u.Hostname() + `.evil.test:` + u.Port() + `/docs/a"}`, nil, asl.ErrPermissions, "URLPrefixes"},
		{"bad header", open, `{"url": "` + srv.URL + `/text", "headers": {"Host": "x"}}`, nil, asl.ErrAgentToolError, `header "Host"`},
		{"owner's hosts", open, `{"url": "http://127.0.0.2:1/x"}`, nil, asl.ErrPermissions, "is loopback"},
		{"Domains narrow", open, `{"url": "` + srv.URL + `/text"}`, &agents.ToolLimits{State: "Research", Domains: &agents.DomainLimits{Allowed: []string{"*.example.com"}, HasAllowed: true}}, asl.ErrPermissions, "the Tools.Domains of state 'Research': it is not in Allowed [*.example.com]"},
		{"Domains deny", open, `{"url": "` + srv.URL + `/text"}`, &agents.ToolLimits{State: "Research", Domains: &agents.DomainLimits{Denied: []string{u.Hostname()}}}, asl.ErrPermissions, "it matches Denied"},
		{"Domains cannot widen", open, `{"url": "http://127.0.0.2:1/x"}`, &agents.ToolLimits{State: "R", Domains: &agents.DomainLimits{Allowed: []string{"127.0.0.2"}, HasAllowed: true}}, asl.ErrPermissions, "is loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.limits != nil {
				ctx = agents.WithToolLimits(ctx, tt.limits)
			}
			_, err := tt.tool.Invoke(ctx, &agents.Request{Input: decode(t, tt.input)})
			if errName(err) != tt.err || !strings.Contains(errCause(err), tt.cause) {
				t.Fatalf("Invoke = %v, want %s containing %q", err, tt.err, tt.cause)
			}
		})
	}
	t.Run("Domains allowing the host", func(t *testing.T) {
		ctx := agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "R", Domains: &agents.DomainLimits{Allowed: []string{u.Hostname()}, HasAllowed: true}})
		if _, err := open.Invoke(ctx, &agents.Request{Input: decode(t, `{"url": "`+srv.URL+`/text"}`)}); err != nil {
			t.Fatalf("Invoke = %v, want the allowed host reached", err)
		}
	})
}

func TestHTTPRequestToolConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  HTTPRequestConfig
		want string
	}{
		{"method", HTTPRequestConfig{Methods: []string{"CONNECT"}}, `Methods[0] "CONNECT"`},
		{"prefix", HTTPRequestConfig{URLPrefixes: []string{"ftp://x/"}}, "URLPrefixes[0]"},
		{"headers without prefixes", HTTPRequestConfig{Headers: map[string]string{"Authorization": "${T}"}}, "Headers need URLPrefixes"},
		{"max bytes", HTTPRequestConfig{MaxBytes: -1}, "MaxBytes"},
	} {
		if _, err := HTTPRequest(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: HTTPRequest = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestHTTPAgentDomains(t *testing.T) {
	ep := newEndpoint(t, reply{body: `{}`})
	a, err := HTTP(HTTPConfig{URL: ep.url + "/hook", Hosts: ep.hosts})
	if err != nil {
		t.Fatal(err)
	}
	ctx := agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "S", Domains: &agents.DomainLimits{HasAllowed: true}})
	if _, err := a.Invoke(ctx, httpRequest(t, `{}`)); errName(err) != asl.ErrPermissions || !strings.Contains(errCause(err), "its Allowed list is empty") {
		t.Fatalf("Invoke under an empty Domains.Allowed = %v, want States.Permissions", err)
	}
	if len(ep.received()) != 0 {
		t.Fatal("the refused call reached the endpoint")
	}
	custom, err := HTTP(HTTPConfig{URL: ep.url + "/hook", HTTPClient: (&egress.Policy{}).Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx = agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "S", Domains: &agents.DomainLimits{Denied: []string{"x.test"}}})
	if _, err := custom.Invoke(ctx, httpRequest(t, `{}`)); errName(err) != asl.ErrPermissions || !strings.Contains(errCause(err), "HTTPClient") {
		t.Fatalf("Invoke of a Go client's agent under Domains = %v, want States.Permissions naming HTTPClient", err)
	}
}

// TestHTTPRedirectsKeepSecrets: a request tool does not follow a redirect
// out of its URLPrefixes, and neither http agent forwards the owner's
// headers to another host.
func TestHTTPRedirectsKeepSecrets(t *testing.T) {
	t.Setenv("ASLRUN_TEST_API_KEY", "k-123")
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("X-Api-Key"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok": true}`)
	}))
	defer other.Close()
	trusted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k-123" {
			t.Errorf("the trusted host got X-Api-Key %q", r.Header.Get("X-Api-Key"))
		}
		http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
	}))
	defer trusted.Close()
	hosts, err := egress.New(egress.Config{Allow: []string{strings.TrimPrefix(trusted.URL, "http://"), strings.TrimPrefix(other.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{"X-Api-Key": "${ASLRUN_TEST_API_KEY}"}
	tool, err := HTTPRequest(HTTPRequestConfig{URLPrefixes: []string{trusted.URL + "/api/"}, Headers: headers, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tool.Invoke(context.Background(), &agents.Request{Input: decode(t, `{"url": "`+trusted.URL+`/api/x"}`)})
	if errName(err) != asl.ErrPermissions || !strings.Contains(errCause(err), "leaves the tool's URLPrefixes") {
		t.Fatalf("Invoke redirected out of the prefixes = %v, want States.Permissions", err)
	}
	if len(seen) != 0 {
		t.Fatalf("the other host was reached %d times", len(seen))
	}
	a, err := HTTP(HTTPConfig{URL: trusted.URL + "/hook", Headers: headers, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(context.Background(), httpRequest(t, `{}`)); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if len(seen) != 1 || seen[0] != "" {
		t.Fatalf("the other host got X-Api-Key %q, want the redirect followed without it", seen)
	}
}
