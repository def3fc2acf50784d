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

// checkpointFlow writes agent memory, saves checkpoint "one", changes the
// document and the memory, saves "two" and ends.
const checkpointFlow = `{"StartAt":"Remember","States":{
	"Remember":{"Type":"Pass","Result":{"n":1},"ResultPath":"$.first","Memory":{"Namespace":"team","Write":[{"Key":"note","Value":"v1"}]},"Next":"One"},
	"One":{"Type":"Checkpoint","Name":"one","Next":"Change"},
	"Change":{"Type":"Pass","Result":{"n":2},"ResultPath":"$.first",
		"Memory":{"Namespace":"team","Write":[{"Key":"note","Value":"v2"},{"Key":"extra","Value":[1]}]},"Next":"Two"},
	"Two":{"Type":"Checkpoint","Name":"two","Next":"Done"},
	"Done":{"Type":"Pass","End":true}}}`

// TestClientCheckpointsAndMemory drives Checkpoints, Rollback, Fork,
// MemoryNamespaces and Memory against a real server over HTTP.
func TestClientCheckpointsAndMemory(t *testing.T) {
	ts := newTestServer(t, server.RoleOperator)
	c := client.New(ts.url, ts.tokens[server.RoleOperator], nil)
	ctx := context.Background()
	if _, err := c.Start(ctx, api.StartExecution{Definition: json.RawMessage(checkpointFlow), Name: "cp", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Wait(ctx, "cp", 5*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("Wait = %+v, %v", e, err)
	}
	l, err := c.Checkpoints(ctx, "cp")
	if err != nil || l.Execution != "cp" || len(l.Checkpoints) != 2 || l.Checkpoints[0].Name != "one" || l.Checkpoints[0].Next != "Change" || l.Checkpoints[1].Name != "two" {
		t.Fatalf("Checkpoints = %+v, %v", l, err)
	}
	if _, err := c.Checkpoints(ctx, "nope"); client.StatusOf(err) != http.StatusNotFound {
		t.Errorf("Checkpoints(nope): %v, want 404", err)
	}
	ns, err := c.MemoryNamespaces(ctx)
	if err != nil || len(ns) != 1 || ns[0].Namespace != "team" || ns[0].Keys != 2 {
		t.Fatalf("MemoryNamespaces = %+v, %v", ns, err)
	}
	entries, err := c.Memory(ctx, "team")
	if err != nil || len(entries) != 2 || entries[0].Key != "extra" || entries[1].Key != "note" || string(entries[1].Value) != `"v2"` || entries[1].Execution != "cp" {
		t.Fatalf("Memory(team) = %+v, %v", entries, err)
	}
	if entries, err := c.Memory(ctx, "other"); err != nil || len(entries) != 0 {
		t.Errorf("Memory(other) = %+v, %v; want none", entries, err)
	}

	f, err := c.Fork(ctx, "cp", api.Fork{Checkpoint: "one", Name: "f1", Restore: "document"})
	if err != nil || f.ID != "f1" || f.Parent != "cp" {
		t.Fatalf("Fork = %+v, %v", f, err)
	}
	if e, err := c.Wait(ctx, "f1", 5*time.Millisecond); err != nil || e.Status != "SUCCEEDED" || string(e.Output) != `{"first":{"n":2}}` {
		t.Fatalf("the fork = %+v, %v", e, err)
	}
	if _, err := c.Fork(ctx, "cp", api.Fork{Checkpoint: "one", Name: "f1"}); client.StatusOf(err) != http.StatusConflict {
		t.Errorf("a fork with a taken name: %v, want 409", err)
	}
	if _, err := c.Rollback(ctx, "cp", api.Rollback{Checkpoint: "one"}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if e, err := c.Wait(ctx, "cp", 5*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("after the rollback = %+v, %v", e, err)
	}
	h, err := c.History(ctx, "cp", true)
	if err != nil {
		t.Fatal(err)
	}
	superseded := 0
	for _, ev := range h {
		if ev.Superseded {
			superseded++
		}
	}
	if superseded == 0 {
		t.Errorf("the history after a rollback marks no event superseded: %+v", h)
	}
	if _, err := c.Rollback(ctx, "cp", api.Rollback{Checkpoint: "three"}); client.StatusOf(err) != http.StatusNotFound {
		t.Errorf("Rollback to no such checkpoint: %v, want 404", err)
	}
}
