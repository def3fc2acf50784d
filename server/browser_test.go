package server

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// updateScreenshots makes the browser tests rewrite the screenshots under
// docs/ (go test -run TestBrowser -update).
var updateScreenshots = flag.Bool("update", false, "rewrite the screenshots under docs/")

// browser returns a context of a fresh headless Chromium, or skips the
// test when none is installed (outside CI; in CI it fails).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium installed: .ci/run installs Debian's chromium")
		}
		t.Skip("no Chromium installed (apt-get install chromium): browser tests skipped")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// screenshot saves the page as name.png in $ASLRUN_SCREENSHOTS (a
// temporary folder when unset), and under docs/ with -update.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
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
