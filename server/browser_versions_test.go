package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/api"
)

// diffNodes says, for the diff's two graphs, the class of the node of
// each of a few states ("" when the graph has no such node), and the
// fill the page's stylesheet gives an added state.
type diffNodes struct {
	FromOld    string `json:"fromOld"`
	FromCheck  string `json:"fromCheck"`
	ToResearch string `json:"toResearch"`
	ToCheck    string `json:"toCheck"`
	ToOld      string `json:"toOld"`
	AddedFill  string `json:"addedFill"`
	Rows       int    `json:"rows"`
	Added      string `json:"added"`
	Removed    string `json:"removed"`
}

const readDiff = `(() => {
	const node = (box, name) => {
		const t = [...document.querySelectorAll(box + " g.node > title")].find(t => t.textContent.startsWith(name + " ("));
		return t ? t.parentNode.getAttribute("class") : "";
	};
	const research = [...document.querySelectorAll("#graph-to g.node > title")].find(t => t.textContent.startsWith("Research ("));
	return {
		fromOld: node("#graph-from", "Old"), fromCheck: node("#graph-from", "Check"),
		toResearch: node("#graph-to", "Research"), toCheck: node("#graph-to", "Check"), toOld: node("#graph-to", "Old"),
		addedFill: research ? getComputedStyle(research.parentNode.querySelector(".shape")).fill : "",
		rows: document.querySelectorAll("#diff-changed tr.state-changed").length,
		added: document.getElementById("diff-added")?.textContent ?? "",
		removed: document.getElementById("diff-removed")?.textContent ?? "",
	};
})()`

// TestWorkflowVersionDiffBrowser: on a workflow's page a viewer picks two
// versions and compares them; the diff renders, with the state added,
// removed and changed listed and marked in both graphs.
func TestWorkflowVersionDiffBrowser(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	v1 := `{"StartAt":"Check","States":{
"Check":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"Old"}],"Default":"Done"},
"Old":{"Type":"Pass","Next":"Done"},
"Done":{"Type":"Succeed"}}}`
	v2 := `{"StartAt":"Check","States":{
"Check":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":2,"Next":"Research"}],"Default":"Done"},
"Research":{"Type":"Pass","Next":"Done"},
"Done":{"Type":"Succeed"}}}`
	for i, def := range []string{v1, v2} {
		if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: "triage", Definition: json.RawMessage(def), Label: []string{"1.0.0", "1.1.0"}[i]}, nil); code != http.StatusCreated {
			t.Fatalf("register: %d %s", code, body)
		}
	}
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/workflows/triage"),
		chromedp.WaitVisible("#diff-form"),
		chromedp.SetValue("#diff-from", "1"),
		chromedp.SetValue("#diff-to", "2"),
		chromedp.Click(`#diff-form button[type="submit"]`),
		chromedp.WaitVisible("#diff"),
		chromedp.WaitVisible("#graph-to svg"),
	); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[diffNodes](readDiff))
	if err != nil {
		t.Fatal(err)
	}
	want := diffNodes{FromOld: "node failed", FromCheck: "node current", ToResearch: "node visited", ToCheck: "node current", ToOld: "",
		AddedFill: "rgb(200, 238, 200)", Rows: 2, Added: "Research", Removed: "Old"}
	if got != want {
		t.Errorf("the diff page shows %+v, want %+v", got, want)
	}
}
