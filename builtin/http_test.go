package builtin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// httpRequest is the request the http tests send.
func httpRequest(t *testing.T, input string) *agents.Request {
	t.Helper()
	return &agents.Request{Agent: "Notify", Execution: "exec-9", State: "Notify", Step: "Notify#2", Attempt: 1, Input: decode(t, input)}
}

func TestHTTPRequest(t *testing.T) {
	t.Setenv("ASLRUN_TEST_HOOK_TOKEN", "hook-secret")
	ep := newEndpoint(t, reply{body: `{}`})
	a, err := HTTP(HTTPConfig{
		URL: ep.url + "/hooks/x?channel=ops", Hosts: ep.hosts,
		Headers: map[string]string{
			"Authorization": "Bearer ${ASLRUN_TEST_HOOK_TOKEN}",
			"User-Agent":    "my-agent/1",
			"X-Plain":       "a$b",
		},
	})
	if err != nil {
		t.Fatalf("HTTP: %v", err)
	}
	input := `{"text": "deployed", "n": 1.10, "tags": ["a"]}`
	if _, err := a.Invoke(context.Background(), httpRequest(t, input)); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	calls := ep.received()
	if len(calls) != 1 {
		t.Fatalf("endpoint got %d requests, want 1", len(calls))
	}
	c := calls[0]
	if c.method != http.MethodPost || c.path != "/hooks/x" {
		t.Errorf("request = %s %s, want POST /hooks/x", c.method, c.path)
	}
	if got := marshal(c.body); got != marshal(decode(t, input)) {
		t.Errorf("request body = %s, want %s", got, marshal(decode(t, input)))
	}
	for name, want := range map[string]string{
		"Content-Type":    "application/json",
		"Accept":          "application/json",
		"Authorization":   "Bearer hook-secret",
		"User-Agent":      "my-agent/1",
		"X-Plain":         "a$b",
		"Idempotency-Key": "exec-9/Notify#2/1",
	} {
		if got := c.header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

func TestHTTPResult(t *testing.T) {
	tests := []struct {
		name  string
		reply reply
		want  string
	}{
		{"200 object", reply{body: `{"delivered": true, "id": 12345678901234567890}`}, `{"delivered": true, "id": 12345678901234567890}`},
		{"201 array", reply{status: 201, body: `[1, "two", null]`}, `[1, "two", null]`},
		{"202 string", reply{status: 202, body: `"queued"`}, `"queued"`},
		{"204 empty", reply{status: 204}, `null`},
		{"200 white space", reply{body: " \r\n"}, `null`},
		{"200 with an Error member is a result", reply{body: `{"Error": "X"}`}, `{"Error": "X"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := newEndpoint(t, tt.reply)
			a, err := HTTP(HTTPConfig{URL: ep.url, Hosts: ep.hosts})
			if err != nil {
				t.Fatalf("HTTP: %v", err)
			}
			got, err := a.Invoke(context.Background(), httpRequest(t, `{}`))
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if want := marshal(decode(t, tt.want)); marshal(got) != want {
				t.Errorf("Invoke = %s, want %s", marshal(got), want)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name      string
		reply     reply
		headers   map[string]string
		wantName  asl.ErrorName // "" for a plain error
		wantUnset string        // the variable a plain error names
		wantCalls int
	}{{
		name:      "429",
		reply:     reply{status: 429, header: map[string]string{"Retry-After": "30"}, body: `{"Error": "Custom"}`},
		wantName:  asl.ErrRateLimitExceeded,
		wantCalls: 1,
	}, {
		name:      "error object",
		reply:     reply{status: 502, body: `{"Error": "Agent.ModelError", "Cause": "upstream model down", "Extra": 1}`},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "error object without a cause",
		reply:     reply{status: 422, body: `{"Error": "Ticket.Invalid"}`},
		wantName:  "Ticket.Invalid",
		wantCalls: 1,
	}, {
		name:      "error object with a cause that is not a string",
		reply:     reply{status: 400, body: `{"Error": "Ticket.Invalid", "Cause": {"field": "id"}}`},
		wantName:  asl.ErrTaskFailed,
		wantCalls: 1,
	}, {
		name:      "plain 500 is not retried",
		reply:     reply{status: 500, body: "internal\n\n   error " + strings.Repeat("x", 300)},
		wantName:  asl.ErrTaskFailed,
		wantCalls: 1,
	}, {
		name:      "unknown status",
		reply:     reply{status: 599},
		wantName:  asl.ErrTaskFailed,
		wantCalls: 1,
	}, {
		name:      "2xx not JSON",
		reply:     reply{body: "OK"},
		wantName:  asl.ErrAgentInvalidOutput,
		wantCalls: 1,
	}, {
		name:      "header variable unset",
		reply:     reply{body: `{}`},
		headers:   map[string]string{"Authorization": "Bearer ${ASLRUN_TEST_SURELY_UNSET}"},
		wantName:  "",
		wantUnset: "ASLRUN_TEST_SURELY_UNSET",
		wantCalls: 0,
	}}
	golden := goldenCauses(t, "http")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := newEndpoint(t, tt.reply)
			a, err := HTTP(HTTPConfig{URL: ep.url, Hosts: ep.hosts, Headers: tt.headers})
			if err != nil {
				t.Fatalf("HTTP: %v", err)
			}
			got, err := a.Invoke(context.Background(), httpRequest(t, `{}`))
			if err == nil {
				t.Fatalf("Invoke = %s, want an error", marshal(got))
			}
			if name := errName(err); name != tt.wantName {
				t.Errorf("Invoke error = %v (%q), want name %q", err, name, tt.wantName)
			}
			var ue *UnsetEnvError
			if tt.wantUnset != "" && (!errors.As(err, &ue) || ue.Name != tt.wantUnset) {
				t.Errorf("Invoke error = %v, want an *UnsetEnvError naming %s", err, tt.wantUnset)
			}
			golden.check(t, err, ep.url, "URL")
			if got := len(ep.received()); got != tt.wantCalls {
				t.Errorf("endpoint got %d requests, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	t.Run("agent Timeout", func(t *testing.T) {
		ep := newEndpoint(t, reply{hang: true})
		a, err := HTTP(HTTPConfig{URL: ep.url, Hosts: ep.hosts, Timeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatalf("HTTP: %v", err)
		}
		_, err = a.Invoke(context.Background(), httpRequest(t, `{}`))
		if name := errName(err); name != asl.ErrTimeout {
			t.Errorf("Invoke error = %v, want %s", err, asl.ErrTimeout)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		ep := newEndpoint(t, reply{hang: true})
		a, err := HTTP(HTTPConfig{URL: ep.url, Hosts: ep.hosts, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("HTTP: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = a.Invoke(ctx, httpRequest(t, `{}`))
		if !errors.Is(err, context.DeadlineExceeded) || errName(err) != "" {
			t.Errorf("Invoke error = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("network error", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		a, err := HTTP(HTTPConfig{URL: url, Hosts: allowURL(t, url)})
		if err != nil {
			t.Fatalf("HTTP: %v", err)
		}
		_, err = a.Invoke(context.Background(), httpRequest(t, `{}`))
		if err == nil || errName(err) != "" {
			t.Errorf("Invoke error = %v, want a plain error (States.TaskFailed)", err)
		}
	})
}

func TestHTTPConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     HTTPConfig
		wantErr bool
	}{
		{"minimal", HTTPConfig{URL: "https://hooks.example.com/x"}, false},
		{"headers", HTTPConfig{URL: "http://localhost:8080", Headers: map[string]string{"Authorization": "Bearer ${T}", "X-A": "a\tb"}}, false},
		{"no URL", HTTPConfig{}, true},
		{"relative URL", HTTPConfig{URL: "/hook"}, true},
		{"no host", HTTPConfig{URL: "http:///x"}, true},
		{"other scheme", HTTPConfig{URL: "file:///etc/passwd"}, true},
		{"bad URL", HTTPConfig{URL: "http://[::1"}, true},
		{"bad header name", HTTPConfig{URL: "http://h", Headers: map[string]string{"X A": "v"}}, true},
		{"empty header name", HTTPConfig{URL: "http://h", Headers: map[string]string{"": "v"}}, true},
		{"control character", HTTPConfig{URL: "http://h", Headers: map[string]string{"X-A": "a\nb"}}, true},
		{"Idempotency-Key", HTTPConfig{URL: "http://h", Headers: map[string]string{"idempotency-key": "k"}}, true},
		{"bad variable", HTTPConfig{URL: "http://h", Headers: map[string]string{"X-A": "${1A}"}}, true},
		{"negative Timeout", HTTPConfig{URL: "http://h", Timeout: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := HTTP(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Errorf("HTTP(%+v) error = %v, want error %t", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

func TestCheckURLHidesSecrets(t *testing.T) {
	got, err := checkURL("https://user:pass@hooks.example.com/x?token=abc#frag")
	if err != nil {
		t.Fatalf("checkURL: %v", err)
	}
	if want := "https://user:xxxxx@hooks.example.com/x"; got != want {
		t.Errorf("checkURL = %q, want %q", got, want)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"  a \n\t b  ", "a b"},
		{"a\xffb", "a\uFFFDb"},
		{strings.Repeat("a", excerptLen), strings.Repeat("a", excerptLen)},
		{strings.Repeat("a", excerptLen+1), strings.Repeat("a", excerptLen) + "…"},
		// A three-byte character split by the cut is dropped whole.
		{strings.Repeat("a", excerptLen-1) + "€", strings.Repeat("a", excerptLen-1) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := excerpt([]byte(tt.in)); got != tt.want {
				t.Errorf("excerpt(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestDecodeResult pins the offset an invalid answer reports.
func TestDecodeResult(t *testing.T) {
	_, err := decodeResult([]byte(`{"a": tru}`), "x")
	var je *jsonvalue.JSONError
	if !errors.As(err, &je) || errName(err) != asl.ErrAgentInvalidOutput {
		t.Fatalf("decodeResult error = %v, want Agent.InvalidOutput wrapping a *jsonvalue.JSONError", err)
	}
	if je.Offset != 6 {
		t.Errorf("JSONError.Offset = %d, want 6", je.Offset)
	}
}

// TestHTTPConfigCopied checks that changing the configuration's map after
// HTTP returned does not change the agent.
func TestHTTPConfigCopied(t *testing.T) {
	ep := newEndpoint(t, reply{body: `{}`})
	headers := map[string]string{"X-Team": "ops"}
	a, err := HTTP(HTTPConfig{URL: ep.url, Hosts: ep.hosts, Headers: headers})
	if err != nil {
		t.Fatalf("HTTP: %v", err)
	}
	headers["X-Team"] = "changed"
	headers["Idempotency-Key"] = "forged"
	if _, err := a.Invoke(context.Background(), httpRequest(t, `{}`)); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	h := ep.received()[0].header
	if h.Get("X-Team") != "ops" || h.Get("Idempotency-Key") != "exec-9/Notify#2/1" {
		t.Errorf("headers X-Team, Idempotency-Key = %q, %q, want ops, exec-9/Notify#2/1", h.Get("X-Team"), h.Get("Idempotency-Key"))
	}
}
