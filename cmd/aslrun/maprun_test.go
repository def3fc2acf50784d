package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// TestMapRunsThroughServe: map-runs asks the API of the `aslrun serve`
// holding the database, and prints what it prints from the database
// itself once the server has stopped.
func TestMapRunsThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "m.db")
	p := startServe(t, db, "--grace", "5s")
	c := client.NewUnix(p.sock)
	ctx := context.Background()
	def := json.RawMessage(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ToleratedFailureCount":1,
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"Check","States":{
			"Check":{"Type":"Choice","Choices":[{"Variable":"$","NumericEquals":1,"Next":"Bad"}],"Default":"Good"},
			"Bad":{"Type":"Fail","Error":"Item.Bad"},
			"Good":{"Type":"Pass","End":true}}},"End":true}}}`)
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "dm", Input: json.RawMessage(`{"items":[0,1,2]}`)}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if e, err := c.Wait(wctx, "dm", 20*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("dm: %+v, %v", e, err)
	}
	code, remote, errOut := invoke(t, "", "map-runs", "dm", "--children", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("map-runs through the API: exit %d: %s", code, errOut)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(remote), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("map-runs: %s (%v)", remote, err)
	}
	r := runs[0]
	kids, _ := r["children"].([]any)
	if r["mapRunId"] != "dm/Each#1.0" || r["succeeded"] != 2.0 || r["failed"] != 1.0 || len(kids) != 3 || kids[1].(map[string]any)["error"] != "Item.Bad" {
		t.Errorf("map-runs through the API: %s", remote)
	}
	if code, _, errOut := invoke(t, "", "map-runs", "nope", "--db", db); code != exitUsage || !strings.Contains(errOut, "nope") {
		t.Errorf("map-runs of an unknown execution through the API: exit %d, %s; want exit 2 naming it", code, errOut)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d; log:\n%s", code, p.log)
	}
	code, local, errOut := invoke(t, "", "map-runs", "dm", "--children", "--json", "--db", db)
	if code != 0 || local != remote {
		t.Errorf("map-runs from the database: exit %d %s\n%s\nwant what the API answered:\n%s", code, errOut, local, remote)
	}
}

// TestStatusOfMapRunChild: status and list say that a Distributed Map's
// child is its parent's child, in which map run, not a fork.
func TestStatusOfMapRunChild(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	flow := filepath.Join(dir, "flow.json")
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items",
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	if err := os.WriteFile(flow, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := invoke(t, "", "run", flow, "--input", `{"items":[1,2]}`, "--name", "dm", "--db", db); code != 0 {
		t.Fatalf("run: exit %d %s %s", code, out, errOut)
	}
	child := "dm/Each#1.0:1"
	code, out, errOut := invoke(t, "", "status", child, "--db", db)
	if code != 0 || !regexp.MustCompile(`child of\s+dm \(map run dm/Each#1\.0\)`).MatchString(out) || strings.Contains(out, "forked") {
		t.Errorf("status of a child: exit %d %s%s; want it shown as dm's child in map run dm/Each#1.0", code, out, errOut)
	}
	code, out, _ = invoke(t, "", "status", child, "--json", "--db", db)
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["parent"] != "dm" || v["mapRun"] != "dm/Each#1.0" {
		t.Errorf("status --json of a child: %s", out)
	}
	code, out, _ = invoke(t, "", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "(child of dm, map run dm/Each#1.0)") || strings.Contains(out, "fork of") {
		t.Errorf("list: %s; want the children shown as dm's", out)
	}
}
