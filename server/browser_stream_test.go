package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestBrowserStreamedText: on the execution page, a streaming Task's text
// appears while the state runs: its first attempt's text, then, after the
// retry, a note that it restarted and the new attempt's first chunk —
// inserted as text ("<script>" stays text) with a caret, before the agent
// returns. Once released, the panel is marked done with the whole text,
// and the execution SUCCEEDED, without a reload.
func TestBrowserStreamedText(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	reg := agents.NewRegistry()
	writer := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		if req.Attempt == 0 {
			req.StreamText(1, "A draft that fails.")
			return nil, &asl.Error{Name: "Draft.Failed", Cause: "the first draft is dropped"}
		}
		req.StreamText(1, "First <script>window.__injected = true</script> chunk.\n")
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		req.StreamText(1, "Second chunk.")
		req.StreamText(2, "Turn two.")
		return map[string]any{"words": 9}, nil
	})
	if err := reg.Register("Writer", writer); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) {
		c.Agents = reg
		c.Executor = engine.New(engine.Config{Store: c.Store.(*store.Memory), Agents: reg})
	})
	def := json.RawMessage(`{"StartAt":"Write","States":{"Write":{"Type":"Task","Agent":"Writer","Streaming":{"Mode":"token"},
		"Retry":[{"ErrorEquals":["Draft.Failed"],"IntervalSeconds":1,"MaxAttempts":1}],"ResultPath":"$.draft","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "stream-1", "definition": def}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/stream-1"), chromedp.WaitVisible("#timeline")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	panel := `#streams article.stream[data-state="Write"]`
	first, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector('`+panel+` .stream-turn[data-turn="1"] .text'); return s && s.textContent.includes("chunk.") ? s.textContent : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("streams").outerHTML`))
		t.Fatalf("the first chunk is not on the page: %v; the section: %s", err, shown)
	}
	// The agent is still blocked: the state has not ended.
	var e api.Execution
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/stream-1", nil, &e); code != http.StatusOK || e.Status != "RUNNING" {
		t.Fatalf("while the agent streams: %d %s, want RUNNING", code, body)
	}
	if want := "First <script>window.__injected = true</script> chunk.\n"; first != want {
		t.Errorf("the first chunk reads %q, want %q", first, want)
	}
	checks := map[string]string{
		"no element of the chunk's markup": `document.querySelector("#streams script") === null && window.__injected === undefined`,
		"a caret while it runs":            `document.querySelector('` + panel + ` .caret') !== null && document.querySelector('` + panel + `').classList.contains("running")`,
		"the failed attempt's text gone":   `!document.querySelector('` + panel + `').textContent.includes("A draft that fails.")`,
		"a note that it restarted":         `document.querySelector('` + panel + ` .stream-note').textContent.startsWith("restarted (attempt 2)")`,
		"the section shown":                `!document.getElementById("streams").hidden`,
	}
	for what, expr := range checks {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err != nil || !ok {
			t.Errorf("%s: %v (%v)", what, ok, err)
		}
	}
	screenshot(t, ctx, "execution-stream")

	close(release)
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector("#status").textContent.trim(); return s === "SUCCEEDED" ? s : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || status != "SUCCEEDED" {
		t.Fatalf("status %q (%v), want SUCCEEDED", status, err)
	}
	done, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+panel+`').classList.contains("done") || null`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || !done {
		t.Fatalf("the panel is not marked done (%v)", err)
	}
	texts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('`+panel+` .stream-turn')).map(d => d.dataset.turn + ":" + d.querySelector(".text").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:First <script>window.__injected = true</script> chunk.\nSecond chunk.", "2:Turn two."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("the turns read %q, want %q", texts, want)
	}
	if carets, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+panel+` .caret').length`)); err != nil || carets != 0 {
		t.Errorf("%d carets stay once done (%v)", carets, err)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
}

// TestBrowserStreamedFailure: a streaming state whose agent fails shows
// its text and the error on its panel, marked failed.
func TestBrowserStreamedFailure(t *testing.T) {
	t.Parallel()
	reg := agents.NewRegistry()
	release := make(chan struct{})
	if err := reg.Register("Writer", agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		req.StreamText(0, "Halfway there")
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("the model went away")
	})); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) {
		c.Agents = reg
		c.Executor = engine.New(engine.Config{Store: c.Store.(*store.Memory), Agents: reg})
	})
	def := json.RawMessage(`{"StartAt":"Write","States":{"Write":{"Type":"Task","Agent":"Writer","Streaming":{},"End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "stream-2", "definition": def}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/stream-2"), chromedp.WaitVisible("#timeline")); err != nil {
		close(release)
		t.Fatal(err)
	}
	panel := `#streams article.stream[data-state="Write"]`
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const s = document.querySelector('`+panel+` .stream-turn[data-turn="0"] .text'); return s && s.textContent === "Halfway there" || null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	close(release)
	if err != nil {
		t.Fatalf("the chunk is not on the page: %v", err)
	}
	failed, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const p = document.querySelector('`+panel+`.failed .error-name'); return p ? p.textContent : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || failed != "States.TaskFailed" {
		t.Errorf("the failed panel names %q (%v), want States.TaskFailed", failed, err)
	}
	if turnHeads, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+panel+` h4').length`)); err != nil || turnHeads != 0 {
		t.Errorf("an agent without turns shows %d turn headings (%v)", turnHeads, err)
	}
}
