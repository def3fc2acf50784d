package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// TestChildExecutionBrowser: on a parent's page, each child its Workflow
// states and startExecution Task started is listed with its state and
// status, and linked from the timeline's event; "Show its graph" opens
// the child's graph in place (its states' statuses, links to the child's
// page) and closes it again; the child's link leads to its page, which
// names the parent and the state, and links back. State names are text,
// never markup.
func TestChildExecutionBrowser(t *testing.T) {
	t.Parallel()
	ts := newChildrenServer(t)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/p"), chromedp.WaitVisible("#children li.child")); err != nil {
		t.Fatal(err)
	}
	child := engine.ChildWorkflowID("p", "Research <&>#1", 0)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#children li.child")].map(li =>
		li.querySelector(".child-state").textContent + " | " + li.dataset.child + " | " + li.querySelector(".status").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Research <&>#1 | " + child + " | SUCCEEDED",
		"Each#1.0/0/Deep#1 | p/Each#1.0/0/Deep#1.0 | SUCCEEDED",
		"Each#1.0/1/Deep#1 | p/Each#1.0/1/Deep#1.0 | SUCCEEDED",
		"Fire | fired | SUCCEEDED",
		"Broken#1 | p/Broken#1.0 | FAILED",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("the children listed:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline .event[data-type=ChildExecutionStarted] .event-child a.child-link").length`)); err != nil || n != len(want) {
		t.Errorf("%d timeline events link to a child (%v), want %d", n, err, len(want))
	}

	// The first child's graph opens in place, drawn with its statuses.
	clickLive(t, ctx, `#children li.child:first-child .child-graph-toggle`)
	pollTrue(t, ctx, "the child's graph opens in place", `document.querySelector('#child-graph-1 svg [data-state="Look <up>"]') !== null`)
	checks := map[string]string{
		"the toggle says it is open":        `document.querySelector("#children li.child:first-child .child-graph-toggle").getAttribute("aria-expanded") === "true"`,
		"its states ran":                    `document.querySelector('#child-graph-1 [data-state="Tidy"]').closest(".node").classList.contains("visited")`,
		"its states link to the child page": `document.querySelector('#child-graph-1 a[href]').getAttribute("href").startsWith("/executions/` + url.PathEscape(child) + `#event-")`,
		"the page's own graph is as it was": `document.querySelectorAll("#graph svg").length === 1 && document.querySelector('#graph [data-state="Research <&>"]') !== null`,
		"no id twice":                       `(() => { const ids = [...document.querySelectorAll("[id]")].map(e => e.id); return ids.length === new Set(ids).size })()`,
	}
	for what, cond := range checks {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond)); err != nil || !ok {
			t.Errorf("%s: %v, %v", what, ok, err)
		}
	}
	// The picture leaves the long timeline and output out.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector("#timeline").closest("section").hidden = true) && (document.getElementById("output").closest("dd").hidden = true) && (document.getElementById("output").closest("dd").previousElementSibling.hidden = true)`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "execution-children")
	clickLive(t, ctx, `#children li.child:first-child .child-graph-toggle`)
	pollTrue(t, ctx, "the child's graph closes", `document.getElementById("child-graph-1").hidden && !document.querySelector("#child-graph-1 svg")`)

	// To the child's page, and back.
	clickLive(t, ctx, `#children li.child:first-child a.child-link`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#child-parent")); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text("#child-parent"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown, "p, state Research <&>#1") || !strings.Contains(shown, "research@1") {
		t.Errorf("the child's page says %q, want its parent and state", shown)
	}
	if path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`decodeURIComponent(location.pathname)`)); err != nil || path != "/executions/"+child {
		t.Errorf("the child's page is at %q (%v)", path, err)
	}
	clickLive(t, ctx, `#child-parent a`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#children li.child")); err != nil {
		t.Fatal(err)
	}
	if path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err != nil || path != "/executions/p" {
		t.Errorf("back at %q (%v), want the parent's page", path, err)
	}

	// The graph's side panel, on the Workflow state, lists its child and
	// opens its graph; on the Map's Workflow state, both items' children.
	clickLive(t, ctx, `#graph [data-state="Research <&>"]`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#graph-panel")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the panel lists the state's child", `[...document.querySelectorAll("#graph-panel .panel-children a.child-link")].map(a => a.textContent).join() === `+jsString(child))
	clickLive(t, ctx, `#graph-panel .panel-children .child-graph-toggle`)
	pollTrue(t, ctx, "the child's graph opens in the panel", `document.querySelector('#panel-child-graph-1 svg [data-state="Tidy"]') !== null`)
	clickLive(t, ctx, `#graph [data-state="Each/*/Deep"]`)
	pollTrue(t, ctx, "the panel on the Map's Workflow state lists both items' children",
		`document.getElementById("graph-panel-title").textContent === "Each/*/Deep" && [...document.querySelectorAll("#graph-panel .panel-children a.child-link")].map(a => a.textContent).join() === "p/Each#1.0/0/Deep#1.0,p/Each#1.0/1/Deep#1.0"`)
}

// TestChildExecutionBrowserLive: the parent's page follows its children
// without a reload: the event that starts one is appended to the
// timeline with a link to the child, the children's list appears with
// the child WAITING at its approval, and once the child is decided both
// turn SUCCEEDED.
func TestChildExecutionBrowserLive(t *testing.T) {
	t.Parallel()
	ts := newChildrenServer(t)
	def := json.RawMessage(`{"StartAt":"Gate","States":{
		"Gate":{"Type":"Approval","Prompt":"Go?","Options":["go"],"ResultPath":"$.gate","Next":"Review"},
		"Review":{"Type":"Workflow","WorkflowId":"reviewed","ResultPath":"$.review","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "lw", "definition": def}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	gate := ts.waitFor(t, "lw", func(e api.Execution) bool { return e.Status == "WAITING" })
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/lw"), chromedp.WaitVisible("#timeline")); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#children").length`)); err != nil || n != 0 {
		t.Fatalf("the page lists children before any started (%d, %v)", n, err)
	}
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+gate.Approvals[0].ID+"/decision", map[string]any{"option": "go"}, nil); code != http.StatusAccepted {
		t.Fatalf("decide the gate: %d %s", code, body)
	}
	child := engine.ChildWorkflowID("lw", "Review#1", 0)
	pollTrue(t, ctx, "the start of the child is appended to the timeline with its link",
		`[...document.querySelectorAll("#timeline .event[data-type=ChildExecutionStarted] a.child-link")].map(a => a.textContent + " " + decodeURIComponent(a.pathname)).join() === `+jsString(child+" /executions/"+child))
	pollTrue(t, ctx, "the children's list appears, the child waiting", `document.querySelector("#children li.child .status") && document.querySelector("#children li.child .status").textContent === "WAITING"`)

	// The page showed it WAITING: its approval is committed.
	var review api.Execution
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/"+url.PathEscape(child), nil, &review); code != http.StatusOK || len(review.Approvals) != 1 {
		t.Fatalf("the child: %d %s, want it waiting at its approval", code, body)
	}
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+review.Approvals[0].ID+"/decision", map[string]any{"option": "approve"}, nil); code != http.StatusAccepted {
		t.Fatalf("decide the child's review: %d %s", code, body)
	}
	pollTrue(t, ctx, "the child and its parent succeed on the page", `document.querySelector("#children li.child .status").textContent === "SUCCEEDED" && document.getElementById("status").textContent === "SUCCEEDED"`)
}

// clickLive clicks the element sel selects as it is when clicked: the
// page's live updates replace parts of it, so a node found before may be
// gone by the time a click dispatched through the DevTools protocol
// reaches it.
func clickLive(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	pollTrue(t, ctx, "click "+sel, `(() => { const e = document.querySelector(`+jsString(sel)+`); if (!e) return false;
		if (typeof e.click === "function") { e.click() } else { e.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true})) }
		return true })()`)
}
