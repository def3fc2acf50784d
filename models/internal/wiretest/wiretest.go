// Package wiretest is a scripted HTTP server for the providers' tests: it
// answers each request with the next scripted handler and records what it
// received.
package wiretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is one request the server received.
type Request struct {
	Method, Path string
	Header       http.Header
	Raw          []byte
	// Body is Raw decoded (numbers as json.Number), nil when it is not JSON.
	Body map[string]any
}

// Server answers the n-th request with its n-th step.
type Server struct {
	*httptest.Server
	t     testing.TB
	mu    sync.Mutex
	steps []http.HandlerFunc
	reqs  []Request
}

// New starts a server that answers with steps, in order; a request beyond
// them fails the test and gets a 599. The server is closed at the test's
// end.
func New(t testing.TB, steps ...http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{t: t, steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&req.Body) != nil {
		req.Body = nil
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if n >= len(s.steps) {
		s.t.Errorf("request %d to %s: only %d scripted", n+1, r.URL.Path, len(s.steps))
		w.WriteHeader(599)
		return
	}
	s.steps[n](w, r)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// JSON answers with status and body as application/json; header holds
// name, value pairs.
func JSON(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// SSE answers 200 with text/event-stream, writing and flushing each event
// as given (its "event:" and "data:" lines, without the blank line that
// ends it).
func SSE(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, _ = fmt.Fprintf(w, "%s\n\n", strings.TrimRight(e, "\n"))
			w.(http.Flusher).Flush()
		}
	}
}

// Data returns an SSE event of one data line per value, each value's JSON.
func Data(v any) string { return "data: " + Compact(v) }

// Get returns the value at the path of names and indexes in v (decoded
// JSON), or nil.
func Get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k < 0 || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// Compact returns v as compact JSON, for comparisons.
func Compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("!%v", err)
	}
	return string(b)
}
