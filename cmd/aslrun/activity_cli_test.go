package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

const activityWorkflow = `{"StartAt":"Work","States":{
	"Work":{"Type":"Task","Resource":"arn:aws:states:us-east-1:123456789012:activity:shell-work",
		"Parameters":{"n.$":"$.n"},"ResultPath":"$.answer","End":true}}}`

// TestActivityPollCommand: a shell worker's round trip: run (waits),
// activity-poll (prints the task), task-success (continues), each a
// process of its own on the database; then the same through the API of a
// serve holding the database.
func TestActivityPollCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "activity.json", activityWorkflow)
	db := filepath.Join(dir, "p.db")
	if code, out, errOut := invoke(t, "", "run", wf, "--db", db, "--name", "p1", "--input", `{"n":1}`); code != exitWaiting || !strings.Contains(out, `"waitingFor": "Activity"`) || !strings.Contains(errOut, "aslrun activity-poll NAME") {
		t.Fatalf("run: exit %d, %s / %s; want 3, waiting for an Activity", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"activity-poll"}, "want exactly one activity NAME"},
		{[]string{"activity-poll", "no spaces"}, "is not an activity name"},
		{[]string{"activity-poll", "shell-work", "--wait", "61s"}, "--wait 1m1s is not a whole number of seconds"},
		{[]string{"activity-poll", "shell-work", "--wait", "1500ms"}, "--wait 1.5s is not a whole number of seconds"},
	} {
		if code, _, errOut := invoke(t, "", append(tc.args, "--db", db)...); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	code, out, errOut := invoke(t, "", "activity-poll", "shell-work", "--worker", "sh-1", "--wait", "0s", "--db", db)
	var task api.ActivityTask
	if code != 0 || json.Unmarshal([]byte(out), &task) != nil || task.Execution != "p1" || string(task.Input) != `{"n":1}` || task.TaskToken == "" {
		t.Fatalf("activity-poll: exit %d, %q / %s", code, out, errOut)
	}
	if code, out, _ := invoke(t, "", "activity-poll", "shell-work", "--wait", "0s", "--db", db); code != exitWaiting || out != "" {
		t.Errorf("a second poll: exit %d, %q; want 3 and nothing", code, out)
	}
	if code, out, errOut := invoke(t, "", "task-success", task.TaskToken, "--output", `{"ok":true}`, "--db", db); code != 0 || !jsonEqual(t, out, `{"n":1,"answer":{"ok":true}}`) {
		t.Fatalf("task-success: exit %d, %s / %s", code, out, errOut)
	}

	// Through serve's API (its unix socket: the local admin).
	if code, _, errOut := invoke(t, "", "run", wf, "--db", db, "--name", "p2", "--input", `{"n":2}`); code != exitWaiting {
		t.Fatalf("run p2: exit %d, %s", code, errOut)
	}
	startServe(t, db)
	code, out, errOut = invoke(t, "", "activity-poll", "shell-work", "--wait", "5s", "--db", db)
	if code != 0 || json.Unmarshal([]byte(out), &task) != nil || task.Execution != "p2" {
		t.Fatalf("activity-poll through serve: exit %d, %q / %s", code, out, errOut)
	}
	if code, out, errOut := invoke(t, "", "task-failure", task.TaskToken, "--error", "Nope", "--db", db); code != exitFailed {
		t.Fatalf("task-failure through serve: exit %d, %s / %s; want 1", code, out, errOut)
	}
}
