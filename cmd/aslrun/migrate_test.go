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
	if code != 0 || !strings.Contains(out, "migrated to schema version 2 (applied 1, 2)") {
		t.Fatalf("migrate: code %d, stdout %q, stderr %q; want schema version 2 applied", code, out, errOut)
	}
	code, out, errOut = invoke(t, "", "migrate", "--db", url)
	if code != 0 || !strings.Contains(out, "is up to date: schema version 2") {
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

// TestPostgresNotYet: every command that opens a database refuses a
// postgres:// one, saying that only migrate takes it so far, without
// showing the password.
func TestPostgresNotYet(t *testing.T) {
	dir := t.TempDir()
	wf := writeFile(t, dir, "wf.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	const db = "postgres://app:s3cret@127.0.0.1:1/aslrun"
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
			want := "--db postgres://app:xxxxx@127.0.0.1:1/aslrun: the PostgreSQL store is not complete yet: only `aslrun migrate` takes a postgres:// database"
			if code != exitUsage || !strings.Contains(errOut, want) {
				t.Errorf("%v: code %d, stderr %q; want exit %d saying %q", args, code, errOut, exitUsage, want)
			}
		})
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("the commands left %v (%v) in their directory, want only the workflow", entries, err)
	}
}
