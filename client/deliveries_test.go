package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
)

// newOutboxServer starts a server over a memory store whose execution
// "e" emitted the deliveries ids, the first parked as FAILED, the rest
// pending; it returns the server's URL, a token of each role asked for
// (kept in dir) and how to stop it.
func newOutboxServer(dir string, ids []string, roles ...server.Role) (string, map[server.Role]string, func(), error) {
	ctx := context.Background()
	st := store.NewMemory()
	now := time.Now().UTC()
	var es []engine.OutboxEntry
	for _, id := range ids {
		es = append(es, engine.OutboxEntry{ID: id, Channel: "hooks", URL: "https://hooks.example.com/in?key=secret", Type: "execution.succeeded",
			Body: []byte(`{"id":"` + id + `"}`), CreatedAt: now})
	}
	if err := st.Create(ctx, &engine.Execution{ID: "e", Status: engine.StatusRunning, StartedAt: now, Definition: []byte(`{}`), DefinitionHash: "h"}); err != nil {
		return "", nil, nil, err
	}
	if err := st.Commit(ctx, &engine.Commit{Execution: "e", Seq: 1, Status: engine.StatusSucceeded, Output: "done", StoppedAt: now, Outbox: es}); err != nil {
		return "", nil, nil, err
	}
	claimed, err := st.ClaimDeliveries(ctx, "deliverer", 1, now, time.Minute)
	if err != nil {
		return "", nil, nil, err
	}
	for _, d := range claimed {
		if err := st.FinishDelivery(ctx, d.ID, "deliverer", now, "503 from hooks.example.com", time.Time{}, true); err != nil {
			return "", nil, nil, err
		}
	}
	path := filepath.Join(dir, "tokens")
	tokens := map[server.Role]string{}
	for _, r := range roles {
		tok, err := server.CreateToken(path, r.String()+"-bot", r)
		if err != nil {
			return "", nil, nil, err
		}
		tokens[r] = tok
	}
	ts, err := server.LoadTokens(path)
	if err != nil {
		return "", nil, nil, err
	}
	s, err := server.New(server.Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Tokens: ts})
	if err != nil {
		return "", nil, nil, err
	}
	hs := httptest.NewServer(s.Handler())
	return hs.URL, tokens, func() { hs.Close(); s.Close() }, nil
}

// outboxServer is newOutboxServer for a test, stopped when it ends.
func outboxServer(t *testing.T, ids []string, roles ...server.Role) (string, map[server.Role]string) {
	t.Helper()
	u, tokens, stop, err := newOutboxServer(t.TempDir(), ids, roles...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return u, tokens
}

// TestClientDeliveries pages through the deliveries with a filter and
// bodies, retries the FAILED one, and gets the server's refusals as
// errors with their statuses.
func TestClientDeliveries(t *testing.T) {
	u, tokens := outboxServer(t, []string{"a", "b", "c", "d", "e"}, server.RoleViewer, server.RoleOperator)
	ctx := context.Background()
	viewer, op := client.New(u, tokens[server.RoleViewer], nil), client.New(u, tokens[server.RoleOperator], nil)

	var got []string
	q := client.DeliveriesQuery{Limit: 2, Body: true, Execution: "e"}
	for range 10 {
		page, err := viewer.Deliveries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Deliveries {
			got = append(got, d.ID)
			if string(d.Body) != `{"id":"`+d.ID+`"}` || d.URL != "https://hooks.example.com/in" {
				t.Errorf("delivery %s: body %s, url %q", d.ID, d.Body, d.URL)
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("paged %v, want %v", got, want)
	}
	failed, err := viewer.Deliveries(ctx, client.DeliveriesQuery{Status: "FAILED"})
	if err != nil || len(failed.Deliveries) != 1 || failed.Deliveries[0].ID != "a" || failed.Deliveries[0].Body != nil || failed.Deliveries[0].LastError == "" {
		t.Fatalf("Deliveries(FAILED) = %+v, %v", failed, err)
	}

	for _, tc := range []struct {
		name string
		call func() error
		want int
	}{
		{"a viewer's retry", func() error { _, err := viewer.RetryDelivery(ctx, "a"); return err }, http.StatusForbidden},
		{"an unknown one", func() error { _, err := op.RetryDelivery(ctx, "zz"); return err }, http.StatusNotFound},
		{"a pending one", func() error { _, err := op.RetryDelivery(ctx, "b"); return err }, http.StatusConflict},
		{"a bad status", func() error {
			_, err := viewer.Deliveries(ctx, client.DeliveriesQuery{Status: "LOST"})
			return err
		}, http.StatusBadRequest},
		{"a bad limit", func() error { _, err := viewer.Deliveries(ctx, client.DeliveriesQuery{Limit: -1}); return err }, http.StatusBadRequest},
	} {
		if err := tc.call(); client.StatusOf(err) != tc.want {
			t.Errorf("%s: %v, want %d", tc.name, err, tc.want)
		}
	}
	d, err := op.RetryDelivery(ctx, "a")
	if err != nil || d.ID != "a" || d.Status != "PENDING" || d.NextAt == nil {
		t.Fatalf("RetryDelivery(a) = %+v, %v", d, err)
	}
	if _, err := op.RetryDelivery(ctx, "a"); client.StatusOf(err) != http.StatusConflict {
		t.Errorf("a second retry: %v, want 409", err)
	}
}

// ExampleClient_Deliveries lists the deliveries parked as FAILED and
// retries each.
func ExampleClient_Deliveries() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	u, tokens, stop, err := newOutboxServer(dir, []string{"0190a1b2-0000-7000-8000-000000000001", "0190a1b2-0000-7000-8000-000000000002"}, server.RoleOperator)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()
	c := client.New(u, tokens[server.RoleOperator], nil)

	failed, err := c.Deliveries(ctx, client.DeliveriesQuery{Status: "FAILED"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range failed.Deliveries {
		fmt.Printf("%s to %s failed after %d attempt(s): %s\n", d.Type, d.URL, d.Attempts, d.LastError)
		var retried api.Delivery
		if retried, err = c.RetryDelivery(ctx, d.ID); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("now", retried.Status)
	}
	// Output:
	// execution.succeeded to https://hooks.example.com/in failed after 1 attempt(s): 503 from hooks.example.com
	// now PENDING
}
