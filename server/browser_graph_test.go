package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserGraphPanel: on the execution page of a model loop, a click
// on the Task's node opens the side panel with its input, output and
// tool calls; Escape closes it and gives the focus back to the node;
// Enter on the focused node opens it again. The zoom buttons change the
// picture's viewBox and Fit shows it whole again.
func TestBrowserGraphPanel(t *testing.T) {
	t.Parallel()
	ts := newLoopServer(t)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/loop"), chromedp.WaitVisible(`#graph [data-state="Ask"]`)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the graph is interactive", `getComputedStyle(document.querySelector("#graph .graph-tools")).display === "flex"`)
	if err := chromedp.Do(ctx, chromedp.Click(`#graph [data-state="Ask"]`), chromedp.WaitVisible("#graph-panel")); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text("#graph-panel"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Ask", "Entered", "Exited", "Input", "Output", "It is 21 °C and sunny in Paris.",
		"Tool call weather", `"city": "Paris"`, "<b>21 °C</b>, sunny", "Tool call forecast", "Agent.ToolError no forecast <beyond> today", "Model turn"} {
		if !strings.Contains(shown, w) {
			t.Errorf("the panel shows no %q:\n%s", w, shown)
		}
	}
	// Text as text: the tool's "<b>" is no element.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#graph-panel b").length`)); err != nil || n != 0 {
		t.Errorf("the panel holds %d <b> elements (%v): a payload was read as HTML", n, err)
	}
	if tools, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#graph-panel li.call[data-tool]")].map(li => li.dataset.tool + (li.classList.contains("failed") ? " failed" : ""))`)); err != nil || strings.Join(tools, ",") != "weather,forecast failed" {
		t.Errorf("the panel's tool calls are %q (%v), want weather and forecast (failed)", tools, err)
	}
	// The picture, with the panel open, leaves the long timeline out.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#timeline").closest("section").hidden = true`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "execution-graph")

	// A live update may draw the graph again while the panel is open (as
	// it did in CI): the node the panel was opened from is then a new one.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const n = document.querySelector('#graph [data-state="Ask"]'); n.replaceWith(n.cloneNode(true)); return true })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "Escape closes the panel, the focus back on the node",
		`document.getElementById("graph-panel").hidden && document.activeElement.dataset.state === "Ask"`)
	if err := chromedp.Do(ctx, chromedp.Focus(`#graph [data-state="Plain"]`), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "Enter opens the panel on the focused node",
		`!document.getElementById("graph-panel").hidden && document.getElementById("graph-panel-title").textContent === "Plain" && document.getElementById("graph-panel").innerText.includes("Step")`)
	if err := chromedp.Do(ctx, chromedp.Click("#graph-panel-close")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "× closes the panel", `document.getElementById("graph-panel").hidden`)

	viewBox := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#graph svg").getAttribute("viewBox")`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	whole := viewBox()
	if err := chromedp.Do(ctx, chromedp.Click(`#graph [data-zoom="in"]`)); err != nil {
		t.Fatal(err)
	}
	zoomed := viewBox()
	var x, y, w, h, W, H float64
	if _, err := fmt.Sscan(zoomed, &x, &y, &w, &h); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(whole, &x, &x, &W, &H); err != nil {
		t.Fatal(err)
	}
	if w >= W || h >= H {
		t.Errorf("zoomed in, the viewBox is %q; want smaller than %q", zoomed, whole)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#graph [data-zoom="out"]`), chromedp.Click(`#graph [data-zoom="out"]`)); err != nil {
		t.Fatal(err)
	}
	if out := viewBox(); out == zoomed || out == whole {
		t.Errorf("zoomed out, the viewBox is %q (zoomed in %q, whole %q)", out, zoomed, whole)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#graph [data-zoom="fit"]`)); err != nil {
		t.Fatal(err)
	}
	if got := viewBox(); got != whole {
		t.Errorf("after Fit the viewBox is %q, want the whole %q", got, whole)
	}
}
