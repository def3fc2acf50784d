package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/api"
)

const activityDefinition = `{"StartAt":"Review","States":{
	"Review":{"Type":"Task","Resource":"arn:aws:states:us-east-1:123456789012:activity:review",
		"Parameters":{"doc.$":"$.doc"},"HeartbeatSeconds":3600,"ResultPath":"$.review",
		"Catch":[{"ErrorEquals":["Rejected"],"ResultPath":"$.error","Next":"Refused"}],"End":true},
	"Refused":{"Type":"Pass","End":true}}}`

// waitingForWorker starts an execution that waits for a worker of the
// review activity.
func waitingForWorker(t *testing.T, ts *testServer, name, doc string) {
	t.Helper()
	start := map[string]any{"definition": json.RawMessage(activityDefinition), "input": map[string]any{"doc": doc}, "name": name}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	e := ts.waitFor(t, name, func(e api.Execution) bool { return e.Status != "RUNNING" })
	if e.Status != "WAITING" || e.WaitingFor != "Activity" {
		t.Fatalf("execution %+v, want WAITING for an Activity", e)
	}
}

func TestActivityOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	waitingForWorker(t, ts, "a1", "one")
	waitingForWorker(t, ts, "a2", "two")

	var list api.ActivityList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/activities", nil, &list); code != 200 || len(list.Activities) != 1 || list.Activities[0] != (api.Activity{Name: "review", Pending: 2}) {
		t.Fatalf("activities: %d %s", code, body)
	}

	// A worker gets the oldest task first, then the next; a third poll
	// finds none.
	var got []api.ActivityTask
	for range 2 {
		var task api.ActivityTask
		if code, body := ts.call(t, RoleWorker, "POST", "/v1/activities/review/poll?wait=0", `{"workerName":"py-1"}`, &task); code != http.StatusOK {
			t.Fatalf("poll: %d %s", code, body)
		}
		got = append(got, task)
	}
	if got[0].Execution != "a1" || got[0].State != "Review" || string(got[0].Input) != `{"doc":"one"}` || got[1].Execution != "a2" || got[0].TaskToken == "" {
		t.Fatalf("tasks %+v", got)
	}
	if code, body := ts.call(t, RoleWorker, "POST", "/v1/activities/review/poll?wait=0", `{}`, nil); code != http.StatusNoContent {
		t.Errorf("a third poll: %d %s, want 204", code, body)
	}
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/activities", nil, &list); code != 200 || len(list.Activities) != 1 || list.Activities[0] != (api.Activity{Name: "review", Started: 2}) {
		t.Errorf("activities after the polls: %d %s", code, body)
	}

	// The worker answers: one succeeds, one fails into the Catch.
	if code, body := ts.call(t, RoleWorker, "POST", "/v1/task-tokens/heartbeat", map[string]any{"token": got[0].TaskToken}, nil); code != http.StatusNoContent {
		t.Errorf("heartbeat: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleWorker, "POST", "/v1/task-tokens/success", map[string]any{"token": got[0].TaskToken, "output": map[string]any{"ok": true}}, nil); code != http.StatusAccepted {
		t.Fatalf("success: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleWorker, "POST", "/v1/task-tokens/failure", map[string]any{"token": got[1].TaskToken, "error": "Rejected", "cause": "no"}, nil); code != http.StatusAccepted {
		t.Fatalf("failure: %d %s", code, body)
	}
	if e := ts.waitFor(t, "a1", func(e api.Execution) bool { return e.Status != "RUNNING" && e.Status != "WAITING" }); e.Status != "SUCCEEDED" || string(e.Output) != `{"doc":"one","review":{"ok":true}}` {
		t.Errorf("a1 = %+v, want SUCCEEDED with the worker's result", e)
	}
	if e := ts.waitFor(t, "a2", func(e api.Execution) bool { return e.Status != "RUNNING" && e.Status != "WAITING" }); e.Status != "SUCCEEDED" || !strings.Contains(string(e.Output), `"Error":"Rejected"`) {
		t.Errorf("a2 = %+v, want the failure caught", e)
	}
	// A used token is refused.
	if code, body := ts.call(t, RoleWorker, "POST", "/v1/task-tokens/success", map[string]any{"token": got[0].TaskToken, "output": 1}, nil); code != http.StatusBadRequest || problemIn(t, body).Type != api.ProblemType+"task-token-invalid" {
		t.Errorf("a used token: %d %s", code, body)
	}
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/activities", nil, &list); code != 200 || len(list.Activities) != 0 {
		t.Errorf("activities at the end: %d %s", code, body)
	}
}

// TestActivityLongPoll: a poll waiting when the task is scheduled gets
// it; a poll the server's stop ends answers at once.
func TestActivityLongPoll(t *testing.T) {
	ts := newTestServer(t)
	var (
		wg   sync.WaitGroup
		task api.ActivityTask
		code int
		body []byte
	)
	wg.Go(func() {
		code, body = ts.call(t, RoleOperator, "POST", "/v1/activities/review/poll?wait=30", `{"workerName":"w"}`, &task)
	})
	waitingForWorker(t, ts, "later", "x")
	wg.Wait()
	if code != http.StatusOK || task.Execution != "later" {
		t.Fatalf("long poll: %d %s, want the task of later", code, body)
	}

	wg.Go(func() {
		code, body = ts.call(t, RoleWorker, "POST", "/v1/activities/other/poll", `{}`, nil)
	})
	ts.s.StopStreams()
	wg.Wait()
	// Stopped while it waited (204), or before it began (503).
	if code != http.StatusNoContent && code != http.StatusServiceUnavailable {
		t.Errorf("a poll when the server stops: %d %s, want 204 or 503", code, body)
	}
}

func TestActivityRoles(t *testing.T) {
	ts := newTestServer(t)
	start := map[string]any{"definition": json.RawMessage(activityDefinition)}
	ts.checkRoles(t, []roleCase{
		{0, "POST", "/v1/activities/review/poll?wait=0", `{}`, http.StatusUnauthorized},
		{RoleViewer, "POST", "/v1/activities/review/poll?wait=0", `{}`, http.StatusForbidden},
		{RoleApprover, "POST", "/v1/activities/review/poll?wait=0", `{}`, http.StatusForbidden},
		{RoleWorker, "POST", "/v1/activities/review/poll?wait=0", `{}`, http.StatusNoContent},
		{RoleOperator, "POST", "/v1/activities/review/poll?wait=0", `{}`, http.StatusNoContent},
		{RoleAdmin, "POST", "/v1/activities/review/poll?wait=0", `{}`, http.StatusNoContent},
		// A worker reads nothing and starts nothing.
		{RoleWorker, "GET", "/v1/activities", nil, http.StatusForbidden},
		{RoleWorker, "GET", "/v1/executions", nil, http.StatusForbidden},
		{RoleWorker, "GET", "/v1/approvals", nil, http.StatusForbidden},
		{RoleWorker, "POST", "/v1/executions", start, http.StatusForbidden},
		{RoleWorker, "POST", "/v1/executions/x/resume", nil, http.StatusForbidden},
		{RoleWorker, "POST", "/v1/approvals/x/decision", map[string]any{"option": "x"}, http.StatusForbidden},
		{RoleViewer, "GET", "/v1/activities", nil, http.StatusOK},
		// Answers: a worker may send them; a viewer not.
		{RoleWorker, "POST", "/v1/task-tokens/heartbeat", map[string]any{"token": "aslrun-tt1.eA.AAAA"}, http.StatusBadRequest},
		{RoleViewer, "POST", "/v1/task-tokens/heartbeat", map[string]any{"token": "aslrun-tt1.eA.AAAA"}, http.StatusForbidden},
	})
	// No page lets a worker in either.
	req, _ := http.NewRequest("GET", ts.URL+"/executions", nil)
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleWorker])
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("a worker reads the executions page")
	}
	if r, err := ParseRole("worker"); err != nil || r != RoleWorker || r.String() != "worker" || !r.valid() {
		t.Errorf("ParseRole(worker) = %v, %v", r, err)
	}
}

// TestActivityPollRefusals: a bad poll is a problem naming its place,
// and takes no task.
func TestActivityPollRefusals(t *testing.T) {
	ts := newTestServer(t)
	waitingForWorker(t, ts, "keep", "k")
	for _, tc := range []struct {
		name, path string
		body       any
		pointer    string
	}{
		{"bad name", "/v1/activities/no%20spaces/poll?wait=0", `{}`, ""},
		{"long name", "/v1/activities/" + strings.Repeat("a", 81) + "/poll?wait=0", `{}`, ""},
		{"wait too long", "/v1/activities/review/poll?wait=61", `{}`, ""},
		{"negative wait", "/v1/activities/review/poll?wait=-1", `{}`, ""},
		{"wait not a number", "/v1/activities/review/poll?wait=1.5", `{}`, ""},
		{"not JSON", "/v1/activities/review/poll?wait=0", `{"workerName":`, ""},
		{"no body", "/v1/activities/review/poll?wait=0", nil, ""},
		{"duplicate key", "/v1/activities/review/poll?wait=0", `{"workerName":"a","workerName":"b"}`, ""},
		{"unknown field", "/v1/activities/review/poll?wait=0", `{"worker":"a"}`, ""},
		{"worker name a number", "/v1/activities/review/poll?wait=0", `{"workerName":5}`, "/workerName"},
		{"worker name too long", "/v1/activities/review/poll?wait=0", map[string]any{"workerName": strings.Repeat("w", 81)}, "/workerName"},
		{"worker name control", "/v1/activities/review/poll?wait=0", `{"workerName":"a\u0007b"}`, "/workerName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, RoleWorker, "POST", tc.path, tc.body, nil)
			if code != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", code, body)
			}
			p := problemIn(t, body)
			if tc.pointer != "" && !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool { return e.Pointer == tc.pointer }) {
				t.Errorf("problem %s names no field at %s", body, tc.pointer)
			}
		})
	}
	// Nothing was handed out: the task still waits.
	var list api.ActivityList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/activities", nil, &list); code != 200 || len(list.Activities) != 1 || list.Activities[0].Pending != 1 {
		t.Errorf("activities: %d %s, want the task still pending", code, body)
	}
}
