package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// TestFeedbackExport: feedback given through the server's API is
// exported as JSONL by `aslrun feedback export`, through the server while
// it holds the database and from the database once it stopped, the same.
func TestFeedbackExport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts aslrun serve")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "f.db")
	p := startServe(t, db)
	c := client.NewUnix(p.sock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	def := json.RawMessage(`{"StartAt":"Answer","States":{"Answer":{"Type":"Task","Agent":"Writer","Feedback":{"Type":"choice","Labels":["right","wrong"]},"End":true}}}`)
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "f1", Mock: json.RawMessage(`{"Writer":{"0":{"Return":"42"}}}`)}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Wait(ctx, "f1", 20*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("f1: %+v %v", e, err)
	}
	given, err := c.GiveFeedback(ctx, "f1", api.FeedbackRequest{State: "Answer", Value: json.RawMessage(`"right"`), Comment: "checked"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GiveFeedback(ctx, "f1", api.FeedbackRequest{State: "Answer", Value: json.RawMessage(`"maybe"`)}); err == nil || !strings.Contains(err.Error(), "maybe") {
		t.Errorf("a label the block does not list: %v", err)
	}
	code, remote, errOut := invoke(t, "", "feedback", "export", "--db", db)
	var f api.Feedback
	if code != 0 || strings.Count(remote, "\n") != 1 || json.Unmarshal([]byte(remote), &f) != nil || f.ID != given.ID || string(f.Value) != `"right"` || string(f.Output) != `"42"` || f.Comment != "checked" {
		t.Fatalf("export through the server: exit %d %q %s", code, remote, errOut)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	code, local, errOut := invoke(t, "", "feedback", "export", "--state", "Answer", "--db", db)
	if code != 0 || local != remote {
		t.Errorf("export from the database: exit %d %q %s\nwant %q", code, local, errOut, remote)
	}
	if code, out, _ := invoke(t, "", "feedback", "export", "--state", "Other", "--db", db); code != 0 || out != "" {
		t.Errorf("export of another state: %d %q", code, out)
	}
	if code, _, errOut := invoke(t, "", "feedback", "import", "--db", db); code != exitUsage || !strings.Contains(errOut, "export") {
		t.Errorf("feedback import: %d %s", code, errOut)
	}
}
