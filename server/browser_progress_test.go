package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestBrowserProgressMap: on the execution page, a Map's bar moves as its
// items end, one by one, without a reload: its done count, its failed
// count, a rate and an estimated end; it ends all done, and the
// execution's own bar (its workflow has a Progress block) is full once
// it succeeded.
func TestBrowserProgressMap(t *testing.T) {
	t.Parallel()
	const n = 20
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	reg := agents.NewRegistry()
	item := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		i, err := strconv.Atoi(fmt.Sprint(req.Input))
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("item %v is not 0 to %d", req.Input, n-1)
		}
		select {
		case <-release[i]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if i == 3 {
			return nil, errors.New("item 3 fails")
		}
		return i, nil
	})
	if err := reg.Register("Item", item); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) {
		c.Agents = reg
		c.Executor = engine.New(engine.Config{Store: c.Store.(*store.Memory), Agents: reg})
	})
	released := 0
	defer func() {
		for ; released < n; released++ {
			close(release[released])
		}
	}()
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	def := json.RawMessage(`{"StartAt": "Each", "Progress": {"TotalStates": 1}, "States": {"Each": {"Type": "Map", "ToleratedFailureCount": 1, "End": true,
	  "ItemProcessor": {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Agent": "Item", "End": true}}}}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"name": "map-1", "definition": def, "input": items}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.s.x.Live("map-1", "", 0) // followed from now on: the Map reports its counts

	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/executions/map-1"), chromedp.WaitVisible("#timeline")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	if pct, err := chromedp.Run(ctx, chromedp.Text(`#execution-progress .progress-text`)); err != nil || pct != "0% (0 of 1 states)" {
		t.Errorf("the execution's bar reads %q (%v), want 0%% (0 of 1 states)", pct, err)
	}
	panel := `#progress-live article.progress-state[data-state="Each"]`
	// shown is the items the page shows ended (done and failed), -1 while
	// the panel is not there.
	shown := func(atLeast int, wait time.Duration) (int, bool) {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Poll[int](`(() => { const a = document.querySelector('`+panel+`');
			const d = a ? (+a.dataset.completed) + (+a.dataset.failed) : -1; return d >= `+strconv.Itoa(atLeast)+` ? d : null })()`,
			chromedp.WithPollingTimeout(wait)))
		return got, err == nil
	}
	// Items end one at a time; the engine sends a Map's counts at most
	// every 100 ms (the last always), so a count may be skipped: then the
	// next item's moves the bar.
	var moves []int
	sawRate := false
	for released < n {
		close(release[released])
		released++
		if got, ok := shown(released, 1500*time.Millisecond); ok {
			moves = append(moves, got)
			rate, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const a = document.querySelector('`+panel+`');
				return a.querySelector(".rate").textContent + " | " + a.querySelector(".eta").textContent })()`))
			if err == nil && strings.Contains(rate, " items/s | about ") && strings.HasSuffix(rate, " left") {
				sawRate = true
			}
		}
	}
	t.Logf("the bar moved through %v", moves)
	if !sawRate {
		t.Errorf("no rate and estimated end were shown while items were left")
	}
	if len(moves) < n/4 || moves[len(moves)-1] != n {
		t.Errorf("the bar moved through %v, want at least %d moves, ending at %d", moves, n/4, n)
	}
	for i := 1; i < len(moves); i++ {
		if moves[i] <= moves[i-1] {
			t.Errorf("the bar went from %d to %d", moves[i-1], moves[i])
		}
	}
	facts := map[string]string{".counts": "19/20 done", ".failed": "1 failed", ".eta": "all done", "h3": "Each"}
	for sel, want := range facts {
		if got, err := chromedp.Run(ctx, chromedp.Text(panel+" "+sel)); err != nil || got != want {
			t.Errorf("%s reads %q (%v), want %q", sel, got, err, want)
		}
	}
	if value, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('`+panel+` progress').value`)); err != nil || value != 100 {
		t.Errorf("the Map's bar is at %v (%v), want 100", value, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector("#status").textContent.trim(); return s === "SUCCEEDED" ? s : null })()`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || status != "SUCCEEDED" {
		t.Fatalf("status %q (%v), want SUCCEEDED", status, err)
	}
	if pct, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.querySelector("#execution-progress .progress-text"); return s && s.textContent.startsWith("100%") ? s.textContent : null })()`, chromedp.WithPollingTimeout(10*time.Second))); err != nil || pct != "100% (1 of 1 states)" {
		t.Errorf("the execution's bar reads %q (%v), want 100%% (1 of 1 states)", pct, err)
	}
	screenshot(t, ctx, "execution-progress")
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (%v)", err)
	}
	if text, err := chromedp.Run(ctx, chromedp.Text(`#progress-live`)); err != nil || strings.Contains(text, "<") {
		t.Errorf("the progress section reads %q (%v)", text, err)
	}
}
