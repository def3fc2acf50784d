package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

const (
	wfV1 = `{"StartAt":"Check","States":{"Check":{"Type":"Pass","Next":"Old"},"Old":{"Type":"Pass","End":true}}}`
	wfV2 = `{"StartAt":"Check","States":{"Check":{"Type":"Pass","Result":2,"Next":"New"},"New":{"Type":"Succeed"}}}`
)

// workflowSession runs the workflow subcommands on db: register two
// labelled versions, list them, alias one, compare them, and refuse
// what it should.
func workflowSession(t *testing.T, db string) {
	t.Helper()
	dir := t.TempDir()
	f1, f2 := writeFile(t, dir, "v1.json", wfV1), writeFile(t, dir, "v2.json", wfV2)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return invoke(t, "", append(args, "--db", db)...)
	}
	want := func(code int, stdout, stderr string, wantCode int, wantOut ...string) {
		t.Helper()
		if code != wantCode {
			t.Errorf("exit %d (stdout %q, stderr %q), want %d", code, stdout, stderr, wantCode)
		}
		for _, w := range wantOut {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("output %q %q does not say %q", stdout, stderr, w)
			}
		}
	}
	code, out, errOut := cli("workflow", "register", f1, "--name", "triage", "--label", "1.0.0")
	want(code, out, errOut, 0, "registered triage version 1 (1.0.0)")
	code, out, errOut = cli("workflow", "register", f1, "--name", "triage")
	want(code, out, errOut, 0, "triage version 1 has this definition already (1.0.0)")
	code, out, errOut = cli("workflow", "register", f2, "--name", "triage", "--label", "1.1.0")
	want(code, out, errOut, 0, "registered triage version 2 (1.1.0)")
	code, out, errOut = cli("workflow", "alias", "triage", "prod", "^1.0.0")
	want(code, out, errOut, 0, "triage prod → version 2")
	code, out, errOut = cli("workflow", "alias", "triage", "stable", "1")
	want(code, out, errOut, 0, "triage stable → version 1")

	code, out, errOut = cli("workflow", "versions", "triage", "--json")
	var list api.WorkflowList
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Workflows) != 2 {
		t.Fatalf("versions --json: %d %q %q", code, out, errOut)
	}
	if v := list.Workflows[1]; v.Version != 2 || v.Label != "1.1.0" || len(v.Aliases) != 1 || v.Aliases[0] != "prod" {
		t.Errorf("version 2 = %+v, want label 1.1.0, alias prod", v)
	}
	code, out, errOut = cli("workflow", "versions", "triage")
	want(code, out, errOut, 0, "VERSION", "1.0.0", "stable", "1.1.0", "prod")

	code, out, errOut = cli("workflow", "diff", "triage", "stable", "prod")
	want(code, out, errOut, 0, "triage: version 1 (1.0.0) → version 2 (1.1.0)", "+ state New", "- state Old", "~ state Check",
		"/States/Check/Next: \"Old\" → \"New\"", "/States/Check/Result: (none) → 2", "+ edge Check → New (next)", "- edge Check → Old (next)")
	code, out, errOut = cli("workflow", "diff", "triage", "1", "2", "--json")
	var d api.WorkflowDiff
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.From != 1 || d.To != 2 || len(d.Added) != 1 || d.Added[0] != "New" {
		t.Errorf("diff --json: %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli("workflow", "alias", "triage", "stable", "--delete")
	want(code, out, errOut, 0, "removed alias stable of triage")

	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"no verb", []string{"workflow"}, "give register"},
		{"unknown verb", []string{"workflow", "publish"}, `"publish"`},
		{"no name", []string{"workflow", "register", f1}, "--name"},
		{"bad name", []string{"workflow", "register", f1, "--name", "a/b"}, "--name"},
		{"bad label", []string{"workflow", "register", f1, "--name", "triage", "--label", "v1"}, "--label"},
		{"label taken", []string{"workflow", "register", f1, "--name", "triage", "--label", "1.1.0"}, "labelled 1.1.0 (version 2)"},
		{"two files", []string{"workflow", "register", f1, f2, "--name", "triage"}, "one FILE"},
		{"label on versions", []string{"workflow", "versions", "triage", "--label", "1.0.0"}, "--label"},
		{"delete on diff", []string{"workflow", "diff", "triage", "1", "2", "--delete"}, "--delete"},
		{"alias all digits", []string{"workflow", "alias", "triage", "12", "1"}, `"12"`},
		{"alias no version", []string{"workflow", "alias", "triage", "prod"}, "VERSION"},
		{"delete with version", []string{"workflow", "alias", "triage", "prod", "1", "--delete"}, "no VERSION"},
		{"bad ref", []string{"workflow", "diff", "triage", "1", "^^2"}, `"^^2"`},
		{"no such constraint", []string{"workflow", "diff", "triage", "1", "^2.0.0"}, "no version of triage satisfies ^2.0.0; its labels: 1.0.0, 1.1.0"},
		{"no such workflow", []string{"workflow", "versions", "nothing"}, "nothing"},
		{"unset alias", []string{"workflow", "alias", "triage", "stable", "--delete"}, "no alias stable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.says) {
				t.Errorf("%v: exit %d, stderr %q (stdout %q), want exit 2 saying %q", tc.args, code, errOut, out, tc.says)
			}
		})
	}
}

func TestWorkflowVersionCLI(t *testing.T) {
	workflowSession(t, filepath.Join(t.TempDir(), "a.db"))
}

func TestWorkflowVersionCLIPostgres(t *testing.T) {
	url := pgtest.Fresh(t)
	if code, out, errOut := invoke(t, "", "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	workflowSession(t, url)
}

// TestWorkflowVersionCLIServe runs the subcommands through the API of a
// server holding the database.
func TestWorkflowVersionCLIServe(t *testing.T) {
	db := filepath.Join(t.TempDir(), "a.db")
	startServe(t, db)
	workflowSession(t, db)
}

// TestWorkflowVersionCopy: copy takes the versions' labels and locks and
// the aliases into PostgreSQL.
func TestWorkflowVersionCopy(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	f1, f2 := writeFile(t, dir, "v1.json", wfV1), writeFile(t, dir, "v2.json", wfV2)
	for _, args := range [][]string{
		{"workflow", "register", f1, "--name", "triage", "--label", "1.0.0"},
		{"workflow", "register", f2, "--name", "triage", "--label", "1.1.0"},
		{"workflow", "alias", "triage", "prod", "1"},
	} {
		if code, out, errOut := invoke(t, "", append(args, "--db", db)...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errOut)
		}
	}
	url := pgtest.Fresh(t)
	if code, out, errOut := invoke(t, "", "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := invoke(t, "", "copy", "--from", db, "--to", url); code != 0 {
		t.Fatalf("copy: %d %s %s", code, out, errOut)
	}
	code, out, errOut := invoke(t, "", "workflow", "versions", "triage", "--json", "--db", url)
	var list api.WorkflowList
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Workflows) != 2 {
		t.Fatalf("versions on the copy: %d %q %q", code, out, errOut)
	}
	if v := list.Workflows[0]; v.Label != "1.0.0" || len(v.Aliases) != 1 || v.Aliases[0] != "prod" || list.Workflows[1].Label != "1.1.0" {
		t.Errorf("versions on the copy = %+v, want labels 1.0.0 and 1.1.0 and prod on version 1", list.Workflows)
	}
	// Copying again with the alias moved in the source is a conflict.
	if code, out, errOut := invoke(t, "", "workflow", "alias", "triage", "prod", "2", "--db", db); code != 0 {
		t.Fatalf("move prod: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := invoke(t, "", "copy", "--from", db, "--to", url, "--skip-existing"); code != exitUsage || !strings.Contains(errOut, "alias prod of workflow triage points to version 1, not 2") {
		t.Errorf("copy with a moved alias: %d %s, want exit 2 naming the alias", code, errOut)
	}
}
