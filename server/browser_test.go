package server

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// updateScreenshots makes the browser tests rewrite the screenshots under
// docs/ (go test -run TestBrowser -update).
var updateScreenshots = flag.Bool("update", false, "rewrite the screenshots under docs/")

// chromium is the package's one headless Chromium, started by the first
// browser test and stopped by TestMain: starting one per test cost about
// half a second each. Each test has a browser context of its own in it
// (cookies, storage and cache apart), as a fresh browser would give.
var chromium struct {
	once sync.Once
	ctx  context.Context // the browser's first tab; tests open their own
	stop func()
	dir  string // the user data folder
	// width and height are the size of the first tab's page, which every
	// test's tab gets.
	width, height int64
	err           error
	skip          string // why there is none
}

// TestMain stops the shared Chromium once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.stop != nil {
		chromium.stop()
	}
	if chromium.dir != "" {
		os.RemoveAll(chromium.dir)
	}
	os.Exit(code)
}

// startChromium starts the shared Chromium, or says why there is none.
func startChromium() {
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		chromium.skip = "no Chromium installed (apt-get install chromium): browser tests skipped"
		return
	}
	dir, err := os.MkdirTemp("", "aslrun-chromium-")
	if err != nil {
		chromium.err = fmt.Errorf("chromium's user data folder: %w", err)
		return
	}
	chromium.dir = dir
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	chromium.ctx = ctx
	chromium.stop = func() {
		cancelCtx()
		cancelAlloc()
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`[window.innerWidth, window.innerHeight]`))
	if err != nil || len(page) != 2 {
		chromium.err = fmt.Errorf("starting %s: %d %w", path, page, err)
		return
	}
	chromium.width, chromium.height = page[0], page[1]
}

// browser returns a context of a fresh tab, in a browser context of its
// own, of the shared headless Chromium, or skips the test when none is
// installed (outside CI; in CI it fails). The browser tests run in
// parallel: each has its own test server and tab, and much of their time
// is spent waiting for the page.
func browser(t *testing.T) context.Context {
	t.Helper()
	chromium.once.Do(startChromium)
	if chromium.skip != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium installed: .ci/run installs Debian's chromium")
		}
		t.Skip(chromium.skip)
	}
	if chromium.err != nil {
		t.Fatal(chromium.err)
	}
	ctx, cancelCtx := chromedp.NewContext(chromium.ctx, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
	})
	// The tab's page gets the size of the first tab's, as a fresh
	// browser's tab had.
	size := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		w, err := cdp.Call(ctx, tg, cdpbrowser.GetWindowForTarget, cdpbrowser.GetWindowForTargetParams{})
		if err != nil {
			return chromedp.Void{}, err
		}
		_, err = cdp.Call(ctx, tg, cdpbrowser.SetContentsSize, cdpbrowser.SetContentsSizeParams{WindowID: w.WindowID, Width: chromium.width, Height: chromium.height})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, size); err != nil {
		t.Fatalf("sizing the browser's window: %v", err)
	}
	return ctx
}

// screenshot saves the page as name.png in $ASLRUN_SCREENSHOTS (a
// temporary folder when unset), and under docs/ with -update.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := os.Getenv("ASLRUN_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateScreenshots {
		if err := os.WriteFile(filepath.Join("..", "docs", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserOpensTheAPI: the harness: a real Chromium reads a page of the
// server.
func TestBrowserOpensTheAPI(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/healthz"), chromedp.WaitVisible("body")); err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text("body"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("the browser shows %q", body)
	}
}

// signInBrowser signs the browser in with role's token through the form.
func signInBrowser(t *testing.T, ctx context.Context, ts *testServer, role Role) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/signin"),
		chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", ts.tokens[role]),
		chromedp.Click("#signin"),
		chromedp.WaitVisible("#principal"),
	); err != nil {
		t.Fatalf("sign in as %v: %v", role, err)
	}
}

// TestBrowserInboxDecision: an approver signs in, opens the inbox, picks
// an option with a comment, and watches the execution page turn
// SUCCEEDED without a reload; a viewer sees no decision form.
func TestBrowserInboxDecision(t *testing.T) {
	t.Parallel()
	publisher := newGate(t, map[string]any{"url": "https://example.com/notes"})
	ts := newTestServer(t, withAgents(t, map[string]agents.Agent{"Publisher": publisher}))
	def := json.RawMessage(`{"StartAt":"Review","States":{
		"Review":{"Type":"Approval","Prompt":{"Title":"Publish the release notes?","Description":"3 sections, 412 words"},"Options":["publish","reject"],"ResultPath":"$.review","Next":"Publish"},
		"Publish":{"Type":"Task","Agent":"Publisher","ResultPath":"$.published","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "notes-1", "definition": def}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "notes-1", func(e api.Execution) bool { return e.Status == "WAITING" })

	viewer := browser(t)
	signInBrowser(t, viewer, ts, RoleViewer)
	if err := chromedp.Do(viewer, chromedp.Navigate(ts.URL+"/inbox"), chromedp.WaitVisible("article.approval")); err != nil {
		t.Fatal(err)
	}
	if forms, err := chromedp.Run(viewer, chromedp.Evaluate[int](`document.querySelectorAll("form.decision-form").length`)); err != nil || forms != 0 {
		t.Errorf("a viewer sees %d decision forms (%v), want none", forms, err)
	}
	// A forged POST from the viewer's page is refused.
	approvalURL, err := chromedp.Run(viewer, chromedp.Evaluate[string](`document.querySelector("article.approval").id.replace("approval-", "/inbox/") + "/decide"`))
	if err != nil {
		t.Fatal(err)
	}
	forged, err := chromedp.Run(viewer, chromedp.Evaluate[int](`fetch("`+approvalURL+`", {method: "POST", redirect: "manual", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "option=publish"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || forged != http.StatusForbidden {
		t.Errorf("a forged decision from the viewer's page: %d (%v), want 403", forged, err)
	}
	if e := ts.waitFor(t, "notes-1", func(api.Execution) bool { return true }); e.Status != "WAITING" {
		t.Fatalf("after the forged POST the execution is %s, want WAITING", e.Status)
	}

	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleApprover)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/inbox"), chromedp.WaitVisible("form.decision-form")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "inbox")
	if err := chromedp.Do(ctx,
		chromedp.Click(`input[name=option][value=publish]`),
		chromedp.SendKeys(`textarea[name=comment]`, "ship it"),
		chromedp.Submit("form.decision-form"),
		chromedp.WaitVisible("#status"),
	); err != nil {
		t.Fatal(err)
	}
	// The page is not reloaded: a marker set now, while the publisher
	// holds the execution RUNNING, survives until the status turns.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	publisher.open()
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector("#status").textContent.trim(); return s === "SUCCEEDED" ? s : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || status != "SUCCEEDED" {
		screenshot(t, ctx, "execution-failed")
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		shown, _ := chromedp.Run(ctx, chromedp.Text("#status"))
		t.Fatalf("status %q (%v) at %s shows %q; want SUCCEEDED without a reload", status, err, loc, shown)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
	screenshot(t, ctx, "execution")
	var e api.Execution
	ts.call(t, RoleViewer, "GET", "/v1/executions/notes-1", nil, &e)
	var out map[string]any
	if err := json.Unmarshal(e.Output, &out); err != nil || out["review"].(map[string]any)["approver"] != "approver-bot" || out["review"].(map[string]any)["comment"] != "ship it" {
		t.Errorf("output %s: want the approver and the comment recorded", e.Output)
	}
}

// TestBrowserEditRefusedByGovernance: an Editable approval whose edit
// breaks the workflow's schema is refused in the inbox with the violation
// shown, and nothing is recorded.
func TestBrowserEditRefusedByGovernance(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	def := json.RawMessage(`{"StartAt":"Edit","Governance":{"Guard":{"Schema":{"type":"object","properties":{"draft":{"type":"object","properties":{"words":{"type":"integer","maximum":500}}}}}}},
		"States":{"Edit":{"Type":"Approval","Prompt":"Check the draft","Editable":{"Fields":["$.draft.words"],"ResultPath":"$"},"ResultPath":"$.review","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "draft-1", "definition": def, "input": json.RawMessage(`{"draft":{"words":412}}`)}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "draft-1", func(e api.Execution) bool { return e.Status == "WAITING" })
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleApprover)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/inbox"),
		chromedp.WaitVisible("form.decision-form textarea[name=edit]"),
		chromedp.Click(`input[name=option][value=approve]`),
		chromedp.SetValue(`textarea[name=edit]`, `{"draft":{"words":9000}}`),
		chromedp.Submit("form.decision-form"),
		chromedp.WaitVisible("#error"),
	); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Text("#error"))
	if err != nil || !strings.Contains(msg, "Governance.SchemaViolation") || !strings.Contains(msg, "$.draft.words") {
		t.Errorf("the inbox says %q (%v), want the schema violation at $.draft.words", msg, err)
	}
	screenshot(t, ctx, "inbox-refused")
	if e := ts.waitFor(t, "draft-1", func(api.Execution) bool { return true }); e.Status != "WAITING" {
		t.Errorf("after the refused edit the execution is %s, want WAITING", e.Status)
	}
}

// TestBrowserRollbackFromCheckpoints: an operator rolls an execution back
// to its first checkpoint through the form and its confirmation, and the
// execution page shows the rollback in its timeline.
func TestBrowserRollbackFromCheckpoints(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleOperator)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/executions/ck"),
		chromedp.WaitVisible(`section#checkpoints tr[data-checkpoint="two"]`),
		chromedp.Click(`tr[data-checkpoint="one"] form.rollback-form button`),
		chromedp.WaitVisible("#confirm-form"),
	); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Text("#confirm-message"))
	if err != nil || !strings.Contains(msg, `checkpoint "one"`) {
		t.Errorf("the confirmation says %q (%v), want the checkpoint named", msg, err)
	}
	if evs := ts.events(t, "ck"); slices.Contains(evs, engine.EventExecutionRolledBack) {
		t.Fatalf("rolled back before the confirmation: %v", evs)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click("#confirm"),
		chromedp.WaitVisible(`#timeline li[data-type="ExecutionRolledBack"]`),
	); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("after the confirmation at %s: %v", loc, err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != ts.URL+"/executions/ck" {
		t.Errorf("after the rollback the browser is at %q (%v), want the execution page", loc, err)
	}
	ts.waitFor(t, "ck", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	screenshot(t, ctx, "checkpoints")
}
