package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// feedbackFlow has a Task collecting a rating, and one collecting
// nothing.
const (
	feedbackFlow = `{"StartAt":"Answer","States":{
		"Answer":{"Type":"Task","Agent":"Writer","Feedback":{"Type":"rating","Scale":[1,5],"Question":"Was this helpful?"},"ResultPath":"$.answer","Next":"Log"},
		"Log":{"Type":"Task","Agent":"Writer","ResultPath":"$.log","End":true}}}`
	feedbackMock = `{"Writer":{"0":{"Return":"a helpful answer"},"1":{"Return":"logged"}}}`
)

// TestFeedbackCollect: an approver gives a rating on a completed state's
// output; it is stored with the caller and the output, listed by
// workflow and state, and exported as JSONL; a value outside the scale, a
// state without a Feedback block, an unknown execution and a viewer are
// refused, naming why.
func TestFeedbackCollect(t *testing.T) {
	ts := newTestServer(t)
	ts.startFlow(t, "fb1", feedbackFlow, `{}`, feedbackMock, succeeded)
	var got api.Feedback
	code, body := ts.call(t, RoleApprover, "POST", "/v1/executions/fb1/feedback", map[string]any{"state": "Answer", "value": 4, "comment": "good"}, &got)
	if code != http.StatusCreated || got.Workflow == "" || got.By != "approver-bot" || got.Role != "approver" || string(got.Value) != "4" || string(got.Output) != `{"answer":"a helpful answer"}` || got.Step != "Answer#1" {
		t.Fatalf("give: %d %s", code, body)
	}
	for _, c := range []struct {
		role Role
		id   string
		body map[string]any
		code int
		says string
	}{
		{RoleApprover, "fb1", map[string]any{"state": "Answer", "value": 9}, http.StatusBadRequest, "/value"},
		{RoleApprover, "fb1", map[string]any{"state": "Answer", "value": "great"}, http.StatusBadRequest, "/value"},
		{RoleApprover, "fb1", map[string]any{"state": "Log", "value": 3}, http.StatusBadRequest, "no Feedback block"},
		{RoleApprover, "fb1", map[string]any{"state": "Answer", "step": "Answer#7", "value": 3}, http.StatusConflict, "no completed visit"},
		{RoleApprover, "fb1", map[string]any{"state": "Answer"}, http.StatusBadRequest, "value is required"},
		{RoleApprover, "fb1", map[string]any{"state": "Answer", "value": 3, "colour": "red"}, http.StatusBadRequest, "colour"},
		{RoleApprover, "nope", map[string]any{"state": "Answer", "value": 3}, http.StatusNotFound, "nope"},
		{RoleViewer, "fb1", map[string]any{"state": "Answer", "value": 3}, http.StatusForbidden, ""},
	} {
		code, body := ts.call(t, c.role, "POST", "/v1/executions/"+c.id+"/feedback", c.body, nil)
		if code != c.code || !strings.Contains(string(body), c.says) {
			t.Errorf("%v %v: %d %s, want %d saying %q", c.role, c.body, code, body, c.code, c.says)
		}
	}
	var page api.FeedbackPage
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/feedback?workflow="+got.Workflow+"&state=Answer", nil, &page); code != http.StatusOK || len(page.Feedback) != 1 || page.Feedback[0].ID != got.ID {
		t.Errorf("list: %d %s", code, body)
	}
	page = api.FeedbackPage{}
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/feedback?state=Log", nil, &page); code != http.StatusOK || len(page.Feedback) != 0 {
		t.Errorf("list of another state: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/feedback?format=jsonl", nil)
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleViewer])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var f api.Feedback
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil || f.ID != got.ID {
			t.Errorf("JSONL line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if resp.Header.Get("Content-Type") != "application/jsonl" || lines != 1 {
		t.Errorf("export: %s, %d lines: %s", resp.Header.Get("Content-Type"), lines, data)
	}
	for _, q := range []string{"?format=csv", "?limit=0", "?colour=red", "?state=a&state=b"} {
		if code, body := ts.call(t, RoleViewer, "GET", "/v1/feedback"+q, nil, nil); code != http.StatusBadRequest {
			t.Errorf("GET /v1/feedback%s = %d %s", q, code, body)
		}
	}
}

// TestFeedbackCollectWaitOverHTTP: a Task whose Feedback block waits
// leaves its execution WAITING for Feedback, shown so on its page; the
// approver's POST stores the feedback and wakes it, and it runs on to its
// end with the Task's output. Feedback on a visit that does not wait (a
// second one, once it ended) is stored and wakes nothing.
func TestFeedbackCollectWaitOverHTTP(t *testing.T) {
	const flow = `{"StartAt":"Answer","States":{
		"Answer":{"Type":"Task","Agent":"Writer","Feedback":{"Type":"thumbs","Wait":true},"ResultPath":"$.answer","Next":"Log"},
		"Log":{"Type":"Task","Agent":"Writer","ResultPath":"$.log","End":true}}}`
	ts := newTestServer(t)
	e := ts.startFlow(t, "fbw", flow, `{}`, feedbackMock, func(e api.Execution) bool { return e.Status == "WAITING" })
	if e.WaitingFor != "Feedback" {
		t.Fatalf("execution = %+v, want WAITING for Feedback", e)
	}
	if _, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/fbw"); !strings.Contains(body, "waits for feedback on Answer#1") {
		t.Errorf("the page does not say it waits for feedback:\n%s", body)
	}
	var got api.Feedback
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/executions/fbw/feedback", map[string]any{"state": "Answer", "value": "up"}, &got); code != http.StatusCreated || got.Step != "Answer#1" {
		t.Fatalf("give: %d %s", code, body)
	}
	done := ts.waitFor(t, "fbw", succeeded)
	if string(done.Output) != `{"answer":"a helpful answer","log":"logged"}` {
		t.Errorf("output = %s, want the Task's output, then Log's", done.Output)
	}
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/executions/fbw/feedback", map[string]any{"state": "Answer", "value": "down"}, nil); code != http.StatusCreated {
		t.Errorf("feedback after the wait: %d %s", code, body)
	}
	var page api.FeedbackPage
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/feedback?execution=fbw", nil, &page); code != http.StatusOK || len(page.Feedback) != 2 || page.Feedback[0].ID != got.ID {
		t.Errorf("list: %d %s, want both, the one that woke it first", code, body)
	}
}
