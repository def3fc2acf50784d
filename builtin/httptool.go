package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// defaultToolBytes is how much of a response body a request tool returns
// when its configuration says nothing.
const defaultToolBytes = 1 << 20

// requestMethods are the methods a request tool may be granted.
var requestMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}

// HTTPRequestConfig configures a request tool: an agent a model calls
// with the URL, method, headers and body of one HTTP request. The zero
// value works: GET requests to the hosts the default host policy allows.
// The agent keeps its own copy of the configuration.
type HTTPRequestConfig struct {
	// Methods are the methods the tool may use; empty means GET only.
	Methods []string
	// URLPrefixes, when not empty, are the only URLs the tool may
	// request: a request's URL must start with one of them (compared
	// after parsing, so "https://api.example.com/v1/" does not admit
	// "https://api.example.com.evil.test/").
	URLPrefixes []string
	// Headers are added to every request and win over the caller's. They
	// may hold `${VAR}` references (a token), and so are allowed only
	// with URLPrefixes: a secret goes only where its owner said.
	Headers map[string]string
	// Timeout limits each request, reading the response included; zero
	// means no limit of its own.
	Timeout time.Duration
	// MaxBytes bounds the response body returned; a longer one is cut
	// and the result says "truncated". Zero means 1 MiB.
	MaxBytes int64
	// Hosts decides which hosts the tool may reach (and the redirects it
	// follows); nil means the default policy. A state's Tools.Domains
	// narrows it for each call (agents.ToolLimits).
	Hosts *egress.Policy
}

// requestTool is the agent HTTPRequest returns.
type requestTool struct {
	cfg      HTTPRequestConfig
	prefixes []*url.URL
	hosts    *egress.Policy
	client   *http.Client
}

// HTTPRequest returns a request tool (see HTTPRequestConfig). Its input
// is {"url": "https://…", "method": "GET", "headers": {…}, "body": any}
// (method defaults to GET; a body that is not a string is sent as JSON),
// and its result {"status": 200, "contentType": "…", "body": …,
// "truncated": false}, the body decoded when the response is JSON and
// text otherwise. Every status is a result (the model reads a 404); a
// refused host, URL or method fails the call with States.Permissions,
// bad input with Agent.ToolError, and a request over Timeout with
// States.Timeout. The agent is safe for concurrent use.
func HTTPRequest(cfg HTTPRequestConfig) (agents.Agent, error) {
	if len(cfg.Methods) == 0 {
		cfg.Methods = []string{"GET"}
	}
	cfg.Methods = slices.Clone(cfg.Methods)
	for i, m := range cfg.Methods {
		if !slices.Contains(requestMethods, m) {
			return nil, fmt.Errorf("http request tool: Methods[%d] %q is not one of %v", i, m, requestMethods)
		}
	}
	t := &requestTool{hosts: cfg.Hosts}
	for i, p := range cfg.URLPrefixes {
		if _, err := checkURL(p); err != nil {
			return nil, fmt.Errorf("http request tool: URLPrefixes[%d]: %w", i, err)
		}
		u, _ := url.Parse(p)
		t.prefixes = append(t.prefixes, u)
	}
	if len(cfg.Headers) > 0 && len(cfg.URLPrefixes) == 0 {
		return nil, fmt.Errorf("http request tool: Headers need URLPrefixes, so that they go only to the URLs their owner named")
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Headers)) {
		if err := checkHeader(name, cfg.Headers[name]); err != nil {
			return nil, fmt.Errorf("http request tool: header %s: %w", name, err)
		}
	}
	if cfg.Timeout < 0 || cfg.MaxBytes < 0 || cfg.MaxBytes > maxBody {
		return nil, fmt.Errorf("http request tool: Timeout must not be negative, MaxBytes from 0 to %d", maxBody)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = defaultToolBytes
	}
	cfg.URLPrefixes, cfg.Headers = slices.Clone(cfg.URLPrefixes), maps.Clone(cfg.Headers)
	t.cfg = cfg
	t.client = policyClient(cfg.Hosts)
	return t, nil
}

// Description describes the tool to a model.
func (t *requestTool) Description() string {
	d := "Make an HTTP request (" + strings.Join(t.cfg.Methods, ", ") + ") and read the response's status and body."
	if len(t.cfg.URLPrefixes) > 0 {
		d += " Only URLs starting with " + strings.Join(t.cfg.URLPrefixes, " or ") + " may be requested."
	}
	return d
}

// InputSchema is the JSON Schema of the tool's input.
func (t *requestTool) InputSchema() json.RawMessage {
	methods, _ := json.Marshal(t.cfg.Methods)
	return json.RawMessage(`{"type":"object","properties":{` +
		`"url":{"type":"string","description":"the absolute http or https URL"},` +
		`"method":{"type":"string","enum":` + string(methods) + `},` +
		`"headers":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"body":{"description":"the request body: a string as it is, anything else as JSON"}},` +
		`"required":["url"],"additionalProperties":false}`)
}

var _ agents.Agent = (*requestTool)(nil)

// requestInput is a request tool's input, checked.
type requestInput struct {
	url     *url.URL
	method  string
	headers map[string]string
	body    []byte
	json    bool
}

// input reads and checks a request tool's input.
func (t *requestTool) input(in any) (*requestInput, error) {
	obj, ok := in.(map[string]any)
	if !ok {
		return nil, asl.Errorf(asl.ErrAgentToolError, "the input must be an object with a url, not %s", jsonvalue.TypeName(in))
	}
	for k := range obj {
		if k != "url" && k != "method" && k != "headers" && k != "body" {
			return nil, asl.Errorf(asl.ErrAgentToolError, "unknown field %q in the input (url, method, headers, body)", k)
		}
	}
	r := &requestInput{method: "GET"}
	s, ok := obj["url"].(string)
	if !ok {
		return nil, asl.Errorf(asl.ErrAgentToolError, "the input's url must be a string, not %s", jsonvalue.TypeName(obj["url"]))
	}
	if _, err := checkURL(s); err != nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "the input's url: %v", err)
	}
	r.url, _ = url.Parse(s)
	if m, ok := obj["method"]; ok {
		ms, isStr := m.(string)
		if !isStr {
			return nil, asl.Errorf(asl.ErrAgentToolError, "the input's method must be a string, not %s", jsonvalue.TypeName(m))
		}
		r.method = strings.ToUpper(ms)
	}
	if !slices.Contains(t.cfg.Methods, r.method) {
		return nil, asl.Errorf(asl.ErrPermissions, "the method %s is not one this tool may use (%s)", r.method, strings.Join(t.cfg.Methods, ", "))
	}
	if h, ok := obj["headers"]; ok {
		hm, isObj := h.(map[string]any)
		if !isObj {
			return nil, asl.Errorf(asl.ErrAgentToolError, "the input's headers must be an object of strings, not %s", jsonvalue.TypeName(h))
		}
		r.headers = make(map[string]string, len(hm))
		for name, v := range hm {
			vs, isStr := v.(string)
			if !isStr || !validHeaderName(name) || !validHeaderValue(vs) || strings.EqualFold(name, "Host") {
				return nil, asl.Errorf(asl.ErrAgentToolError, "the input's header %q is not a valid header with a string value", name)
			}
			r.headers[name] = vs
		}
	}
	if b, ok := obj["body"]; ok && b != nil {
		if s, isStr := b.(string); isStr {
			r.body = []byte(s)
		} else {
			data, err := jsonvalue.Marshal(b)
			if err != nil {
				return nil, asl.Errorf(asl.ErrAgentToolError, "the input's body: %v", err)
			}
			r.body, r.json = data, true
		}
	}
	return r, nil
}

// admits reports whether u starts with one of the tool's URL prefixes
// (or the tool has none).
func (t *requestTool) admits(u *url.URL) bool {
	if len(t.prefixes) == 0 {
		return true
	}
	for _, p := range t.prefixes {
		if strings.EqualFold(u.Scheme, p.Scheme) && strings.EqualFold(u.Host, p.Host) && strings.HasPrefix(u.EscapedPath(), p.EscapedPath()) {
			return true
		}
	}
	return false
}

// Invoke makes the request the input describes.
func (t *requestTool) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	in, err := t.input(req.Input)
	if err != nil {
		return nil, err
	}
	target := in.method + " " + in.url.Redacted()
	if !t.admits(in.url) {
		return nil, asl.Errorf(asl.ErrPermissions, "%s: the URL does not start with one of the tool's URLPrefixes (%s)", target, strings.Join(t.cfg.URLPrefixes, ", "))
	}
	client, done, err := clientFor(ctx, t.client, t.hosts, false)
	if err != nil {
		return nil, err
	}
	defer done()
	client = guardRedirects(client, slices.Collect(maps.Keys(t.cfg.Headers)), t.admits)
	callCtx := ctx
	if t.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, t.cfg.Timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(callCtx, in.method, in.url.String(), bytes.NewReader(in.body))
	if err != nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "%s: %v", target, err)
	}
	hr.Header.Set("User-Agent", "aslrun")
	if in.json {
		hr.Header.Set("Content-Type", "application/json")
	}
	for name, v := range in.headers {
		hr.Header.Set(name, v)
	}
	for _, name := range slices.Sorted(maps.Keys(t.cfg.Headers)) {
		v, err := expand(t.cfg.Headers[name], os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("http request tool %s: header %s: %w", req.Agent, name, err)
		}
		hr.Header.Set(name, v)
	}
	resp, err := client.Do(hr)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if callCtx.Err() != nil {
		return nil, asl.Errorf(asl.ErrTimeout, "%s: no complete answer within %s (the tool's Timeout)", target, t.cfg.Timeout)
	}
	if e := denied(in.method, in.url.Redacted(), err); e != nil {
		return nil, e
	}
	var rr *redirectRefused
	if errors.As(err, &rr) {
		return nil, asl.Errorf(asl.ErrPermissions, "%s: %v", target, rr)
	}
	if err != nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "%s: %v", target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxBytes+1))
	if callCtx.Err() != nil && ctx.Err() == nil {
		return nil, asl.Errorf(asl.ErrTimeout, "%s: no complete answer within %s (the tool's Timeout)", target, t.cfg.Timeout)
	}
	if err != nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "%s: read the response: %v", target, err)
	}
	truncated := int64(len(data)) > t.cfg.MaxBytes
	if truncated {
		data = data[:t.cfg.MaxBytes]
	}
	ct := resp.Header.Get("Content-Type")
	return map[string]any{"status": resp.StatusCode, "contentType": ct, "body": responseBody(data, ct, truncated), "truncated": truncated}, nil
}

// clientFor returns the client of one call: base, or, when the call's
// Tools.Domains narrows the hosts, a client of hosts narrowed by them
// (done closes its idle connections). A client given by a Go program
// (custom) cannot be narrowed, so a call with Domains is refused.
func clientFor(ctx context.Context, base *http.Client, hosts *egress.Policy, custom bool) (c *http.Client, done func(), err error) {
	l := agents.ToolLimitsFrom(ctx)
	if l == nil || l.Domains == nil {
		return base, func() {}, nil
	}
	what := fmt.Sprintf("the Tools.Domains of state '%s'", l.State)
	if custom {
		return nil, nil, asl.Errorf(asl.ErrPermissions, "%s cannot be applied: the agent sends through an HTTP client its Go program gave (HTTPConfig.HTTPClient), which aslrun does not confine", what)
	}
	p, err := hosts.Narrow(what, l.Domains.Allowed, l.Domains.HasAllowed, l.Domains.Denied)
	if err != nil {
		return nil, nil, asl.Errorf(asl.ErrPermissions, "%s: %v", what, err)
	}
	c = p.Client()
	return c, c.CloseIdleConnections, nil
}

// redirectRefused is a redirect a request tool refused to follow.
type redirectRefused struct{ to string }

func (e *redirectRefused) Error() string {
	return fmt.Sprintf("the redirect to %s leaves the tool's URLPrefixes", e.to)
}

// guardRedirects returns a copy of c that, beside c's own checks, refuses
// a redirect admits refuses (nil: none), and drops the owner's headers
// (whose names are given: they may carry secrets) from a redirect to
// another scheme or host, as net/http drops Authorization and cookies.
func guardRedirects(c *http.Client, headers []string, admits func(*url.URL) bool) *http.Client {
	g := *c
	check := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if check != nil {
			if err := check(req, via); err != nil {
				return err
			}
		} else if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if admits != nil && !admits(req.URL) {
			return &redirectRefused{to: req.URL.Redacted()}
		}
		first := via[0].URL
		if !strings.EqualFold(req.URL.Scheme, first.Scheme) || !strings.EqualFold(req.URL.Host, first.Host) {
			for _, h := range headers {
				req.Header.Del(h)
			}
		}
		return nil
	}
	return &g
}

// responseBody is a response body as a tool result: JSON decoded when the
// content type says JSON and it decodes (and was not cut), text
// otherwise (invalid UTF-8 replaced).
func responseBody(data []byte, contentType string, truncated bool) any {
	mt, _, _ := mime.ParseMediaType(contentType)
	if !truncated && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		if v, err := jsonvalue.Decode(data); err == nil {
			return v
		}
	}
	if truncated {
		// Drop a character the cut split.
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
			if r, size := utf8.DecodeLastRune(data); r != utf8.RuneError || size != 1 {
				break
			}
			data = data[:len(data)-1]
		}
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}
