package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskCacheExample: the support example run twice on the same
// ticket classifies it once: the second run's Classify is a cache hit
// (no call, no tokens, no retry of the classifier's first timeout), with
// the same output; `cache ls` shows the entry with its hit, and `cache
// purge` removes it; bad uses of the command are refused.
func TestTaskCacheExample(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	wf, mock, input := "../../workflows/support-triage/workflow.json", "../../workflows/support-triage/mock.json", "@../../workflows/support-triage/input.json"
	var outs []string
	for _, name := range []string{"first", "again"} {
		code, out, errOut := invoke(t, "", "run", wf, "--mock", mock, "--input", input, "--db", db, "--name", name)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		outs = append(outs, out)
	}
	// The reply is the same; the memory the first run wrote (the
	// ticket, recalled as the customer's and as a similar one) shows.
	var first, again map[string]any
	if json.Unmarshal([]byte(outs[0]), &first) != nil || json.Unmarshal([]byte(outs[1]), &again) != nil || first["reply"] != again["reply"] || again["previousTickets"] != 1.0 {
		t.Errorf("outputs %s then %s", outs[0], outs[1])
	}
	code, out, errOut := invoke(t, "", "history", "again", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("history: exit %d: %s", code, errOut)
	}
	var events []map[string]any
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatal(err)
	}
	hits, classified := 0, 0
	for _, e := range events {
		if e["type"] == "TaskCacheHit" {
			hits++
		}
		if e["type"] == "TaskScheduled" && e["state"] == "Classify" {
			classified++
		}
	}
	if hits != 1 || classified != 0 {
		t.Errorf("the second run: %d cache hits and %d classifier calls, want 1 and 0", hits, classified)
	}
	for name, want := range map[string]string{"first": `"tokens": 450`, "again": `"tokens": 0`} {
		code, out, _ := invoke(t, "", "status", name, "--json", "--db", db)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status %s: %s", name, out)
		}
	}
	code, out, errOut = invoke(t, "", "cache", "ls", "--json", "--db", db)
	var entries []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &entries) != nil || len(entries) != 1 || entries[0]["hits"] != 1.0 || entries[0]["state"] != "Classify" {
		t.Fatalf("cache ls: exit %d %s %s", code, out, errOut)
	}
	for _, args := range [][]string{{"cache"}, {"cache", "show"}, {"cache", "purge"}, {"cache", "purge", "k", "--all"}, {"cache", "ls", "x"}, {"cache", "purge", "--all", "--json"}} {
		if code, _, errOut := invoke(t, "", append(args, "--db", db)...); code != exitUsage || !strings.Contains(errOut, "cache") {
			t.Errorf("%v: exit %d %s, want a usage error", args, code, errOut)
		}
	}
	if code, out, errOut := invoke(t, "", "cache", "purge", entries[0]["key"].(string), "--db", db); code != 0 || out != "removed 1\n" {
		t.Errorf("cache purge KEY: exit %d %q %s", code, out, errOut)
	}
	if code, out, _ := invoke(t, "", "cache", "purge", "--all", "--db", db); code != 0 || out != "removed 0\n" {
		t.Errorf("cache purge --all: exit %d %q", code, out)
	}
}

// TestTaskCacheGlobalRunRefused: a definition file is no registered
// workflow: `aslrun run` of one whose Task caches with Scope global is
// refused before anything runs, naming the Task's Scope field, with a
// database or without; with Scope workflow it runs.
func TestTaskCacheGlobalRunRefused(t *testing.T) {
	dir := t.TempDir()
	const def = `{"StartAt":"Classify","States":{"Classify":{"Type":"Task","Agent":"Classifier","Cache":{"Scope":%q},"End":true}}}`
	mock := filepath.Join(dir, "mock.json")
	if err := os.WriteFile(mock, []byte(`{"Classifier":{"0":{"Return":"refund"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, scope := range []string{"global", "workflow"} {
		wf := filepath.Join(dir, scope+".json")
		if err := os.WriteFile(wf, fmt.Appendf(nil, def, scope), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, where := range [][]string{{"--db", filepath.Join(dir, scope+".db")}, {"--durability", "none"}} {
			code, out, errOut := invoke(t, "", append([]string{"run", wf, "--mock", mock}, where...)...)
			switch {
			case scope == "workflow" && (code != 0 || !strings.Contains(out, "refund")):
				t.Errorf("run %s %v: exit %d %s %s, want it to run", scope, where, code, out, errOut)
			case scope == "global" && (code == 0 || strings.Contains(errOut, "execution:") ||
				!strings.Contains(errOut, "/States/Classify/Cache/Scope (Classify): global caches only for workflows an admin registered")):
				t.Errorf("run %s %v: exit %d %s %s, want it refused naming /States/Classify/Cache/Scope", scope, where, code, out, errOut)
			}
		}
	}
}
