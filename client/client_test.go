package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
)

// TestClient drives a real server over HTTP through every method.
func TestClient(t *testing.T) {
	ts := newTestServer(t, server.RoleOperator, server.RoleViewer)
	op, viewer := ts.tokens[server.RoleOperator], ts.tokens[server.RoleViewer]
	ctx := context.Background()
	c := client.New(ts.url, op, nil)

	def := json.RawMessage(`{"StartAt":"Ok","States":{"Ok":{"Type":"Approval","Prompt":"ok?","ResultPath":"$.ok","End":true}}}`)
	if v, err := c.Validate(ctx, def); err != nil || !v.Valid {
		t.Fatalf("Validate = %+v, %v", v, err)
	}
	e, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "x", Input: json.RawMessage(`{"a":1}`)})
	if err != nil || e.ID != "x" {
		t.Fatalf("Start = %+v, %v", e, err)
	}
	if e, err = c.Wait(ctx, "x", 5*time.Millisecond); err != nil || e.Status != "WAITING" {
		t.Fatalf("Wait = %+v, %v", e, err)
	}
	list, err := c.Executions(ctx, "waiting", 10)
	if err != nil || len(list.Executions) != 1 {
		t.Fatalf("Executions = %+v, %v", list, err)
	}
	aps, err := c.Approvals(ctx, "x")
	if err != nil || len(aps) != 1 {
		t.Fatalf("Approvals = %+v, %v", aps, err)
	}
	if chk, err := c.Check(ctx, aps[0].ID, api.Decision{Option: "nope"}); err != nil || chk.OK {
		t.Errorf("Check = %+v, %v; want refused", chk, err)
	}
	// An operator may decide (an operator is an approver too).
	if _, err := c.Decide(ctx, aps[0].ID, api.Decision{Option: "approve"}); err != nil {
		t.Fatal(err)
	}
	if e, err = c.Wait(ctx, "x", 5*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("after the decision = %+v, %v", e, err)
	}
	h, err := c.History(ctx, "x", true)
	if err != nil || h[0].Seq != 1 || h[len(h)-1].Type != "ExecutionSucceeded" {
		t.Fatalf("History = %v, %v", h, err)
	}
	if _, err := c.Resume(ctx, "x"); client.StatusOf(err) != http.StatusConflict {
		t.Errorf("Resume of an ended execution: %v, want 409", err)
	}
	if _, err := c.Execution(ctx, "nope"); client.StatusOf(err) != http.StatusNotFound {
		t.Errorf("Execution(nope): %v, want 404", err)
	}
	ro := client.New(ts.url, viewer, nil)
	_, err = ro.Start(ctx, api.StartExecution{Definition: def})
	var ce *client.Error
	if client.StatusOf(err) != http.StatusForbidden || !errors.As(err, &ce) || ce.Problem.Type != api.ProblemType+"forbidden" {
		t.Errorf("a viewer's Start: %v, want a 403 forbidden problem", err)
	}
}

// testServer is a server on a memory store behind httptest, with a token
// of each role asked for; it is closed when the test ends.
type testServer struct {
	url    string
	x      *engine.Executor
	tokens map[server.Role]string
}

func newTestServer(t *testing.T, roles ...server.Role) *testServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	ts := &testServer{tokens: map[server.Role]string{}}
	for _, r := range roles {
		tok, err := server.CreateToken(path, r.String()+"-bot", r)
		if err != nil {
			t.Fatal(err)
		}
		ts.tokens[r] = tok
	}
	tokens, err := server.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	ts.x = engine.New(engine.Config{Store: st})
	s, err := server.New(server.Config{Store: st, Executor: ts.x, Tokens: tokens, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	ts.url = hs.URL
	return ts
}
