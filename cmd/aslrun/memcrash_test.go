package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// TestMemoryWritesOnceAcrossKills: an execution whose Map items each
// write an episodic event and a semantic entry is SIGKILLed, each time
// after three more agent calls began (their exec agent appends to a log
// the test watches), and resumed until it ends, on bbolt (strict and
// batched) and on PostgreSQL: the memory then holds each item's event
// and entry once, and the history records each write once.
func TestMemoryWritesOnceAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	const items, killEvery, kills = 16, 3, 3
	for _, tc := range []struct{ name, db, durability string }{
		{"bbolt", "", "strict"},
		{"bbolt-batched", "", "batched"},
		{"postgres", "pg", "strict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			calls := filepath.Join(dir, "calls.log")
			agentsFile := writeFile(t, dir, "agents.json", fmt.Sprintf(`{"Worker":{"Type":"exec","Command":["sh","-c","echo call >> %s; sleep 0.05; echo '\"ok\"'"],"TimeoutSeconds":10}}`, calls))
			db := filepath.Join(dir, "m.db")
			env := []string{}
			if tc.db == "pg" {
				db = pgtest.Fresh(t)
				if code, out, errOut := invoke(t, "", "migrate", "--db", db); code != 0 {
					t.Fatalf("migrate: exit %d: %s%s", code, out, errOut)
				}
				// A killed process's lease expires soon.
				env = append(env, envLeaseTTL+"=300ms")
			}
			start := []string{"run", "testdata/memcrash/workflow.json", "--agents", agentsFile, "--input", "@testdata/memcrash/input.json",
				"--db", db, "--name", "m1", "--durability", tc.durability}
			args := start
			killed := 0
			for attempt := 0; ; attempt++ {
				if attempt > 30 {
					t.Fatal("not finished after 30 runs")
				}
				kill := -1
				if killed < kills {
					kill = linesOf(t, calls) + killEvery
				}
				code, errOut := runKilledAt(t, env, calls, kill, args...)
				switch {
				case code == -1:
					killed++
					args = []string{"resume", "m1", "--db", db}
				case code == 0:
				case code == exitUsage && bytes.Contains(errOut, []byte("not found")):
					args = start // killed before the execution was made
					continue
				default:
					t.Fatalf("aslrun %v: exit %d: %s", args, code, errOut)
				}
				if code == 0 {
					break
				}
			}
			code, out, errOut := invoke(t, "", "memory", "crash", "--json", "--db", db)
			if code != 0 {
				t.Fatalf("memory: exit %d: %s", code, errOut)
			}
			var entries []map[string]any
			if err := json.Unmarshal([]byte(out), &entries); err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, e := range entries {
				v := e["value"].(map[string]any)
				switch e["type"] {
				case "episodic":
					seen[fmt.Sprint("event ", v["event"])]++
				case "semantic":
					seen[fmt.Sprint("entry ", v["text"])]++
				}
			}
			if len(entries) != 2*items {
				t.Errorf("%d entries after %d kills, want %d", len(entries), killed, 2*items)
			}
			for i := range items {
				ev, en := seen[fmt.Sprint("event ", i)], seen[fmt.Sprintf("entry item number %d of the crash test", i)]
				if ev != 1 || en != 1 {
					t.Errorf("item %d: event written %d times, entry %d times", i, ev, en)
				}
			}
			code, out, errOut = invoke(t, "", "history", "m1", "--json", "--db", db)
			if code != 0 {
				t.Fatalf("history: exit %d: %s", code, errOut)
			}
			var events []map[string]any
			if err := json.Unmarshal([]byte(out), &events); err != nil {
				t.Fatal(err)
			}
			written := 0
			for _, e := range events {
				if e["type"] == "MemoryWritten" {
					written++
				}
			}
			if written != 2*items || killed != kills {
				t.Errorf("%d MemoryWritten events, want %d; %d kills, want %d", written, 2*items, killed, kills)
			}
			t.Logf("%s: %d kills, %d agent calls for %d items", tc.name, killed, linesOf(t, calls), items)
		})
	}
}

// linesOf counts the lines of the file at path (0 when it does not exist).
func linesOf(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// runKilledAt runs aslrun with args (and env) and SIGKILLs it once the
// log at calls has at least kill lines (never when kill < 0). It returns
// the exit code (-1 when killed) and stderr.
func runKilledAt(t *testing.T, env []string, calls string, kill int, args ...string) (int, []byte) {
	t.Helper()
	cmd := aslrunCmd(args...)
	cmd.Env = append(cmd.Env, env...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), errOut.Bytes()
			}
			if err != nil {
				t.Fatal(err)
			}
			return 0, errOut.Bytes()
		case <-tick.C:
			if kill >= 0 && linesOf(t, calls) >= kill {
				cmd.Process.Kill()
				<-done
				return -1, errOut.Bytes()
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("aslrun %v did not end within a minute: %s", args, errOut.String())
		}
	}
}
