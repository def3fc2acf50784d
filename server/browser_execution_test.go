package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
)

// pollTrue waits until the JavaScript expression cond is true on the page.
func pollTrue(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => (`+cond+`) || null)()`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		t.Fatalf("%s: %v; the page shows\n%s", what, err, shown)
	}
}

// TestBrowserExecutionLiveControls: an operator watches an execution run
// to an Approval and, once it is decided through the API, succeed: the
// status badge and the controls follow without a reload.
func TestBrowserExecutionLiveControls(t *testing.T) {
	t.Parallel()
	writer := newGate(t, map[string]any{"title": "Hello"})
	ts := newTestServer(t, withAgents(t, map[string]agents.Agent{"Writer": writer}))
	ts.startFlow(t, "live-1", reviewFlow, "", "", func(e api.Execution) bool { return e.Status == "RUNNING" })
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleOperator)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/live-1"), chromedp.WaitVisible("#status")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the page shows the execution running", `document.querySelector("#status").textContent === "RUNNING"`)
	writer.open()
	// RUNNING, then WAITING at the approval, whose link appears.
	pollTrue(t, ctx, "the execution waits at its approval",
		`document.querySelector("#status").textContent === "WAITING" && document.querySelector("#approvals a.approval-link") !== null && document.querySelector("#stop-form") !== null`)
	screenshot(t, ctx, "execution-waiting")
	ts.decideReview(t, "live-1")
	ts.waitFor(t, "live-1", succeeded)
	pollTrue(t, ctx, "the badge turns SUCCEEDED and the controls go",
		`document.querySelector("#status").textContent === "SUCCEEDED" && document.querySelector("#stop-form") === null && document.querySelector("#controls") === null && document.querySelector("#approvals") === null`)
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
	if cls, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#status").className`)); err != nil || cls != "status status-SUCCEEDED" {
		t.Errorf("the badge's class is %q (%v)", cls, err)
	}
	// Without the script, a reload shows the same.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("#status")); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#stop-form, #resume-form, #redrive-form").length`)); err != nil || n != 0 {
		t.Errorf("after a reload, %d controls (%v), want none", n, err)
	}
}

// TestBrowserDebateTranscript: the Debate of the technical-debate example,
// run with mocked debaters that report their usage, reads as a
// conversation with the tokens and cost of every turn, and the summary
// gives the execution's totals.
func TestBrowserDebateTranscript(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	def, input, mock := debateFiles(t)
	// A Budget in euros: the costs are shown in its currency.
	var flow map[string]any
	if err := json.Unmarshal([]byte(def), &flow); err != nil {
		t.Fatal(err)
	}
	flow["Budget"] = map[string]any{"MaxCost": 1, "Currency": "EUR"}
	withBudget, err := json.Marshal(flow)
	if err != nil {
		t.Fatal(err)
	}
	ts.startFlow(t, "debate-1", string(withBudget), input, mock, succeeded)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/debate-1"), chromedp.WaitVisible("#debates article.debate")); err != nil {
		t.Fatal(err)
	}
	transcript, err := chromedp.Run(ctx, chromedp.Text("#debates"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Round 1", "Round 3", "Architect", "typed contracts between services", "Arbiter", "CTO",
		"1025 tokens (1000 in, 25 out), cost 0.002 EUR", "No consensus (67% agreement): the arbiter CTO decided grpc-internal-rest-public"} {
		if !strings.Contains(transcript, w) {
			t.Errorf("the transcript has no %q:\n%s", w, transcript)
		}
	}
	usage, err := chromedp.Run(ctx, chromedp.Text("#usage"))
	if err != nil || !strings.Contains(usage, "tokens") || !strings.Contains(usage, "cost 0.02 EUR") || !strings.Contains(usage, "Budget: 1 EUR") {
		t.Errorf("the summary's usage is %q (%v)", usage, err)
	}
	// The picture leaves the timeline out: it is long.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#timeline").closest("section").hidden = true`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "execution-debate")
}

// TestBrowserRedrivePatchRefused: an operator types a patch the workflow's
// guard refuses into the redrive form, confirms it, and gets the page back
// with the error beside the patch as typed.
func TestBrowserRedrivePatchRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	failedExecution(t, ts, "f1")
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleOperator)
	patch := `[{"op": "remove", "path": "/kind"}]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/executions/f1"),
		chromedp.WaitVisible("#redrive-patch"),
		chromedp.SendKeys("#redrive-patch", patch),
		chromedp.Submit("#redrive-form"),
		chromedp.WaitVisible("#confirm-patch"),
		chromedp.Click("#confirm"),
		chromedp.WaitVisible("#redrive-patch-error"),
	); err != nil {
		t.Fatal(err)
	}
	// Read in one evaluation each: the page's live refresh may replace
	// the nodes between a query and a read of the node it found.
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#redrive-patch-error").textContent`))
	if err != nil || !strings.Contains(msg, "Governance.SchemaViolation") {
		t.Errorf("the patch's error is %q (%v)", msg, err)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#redrive-patch").value`)); err != nil || kept != patch {
		t.Errorf("the patch is now %q (%v), want it as typed", kept, err)
	}
	screenshot(t, ctx, "execution-redrive-refused")
	if code, _ := ts.call(t, RoleViewer, "GET", "/v1/executions/f1", nil, nil); code != http.StatusOK || ts.status(t, "f1") != "FAILED" {
		t.Errorf("f1 is %s, want FAILED", ts.status(t, "f1"))
	}
}

// TestBrowserModelLoop: a Task whose agent ran a model loop shows its
// turns, the tool calls under each, its failures marked as the page marks
// them, and the call's totals.
func TestBrowserModelLoop(t *testing.T) {
	t.Parallel()
	ts := newLoopServer(t)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/loop"), chromedp.WaitVisible("#loops article.loop")); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text("#loops"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"2 turns, 2 tool calls (1 failed): 370 tokens (320 in, 50 out), cost 0.004 EUR",
		"Turn 1", "150 tokens (120 in, 30 out), cost 0.0015 EUR", "Fell back from small: Model.RateLimited", "Let me look that up.",
		"weather", `{"city":"Paris"}`, "<b>21 °C</b>, sunny", "forecast", "Agent.ToolError no forecast <beyond> today",
		"Turn 2", "It is 21 °C and sunny in Paris.", "save answer", "Agent.ModelError the model is down"} {
		if !strings.Contains(shown, w) {
			t.Errorf("the loops show no %q:\n%s", w, shown)
		}
	}
	// Turn 1's tool calls are its own, in the order asked for.
	tools, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#loops [aria-label="Turn 1"] li.step')].map(li => li.dataset.tool + (li.classList.contains("failed") ? " failed" : ""))`))
	if err != nil || strings.Join(tools, ",") != "weather,forecast failed" {
		t.Errorf("turn 1's tool calls are %q (%v), want weather and forecast (failed)", tools, err)
	}
	// Failures are marked in red, as in the timeline (the style sheet
	// applies: the page's Content-Security-Policy is as it was).
	colors, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[
		getComputedStyle(document.querySelector("#loops li.step.failed")).borderLeftColor,
		getComputedStyle(document.querySelector("#loops .loop-turn.failed")).borderLeftColor,
		getComputedStyle(document.querySelector("#loops .event-error .error-name")).color,
		getComputedStyle(document.querySelector("#timeline .event-error .error-name")).color]`))
	if err != nil || len(colors) != 4 || colors[0] != "rgb(180, 35, 24)" || colors[1] != colors[0] || colors[2] != colors[3] {
		t.Errorf("the failures' colours are %q (%v), want the page's red", colors, err)
	}
	// A turn's link leads to its event in the timeline.
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const a = document.querySelector('#loops [aria-label="Turn 2"] h4 a'); const li = document.querySelector(a.getAttribute("href")); return li !== null && li.dataset.type === "ModelTurnSucceeded"; })()`)); err != nil || !ok {
		t.Errorf("turn 2's link does not lead to its ModelTurnSucceeded event (%v)", err)
	}
	// The picture leaves the timeline out: it is long.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#timeline").closest("section").hidden = true`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "execution-model-loop")
}

// TestBrowserModelLoopLive: a model loop's turns appear on the open page
// as their events arrive, while the execution still runs.
func TestBrowserModelLoopLive(t *testing.T) {
	t.Parallel()
	next := make(chan struct{}, 2) // one token per turn after the first
	turn := func(ctx context.Context, req *agents.Request, n int, text string) error {
		if n > 1 {
			select {
			case <-next:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		_, err := req.Journal(ctx, agents.StepSpec{Name: "turn " + strconv.Itoa(n), Kind: "ModelTurn", Detail: map[string]any{"turn": n, "model": "m"}},
			func(context.Context) (any, error) {
				return map[string]any{"model": "m", "text": text, "inputTokens": 10 * n, "outputTokens": n}, nil
			})
		return err
	}
	slow := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		for n, text := range []string{"thinking", "still thinking"} {
			if err := turn(ctx, req, n+1, text); err != nil {
				return nil, err
			}
		}
		select {
		case <-next:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return "done", nil
	})
	reg := agents.NewRegistry()
	if err := reg.Register("Slow", slow); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) { c.Agents = reg })
	ts.startFlow(t, "slow-loop", `{"StartAt":"Think","States":{"Think":{"Type":"Task","Agent":"Slow","End":true}}}`, `{}`, "",
		func(e api.Execution) bool { return e.Status == "RUNNING" })
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/slow-loop"), chromedp.WaitVisible("#status")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "turn 1 is shown", `document.querySelector('#loops [aria-label="Turn 1"]') !== null`)
	next <- struct{}{}
	pollTrue(t, ctx, "turn 2 is shown while the execution runs",
		`document.querySelector('#loops [aria-label="Turn 2"]') !== null && document.querySelector("#status").textContent === "RUNNING" && document.querySelector('#timeline li[data-type="ModelTurnSucceeded"]:last-child') !== null`)
	if total, err := chromedp.Run(ctx, chromedp.Text("#loops .loop-total")); err != nil || !strings.Contains(total, "2 turns, 0 tool calls: 33 tokens (30 in, 3 out)") {
		t.Errorf("the loop's total is %q (%v)", total, err)
	}
	next <- struct{}{}
	pollTrue(t, ctx, "the execution succeeds", `document.querySelector("#status").textContent === "SUCCEEDED"`)
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
}
