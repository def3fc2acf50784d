package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/store"
)

// TestIncludeRun runs a definition that includes a template (which
// imports one of its own, relative to itself): the fragment runs on the
// state's input and its output lands at ResultPath. The run waits at the
// template's Approval; with the template files removed, the decision
// still finishes it, from the stored expanded definition.
func TestIncludeRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	if err := os.Mkdir(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "lib"), "review.json", `{
  "Imports": {"tag": "tag.json"},
  "Parameters": {"Team": {"Type": "string", "Required": true}, "Level": {"Type": "number", "Default": 2}},
  "StartAt": "Label",
  "States": {
    "Label": {"Type": "Include", "Template": "tag", "Parameters": {"Name": "{{Team}}"}, "ResultPath": "$.tag", "Next": "Ask"},
    "Ask": {"Type": "Approval", "Prompt": {"Title": "Review for {{Team | upper}}"}, "Options": ["ok", "no"], "ResultPath": "$.decision", "Next": "Shape"},
    "Shape": {"Type": "Pass", "Parameters": {"team": "{{Team}}", "level": "{{Level}}", "tag.$": "$.tag", "decision.$": "$.decision.approval", "doc.$": "$.doc"}, "End": true}
  }
}`)
	writeFile(t, filepath.Join(dir, "lib"), "tag.json", `{
  "Parameters": {"Name": {"Type": "string"}},
  "StartAt": "T", "States": {"T": {"Type": "Pass", "Result": "team:{{Name}}", "End": true}}
}`)
	wf := writeFile(t, dir, "main.json", `{
  "Imports": {"review": "./lib/review.json"},
  "StartAt": "Review",
  "States": {
    "Review": {"Type": "Include", "Template": "review", "Parameters": {"Team": "ops"}, "ResultPath": "$.review", "Next": "Done"},
    "Done": {"Type": "Succeed"}
  }
}`)
	if code, out, errOut := invoke(t, "", "validate", wf); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("validate = %d %s %s", code, out, errOut)
	}
	code, out, errOut := invoke(t, "", "run", wf, "--db", db, "--name", "inc", "--no-prompt", "--input", `{"doc":"d1"}`)
	if code != exitWaiting {
		t.Fatalf("run exit %d (%s %s), want 3 (waiting)", code, out, errOut)
	}
	if !strings.Contains(out, "Review for OPS") {
		t.Errorf("waiting output %s does not show the substituted prompt", out)
	}
	for _, f := range []string{"review.json", "tag.json"} {
		if err := os.Remove(filepath.Join(dir, "lib", f)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = invoke(t, "", "approve", "inc", "--db", db, "--decision", "ok")
	if code != 0 {
		t.Fatalf("approve exit %d: %s %s", code, out, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	want := `{"doc":"d1","review":{"decision":"ok","doc":"d1","level":2,"tag":"team:ops","team":"ops"}}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("output = %s, want %s", b, want)
	}
}

// TestImportsCLIRefusals: what validate reports for imports it will not
// read, each at the include site.
func TestImportsCLIRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "flows")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := writeFile(t, dir, "outside.json", `{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`)
	for _, tc := range []struct {
		name, imp string
		want      []string
	}{
		{"absolute", outside, []string{"/States/S/Template (S)", "absolute import path"}},
		{"escaping", "../outside.json", []string{"/States/S/Template (S)", "leaves the definition's directory"}},
		{"URL", "https://example.com/t.json", []string{"/Imports/t", "URL imports are not supported"}},
		{"missing", "gone.json", []string{"/States/S/Template (S)", "gone.json"}},
		{"registry without a database", "registry://review@^1.0.0", []string{"/States/S/Template (S)", "does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp, _ := json.Marshal(tc.imp)
			wf := writeFile(t, sub, strings.ReplaceAll(tc.name, " ", "-")+".json", `{"Imports": {"t": `+string(imp)+`}, "StartAt": "S",
  "States": {"S": {"Type": "Include", "Template": "t", "End": true}}}`)
			code, out, errOut := invoke(t, "", "validate", wf, "--db", filepath.Join(dir, "none.db"))
			if code != exitFailed {
				t.Errorf("validate exit %d (%s %s), want %d", code, out, errOut, exitFailed)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("validate printed %q, want it to say %q", out, w)
				}
			}
		})
	}
}

// resolverStore is a store whose registry resolves every import to one
// template; its other methods are not used.
type resolverStore struct {
	store.Store
	gotName, gotRef string
}

func (s *resolverStore) ResolveWorkflow(_ context.Context, name, ref string) (store.WorkflowVersion, error) {
	s.gotName, s.gotRef = name, ref
	return store.WorkflowVersion{Name: name, Version: 4, Definition: []byte(`{"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "v4", "End": true}}}`)}, nil
}

// TestImportsRegistryAdapter resolves a registry import through the
// store's ResolveWorkflow and locks it to name@N.
func TestImportsRegistryAdapter(t *testing.T) {
	st := &resolverStore{}
	reg := &dbRegistry{h: &handle{st: st, close: func() {}}}
	wf := writeFile(t, t.TempDir(), "main.json", `{"Imports": {"r": "registry://review@^1.0.0"}, "StartAt": "S",
  "States": {"S": {"Type": "Include", "Template": "r", "End": true}}}`)
	if _, _, err := parseFile(context.Background(), wf, &dbRegistry{db: memoryDB}); err == nil {
		t.Errorf("parseFile with --db %s resolved a registry import", memoryDB)
	}
	if _, err := os.Stat(memoryDB); err == nil {
		t.Errorf("a file named %s was made", memoryDB)
	}
	m, def, err := parseFile(context.Background(), wf, reg)
	if err != nil {
		t.Fatalf("parseFile: %v", err)
	}
	if st.gotName != "review" || st.gotRef != "^1.0.0" {
		t.Errorf("ResolveWorkflow(%q, %q), want review, ^1.0.0", st.gotName, st.gotRef)
	}
	if got := m.Lock["registry://review@^1.0.0"]; got != "review@4" {
		t.Errorf("Lock = %v, want registry://review@^1.0.0 → review@4", m.Lock)
	}
	if strings.Contains(string(def), "Imports") || !strings.Contains(string(def), `"v4"`) {
		t.Errorf("definition text = %s, want the expanded definition", def)
	}
}

// TestIncludeResultPaths runs an Include with each kind of ResultPath,
// and in a JSONata machine: the fragment's output replaces the input
// ($, the default), lands at a path, or is discarded (null).
func TestIncludeResultPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "t.json", `{"Parameters": {"K": {"Type": "string", "Default": "k"}},
  "StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"key": "{{K}}"}, "Next": "B"}, "B": {"Type": "Pass", "Parameters": {"got.$": "$"}, "End": true}}}`)
	writeFile(t, dir, "j.json", `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Output": {"twice": "{% $states.input.n * 2 %}"}, "End": true}}}`)
	for _, tc := range []struct {
		name, def, want string
	}{
		{"default", `{"Imports": {"t": "t.json"}, "StartAt": "I", "States": {"I": {"Type": "Include", "Template": "t", "Parameters": {"K": "x"}, "End": true}}}`, `{"got":{"key":"x"}}`},
		{"path", `{"Imports": {"t": "t.json"}, "StartAt": "I", "States": {"I": {"Type": "Include", "Template": "t", "ResultPath": "$.out", "End": true}}}`, `{"n":2,"out":{"got":{"key":"k"}}}`},
		{"null", `{"Imports": {"t": "t.json"}, "StartAt": "I", "States": {"I": {"Type": "Include", "Template": "t", "ResultPath": null, "End": true}}}`, `{"n":2}`},
		{"JSONata", `{"QueryLanguage": "JSONata", "Imports": {"j": "j.json"}, "StartAt": "I", "States": {"I": {"Type": "Include", "Template": "j", "End": true}}}`, `{"twice":4}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := writeFile(t, dir, tc.name+".json", tc.def)
			code, out, errOut := invoke(t, "", "run", wf, "--db", ":memory:", "--input", `{"n":2}`)
			if code != 0 {
				t.Fatalf("run exit %d: %s %s", code, out, errOut)
			}
			var got any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if b, _ := json.Marshal(got); string(b) != tc.want {
				t.Errorf("output = %s, want %s", b, tc.want)
			}
		})
	}
}

// TestImportsRegistryRun runs a definition whose template comes from the
// --db's registry: the highest labelled version satisfying the constraint
// is included; a constraint no version satisfies is reported at the
// Include.
func TestImportsRegistryRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	st, err := store.OpenBolt(db, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"1.0.0", "1.3.0", "2.0.0"} {
		text := []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Result":"` + label + `","End":true}}}`)
		if _, err := st.RegisterWorkflow(context.Background(), "review", text, "h"+label, store.VersionMeta{Label: label}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	def := func(constraint string) string {
		return writeFile(t, dir, "main"+constraint+".json", `{"Imports": {"r": "registry://review@`+constraint+`"}, "StartAt": "S",
  "States": {"S": {"Type": "Include", "Template": "r", "ResultPath": "$.got", "End": true}}}`)
	}
	code, out, errOut := invoke(t, "", "run", def("^1.0.0"), "--db", db, "--input", `{}`)
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got["got"] != "1.3.0" {
		t.Errorf("run = %d %s %s, want the output of review 1.3.0", code, out, errOut)
	}
	code, out, _ = invoke(t, "", "validate", def("^3.0.0"), "--db", db)
	if code != exitFailed || !strings.Contains(out, "/States/S/Template (S)") {
		t.Errorf("validate with ^3.0.0 = %d %s, want a problem at /States/S/Template", code, out)
	}
}
