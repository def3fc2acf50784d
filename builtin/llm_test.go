package builtin

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// reply is one scripted answer of a fake endpoint.
type reply struct {
	status int // 0 means 200
	header map[string]string
	body   string
	// hang makes the endpoint answer nothing until the client gives up.
	hang bool
}

// call is a request a fake endpoint received.
type call struct {
	method, path string
	header       http.Header
	body         any // the decoded JSON body; nil when it was not JSON
}

// endpoint is an httptest server that answers with its replies in order
// (the last one again once they are used up) and records the requests.
type endpoint struct {
	url     string
	hosts   *egress.Policy // allows url
	mu      sync.Mutex
	replies []reply
	calls   []call
}

func newEndpoint(t *testing.T, replies ...reply) *endpoint {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("newEndpoint: no replies")
	}
	e := &endpoint{replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("endpoint: read the request: %v", err)
		}
		body, err := jsonvalue.Decode(data)
		if err != nil {
			t.Errorf("endpoint: the request body %q is not strict JSON: %v", data, err)
		}
		e.mu.Lock()
		rep := e.replies[min(len(e.calls), len(e.replies)-1)]
		e.calls = append(e.calls, call{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		e.mu.Unlock()
		if rep.hang {
			<-r.Context().Done()
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		if rep.status != 0 {
			w.WriteHeader(rep.status)
		}
		io.WriteString(w, rep.body)
	}))
	t.Cleanup(srv.Close)
	e.url, e.hosts = srv.URL, allowURL(t, srv.URL)
	return e
}

// host returns the endpoint's host and port, as a host pattern.
func (e *endpoint) host() string { return strings.TrimPrefix(e.url, "http://") }

func (e *endpoint) received() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]call(nil), e.calls...)
}

// chat returns a chat-completion response answering content, with usage
// when usage is not empty.
func chat(content, usage string) string {
	s := `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` +
		strconv.Quote(content) + `},"finish_reason":"stop"}]`
	if usage != "" {
		s += `,"usage":` + usage
	}
	return s + "}"
}

// bubbleClient returns a client for use inside a synctest bubble: without
// keep-alive, no connection goroutine outlives a request, so the bubble's
// clock can advance while the agent waits to retry.
func bubbleClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestLLMRequest(t *testing.T) {
	const keyVar = "ASLRUN_TEST_LLM_KEY"
	t.Setenv(keyVar, "sk-from-env")
	temp := 0.2
	tests := []struct {
		name      string
		cfg       LLMConfig
		input     string
		violation string
		wantBody  string
		wantAuth  string
	}{{
		name:     "prompt with every option",
		cfg:      LLMConfig{Model: "gpt-4o-mini", APIKeyEnv: keyVar, System: "You classify tickets.", Temperature: &temp, MaxTokens: 100, JSON: true},
		input:    `{"prompt": "Classify: my card was charged twice", "ignored": 1}`,
		wantBody: `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You classify tickets."},{"role":"user","content":"Classify: my card was charged twice"}],"temperature":0.2,"max_tokens":100,"response_format":{"type":"json_object"}}`,
		wantAuth: "Bearer sk-from-env",
	}, {
		name:     "messages as given after the system message",
		cfg:      LLMConfig{Model: "m", APIKey: "sk-inline", System: "sys"},
		input:    `{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "name": "x"}, {"role": "user", "content": "c"}], "prompt": "not used"}`,
		wantBody: `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"a"},{"role":"assistant","content":"b","name":"x"},{"role":"user","content":"c"}]}`,
		wantAuth: "Bearer sk-inline",
	}, {
		name:     "string input",
		cfg:      LLMConfig{Model: "m"},
		input:    `"hello"`,
		wantBody: `{"model":"m","messages":[{"role":"user","content":"hello"}]}`,
	}, {
		name:     "other input as compact JSON",
		cfg:      LLMConfig{Model: "m"},
		input:    `{"ticket": {"id": 7, "text": "x"}, "b": [1, 2.50]}`,
		wantBody: `{"model":"m","messages":[{"role":"user","content":"{\"b\":[1,2.50],\"ticket\":{\"id\":7,\"text\":\"x\"}}"}]}`,
	}, {
		name:     "prompt that is not a string",
		cfg:      LLMConfig{Model: "m"},
		input:    `{"prompt": 3}`,
		wantBody: `{"model":"m","messages":[{"role":"user","content":"{\"prompt\":3}"}]}`,
	}, {
		name:      "violation",
		cfg:       LLMConfig{Model: "m"},
		input:     `{"prompt": "p"}`,
		violation: `{"rule": "amount-max", "path": "$.amount", "old": 10, "new": 5000, "reason": "amount must stay under 1000"}`,
		wantBody: `{"model":"m","messages":[{"role":"user","content":"p"},{"role":"user","content":"The workflow refused what your previous answer wrote: ` +
			`{\"new\":5000,\"old\":10,\"path\":\"$.amount\",\"reason\":\"amount must stay under 1000\",\"rule\":\"amount-max\"}. Answer again so that your answer respects that rule."}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := newEndpoint(t, reply{body: chat(`{"ok": true}`, "")})
			tt.cfg.BaseURL, tt.cfg.Hosts = ep.url+"/v1/", ep.hosts
			a, err := LLM(tt.cfg)
			if err != nil {
				t.Fatalf("LLM: %v", err)
			}
			req := &agents.Request{Agent: "Classifier", Input: decode(t, tt.input)}
			if tt.violation != "" {
				req.Violation = decode(t, tt.violation).(map[string]any)
			}
			if _, err := a.Invoke(context.Background(), req); err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			calls := ep.received()
			if len(calls) != 1 {
				t.Fatalf("endpoint got %d requests, want 1", len(calls))
			}
			c := calls[0]
			if c.method != http.MethodPost || c.path != "/v1/chat/completions" {
				t.Errorf("request = %s %s, want POST /v1/chat/completions", c.method, c.path)
			}
			if got := c.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			if got := c.header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if want := decode(t, tt.wantBody); !jsonvalue.Equal(c.body, want) {
				t.Errorf("request body = %s\nwant %s", marshal(c.body), marshal(want))
			}
		})
	}
}

func TestLLMResult(t *testing.T) {
	tests := []struct {
		name      string
		cfg       LLMConfig
		reply     string
		want      string // JSON
		wantUsage []agents.Usage
	}{{
		name:      "text",
		cfg:       LLMConfig{},
		reply:     chat("  Refund, probably.\n", `{"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}`),
		want:      `"  Refund, probably.\n"`,
		wantUsage: []agents.Usage{{InputTokens: 12, OutputTokens: 4}},
	}, {
		name:      "json with prices",
		cfg:       LLMConfig{JSON: true, InputCostPerMTok: 0.15, OutputCostPerMTok: 0.6},
		reply:     chat(`{"intent": "refund", "confidence": 0.93, "big": 12345678901234567890}`, `{"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}`),
		want:      `{"intent": "refund", "confidence": 0.93, "big": 12345678901234567890}`,
		wantUsage: []agents.Usage{{InputTokens: 1000, OutputTokens: 500, Cost: (1000*0.15 + 500*0.6) / 1e6}},
	}, {
		name:      "total beyond the parts (reasoning tokens)",
		cfg:       LLMConfig{},
		reply:     chat("x", `{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 40}`),
		want:      `"x"`,
		wantUsage: []agents.Usage{{InputTokens: 10, OutputTokens: 5, Tokens: 40}},
	}, {
		name:  "no usage",
		cfg:   LLMConfig{},
		reply: chat("x", ""),
		want:  `"x"`,
	}, {
		name:  "zero usage",
		cfg:   LLMConfig{InputCostPerMTok: 1},
		reply: chat("x", `{"prompt_tokens": 0, "completion_tokens": 0}`),
		want:  `"x"`,
	}, {
		name:      "usage of an answer that is not JSON is reported too",
		cfg:       LLMConfig{JSON: true},
		reply:     chat("Sure! Here is JSON: {}", `{"prompt_tokens": 3, "completion_tokens": 7}`),
		want:      ``,
		wantUsage: []agents.Usage{{InputTokens: 3, OutputTokens: 7}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := newEndpoint(t, reply{body: tt.reply})
			tt.cfg.BaseURL, tt.cfg.Model, tt.cfg.Hosts = ep.url, "m", ep.hosts
			a, err := LLM(tt.cfg)
			if err != nil {
				t.Fatalf("LLM: %v", err)
			}
			var usage []agents.Usage
			req := &agents.Request{Agent: "A", Input: "hi", OnUsage: func(u agents.Usage) { usage = append(usage, u) }}
			got, err := a.Invoke(context.Background(), req)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("Invoke = %s, want an error", marshal(got))
			case tt.want != "" && err != nil:
				t.Errorf("Invoke: %v", err)
			case tt.want != "" && !jsonvalue.Equal(got, decode(t, tt.want)):
				t.Errorf("Invoke = %s, want %s", marshal(got), tt.want)
			}
			if len(usage) != len(tt.wantUsage) {
				t.Fatalf("usage reports = %+v, want %+v", usage, tt.wantUsage)
			}
			for i, u := range usage {
				w := tt.wantUsage[i]
				if u.InputTokens != w.InputTokens || u.OutputTokens != w.OutputTokens || u.Tokens != w.Tokens || math.Abs(u.Cost-w.Cost) > 1e-12 {
					t.Errorf("usage report %d = %+v, want %+v", i, u, w)
				}
			}
		})
	}
}

// TestLLMJSONNumbersExact checks that JSON mode keeps numbers as written,
// through json.Number.
func TestLLMJSONNumbersExact(t *testing.T) {
	ep := newEndpoint(t, reply{body: chat(`{"n": 0.1, "m": 1.0}`, "")})
	a, err := LLM(LLMConfig{BaseURL: ep.url, Hosts: ep.hosts, Model: "m", JSON: true})
	if err != nil {
		t.Fatalf("LLM: %v", err)
	}
	got, err := a.Invoke(context.Background(), &agents.Request{Input: "x"})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if s := marshal(got); s != `{"m":1.0,"n":0.1}` {
		t.Errorf("Invoke = %s, want {\"m\":1.0,\"n\":0.1}", s)
	}
}

func TestLLMErrors(t *testing.T) {
	const key = "sk-secret-0123456789"
	tests := []struct {
		name      string
		cfg       LLMConfig
		input     string
		replies   []reply
		wantName  asl.ErrorName
		wantCalls int
	}{{
		name:      "429 after the retries",
		replies:   []reply{{status: 429, body: `{"error": {"message": "Rate limit reached for gpt-4o-mini"}}`}},
		wantName:  asl.ErrRateLimitExceeded,
		wantCalls: 3,
	}, {
		name:      "500 after the retries",
		replies:   []reply{{status: 500, body: `{"error": {"message": "The server had an error"}}`}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 3,
	}, {
		name:      "503 then 429: the last failure names the error",
		replies:   []reply{{status: 503}, {status: 503}, {status: 429}},
		wantName:  asl.ErrRateLimitExceeded,
		wantCalls: 3,
	}, {
		name:      "MaxRetries 5",
		cfg:       LLMConfig{MaxRetries: 5},
		replies:   []reply{{status: 502}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 6,
	}, {
		name:      "negative MaxRetries: no retry",
		cfg:       LLMConfig{MaxRetries: -1},
		replies:   []reply{{status: 500}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "400 is not retried and quotes the endpoint",
		replies:   []reply{{status: 400, body: `{"error": {"message": "Unsupported parameter: 'temperature'", "type": "invalid_request_error"}}`}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "401 echoing the key does not leak it",
		replies:   []reply{{status: 401, body: `{"error": {"message": "Incorrect API key provided: ` + key + `."}}`}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "404 with a plain body",
		replies:   []reply{{status: 404, body: "404 page not found\n"}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "Retry-After beyond a minute ends the retries",
		replies:   []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}}},
		wantName:  asl.ErrRateLimitExceeded,
		wantCalls: 1,
	}, {
		name:      "response that is not JSON",
		replies:   []reply{{body: "<html>gateway</html>"}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "no choices",
		replies:   []reply{{body: `{"choices": []}`}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "content null",
		replies:   []reply{{body: `{"choices": [{"message": {"role": "assistant", "content": null}}]}`}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "refusal",
		replies:   []reply{{body: `{"choices": [{"message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]}`}},
		wantName:  asl.ErrAgentModelError,
		wantCalls: 1,
	}, {
		name:      "JSON mode, answer not JSON",
		cfg:       LLMConfig{JSON: true},
		replies:   []reply{{body: chat(`{"intent": "refund",}`, "")}},
		wantName:  asl.ErrAgentInvalidOutput,
		wantCalls: 1,
	}, {
		name:      "JSON mode, empty answer",
		cfg:       LLMConfig{JSON: true},
		replies:   []reply{{body: chat("", "")}},
		wantName:  asl.ErrAgentInvalidOutput,
		wantCalls: 1,
	}, {
		name:      "messages not an array",
		input:     `{"messages": "hi"}`,
		replies:   []reply{{body: chat("x", "")}},
		wantName:  asl.ErrAgentInvalidInput,
		wantCalls: 0,
	}, {
		name:      "message without a role",
		input:     `{"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}`,
		replies:   []reply{{body: chat("x", "")}},
		wantName:  asl.ErrAgentInvalidInput,
		wantCalls: 0,
	}}
	golden := goldenCauses(t, "llm")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := newEndpoint(t, tt.replies...)
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				cfg.BaseURL, cfg.Model, cfg.APIKey, cfg.HTTPClient = ep.url, "m", key, bubbleClient()
				a, err := LLM(cfg)
				if err != nil {
					t.Fatalf("LLM: %v", err)
				}
				input := `"hi"`
				if tt.input != "" {
					input = tt.input
				}
				got, err := a.Invoke(context.Background(), &agents.Request{Agent: "A", Input: decode(t, input)})
				if err == nil {
					t.Fatalf("Invoke = %s, want %s", marshal(got), tt.wantName)
				}
				if name := errName(err); name != tt.wantName {
					t.Errorf("Invoke error = %v (%q), want %s", err, name, tt.wantName)
				}
				// Only the text can show that the key stays out of it.
				if strings.Contains(err.Error(), key) {
					t.Errorf("Invoke error %q holds the API key", err)
				}
				golden.check(t, err, ep.url, "URL")
			})
			if got := len(ep.received()); got != tt.wantCalls {
				t.Errorf("endpoint got %d requests, want %d", got, tt.wantCalls)
			}
		})
	}
}

// TestLLMInvalidOutputOffset checks that an answer that is not JSON names
// where it stops being JSON.
func TestLLMInvalidOutputOffset(t *testing.T) {
	ep := newEndpoint(t, reply{body: chat(`{"a": 1} trailing`, "")})
	a, err := LLM(LLMConfig{BaseURL: ep.url, Hosts: ep.hosts, Model: "m", JSON: true})
	if err != nil {
		t.Fatalf("LLM: %v", err)
	}
	_, err = a.Invoke(context.Background(), &agents.Request{Input: "x"})
	var je *jsonvalue.JSONError
	if !errors.As(err, &je) {
		t.Fatalf("Invoke error = %v, want one wrapping a *jsonvalue.JSONError", err)
	}
	if je.Offset != 9 {
		t.Errorf("JSONError.Offset = %d, want 9", je.Offset)
	}
	if name := errName(err); name != asl.ErrAgentInvalidOutput {
		t.Errorf("Invoke error name = %q, want %s", name, asl.ErrAgentInvalidOutput)
	}
}

func TestLLMRetry(t *testing.T) {
	tests := []struct {
		name     string
		replies  []reply
		min, max time.Duration // of the time the call takes
	}{{
		name:    "Retry-After seconds, then backoff",
		replies: []reply{{status: 429, header: map[string]string{"Retry-After": "3"}}, {status: 500}, {body: chat("ok", "")}},
		// 3 s, then the second backoff: 1 s with jitter over its upper half.
		min: 3*time.Second + 500*time.Millisecond, max: 4 * time.Second,
	}, {
		name:    "backoff doubles",
		replies: []reply{{status: 500}, {status: 502}, {body: chat("ok", "")}},
		min:     250*time.Millisecond + 500*time.Millisecond, max: 1500 * time.Millisecond,
	}, {
		name:    "Retry-After zero",
		replies: []reply{{status: 429, header: map[string]string{"Retry-After": "0"}}, {body: chat("ok", "")}},
		min:     0, max: 0,
	}, {
		name:    "Retry-After that is not a delay is ignored",
		replies: []reply{{status: 503, header: map[string]string{"Retry-After": "soon"}}, {body: chat("ok", "")}},
		min:     250 * time.Millisecond, max: 500 * time.Millisecond,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := newEndpoint(t, tt.replies...)
			synctest.Test(t, func(t *testing.T) {
				a, err := LLM(LLMConfig{BaseURL: ep.url, Model: "m", HTTPClient: bubbleClient()})
				if err != nil {
					t.Fatalf("LLM: %v", err)
				}
				start := time.Now()
				got, err := a.Invoke(context.Background(), &agents.Request{Input: "x"})
				took := time.Since(start)
				if err != nil || got != "ok" {
					t.Fatalf("Invoke = %v, %v, want ok", got, err)
				}
				if took < tt.min || took > tt.max {
					t.Errorf("the call took %s, want from %s to %s", took, tt.min, tt.max)
				}
			})
			if got := len(ep.received()); got != len(tt.replies) {
				t.Errorf("endpoint got %d requests, want %d", got, len(tt.replies))
			}
		})
	}
}

// TestLLMRetryDeadline checks that the agent does not wait for a retry its
// context's deadline would cut short, and that a cancel during the wait
// returns the context's error.
func TestLLMRetryDeadline(t *testing.T) {
	t.Run("deadline before the retry", func(t *testing.T) {
		ep := newEndpoint(t, reply{status: 429, header: map[string]string{"Retry-After": "10"}})
		synctest.Test(t, func(t *testing.T) {
			a, err := LLM(LLMConfig{BaseURL: ep.url, Model: "m", HTTPClient: bubbleClient()})
			if err != nil {
				t.Fatalf("LLM: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err = a.Invoke(ctx, &agents.Request{Input: "x"})
			if name := errName(err); name != asl.ErrRateLimitExceeded {
				t.Errorf("Invoke error = %v, want %s", err, asl.ErrRateLimitExceeded)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("the call took %s, want no wait", took)
			}
		})
		if got := len(ep.received()); got != 1 {
			t.Errorf("endpoint got %d requests, want 1", got)
		}
	})
	t.Run("cancel while waiting", func(t *testing.T) {
		ep := newEndpoint(t, reply{status: 500})
		synctest.Test(t, func(t *testing.T) {
			a, err := LLM(LLMConfig{BaseURL: ep.url, Model: "m", HTTPClient: bubbleClient()})
			if err != nil {
				t.Fatalf("LLM: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			_, err = a.Invoke(ctx, &agents.Request{Input: "x"})
			if !errors.Is(err, context.Canceled) || errName(err) != "" {
				t.Errorf("Invoke error = %v, want context.Canceled", err)
			}
		})
	})
}

// TestLLMTimeout runs on the real clock: a request that hangs holds the
// connection's goroutines busy, which a synctest bubble cannot wait out.
func TestLLMTimeout(t *testing.T) {
	t.Run("agent Timeout", func(t *testing.T) {
		ep := newEndpoint(t, reply{hang: true})
		a, err := LLM(LLMConfig{BaseURL: ep.url, Hosts: ep.hosts, Model: "m", Timeout: 50 * time.Millisecond, MaxRetries: -1})
		if err != nil {
			t.Fatalf("LLM: %v", err)
		}
		_, err = a.Invoke(context.Background(), &agents.Request{Input: "x"})
		if name := errName(err); name != asl.ErrAgentModelError {
			t.Errorf("Invoke error = %v, want %s", err, asl.ErrAgentModelError)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		ep := newEndpoint(t, reply{hang: true})
		a, err := LLM(LLMConfig{BaseURL: ep.url, Hosts: ep.hosts, Model: "m"})
		if err != nil {
			t.Fatalf("LLM: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = a.Invoke(ctx, &agents.Request{Input: "x"})
		if !errors.Is(err, context.DeadlineExceeded) || errName(err) != "" {
			t.Errorf("Invoke error = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("network error", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close() // nothing listens there any more
		synctest.Test(t, func(t *testing.T) {
			a, err := LLM(LLMConfig{BaseURL: url, Model: "m", HTTPClient: bubbleClient()})
			if err != nil {
				t.Fatalf("LLM: %v", err)
			}
			_, err = a.Invoke(context.Background(), &agents.Request{Input: "x"})
			if name := errName(err); name != asl.ErrAgentModelError {
				t.Errorf("Invoke error = %v, want %s", err, asl.ErrAgentModelError)
			}
		})
	})
}

func TestLLMAPIKeyEnv(t *testing.T) {
	const keyVar = "ASLRUN_TEST_UNSET_KEY"
	ep := newEndpoint(t, reply{body: chat("x", "")})
	a, err := LLM(LLMConfig{BaseURL: ep.url, Hosts: ep.hosts, Model: "m", APIKeyEnv: keyVar})
	if err != nil {
		t.Fatalf("LLM: %v", err)
	}
	for _, value := range []string{"", "set later"} {
		t.Run("value "+strconv.Quote(value), func(t *testing.T) {
			t.Setenv(keyVar, value)
			_, err := a.Invoke(context.Background(), &agents.Request{Agent: "A", Input: "x"})
			var ue *UnsetEnvError
			switch {
			case value == "" && (!errors.As(err, &ue) || ue.Name != keyVar || !ue.Empty):
				t.Errorf("Invoke error = %v, want an *UnsetEnvError naming %s, empty", err, keyVar)
			case value == "" && errName(err) != "":
				t.Errorf("Invoke error = %v, want a plain error (States.TaskFailed)", err)
			case value != "" && err != nil:
				t.Errorf("Invoke: %v", err)
			}
		})
	}
	if calls := ep.received(); len(calls) != 1 || calls[0].header.Get("Authorization") != "Bearer set later" {
		t.Errorf("endpoint got %d requests, want 1 with the key read at call time", len(calls))
	}
}

func TestLLMConfig(t *testing.T) {
	nan, neg, inf := math.NaN(), -0.5, math.Inf(1)
	tests := []struct {
		name    string
		cfg     LLMConfig
		wantErr bool
	}{
		{"minimal", LLMConfig{Model: "m"}, false},
		{"local server", LLMConfig{Model: "m", BaseURL: "http://localhost:11434/v1"}, false},
		{"no model", LLMConfig{}, true},
		{"key twice", LLMConfig{Model: "m", APIKey: "k", APIKeyEnv: "K"}, true},
		{"bad variable name", LLMConfig{Model: "m", APIKeyEnv: "1KEY"}, true},
		{"relative URL", LLMConfig{Model: "m", BaseURL: "/v1"}, true},
		{"other scheme", LLMConfig{Model: "m", BaseURL: "ftp://example.com"}, true},
		{"NaN temperature", LLMConfig{Model: "m", Temperature: &nan}, true},
		{"negative temperature", LLMConfig{Model: "m", Temperature: &neg}, true},
		{"infinite temperature", LLMConfig{Model: "m", Temperature: &inf}, true},
		{"negative MaxTokens", LLMConfig{Model: "m", MaxTokens: -1}, true},
		{"negative Timeout", LLMConfig{Model: "m", Timeout: -time.Second}, true},
		{"negative price", LLMConfig{Model: "m", InputCostPerMTok: -1}, true},
		{"NaN price", LLMConfig{Model: "m", OutputCostPerMTok: nan}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LLM(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Errorf("LLM(%+v) error = %v, want error %t", tt.cfg, err, tt.wantErr)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		a, err := LLM(LLMConfig{Model: "m"})
		if err != nil {
			t.Fatalf("LLM: %v", err)
		}
		la := a.(*llmAgent)
		if la.endpoint != DefaultBaseURL+"/chat/completions" || la.maxRetries != defaultMaxRetries {
			t.Errorf("endpoint, retries = %s, %d, want %s/chat/completions, %d", la.endpoint, la.maxRetries, DefaultBaseURL, defaultMaxRetries)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 2 ", 2 * time.Second, true},
		{"-1", 0, false},
		{"86401", 0, false},
		{"1.5", 0, false},
		{"Sat, 01 Mar 2025 12:00:30 GMT", 30 * time.Second, true},
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0, true},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter(%q) = %s, %t, want %s, %t", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	for attempt, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second} {
		for range 20 {
			got, ok := retryDelay(attempt, http.Header{})
			if !ok || got < want/2 || got > want {
				t.Fatalf("retryDelay(%d) = %s, %t, want from %s to %s", attempt, got, ok, want/2, want)
			}
		}
	}
	if got, ok := retryDelay(40, http.Header{}); !ok || got < maxBackoff/2 || got > maxBackoff {
		t.Errorf("retryDelay(40) = %s, %t, want at most %s", got, ok, maxBackoff)
	}
	h := http.Header{"Retry-After": []string{"61"}}
	if got, ok := retryDelay(0, h); ok {
		t.Errorf("retryDelay with Retry-After 61 = %s, true, want false", got)
	}
}

func TestEndpointMessage(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"error": {"message": "m1", "code": "x"}}`, ": m1"},
		{`{"error": "m2"}`, ": m2"},
		{`{"message": "m3"}`, ": m3"},
		{`{"detail": "m4"}`, ": m4"},
		{`{"error": {"message": ""}, "detail": "m5"}`, ": m5"},
		{`{"other": 1}`, `: {"other": 1}`},
		{"upstream\n  connect error", ": upstream connect error"},
		{"", ""},
		{strings.Repeat("é", 150), ": " + strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			if got := endpointMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("endpointMessage(%q) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}
