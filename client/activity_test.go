package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/server"
)

// TestClientActivity: a worker's round trip through the client, with a
// worker token.
func TestClientActivity(t *testing.T) {
	ts := newTestServer(t, server.RoleOperator, server.RoleWorker)
	op, worker := ts.tokens[server.RoleOperator], ts.tokens[server.RoleWorker]
	ctx := context.Background()
	c, w := client.New(ts.url, op, nil), client.New(ts.url, worker, nil)

	if _, ok, err := w.PollActivity(ctx, "greet", "w", 0); ok || err != nil {
		t.Fatalf("PollActivity with nothing scheduled = %v, %v", ok, err)
	}
	if _, _, err := w.PollActivity(ctx, "greet", "w", 61*time.Second); err == nil {
		t.Errorf("PollActivity accepted a wait over a minute")
	}
	if _, _, err := w.PollActivity(ctx, "not a name", "w", 0); client.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("PollActivity of a bad name = %v, want 400", err)
	}
	def := json.RawMessage(`{"StartAt":"Greet","States":{"Greet":{"Type":"Task","Resource":"arn:aws:states:us-east-1:123456789012:activity:greet","End":true}}}`)
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "g", Input: json.RawMessage(`{"who":"Ada"}`)}); err != nil {
		t.Fatal(err)
	}
	task, ok, err := w.PollActivity(ctx, "greet", "w", 10*time.Second)
	if err != nil || !ok || task.Execution != "g" || string(task.Input) != `{"who":"Ada"}` {
		t.Fatalf("PollActivity = %+v, %v, %v", task, ok, err)
	}
	if list, err := c.Activities(ctx); err != nil || len(list) != 1 || list[0] != (api.Activity{Name: "greet", Started: 1}) {
		t.Errorf("Activities = %+v, %v", list, err)
	}
	if _, err := w.Activities(ctx); client.StatusOf(err) != http.StatusForbidden {
		t.Errorf("Activities as a worker = %v, want 403", err)
	}
	if err := w.SendTaskHeartbeat(ctx, task.TaskToken); err != nil {
		t.Fatal(err)
	}
	if _, err := w.SendTaskSuccess(ctx, api.TaskSuccess{Token: task.TaskToken, Output: json.RawMessage(`"hello Ada"`)}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Wait(ctx, "g", 5*time.Millisecond); err != nil || e.Status != "SUCCEEDED" || string(e.Output) != `"hello Ada"` {
		t.Fatalf("Wait = %+v, %v", e, err)
	}
}
