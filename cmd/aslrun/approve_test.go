package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/engine"
)

const approvalWorkflow = `{"StartAt":"Draft","States":{
	"Draft":{"Type":"Task","Agent":"Writer","ResultPath":"$.draft","Next":"Review"},
	"Review":{"Type":"Approval","Prompt":{"Title":"Publish?","Description.$":"$.draft.title"},"Options":["publish","reject"],
		"Editable":{"Fields":["$.draft.title"],"ResultPath":"$.edited"},"ResultPath":"$.review",
		"Choices":[{"Variable":"$.review.approval","StringEquals":"publish","Next":"Done"}],"Default":"Rejected"},
	"Done":{"Type":"Succeed"},
	"Rejected":{"Type":"Fail","Error":"Rejected"}}}`

func TestApproveCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "review.json", approvalWorkflow)
	mock := writeFile(t, dir, "mock.json", `{"Writer":{"0":{"Return":{"title":"Hello"}}}}`)
	db := filepath.Join(dir, "x.db")

	code, out, errOut := invoke(t, "", "run", wf, "--mock", mock, "--db", db, "--name", "r1")
	if code != exitWaiting {
		t.Fatalf("run exit %d (%s), want 3", code, errOut)
	}
	var waiting map[string]any
	if err := json.Unmarshal([]byte(out), &waiting); err != nil {
		t.Fatal(err)
	}
	approvals, _ := waiting["approvals"].([]any)
	if waiting["waitingFor"] != "Approval" || len(approvals) != 1 || !strings.Contains(errOut, "aslrun approve r1 --decision publish|reject") {
		t.Fatalf("run printed %s / %s", out, errOut)
	}
	pa := approvals[0].(map[string]any)
	if pa["id"] != "Review#1" || pa["prompt"].(map[string]any)["Description"] != "Hello" {
		t.Errorf("pending approval = %v", pa)
	}
	code, out, _ = invoke(t, "", "status", "r1", "--db", db)
	if code != 0 || !strings.Contains(out, "approval") || !strings.Contains(out, "Review#1") {
		t.Errorf("status = %d %s", code, out)
	}

	for _, bad := range [][]string{
		{"--decision", "ship"},
		{"--decision", "publish", "--edit", `{"other":1}`},
		{"--decision", "publish", "--digest", "abc"},
	} {
		code, _, errOut = invoke(t, "", append([]string{"approve", "r1", "--db", db}, bad...)...)
		if code != exitUsage || !strings.Contains(errOut, "decision refused") {
			t.Errorf("approve %v: exit %d, %s; want 2, refused", bad, code, errOut)
		}
	}
	code, out, errOut = invoke(t, "", "approve", "r1", "--db", db, "--decision", "publish", "--by", "ana", "--edit", `{"draft":{"title":"Hello, world"}}`)
	if code != 0 {
		t.Fatalf("approve exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["review"].(map[string]any)["approver"] != "ana" || doc["edited"].(map[string]any)["draft"].(map[string]any)["title"] != "Hello, world" {
		t.Errorf("output = %s", out)
	}
	code, _, errOut = invoke(t, "", "approve", "r1", "--db", db, "--decision", "publish")
	if code != exitUsage || !strings.Contains(errOut, "not waiting for a decision") {
		t.Errorf("approve after the end: exit %d, %s", code, errOut)
	}
}

func TestAskDecision(t *testing.T) {
	t.Parallel()
	pa := engine.PendingApproval{ID: "Review#1", Prompt: "ship it?", Options: []string{"yes", "no"}, Digest: "d"}
	var shown strings.Builder
	d, err := askDecision(bufio.NewReader(strings.NewReader("maybe\n2\nnot now\n")), &shown, pa)
	if err != nil || d.Approval != "no" || d.Comment != "not now" || d.ApprovalID != "Review#1" || d.Digest != "d" {
		t.Errorf("askDecision = %+v, %v", d, err)
	}
	if !strings.Contains(shown.String(), "Approval Review#1: ship it?") || !strings.Contains(shown.String(), `"maybe" is not an option`) {
		t.Errorf("shown:\n%s", shown.String())
	}
	if _, err := askDecision(bufio.NewReader(strings.NewReader("")), &shown, pa); err == nil {
		t.Error("askDecision at the end of the input: no error")
	}
}
