package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// checkpointFlow writes agent memory (in a namespace with a "/"), saves
// checkpoint "one", changes the document and the memory, saves "two" and
// ends.
const checkpointFlow = `{"StartAt":"Remember","States":{
	"Remember":{"Type":"Pass","Result":{"n":1},"ResultPath":"$.first","Memory":{"Namespace":"team/a","Write":[{"Key":"note","Value":"v1"}]},"Next":"One"},
	"One":{"Type":"Checkpoint","Name":"one","Next":"Change"},
	"Change":{"Type":"Pass","Result":{"n":2},"ResultPath":"$.first",
		"Memory":{"Namespace":"team/a","Write":[{"Key":"note","Value":"v2"},{"Key":"extra","Value":[1]}]},"Next":"Two"},
	"Two":{"Type":"Checkpoint","Name":"two","Next":"Done"},
	"Done":{"Type":"Pass","End":true}}}`

// TestCheckpointsThroughServe: with `aslrun serve` holding the database,
// checkpoints and memory print what they print on their own, through its
// API, and resume --from-checkpoint rolls back and --fork forks through it.
func TestCheckpointsThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "cp.db")
	wf := writeFile(t, dir, "cp.json", checkpointFlow)
	if code, _, errOut := invoke(t, "", "run", wf, "--name", "cp", "--db", db); code != 0 {
		t.Fatalf("run: exit %d, %s", code, errOut)
	}
	// What the commands print on their own, to compare with.
	reads := [][]string{
		{"checkpoints", "cp", "--json"}, {"checkpoints", "cp"},
		{"memory", "--json"}, {"memory"}, {"memory", "team/a", "--json"}, {"memory", "team/a", "note"}, {"memory", "nobody", "--json"},
	}
	local := make([]string, len(reads))
	for i, args := range reads {
		code, out, errOut := invoke(t, "", append(args, "--db", db)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, errOut)
		}
		local[i] = out
	}
	if !strings.Contains(local[0], `"name": "one"`) || !strings.Contains(local[2], `"namespace": "team/a"`) {
		t.Fatalf("the local reads show no checkpoint or memory:\n%s\n%s", local[0], local[2])
	}

	p := startServe(t, db)
	for i, args := range reads {
		r := cliIn(dir, append(args, "--db", db)...)
		if r.code != 0 || r.err != nil || r.out != local[i] {
			t.Errorf("%v through serve: exit %d (%v), stderr %q, stdout\n%s\nwant, as without the server:\n%s", args, r.code, r.err, r.errOut, r.out, local[i])
		}
	}
	if r := cliIn(dir, "checkpoints", "nope", "--db", db); r.code != exitUsage || !strings.Contains(r.errOut, "nope") {
		t.Errorf("checkpoints of no such execution through serve: %+v, want exit 2 naming it", r)
	}

	// A fork from "one", named f1.
	r := cliIn(dir, "resume", "cp", "--from-checkpoint", "one", "--fork", "--name", "f1", "--db", db)
	if r.code != 0 || !strings.Contains(r.errOut, "execution: f1 (forked from cp at one)") || !jsonEqual(t, r.out, `{"first":{"n":2}}`) {
		t.Fatalf("fork through serve: %+v", r)
	}
	if r := cliIn(dir, "status", "f1", "--json", "--db", db); r.code != 0 || !strings.Contains(r.out, `"parent": "cp"`) {
		t.Errorf("status of the fork: %+v", r)
	}
	// A rollback of cp to "one", in place: it runs from there again.
	r = cliIn(dir, "resume", "cp", "--from-checkpoint", "one", "--restore", "both", "--db", db)
	if r.code != 0 || !strings.Contains(r.errOut, "execution: cp") || !jsonEqual(t, r.out, `{"first":{"n":2}}`) {
		t.Fatalf("rollback through serve: %+v", r)
	}
	r = cliIn(dir, "history", "cp", "--json", "--db", db)
	var events []struct {
		Type       string
		Superseded bool
	}
	if err := json.Unmarshal([]byte(r.out), &events); err != nil {
		t.Fatalf("history: %v: %+v", err, r)
	}
	superseded := 0
	for _, e := range events {
		if e.Superseded {
			superseded++
		}
	}
	if superseded == 0 {
		t.Errorf("history after the rollback through serve marks nothing superseded: %s", r.out)
	}
	// Refusals come back as the server's problems, exit 2.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"resume", "cp", "--from-checkpoint", "three"}, `no checkpoint "three"`},
		{[]string{"resume", "cp", "--from-checkpoint", "one", "--fork", "--name", "f1"}, "f1"},
		{[]string{"resume", "nope", "--from-checkpoint", "one"}, "nope"},
	} {
		if r := cliIn(dir, append(tc.args, "--db", db)...); r.code != exitUsage || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v through serve: %+v, want exit 2 saying %q", tc.args, r, tc.want)
		}
	}
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("serve exited %d", code)
	}
}
