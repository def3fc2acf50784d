package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDatabaseMissingOrDirectory: a command that reads, or needs an
// execution, on a --db that does not exist says so and creates nothing; a
// --db that is a directory says it is a directory, for every command.
func TestDatabaseMissingOrDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.db")
	asDir := filepath.Join(dir, "folder.db")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	wf := writeFile(t, dir, "p.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	for _, args := range [][]string{
		{"list"}, {"status", "x"}, {"history", "x"}, {"history", "x", "--verify"}, {"map-runs", "x"}, {"checkpoints", "x"},
		{"memory"}, {"gc"}, {"resume", "x"}, {"approve", "x", "--decision", "ok"}, {"task-success", "tok", "--output", "1"},
		{"task-failure", "tok"}, {"task-heartbeat", "tok"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, errOut := invoke(t, "", append(args, "--db", missing)...)
			if code != exitUsage || !strings.Contains(errOut, "database "+missing+" does not exist") {
				t.Errorf("on a missing --db: exit %d, stderr %q; want 2 and that it does not exist", code, errOut)
			}
			for _, f := range []string{missing, missing + ".holder", missing + ".sock"} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s exists after %v: %v", f, args, err)
				}
			}
			code, _, errOut = invoke(t, "", append(args, "--db", asDir)...)
			if code != exitUsage || !strings.Contains(errOut, "database "+asDir+" is a directory") {
				t.Errorf("on a directory --db: exit %d, stderr %q; want 2 and that it is a directory", code, errOut)
			}
		})
	}
	// run makes the database, but not of a directory.
	if code, _, errOut := invoke(t, "", "run", wf, "--db", asDir); code != exitUsage || !strings.Contains(errOut, "database "+asDir+" is a directory") {
		t.Errorf("run on a directory: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := invoke(t, "", "run", wf, "--db", missing); code != 0 {
		t.Errorf("run on a new database: exit %d, stderr %q", code, errOut)
	}
}
