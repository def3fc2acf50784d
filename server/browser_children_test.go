package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

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
	if err := chromedp.Do(ctx, chromedp.Click(`#children li.child:first-child .child-graph-toggle`)); err != nil {
		t.Fatal(err)
	}
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
	if err := chromedp.Do(ctx, chromedp.Click(`#children li.child:first-child .child-graph-toggle`)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the child's graph closes", `document.getElementById("child-graph-1").hidden && !document.querySelector("#child-graph-1 svg")`)

	// To the child's page, and back.
	if err := chromedp.Do(ctx, chromedp.Click(`#children li.child:first-child a.child-link`), chromedp.WaitVisible("#child-parent")); err != nil {
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
	if err := chromedp.Do(ctx, chromedp.Click(`#child-parent a`), chromedp.WaitVisible("#children li.child")); err != nil {
		t.Fatal(err)
	}
	if path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err != nil || path != "/executions/p" {
		t.Errorf("back at %q (%v), want the parent's page", path, err)
	}

	// The graph's side panel, on the Workflow state, lists its child and
	// opens its graph; on the Map's Workflow state, both items' children.
	if err := chromedp.Do(ctx, chromedp.Click(`#graph [data-state="Research <&>"]`), chromedp.WaitVisible("#graph-panel")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the panel lists the state's child", `[...document.querySelectorAll("#graph-panel .panel-children a.child-link")].map(a => a.textContent).join() === `+jsString(child))
	if err := chromedp.Do(ctx, chromedp.Click(`#graph-panel .panel-children .child-graph-toggle`)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the child's graph opens in the panel", `document.querySelector('#panel-child-graph-1 svg [data-state="Tidy"]') !== null`)
	if err := chromedp.Do(ctx, chromedp.Click(`#graph [data-state="Each/*/Deep"]`)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the panel on the Map's Workflow state lists both items' children",
		`document.getElementById("graph-panel-title").textContent === "Each/*/Deep" && [...document.querySelectorAll("#graph-panel .panel-children a.child-link")].map(a => a.textContent).join() === "p/Each#1.0/0/Deep#1.0,p/Each#1.0/1/Deep#1.0"`)
}
