package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkflowVersionRegisterTemplate: `aslrun workflow register` takes a template
// (a file with Parameters) as one, so that a workflow registered next can
// import it as registry://name@constraint and run; a template whose
// parameters are wrong, or that imports a file, is refused.
func TestWorkflowVersionRegisterTemplate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	tmpl := writeFile(t, dir, "review.json", `{"Parameters":{"Team":{"Type":"string","Required":true}},
		"StartAt":"Tag","States":{"Tag":{"Type":"Pass","Parameters":{"team":"{{Team | upper}}"},"End":true}}}`)
	flow := writeFile(t, dir, "triage.json", `{"Imports":{"review":"registry://review@^1.0.0"},"StartAt":"Review","States":{
		"Review":{"Type":"Include","Template":"review","Parameters":{"Team":"ops"},"ResultPath":"$.review","End":true}}}`)
	for _, args := range [][]string{
		{"workflow", "register", tmpl, "--name", "review", "--label", "1.0.0", "--db", db},
		{"workflow", "register", flow, "--name", "triage", "--db", db},
	} {
		if code, out, errOut := invoke(t, "", args...); code != 0 {
			t.Fatalf("%v: exit %d %s %s", args, code, out, errOut)
		}
	}
	code, out, errOut := invoke(t, "", "run", flow, "--db", db, "--input", "{}")
	if code != 0 || !strings.Contains(out, `"team": "OPS"`) {
		t.Fatalf("run: exit %d %s %s", code, out, errOut)
	}
	for name, text := range map[string]string{
		"bad-type.json": `{"Parameters":{"Team":{"Type":"colour"}},"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`,
		"file-imp.json": `{"Parameters":{},"Imports":{"x":"./x.json"},"StartAt":"A","States":{"A":{"Type":"Include","Template":"x","End":true}}}`,
	} {
		f := writeFile(t, dir, name, text)
		code, _, errOut := invoke(t, "", "workflow", "register", f, "--name", "bad", "--db", db)
		if code != exitUsage || !strings.Contains(errOut, "the template") {
			t.Errorf("register %s: exit %d %s, want 2 naming the template", name, code, errOut)
		}
	}
}
