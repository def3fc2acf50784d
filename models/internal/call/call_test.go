package call

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
)

func target(retries int) Target {
	return Target{Provider: "openai", Config: models.Config{Model: "m", MaxRetries: retries, Timeout: time.Minute}}
}

func TestDoBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := target(3)
		var at []time.Duration
		start := time.Now()
		err := tg.Do(t.Context(), func(context.Context) *Failure {
			at = append(at, time.Since(start))
			return tg.Status(500, nil, "boom", "")
		})
		var me *models.Error
		if !errors.As(err, &me) || me.Name != asl.ErrAgentModelError || me.Status != 500 {
			t.Fatalf("Do = %v, want the 500", err)
		}
		if len(at) != 4 {
			t.Fatalf("%d attempts, want 4", len(at))
		}
		// Waits of 0.5 s, 1 s, 2 s, each with jitter over its upper half.
		for i, base := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
			wait := at[i+1] - at[i]
			if wait < base/2 || wait > base {
				t.Errorf("wait %d = %s, want between %s and %s", i+1, wait, base/2, base)
			}
		}
	})
}

func TestDoRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := target(2)
		n := 0
		start := time.Now()
		err := tg.Do(t.Context(), func(context.Context) *Failure {
			n++
			if n == 1 {
				return tg.Status(429, http.Header{"Retry-After": {"7"}}, "slow down", "")
			}
			return nil
		})
		if err != nil || n != 2 {
			t.Fatalf("Do = %v after %d attempts, want success after 2", err, n)
		}
		if got := time.Since(start); got != 7*time.Second {
			t.Errorf("waited %s, want the 7s Retry-After asked", got)
		}

		// Over a minute: no retry, the wait reported.
		n = 0
		err = tg.Do(t.Context(), func(context.Context) *Failure {
			n++
			return tg.Status(429, http.Header{"Retry-After": {"61"}}, "quota", "")
		})
		var me *models.Error
		if !errors.As(err, &me) || me.Name != asl.ErrRateLimitExceeded || me.RetryAfter != 61*time.Second || n != 1 {
			t.Errorf("Do = %+v after %d attempts, want one 429 with RetryAfter 61s", err, n)
		}
	})
}

func TestDoContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := target(5)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		err := tg.Do(ctx, func(context.Context) *Failure {
			return tg.Status(503, http.Header{"Retry-After": {"10"}}, "busy", "")
		})
		var me *models.Error
		if !errors.As(err, &me) || me.Name != asl.ErrTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do = %v, want States.Timeout wrapping the deadline", err)
		}

		// An attempt over Config.Timeout is States.Timeout, and retried.
		tg = Target{Provider: "anthropic", Config: models.Config{Model: "m", MaxRetries: 1, Timeout: time.Second}}
		n := 0
		err = tg.Do(t.Context(), func(ctx context.Context) *Failure {
			n++
			<-ctx.Done()
			return tg.Transport(ctx, ctx.Err(), "")
		})
		if !errors.As(err, &me) || me.Name != asl.ErrTimeout || n != 2 {
			t.Errorf("Do = %v after %d attempts, want States.Timeout after 2", err, n)
		}

		// Not retried when the failure says so.
		n = 0
		err = tg.Do(t.Context(), func(context.Context) *Failure {
			n++
			return &Failure{Err: tg.Error(asl.ErrAgentModelError, 0, "malformed", "")}
		})
		if err == nil || n != 1 {
			t.Errorf("Do = %v after %d attempts, want one failure", err, n)
		}
	})
}

func TestClean(t *testing.T) {
	key := "sk-secret"
	if got := Clean("bad key sk-secret given", key); got != "bad key [redacted] given" {
		t.Errorf("Clean = %q", got)
	}
	long := strings.Repeat("é", 1000)
	got := Clean(long, "")
	if len(got) > maxMessage || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("Clean(long) has %d bytes, ends %q", len(got), got[len(got)-8:])
	}
}

func TestKey(t *testing.T) {
	tg := Target{Provider: "openai", Config: models.Config{Model: "m", APIKeyEnv: "CALL_TEST_KEY"}}
	t.Setenv("CALL_TEST_KEY", "")
	if _, err := tg.Key(); err == nil || !strings.Contains(err.Error(), "CALL_TEST_KEY") {
		t.Errorf("Key with the variable empty = %v, want an error naming it", err)
	}
	t.Setenv("CALL_TEST_KEY", "k")
	if k, err := tg.Key(); k != "k" || err != nil {
		t.Errorf("Key = %q, %v", k, err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
		given  bool
	}{
		{nil, 0, false},
		{http.Header{"Retry-After": {"12"}}, 12 * time.Second, true},
		{http.Header{"Retry-After": {"0"}}, 0, true},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"Wed, 01 Jan 2025 12:00:30 GMT"}}, 30 * time.Second, true},
		{http.Header{"Retry-After": {"Wed, 01 Jan 2025 11:00:00 GMT"}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
	}
	for _, tt := range tests {
		got, given := RetryAfter(tt.header, now)
		if got != tt.want || given != tt.given {
			t.Errorf("RetryAfter(%v) = %s, %v; want %s, %v", tt.header, got, given, tt.want, tt.given)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		turn models.Turn
		want string // "" for none
	}{
		{models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}}, ""},
		{models.Turn{Messages: []models.Message{{Role: "bot"}}}, "messages[0]: unknown role"},
		{models.Turn{Messages: []models.Message{{Role: models.RoleUser, ToolCallID: "x"}}}, "messages[0]: a user message has no ToolCallID"},
		{models.Turn{Messages: []models.Message{{Role: models.RoleUser, ToolCalls: []models.ToolCall{{ID: "a", Name: "b"}}}}}, "only an assistant"},
		{models.Turn{Messages: []models.Message{{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{{Name: "b"}}}}}, "ToolCalls[0]: no ID"},
		{models.Turn{Messages: []models.Message{{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{{ID: "a", Name: "b", Arguments: []byte(`[1]`)}}}}}, "not a JSON object"},
		{models.Turn{Tools: []models.ToolSpec{{Name: "a"}, {Name: "a"}}}, "tools[1]: the name \"a\" is used twice"},
		{models.Turn{Tools: []models.ToolSpec{{Name: "a", Schema: []byte(`true`)}}}, "tools[0] (a): the schema is not a JSON object"},
		{models.Turn{ResultSchema: []byte(`{`)}, "ResultSchema: the schema is not JSON"},
		{models.Turn{Generation: models.Generation{MaxTokens: -1}}, "MaxTokens"},
	}
	for _, tt := range tests {
		err := Check(&tt.turn)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%+v) = %v, want nil", tt.turn, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%+v) = %v, want %q", tt.turn, err, tt.want)
		}
	}
}

func FuzzArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":[1,2,{"b":null}]}`, `[1]`, `{"a":1,"a":2}`, `{"a":`, "\"x\"", "{\"\\ud800\":1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := Arguments(s)
		if err != nil {
			return
		}
		if s != "" && string(raw) != s {
			t.Errorf("Arguments(%q) = %s, want the input back", s, raw)
		}
		if _, err := Schema(raw); err != nil {
			t.Errorf("Arguments(%q) accepted, Schema refuses it: %v", s, err)
		}
	})
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "12", "-3", "1e9", "Wed, 01 Jan 2025 12:00:30 GMT", "999999999999999999999"} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, after, afterMs string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", afterMs)
		d, given := RetryAfter(h, time.Now())
		if d < 0 || d > 24*time.Hour || (!given && d != 0) {
			t.Errorf("RetryAfter(%q, %q) = %s, %v", after, afterMs, d, given)
		}
	})
}
