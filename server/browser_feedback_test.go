package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/aslrun/aslrun/api"
)

// TestFeedbackCollectInBrowser: an approver in Chromium opens an
// execution whose two Tasks asked for feedback, clicks 👍 on the first
// and picks 4 on the second; the page says each is recorded, and the
// JSONL export holds both, with their values and the approver's name.
func TestFeedbackCollectInBrowser(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const flow = `{"StartAt":"Draft","States":{
		"Draft":{"Type":"Task","Agent":"Writer","ResultPath":"$.draft","Feedback":{"Type":"thumbs","Question":"Is the draft right?"},"Next":"Answer"},
		"Answer":{"Type":"Task","Agent":"Writer","ResultPath":"$.answer","Feedback":{"Type":"rating","Scale":[1,5],"Question":"How helpful is the answer?"},"End":true}}}`
	ts.startFlow(t, "fb-browser", flow, `{}`, `{"Writer":{"0":{"Return":"a draft"},"1":{"Return":"an answer"}}}`, succeeded)

	ctx := browser(t)
	signInBrowser(t, ctx, ts, RoleApprover)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/executions/fb-browser"),
		chromedp.WaitVisible(`form.feedback-form[data-step="Draft#1"] button[value=up]`),
		chromedp.SendKeys(`form.feedback-form[data-step="Draft#1"] input[name=comment]`, "clear enough"),
		chromedp.Click(`form.feedback-form[data-step="Draft#1"] button[value=up]`),
		chromedp.WaitVisible(`#feedback-given`),
	); err != nil {
		t.Fatalf("👍 on Draft: %v", err)
	}
	if notice, err := chromedp.Run(ctx, chromedp.Text(`#feedback-given`)); err != nil || notice != "Your feedback on Draft#1 is recorded." {
		t.Errorf("after 👍: the notice is %q (%v)", notice, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(`form.feedback-form[data-step="Answer#1"] select[name=value]`),
		chromedp.SetValue(`form.feedback-form[data-step="Answer#1"] select[name=value]`, "4"),
		chromedp.Click(`form.feedback-form[data-step="Answer#1"] button[type=submit]`),
		chromedp.WaitVisible(`article[data-state="Answer"] li.feedback-entry`),
	); err != nil {
		t.Fatalf("4 on Answer: %v", err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text(`article[data-state="Answer"] li.feedback-entry .value`))
	if err != nil || shown != "4" {
		t.Errorf("the page lists %q (%v) on Answer, want 4", shown, err)
	}
	screenshot(t, ctx, "execution-feedback")

	req, err := http.NewRequest("GET", ts.URL+"/v1/feedback?format=jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleViewer])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %v", resp.StatusCode, err)
	}
	got := map[string]api.Feedback{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var f api.Feedback
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("JSONL line %q: %v", sc.Text(), err)
		}
		got[f.State] = f
	}
	for state, want := range map[string]struct{ value, comment, output string }{
		"Draft":  {`"up"`, "clear enough", `{"draft":"a draft"}`},
		"Answer": {`4`, "", `{"answer":"an answer","draft":"a draft"}`},
	} {
		f, ok := got[state]
		if !ok {
			t.Errorf("the export has no feedback on %s:\n%s", state, data)
			continue
		}
		if string(f.Value) != want.value || f.By != "approver-bot" || f.Role != "approver" || f.Execution != "fb-browser" || f.Comment != want.comment || string(f.Output) != want.output {
			t.Errorf("feedback on %s: value %s by %s (%s) on %s, comment %q, output %s; want %s by approver-bot, comment %q, output %s",
				state, f.Value, f.By, f.Role, f.Execution, f.Comment, f.Output, want.value, want.comment, want.output)
		}
	}
	if len(got) != 2 {
		t.Errorf("the export holds feedback on %d states, want 2:\n%s", len(got), data)
	}
}
