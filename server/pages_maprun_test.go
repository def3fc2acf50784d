package server

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestExecutionPageMapRuns: the page of an execution with a Distributed
// Map shows its map run's counts and links to the child that failed, whose
// own page says whose child it is.
func TestExecutionPageMapRuns(t *testing.T) {
	ts := newTestServer(t)
	runDistributed(t, ts, "dm", 4)
	b := ts.signedIn(t, RoleViewer)
	code, page, _ := b.get(t, "/executions/dm")
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	section := between(t, page, `<section id="map-runs">`, `</section>`)
	for _, want := range []string{`data-map-run="dm/Each#1.0"`, `<dd class="total">4</dd>`, `<dd class="succeeded">3</dd>`, `<dd class="failed">1</dd>`, `<dd class="aborted">0</dd>`, "SUCCEEDED"} {
		if !strings.Contains(section, want) {
			t.Errorf("map runs section lacks %s:\n%s", want, section)
		}
	}
	links := regexp.MustCompile(`<ul class="failed-children">\s*<li><a href="([^"]+)">([^<]+)</a>`).FindStringSubmatch(section)
	if links == nil || html.UnescapeString(links[2]) != "dm/Each#1.0:2" {
		t.Fatalf("failed children list: %s", section)
	}
	href := html.UnescapeString(links[1])
	if u, err := url.Parse(href); err != nil || u.Fragment != "" || u.Path != "/executions/dm/Each#1.0:2" {
		t.Errorf("link %q does not name the child's page", href)
	}
	code, child, _ := b.get(t, href)
	if code != http.StatusOK || !strings.Contains(child, `id="map-run-parent"`) || !strings.Contains(child, `href="/executions/dm"`) || !strings.Contains(child, "Item.Bad") {
		t.Errorf("child page: %d %s", code, between(t, child, `<dl class="summary" id="summary">`, `</dl>`))
	}
	// An execution without map runs has no such section.
	ts.startFlow(t, "plain", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`, "", "", succeeded)
	if _, page, _ := b.get(t, "/executions/plain"); strings.Contains(page, `id="map-runs"`) || strings.Contains(page, "map-run-parent") {
		t.Error("the page of an execution without map runs shows some")
	}
}

// TestBrowserMapRunChildLink: in a browser, the link to a failed child
// (whose id holds a / and a #) opens the child's page, which links back.
func TestBrowserMapRunChildLink(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	runDistributed(t, ts, "dm", 3)
	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/dm"), chromedp.WaitVisible("#map-runs"),
		chromedp.Click(".failed-children a"), chromedp.WaitVisible("#map-run-parent")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the child's page shows its parent and its failure",
		`document.querySelector("#execution-error").textContent === "Item.Bad" && document.querySelector("#map-run-parent a").getAttribute("href") === "/executions/dm"`)
	screenshot(t, ctx, "map-run-child")
}
