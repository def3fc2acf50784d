package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bucketsDef reads rows.csv of Bucket into a Distributed Map whose
// children pass their rows on, and writes the results to Out (no
// ResultWriter when Out is "").
func bucketsDef(bucket, out string) string {
	writer := ""
	if out != "" {
		writer = `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"` + out + `","Prefix":"results"}},`
	}
	return `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"rows",
		"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{"Bucket":"` + bucket + `","Key":"rows.csv"}},` + writer + `
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
}

// TestRunFileBuckets: run refuses a workflow naming local folders as
// buckets (exit 2, naming the state and the Bucket's pointer, before any
// execution exists) unless --allow-file-buckets is given, with a
// database or without; an agents file's Buckets needs no flag.
func TestRunFileBuckets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.Mkdir(in, 0o755)
	os.Mkdir(out, 0o755)
	writeFile(t, in, "rows.csv", "id\nr0\nr1\n")
	local := writeFile(t, dir, "local.json", bucketsDef("file://"+in, "file://"+out))
	named := writeFile(t, dir, "named.json", bucketsDef("in", "out"))
	text, _ := json.Marshal(map[string]any{"Buckets": map[string]any{"in": map[string]any{"Dir": in}, "out": map[string]any{"Dir": out}}})
	agentsFile := writeFile(t, dir, "agents.json", string(text))
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string   // in stdout when it exits 0
		stderr []string // in stderr when it does not
	}{
		{"refused", []string{"run", local, "--db", filepath.Join(dir, "a.db")}, exitUsage, "", []string{
			"state M: /States/M/ItemReader/Parameters/Bucket", "state M: /States/M/ResultWriter/Parameters/Bucket", "--allow-file-buckets", "Buckets"}},
		{"refused in memory", []string{"run", local, "--db", ":memory:"}, exitUsage, "", []string{"/States/M/ItemReader/Parameters/Bucket", "--allow-file-buckets"}},
		{"allowed", []string{"run", local, "--allow-file-buckets", "--db", filepath.Join(dir, "b.db"), "--name", "b"}, 0, `"Bucket": "file://` + out + `"`, nil},
		{"allowed in memory", []string{"run", local, "--allow-file-buckets", "--db", ":memory:"}, 0, `"ResultWriterDetails"`, nil},
		{"named", []string{"run", named, "--agents", agentsFile, "--db", filepath.Join(dir, "c.db"), "--name", "c"}, 0, `"Bucket": "out"`, nil},
		{"item limit", []string{"run", named, "--agents", agentsFile, "--max-item-bytes", "2", "--db", ":memory:"}, exitFailed, `"States.ItemReaderFailed"`, nil},
		{"bad item limit", []string{"run", named, "--agents", agentsFile, "--max-item-bytes", "0", "--db", ":memory:"}, exitUsage, "", []string{"--max-item-bytes must be a positive number"}},
		{"bad listing limit", []string{"run", named, "--agents", agentsFile, "--max-listed-objects", "-1", "--db", ":memory:"}, exitUsage, "", []string{"--max-listed-objects must be a positive number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout %s, want it to hold %s", stdout, tc.stdout)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q, want it to say %q", stderr, want)
				}
			}
			if tc.code == exitUsage && strings.Contains(stderr, "execution: ") {
				t.Errorf("a refused run made an execution: %s", stderr)
			}
		})
	}
	// The runs allowed wrote their results in the folder.
	if _, err := os.Stat(filepath.Join(out, "results", "M#1.0", "manifest.json")); err != nil {
		t.Errorf("no manifest: %v", err)
	}
}
