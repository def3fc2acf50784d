package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/states"
)

// TestClientMapRuns lists a map run and pages through its children.
func TestClientMapRuns(t *testing.T) {
	ts := newTestServer(t, server.RoleViewer)
	x, viewer := ts.x, ts.tokens[server.RoleViewer]
	ctx := context.Background()
	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items",
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	input, _ := jsonvalue.Decode([]byte(`{"items":[1,2,3,4,5]}`))
	if res, err := x.Run(ctx, m, input, engine.StartOptions{ID: "dm"}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	c := client.New(ts.url, viewer, nil)
	runs, err := c.MapRuns(ctx, "dm")
	if err != nil || len(runs.MapRuns) != 1 || runs.MapRuns[0].Succeeded != 5 {
		t.Fatalf("MapRuns = %+v, %v", runs, err)
	}
	var ids []string
	q := client.ChildrenQuery{Limit: 2}
	for {
		page, err := c.MapRunChildren(ctx, "dm", runs.MapRuns[0].ID, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range page.Children {
			ids = append(ids, ch.ID)
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if len(ids) != 5 || ids[4] != engine.ChildID("dm/Each#1.0", 4) {
		t.Errorf("children paged = %v, want the 5", ids)
	}
	if _, err := c.MapRunChildren(ctx, "dm", "dm/Other#1.0", client.ChildrenQuery{}); client.StatusOf(err) != http.StatusNotFound {
		t.Errorf("children of an unknown map run: %v, want a 404", err)
	}
	if _, err := c.MapRunChildren(ctx, "dm", runs.MapRuns[0].ID, client.ChildrenQuery{Status: "DONE"}); client.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("children with a bad status: %v, want a 400", err)
	}
}
