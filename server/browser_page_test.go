package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/api"
)

// wideFlow is a workflow whose graph is far wider than a laptop's column:
// a Parallel of eight branches with long state names, then a Choice of
// six, every one of whose branches fails.
func wideFlow() string {
	var branches, choices, targets []string
	for i := range 8 {
		branches = append(branches, fmt.Sprintf(`{"StartAt":"ReviewTheChapterNumber%dCarefully","States":{"ReviewTheChapterNumber%dCarefully":{"Type":"Pass","End":true}}}`, i, i))
	}
	for i := range 6 {
		choices = append(choices, fmt.Sprintf(`{"Variable":"$.kind","StringEquals":"kind-%d","Next":"HandleTheKindNumber%dOfDocument"}`, i, i))
		targets = append(targets, fmt.Sprintf(`"HandleTheKindNumber%dOfDocument":{"Type":"Fail","Error":"Custom.Kind%d"}`, i, i))
	}
	return `{"StartAt":"AllChapters","States":{
		"AllChapters":{"Type":"Parallel","ResultPath":null,"Branches":[` + strings.Join(branches, ",") + `],"Next":"Route"},
		"Route":{"Type":"Choice","Choices":[` + strings.Join(choices, ",") + `],"Default":"HandleTheKindNumber0OfDocument"},
		` + strings.Join(targets, ",") + `}}`
}

// graphFit measures, on the page shown, whether the graph fits: the page
// does not scroll sideways, the graph's box stays within the main
// column, its picture holds its whole drawing, and the box scrolls to
// every part of it.
type graphFit struct {
	PageScroll   float64 `json:"pageScroll"`   // how far the page is wider than the window
	BoxOverflow  float64 `json:"boxOverflow"`  // how far the graph's box goes past the column
	DrawingCut   float64 `json:"drawingCut"`   // how far the drawing goes past its picture
	Unreachable  float64 `json:"unreachable"`  // how much of the picture the box cannot scroll to
	PictureWidth float64 `json:"pictureWidth"` // the picture's width as drawn
	ColumnWidth  float64 `json:"columnWidth"`
}

const measureGraph = `(() => {
	const main = document.querySelector("main"), box = document.getElementById("graph"), svg = box.querySelector("svg");
	const ms = getComputedStyle(main), mr = main.getBoundingClientRect();
	const right = mr.right - parseFloat(ms.paddingRight), br = box.getBoundingClientRect(), sr = svg.getBoundingClientRect();
	const vb = svg.viewBox.baseVal, bb = svg.getBBox();
	const cut = Math.max(0, -bb.x, -bb.y, bb.x + bb.width - vb.width, bb.y + bb.height - vb.height);
	const scrolls = ["auto", "scroll"].includes(getComputedStyle(box).overflowX);
	const reach = scrolls ? box.scrollWidth : box.clientWidth;
	return {
		pageScroll: document.documentElement.scrollWidth - window.innerWidth,
		boxOverflow: Math.max(0, br.right - right),
		drawingCut: cut,
		unreachable: Math.max(0, sr.width - reach),
		pictureWidth: sr.width,
		columnWidth: right - (mr.left + parseFloat(ms.paddingLeft)),
	};
})()`

// TestBrowserGraphFits: the graph of a workflow far wider than the
// column, at a laptop's and at a phone's width: the page does not
// scroll sideways, the graph's box stays in the column, and every branch
// can be reached by scrolling inside that box; the state it failed in is
// marked.
func TestBrowserGraphFits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.startFlow(t, "wide", wideFlow(), `{"kind":"kind-5"}`, "", func(e api.Execution) bool { return e.Status == "FAILED" })
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "wide", Definition: json.RawMessage(wideFlow())}, nil); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 900}, {"phone", 375, 812}} {
		for _, page := range []string{"/executions/wide", "/workflows/wide"} {
			t.Run(size.name+page, func(t *testing.T) {
				if err := chromedp.Do(ctx,
					chromedp.EmulateViewport(size.width, size.height),
					chromedp.Navigate(ts.URL+page),
					chromedp.WaitVisible("#graph svg"),
				); err != nil {
					t.Fatal(err)
				}
				fit, err := chromedp.Run(ctx, chromedp.Evaluate[graphFit](measureGraph))
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s %s: %+v", size.name, page, fit)
				if fit.PictureWidth <= fit.ColumnWidth {
					t.Fatalf("the picture (%.0f px) is not wider than the column (%.0f px): the test tests nothing", fit.PictureWidth, fit.ColumnWidth)
				}
				if fit.PageScroll > 0 {
					wide, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("body *")].filter(e => !e.closest("#graph svg") && e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 4).map(e => e.tagName + "#" + e.id).join(", ")`))
					t.Errorf("the page is %.0f px wider than the window (%s)", fit.PageScroll, wide)
				}
				if fit.BoxOverflow > 0.5 {
					t.Errorf("the graph's box goes %.0f px past the column", fit.BoxOverflow)
				}
				if fit.DrawingCut > 0.5 {
					t.Errorf("the drawing goes %.0f px past its picture: a branch is cut off", fit.DrawingCut)
				}
				if fit.Unreachable > 0.5 {
					t.Errorf("%.0f px of the picture cannot be scrolled to", fit.Unreachable)
				}
				// The last branch, at the far right, scrolls into view inside the box.
				visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
					const box = document.getElementById("graph");
					const titles = [...box.querySelectorAll("g.node > title")];
					const last = titles.find(t => t.textContent.startsWith("AllChapters/7/")).parentNode;
					last.scrollIntoView({block: "nearest", inline: "nearest"});
					const r = last.getBoundingClientRect(), b = box.getBoundingClientRect();
					return r.left >= b.left - 1 && r.right <= b.right + 1 && document.documentElement.scrollLeft === 0;
				})()`))
				if err != nil || !visible {
					t.Errorf("the last branch cannot be scrolled into view in the graph's box (%v)", err)
				}
				if page == "/executions/wide" {
					if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#graph g.node.failed").length`)); err != nil || n != 1 {
						t.Errorf("%d failed nodes (%v), want the one it failed in", n, err)
					}
					screenshot(t, ctx, "execution-graph-"+size.name)
				}
			})
		}
	}
}

// cspViolations collects the console's messages that report a refusal
// of the Content-Security-Policy until the page logs done.
func cspViolations(t *testing.T, ctx context.Context, visit func(), done string) []string {
	t.Helper()
	messages := chromedp.Console(ctx)
	visit()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`console.log(`+jsString(done)+`), true`)); err != nil {
		t.Fatal(err)
	}
	var found []string
	for m, err := range messages {
		if err != nil {
			t.Fatalf("reading the console: %v", err)
		}
		if m.Text == done {
			break
		}
		if strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Content-Security-Policy") {
			found = append(found, fmt.Sprintf("%s (%s)", m.Text, m.URL))
		}
	}
	return found
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestBrowserNoCSPViolations: every page, the execution page with its
// graph among them, loads without the browser refusing anything under
// the pages' own Content-Security-Policy.
func TestBrowserNoCSPViolations(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.startFlow(t, "wide", wideFlow(), `{"kind":"kind-2"}`, "", func(e api.Execution) bool { return e.Status == "FAILED" })
	ts.startFlow(t, "waiting", reviewFlow, "", reviewMock, func(e api.Execution) bool { return e.Status == "WAITING" })
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "wide", Definition: json.RawMessage(wideFlow())}, nil); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleOperator)
	pages := []struct{ path, ready string }{
		{"/executions/wide", "#graph svg"},
		{"/executions/waiting", "#graph svg"},
		{"/workflows/wide", "#graph svg"},
		{"/executions", "#executions"},
		{"/inbox", "article.approval"},
		{"/workflows", "main"},
	}
	for _, p := range pages {
		found := cspViolations(t, ctx, func() {
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+p.path), chromedp.WaitVisible(p.ready)); err != nil {
				t.Fatalf("%s: %v", p.path, err)
			}
			// Let the live scripts run one turn (a stream opened, a part fetched).
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => setTimeout(() => r(true), 0)))`, chromedp.EvalAwaitPromise)); err != nil {
				t.Fatal(err)
			}
		}, "csp-check-done "+p.path)
		for _, v := range found {
			t.Errorf("%s: the browser refused: %s", p.path, v)
		}
	}
	// The execution's graph is still styled from the stylesheet: a failed
	// node is filled.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/wide"), chromedp.WaitVisible("#graph svg")); err != nil {
		t.Fatal(err)
	}
	if fill, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#graph g.node.failed .shape")).fill`)); err != nil || fill != "rgb(242, 139, 130)" {
		t.Errorf("a failed node's fill is %q (%v), want the stylesheet's", fill, err)
	}
}

// TestBrowserLiveErrorStyle: an error appended to the timeline while the
// page is open has the same markup and red style as one the server
// writes, and the graph marks the state it failed in.
func TestBrowserLiveErrorStyle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	// The task runs, and fails, only once the approval is decided, with
	// the page open.
	const flow = `{"StartAt":"Go","States":{"Go":{"Type":"Approval","Prompt":"go?","Options":["go"],"ResultPath":null,"Next":"Work"},
		"Work":{"Type":"Task","Agent":"W","End":true}}}`
	mock := `{"W":{"0":{"Throw":{"Error":"Custom.Broken","Cause":"the service said no"}}}}`
	e := ts.startFlow(t, "breaks", flow, "", mock, func(e api.Execution) bool { return e.Status == "WAITING" && len(e.Approvals) == 1 })
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/breaks"), chromedp.WaitVisible("#timeline")); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__notReloaded = true, document.querySelectorAll("#timeline .event-error").length`)); err != nil || n != 0 {
		t.Fatalf("%d errors in the timeline before the failure (%v): the test tests nothing", n, err)
	}
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+e.Approvals[0].ID+"/decision", map[string]any{"option": "go"}, nil); code != http.StatusAccepted {
		t.Fatalf("decide: %d %s", code, body)
	}
	// Markup and colour of the appended error, as JavaScript built it.
	const errorView = `(() => {
		const e = document.querySelector('#timeline li[data-type="TaskFailed"] .event-error');
		if (!e) return null;
		const name = e.querySelector(".error-name");
		return JSON.stringify({html: e.innerHTML.replace(/\s+/g, " ").trim(), color: name ? getComputedStyle(name).color : "", weight: name ? getComputedStyle(name).fontWeight : ""});
	})()`
	live, err := chromedp.Run(ctx, chromedp.Poll[string](errorView, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the failure is not appended: %v", err)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Fatalf("the page was reloaded (%v): the error was not appended live", err)
	}
	screenshot(t, ctx, "execution-live-error")
	ts.waitFor(t, "breaks", func(e api.Execution) bool { return e.Status == "FAILED" })
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#timeline li[data-type="TaskFailed"]`)); err != nil {
		t.Fatal(err)
	}
	served, err := chromedp.Run(ctx, chromedp.Evaluate[string](errorView))
	if err != nil {
		t.Fatal(err)
	}
	if live != served {
		t.Errorf("the error appended live is\n%s\nthe server's is\n%s", live, served)
	}
	if !strings.Contains(live, `"color":"rgb(180, 35, 24)"`) {
		t.Errorf("the appended error is not red: %s", live)
	}
}

// TestBrowserInboxPrompt: a structured prompt shows its Title and
// Description, and the rest of it folded away, whether the server wrote
// the card or the inbox's script added it while open.
func TestBrowserInboxPrompt(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	def := func(n int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"StartAt":"Review","States":{"Review":{"Type":"Approval",
		"Prompt":{"Title":"Publish release %d?","Description":"3 sections,\n412 words","Details":{"author":"ana","priority":"high"}},
		"Options":["publish","reject"],"End":true}}}`, n))
	}
	start := func(name string, n int) {
		t.Helper()
		if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": name, "definition": def(n)}, nil); code != http.StatusCreated {
			t.Fatalf("start: %d %s", code, body)
		}
		ts.waitFor(t, name, func(e api.Execution) bool { return e.Status == "WAITING" })
	}
	start("served", 1)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleApprover)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/inbox"), chromedp.WaitVisible("article.approval")); err != nil {
		t.Fatal(err)
	}
	waitLive(t, ctx)
	start("appended", 2)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("article.approval").length === 2 || null`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the second approval does not appear: %v", err)
	}
	for n, exec := range []string{"served", "appended"} {
		view, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
			const a = [...document.querySelectorAll("article.approval")].find(a => a.querySelector("h2 a").textContent === "`+exec+`");
			const p = a.querySelector(".prompt"), more = p.querySelector("details.prompt-more");
			return JSON.stringify({
				title: (p.querySelector(".prompt-title") || {}).textContent,
				description: (p.querySelector(".prompt-description") || {}).innerText,
				raw: p.querySelector(":scope > pre") !== null,
				open: more ? more.open : null,
				more: more ? JSON.parse(more.querySelector("pre").textContent) : null,
			});
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"title":"Publish release %d?","description":"3 sections,\n412 words","raw":false,"open":false,"more":{"Details":{"author":"ana","priority":"high"}}}`, n+1)
		if view != want {
			t.Errorf("%s: the prompt shows\n%s\nwant\n%s", exec, view, want)
		}
	}
	screenshot(t, ctx, "inbox-prompt")
}

// TestBrowserLiveLongPayloadCut: a long payload of an event appended
// while the page is open is cut as the server cuts it, with the link to
// the whole.
func TestBrowserLiveLongPayloadCut(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.MaxBody = 8 << 20 })
	input, err := json.Marshal(map[string]any{"text": strings.Repeat("é0123456789", 300_000/12)})
	if err != nil {
		t.Fatal(err)
	}
	// Work runs only once the approval is decided, with the page open.
	start := map[string]any{"name": "long", "input": json.RawMessage(input), "maxPayload": 8 << 20,
		"definition": json.RawMessage(`{"StartAt":"Go","States":{"Go":{"Type":"Approval","Prompt":"go?","Options":["go"],"ResultPath":null,"Next":"Work"},
			"Work":{"Type":"Task","Agent":"W","ResultPath":"$.work","End":true}}}`),
		"mock": json.RawMessage(`{"W":{"0":{"Return":"done"}}}`)}
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	e := ts.waitFor(t, "long", func(e api.Execution) bool { return e.Status == "WAITING" && len(e.Approvals) == 1 })
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/long"), chromedp.WaitVisible("#timeline")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+e.Approvals[0].ID+"/decision", map[string]any{"option": "go"}, nil); code != http.StatusAccepted {
		t.Fatalf("decide: %d %s", code, body)
	}
	got, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
		const li = document.querySelector('#timeline li[data-type="TaskStateExited"]');
		if (!li) return null;
		const a = li.querySelector("p.cut a.whole");
		return JSON.stringify({shown: new TextEncoder().encode(li.querySelector("pre").textContent).length, note: li.querySelector("p.cut").textContent, href: a ? a.getAttribute("href") : ""});
	})()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the exit of Work is not appended: %v", err)
	}
	var view struct {
		Shown      int
		Note, Href string
	}
	if err := json.Unmarshal([]byte(got), &view); err != nil {
		t.Fatal(err)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Fatalf("the page was reloaded (%v)", err)
	}
	if view.Shown > maxShown || view.Shown < maxShown-3 {
		t.Errorf("%d bytes shown, want %d", view.Shown, maxShown)
	}
	if !strings.HasPrefix(view.Note, "65.5 kB of 300.0 kB shown, 234.5 kB cut") {
		t.Errorf("the note says %q", view.Note)
	}
	// The link serves the event's whole output.
	viewer := ts.signedIn(t, RoleViewer)
	code, whole, _ := viewer.get(t, view.Href)
	if code != http.StatusOK || !strings.Contains(whole, `"work":"done"`) || len(whole) < 300_000 {
		t.Errorf("%s: %d, %d bytes", view.Href, code, len(whole))
	}
}
