package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aslrun/aslrun/tools"
)

// countingTransport counts the requests that go through it.
type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(req)
}

// httpServer serves testServer over streamable HTTP and records the
// X-Token headers it receives.
func httpServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	srv := testServer(func(string) {})
	var (
		mu     sync.Mutex
		tokens []string
	)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("X-Token"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	return ts, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(tokens)
	}
}

func TestMCPStreamableHTTP(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ts, tokens := httpServer(t)
	defer ts.Close()
	ct := &countingTransport{base: &http.Transport{}}
	defer ct.base.(*http.Transport).CloseIdleConnections()
	client := &http.Client{Transport: ct}

	s, err := Start(context.Background(), ServerConfig{
		Name:   "remote",
		URL:    ts.URL,
		Header: map[string]string{"X-Token": "s3cret"},
	}, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan []tools.Tool, 1)
	s.OnChange(func(ts []tools.Tool) { changes <- ts })

	if got := len(s.Tools()); got != 8 {
		t.Errorf("%d tools, want 8", got)
	}
	got, err := tool(t, s, "remote.echo").Call(context.Background(), nil, map[string]any{"text": "over http"})
	if err != nil || got != "over http" {
		t.Errorf("remote.echo = %v, %v; want over http", got, err)
	}
	if _, err := tool(t, s, "remote.fail").Call(context.Background(), nil, nil); err == nil {
		t.Error("remote.fail succeeded")
	}

	// The tool list changes: the notification comes on the session's
	// standalone stream.
	if _, err := tool(t, s, "remote.addtool").Call(context.Background(), nil, map[string]any{"name": "later"}); err != nil {
		t.Fatal(err)
	}
	ts2 := waitChange(t, changes)
	if !slices.ContainsFunc(ts2, func(tl tools.Tool) bool { return tl.Name == "remote.later" }) {
		t.Error("OnChange got no remote.later")
	}

	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if ct.n.Load() == 0 {
		t.Error("the caller's HTTP client was not used")
	}
	all := tokens()
	if len(all) == 0 {
		t.Fatal("the server got no request")
	}
	for i, tok := range all {
		if tok != "s3cret" {
			t.Errorf("request %d: X-Token = %q, want s3cret", i, tok)
		}
	}
}

// TestMCPStreamableHTTPSessionLost: the server forgets the session (as on
// its restart); the call fails naming the server, and the client starts a
// new session.
func TestMCPStreamableHTTPSessionLost(t *testing.T) {
	srv := testServer(func(string) {})
	var h atomic.Pointer[sdk.StreamableHTTPHandler]
	h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Load().ServeHTTP(w, r)
	}))
	defer ts.Close()
	// The handler that forgot the old session still holds its stream.
	defer ts.CloseClientConnections()
	s, err := Start(context.Background(), ServerConfig{Name: "remote", URL: ts.URL}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	changes := make(chan []tools.Tool, 1)
	s.OnChange(func(ts []tools.Tool) { changes <- ts })

	// A new handler knows none of the old sessions.
	h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	_, err = tool(t, s, "remote.echo").Call(context.Background(), nil, map[string]any{"text": "x"})
	t.Log(toolError(t, err))
	waitChange(t, changes)
	got, err := tool(t, s, "remote.echo").Call(context.Background(), nil, map[string]any{"text": "again"})
	if err != nil || got != "again" {
		t.Errorf("echo after a new session = %v, %v; want again", got, err)
	}
}
