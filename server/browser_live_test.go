package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
)

// waitLive waits until the page follows its stream, and sets a marker
// that a reload would lose.
func waitLive(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("live-status").textContent.startsWith("Live")`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the page does not follow its stream: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserExecutionsLive: with the executions list open, an execution
// started through the API appears, and its status turns SUCCEEDED,
// without a reload.
func TestBrowserExecutionsLive(t *testing.T) {
	t.Parallel()
	worker := newGate(t, map[string]any{"done": true})
	ts := newTestServer(t, withAgents(t, map[string]agents.Agent{"Worker": worker}))
	ts.startPass(t, "before")
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/executions"),
		chromedp.WaitVisible(`#executions tr.execution[data-id="before"]`),
	); err != nil {
		t.Fatal(err)
	}
	waitLive(t, ctx)
	def := json.RawMessage(`{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"Worker","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "live-1", "definition": def}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	row := `#executions tr.execution[data-id="live-1"]`
	running, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector('`+row+` .status'); return s ? s.textContent : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("live-1 does not appear: %v", err)
	}
	if running != "RUNNING" {
		t.Errorf("live-1 appears as %s, want RUNNING (its task waits for the test)", running)
	}
	// The new execution is on top, above the older one.
	if first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#executions tbody tr").dataset.id`)); err != nil || first != "live-1" {
		t.Errorf("first row %q (%v), want live-1", first, err)
	}
	screenshot(t, ctx, "executions-live")
	worker.open()
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector('`+row+` .status').textContent; return s === "SUCCEEDED" ? s : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || status != "SUCCEEDED" {
		t.Fatalf("live-1 shows %q (%v), want SUCCEEDED", status, err)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
	if stopped, err := chromedp.Run(ctx, chromedp.Text(row+` .stopped-cell time`)); err != nil || !strings.HasSuffix(stopped, "Z") {
		t.Errorf("live-1's stop time %q (%v)", stopped, err)
	}
}

// TestBrowserInboxLive: with the inbox open, a new approval appears with
// its countdowns running; an edit that breaks the workflow's schema shows
// the violation next to the editor before anything is sent; an approval
// decided elsewhere goes, unless its form is being filled in, which is
// kept and marked.
func TestBrowserInboxLive(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleApprover)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/inbox"),
		chromedp.WaitVisible("#empty"),
	); err != nil {
		t.Fatal(err)
	}
	waitLive(t, ctx)
	def := json.RawMessage(`{"StartAt":"Edit","Governance":{"Guard":{"Schema":{"type":"object","properties":{"draft":{"type":"object","properties":{"words":{"type":"integer","maximum":500}}}}}}},
		"States":{"Edit":{"Type":"Approval","Prompt":"Check the draft","Timeout":"1h","Escalation":{"After":"4s","Notify":["leads@example.com"]},
		"Editable":{"Fields":["$.draft.words"],"ResultPath":"$"},"ResultPath":"$.review","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "draft-1", "definition": def, "input": json.RawMessage(`{"draft":{"words":412}}`)}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	card := `article.approval[data-id]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(card+` form.decision-form textarea[name=edit]`)); err != nil {
		t.Fatalf("the approval does not appear: %v", err)
	}
	if gone, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("empty") === null`)); err != nil || !gone {
		t.Errorf("the empty inbox note stays (%v)", err)
	}
	// Both countdowns run, each with its absolute time.
	left := func(kind string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(card+` .countdown[data-kind="`+kind+`"] .left`))
		if err != nil {
			t.Fatalf("the %s countdown: %v", kind, err)
		}
		return s
	}
	first := left("deadline")
	if !strings.HasPrefix(first, "(in 59m") {
		t.Errorf("deadline countdown %q, want (in 59m …)", first)
	}
	for _, kind := range []string{"deadline", "escalation"} {
		at, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+` .countdown[data-kind="`+kind+`"] time').dateTime`))
		if _, perr := time.Parse(time.RFC3339Nano, at); err != nil || perr != nil {
			t.Errorf("the %s's time %q (%v, %v), want RFC 3339", kind, at, err, perr)
		}
	}
	if next, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector('`+card+` .countdown[data-kind="deadline"] .left').textContent; return s !== "`+first+`" ? s : null })()`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("the deadline countdown stays %q (%v)", first, err)
	} else if !strings.HasPrefix(next, "(in 59m") {
		t.Errorf("deadline countdown %q after a tick", next)
	}
	screenshot(t, ctx, "inbox-live")

	// The edit breaks the schema: the check shows it at its place.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const t = document.querySelector('`+card+` textarea[name=edit]');
		t.focus();
		t.value = '{"draft": {"words": 9000}}';
		t.dispatchEvent(new Event("input", {bubbles: true}));
		return true })()`)); err != nil {
		t.Fatal(err)
	}
	problem, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const li = document.querySelector('`+card+` ul.problems li.problem'); return li ? li.textContent : null })()`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || !strings.HasPrefix(problem, "/draft/words Governance.SchemaViolation") || !strings.Contains(problem, "500") {
		t.Errorf("the editor shows %q (%v), want the schema violation at /draft/words", problem, err)
	}
	if invalid, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+` textarea[name=edit]').getAttribute("aria-invalid")`)); err != nil || invalid != "true" {
		t.Errorf("the editor's aria-invalid is %q (%v)", invalid, err)
	}
	// The escalation falls while the form is open.
	if _, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector('`+card+` .countdown[data-kind="escalation"] .left').textContent; return s === "escalated" ? s : null })()`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("the escalation countdown never says escalated: %v (shows %q)", err, left("escalation"))
	}
	screenshot(t, ctx, "inbox-check")
	if e := ts.waitFor(t, "draft-1", func(api.Execution) bool { return true }); e.Status != "WAITING" {
		t.Fatalf("after the check the execution is %s, want WAITING", e.Status)
	}

	// Decided elsewhere while being edited: the form stays, marked.
	e := ts.waitFor(t, "draft-1", func(e api.Execution) bool { return len(e.Approvals) == 1 })
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+e.Approvals[0].ID+"/decision", map[string]any{"option": "reject"}, nil); code != http.StatusAccepted {
		t.Fatalf("decide: %d %s", code, body)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(card+`.elsewhere .elsewhere-note`)); err != nil {
		t.Fatalf("the edited form is not marked decided elsewhere: %v", err)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+` textarea[name=edit]').value`))
	if err != nil || kept != `{"draft": {"words": 9000}}` {
		t.Errorf("the edit reads %q (%v), want what was typed", kept, err)
	}
	if disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+card+` button[type=submit]').disabled`)); err != nil || !disabled {
		t.Errorf("the marked form can still be sent (%v)", err)
	}

	// Decided elsewhere, untouched: it goes.
	ts.startReview(t, "r2")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`article.approval:not(.elsewhere) input[value=publish]`)); err != nil {
		t.Fatalf("r2's approval does not appear: %v", err)
	}
	ts.decideReview(t, "r2")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("article.approval").length === 1 ? true : null`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("r2's decided approval stays: %v", err)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
}
