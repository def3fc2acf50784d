package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// registerWorker registers testdata/childcrash/worker.json as workflow
// "worker" in the database db (a bbolt path or a PostgreSQL URL).
func registerWorker(t *testing.T, db string) {
	t.Helper()
	ctx := context.Background()
	text, err := os.ReadFile("testdata/childcrash/worker.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonvalue.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	compact, _ := jsonvalue.Marshal(v)
	hash, _ := jsonvalue.CanonicalHash(v)
	var st interface {
		RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta store.VersionMeta) (store.WorkflowVersion, error)
		Close() error
	}
	if filepath.IsAbs(db) {
		st, err = store.OpenBolt(db, store.BoltOptions{})
	} else {
		st, err = postgres.Open(ctx, db, postgres.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.RegisterWorkflow(ctx, "worker", compact, hash, store.VersionMeta{}); err != nil {
		t.Fatal(err)
	}
}

// TestChildExecutionCrashAcrossKills: `aslrun run` of a parent whose Map waits
// on three Workflow children is SIGKILLed, each time after three more of
// the children's agent calls began (their exec agent appends to a log),
// and resumed until it ends, on bbolt (strict and batched) and on
// PostgreSQL: each child was started once (three child executions, one
// ChildExecutionStarted each, none of a second attempt) and the parent
// ends with the output of a run nobody killed.
func TestChildExecutionCrashAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	const killEvery, kills = 3, 3
	run := func(t *testing.T, db, durability string, kill bool) (any, int) {
		dir := t.TempDir()
		calls := filepath.Join(dir, "calls.log")
		agentsFile := writeFile(t, dir, "agents.json", fmt.Sprintf(`{"Worker":{"Type":"exec","Command":["sh","-c","echo call >> %s; sleep 0.05; echo '\"ok\"'"],"TimeoutSeconds":10}}`, calls))
		env := []string{}
		if !filepath.IsAbs(db) {
			env = append(env, envLeaseTTL+"=300ms")
		}
		registerWorker(t, db)
		start := []string{"run", "testdata/childcrash/parent.json", "--agents", agentsFile, "--input", "@testdata/childcrash/input.json",
			"--db", db, "--name", "parent", "--durability", durability}
		args, killed := start, 0
		for attempt := 0; ; attempt++ {
			if attempt > 30 {
				t.Fatal("not finished after 30 runs")
			}
			at := -1
			if kill && killed < kills {
				at = linesOf(t, calls) + killEvery
			}
			code, errOut := runKilledAt(t, env, calls, at, args...)
			if code == 0 {
				break
			}
			switch {
			case code == -1:
				killed++
				args = []string{"resume", "parent", "--db", db}
			case code == exitUsage && bytes.Contains(errOut, []byte("not found")):
				args = start
			default:
				t.Fatalf("aslrun %v: exit %d: %s", args, code, errOut)
			}
		}
		code, out, errOut := invoke(t, "", "status", "parent", "--json", "--db", db)
		if code != 0 {
			t.Fatalf("status: exit %d: %s", code, errOut)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if st["status"] != "SUCCEEDED" {
			t.Fatalf("the parent: %s", out)
		}
		return st["output"], killed
	}
	want, _ := run(t, filepath.Join(t.TempDir(), "ref.db"), "strict", false)
	for _, tc := range []struct{ name, db, durability string }{
		{"bbolt", "", "strict"},
		{"bbolt-batched", "", "batched"},
		{"postgres", "pg", "strict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "c.db")
			if tc.db == "pg" {
				db = pgtest.Fresh(t)
				if code, out, errOut := invoke(t, "", "migrate", "--db", db); code != 0 {
					t.Fatalf("migrate: exit %d: %s%s", code, out, errOut)
				}
			}
			got, killed := run(t, db, tc.durability, true)
			if killed != kills {
				t.Errorf("%d kills, want %d", killed, kills)
			}
			if !jsonvalue.Equal(got, want) {
				t.Errorf("output after %d kills:\n%v\nwant\n%v", killed, got, want)
			}
			code, out, errOut := invoke(t, "", "history", "parent", "--json", "--db", db)
			if code != 0 {
				t.Fatalf("history: exit %d: %s", code, errOut)
			}
			var events []map[string]any
			if err := json.Unmarshal([]byte(out), &events); err != nil {
				t.Fatal(err)
			}
			started := map[string]int{}
			for _, e := range events {
				if e["type"] == engine.EventChildStarted {
					d, _ := e["detail"].(map[string]any)
					started[fmt.Sprint(d["execution"])]++
				}
			}
			for i := range 3 {
				id := engine.ChildWorkflowID("parent", fmt.Sprintf("Fan#1.0/%d/Child#1", i), 0)
				if started[id] != 1 {
					t.Errorf("child %s started %d times (events: %v)", id, started[id], started)
				}
				code, out, errOut := invoke(t, "", "status", id, "--json", "--db", db)
				if code != 0 || !bytes.Contains([]byte(out), []byte(`"status": "SUCCEEDED"`)) {
					t.Errorf("child %s: exit %d %s %s", id, code, out, errOut)
				}
			}
			if len(started) != 3 {
				t.Errorf("%d children started, want 3: %v (history: %.2000s)", len(started), started, out)
			}
		})
	}
}
