package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

func TestMigrateCommand(t *testing.T) {
	url := pgtest.Fresh(t)
	code, out, errOut := invoke(t, "", "migrate", "--db", url)
	if code != 0 || !strings.Contains(out, "migrated to schema version 13 (applied 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)") {
		t.Fatalf("migrate: code %d, stdout %q, stderr %q; want schema version 13 applied", code, out, errOut)
	}
	code, out, errOut = invoke(t, "", "migrate", "--db", url)
	if code != 0 || !strings.Contains(out, "is up to date: schema version 13") {
		t.Errorf("migrate again: code %d, stdout %q, stderr %q; want up to date", code, out, errOut)
	}
}

func TestMigrateRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no db", []string{"migrate"}, "migrate: --db postgres://… is required"},
		{"a file", []string{"migrate", "--db", "aslrun.db"}, "migrate: --db aslrun.db: migrate takes a PostgreSQL database (postgres://…); a bbolt database migrates itself"},
		{"an argument", []string{"migrate", "--db", "postgres://h/db", "extra"}, `migrate: unexpected argument "extra"`},
		// Nothing listens on port 1.
		{"unreachable", []string{"migrate", "--db", "postgres://app:s3cret@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"},
			"migrate: database postgres://app:xxxxx@127.0.0.1:1/x?sslmode=disable&connect_timeout=2: connecting: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := invoke(t, "", tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: code %d, stderr %q; want exit %d saying %q", tt.args, code, errOut, exitUsage, tt.want)
			}
			if strings.Contains(errOut, "s3cret") {
				t.Errorf("%v: stderr %q shows the password", tt.args, errOut)
			}
		})
	}
}

// TestPostgresUnreachable: every command that opens a database takes a
// postgres:// one, and when no server answers says so, naming the URL
// without its password.
func TestPostgresUnreachable(t *testing.T) {
	dir := t.TempDir()
	wf := writeFile(t, dir, "wf.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	const db = "postgres://app:s3cret@127.0.0.1:1/aslrun?connect_timeout=2"
	for _, args := range [][]string{
		{"run", wf},
		{"resume", "e1"},
		{"approve", "e1", "--decision", "ok"},
		{"list"},
		{"status", "e1"},
		{"history", "e1"},
		{"checkpoints", "e1"},
		{"memory"},
		{"gc"},
		{"serve", "--socket", filepath.Join(dir, "s.sock")},
		{"worker"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, errOut := invoke(t, "", append(args, "--db", db)...)
			want := "postgres://app:xxxxx@127.0.0.1:1/aslrun"
			if code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "s3cret") {
				t.Errorf("%v: code %d, stderr %q; want exit %d naming %q without the password", args, code, errOut, exitUsage, want)
			}
		})
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("the commands left %v (%v) in their directory, want only the workflow", entries, err)
	}
}

// TestPostgresNotMigrated: a command on a database without the schema
// says to run aslrun migrate.
func TestPostgresNotMigrated(t *testing.T) {
	url := pgtest.Fresh(t)
	code, _, errOut := invoke(t, "", "list", "--db", url)
	if code != exitUsage || !strings.Contains(errOut, "run `aslrun migrate --db") {
		t.Errorf("list on an empty database: code %d, stderr %q; want exit %d saying to run aslrun migrate", code, errOut, exitUsage)
	}
}

// TestPostgresRun runs an example on PostgreSQL, chosen by --db and then
// by ASLRUN_DB, and reads it back with status, history --verify and list.
func TestPostgresRun(t *testing.T) {
	url := pgtest.Fresh(t)
	if code, _, errOut := invoke(t, "", "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	ex := filepath.Join("..", "..", "workflows", "support-triage")
	want, err := os.ReadFile(filepath.Join(ex, "output.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, "", "run", filepath.Join(ex, "workflow.json"), "--input", "@"+filepath.Join(ex, "input.json"),
		"--mock", filepath.Join(ex, "mock.json"), "--db", url, "--name", "pg-1")
	if code != 0 {
		t.Fatalf("run: code %d, stderr %q", code, errOut)
	}
	if !jsonEqual(t, out, string(want)) {
		t.Errorf("run output = %s, want %s", out, want)
	}
	t.Setenv(envDB, url)
	for _, args := range [][]string{{"status", "pg-1"}, {"history", "pg-1", "--verify"}, {"list"}} {
		code, out, errOut := invoke(t, "", args...)
		if code != 0 || !strings.Contains(out, "pg-1") && args[0] != "history" || !strings.Contains(out+errOut, "SUCCEEDED") && args[0] != "history" {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		if args[0] == "history" && (code != 0 || !strings.Contains(strings.ToLower(out+errOut), "verif")) {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want the history verified", args, code, out, errOut)
		}
	}
}
