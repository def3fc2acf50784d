package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// TestMapRunsFollower: a map run's line shows its counts and, once it
// moved, its rate and an estimated end; plain output prints a line only
// when it changed, a terminal rewrites its lines in place with a bar.
func TestMapRunsFollower(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	reads := [][]api.MapRun{
		{{ID: "e/Each#1.0", Status: "RUNNING", Total: 100}},
		{{ID: "e/Each#1.0", Status: "RUNNING", Total: 100}},
		{{ID: "e/Each#1.0", Status: "RUNNING", Total: 100, Succeeded: 38, Failed: 2}},
		{{ID: "e/Each#1.0", Status: "SUCCEEDED", Total: 100, Succeeded: 97, Failed: 2, Aborted: 1}},
	}
	views := func(i int) []mapRunView {
		var out []mapRunView
		for _, r := range reads[i] {
			out = append(out, mapRunView{run: r})
		}
		return out
	}
	for _, tc := range []struct {
		styled bool
		want   string
	}{
		{false, "e/Each#1.0 RUNNING 0/100 done (0%)\n" +
			"e/Each#1.0 RUNNING 40/100 done (40%), 2 failed, 4.00/s, about 15s left\n" +
			"e/Each#1.0 SUCCEEDED 100/100 done (100%), 2 failed, 1 aborted\n"},
		{true, "\r\x1b[Ke/Each#1.0 RUNNING [························] 0/100 done (0%)\n" +
			"\x1b[1A\r\x1b[Ke/Each#1.0 RUNNING [························] 0/100 done (0%)\n" +
			"\x1b[1A\r\x1b[Ke/Each#1.0 RUNNING [█████████···············] 40/100 done (40%), 2 failed, 4.00/s, about 15s left\n" +
			"\x1b[1A\r\x1b[Ke/Each#1.0 SUCCEEDED [████████████████████████] 100/100 done (100%), 2 failed, 1 aborted\n"},
	} {
		var out bytes.Buffer
		f := newMapRunsFollower(&out)
		f.styled, f.width = tc.styled, 200
		now := at
		f.now = func() time.Time { return now }
		for i := range reads {
			f.print(views(i))
			now = now.Add(5 * time.Second)
		}
		if out.String() != tc.want {
			t.Errorf("styled %v:\n%q\nwant\n%q", tc.styled, out.String(), tc.want)
		}
	}
}

// TestMapRunsFollowThroughServe: map-runs --follow prints a Distributed
// Map's progress while its children run, through the server holding the
// database, until the map run ends, then the table; --follow with --json,
// or a too short --every, is refused.
func TestMapRunsFollowThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "f.db")
	p := startServe(t, db)
	c := client.NewUnix(p.sock)
	ctx := context.Background()
	def := json.RawMessage(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":2,
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"Slow","States":{
			"Slow":{"Type":"Wait","Seconds":1,"End":true}}},"End":true}}}`)
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "fm", Input: json.RawMessage(`{"items":[1,2,3,4,5,6]}`)}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, "", "map-runs", "fm", "--follow", "--every", "100ms", "--db", db)
	if code != 0 {
		t.Fatalf("map-runs --follow: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var moving bool
	for _, l := range lines {
		if strings.Contains(l, "RUNNING") && !strings.Contains(l, " 6/6 done") && strings.Contains(l, "/6 done") {
			moving = true
		}
	}
	if !moving || !strings.Contains(out, "fm/Each#1.0 SUCCEEDED 6/6 done (100%)\n") || !strings.Contains(out, "MAP RUN") {
		t.Errorf("map-runs --follow printed:\n%s", out)
	}
	for _, args := range [][]string{{"--follow", "--json"}, {"--follow", "--every", "1ms"}} {
		code, _, errOut := invoke(t, "", append([]string{"map-runs", "fm", "--db", db}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "map-runs") {
			t.Errorf("map-runs %v: exit %d, %s; want a usage error", args, code, errOut)
		}
	}
}
