package itemio

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// child is a child execution as the writer is handed it.
type child struct {
	status string
	record string
	output string
}

// resultChildren are the children of the golden map run: batches whose
// outputs are arrays, an object and an empty array, a failure and one that
// never started.
var resultChildren = []child{
	{Succeeded, `{"ExecutionArn":"arn:c0","Input":"{\"Items\":[1,2]}","Name":"run:0","Output":"[{\"id\":\"r0\"},{\"id\":\"r1\"}]","Status":"SUCCEEDED"}`, `[{"id":"r0"},{"id":"r1"}]`},
	{Failed, `{"Cause":"row 2","Error":"Batch.Bad","ExecutionArn":"arn:c1","Input":"{\"Items\":[3]}","Name":"run:1","Status":"FAILED"}`, ``},
	{Succeeded, `{"ExecutionArn":"arn:c2","Input":"{\"Items\":[4]}","Name":"run:2","Output":"{\"ids\":[\"r4\"]}","Status":"SUCCEEDED"}`, `{"ids":["r4"]}`},
	{Succeeded, `{"ExecutionArn":"arn:c3","Input":"{\"Items\":[5]}","Name":"run:3","Output":"[]","Status":"SUCCEEDED"}`, `[]`},
	{Pending, `{"ExecutionArn":"arn:c4","Name":"run:4","Status":"PENDING"}`, ``},
}

// TestResultsGolden writes the golden map run with each WriterConfig and
// compares every file written (manifest included) with
// testdata/results/<case>.golden (go test ./itemio -update rewrites them).
func TestResultsGolden(t *testing.T) {
	for _, out := range []string{JSON, JSONL} {
		for _, tr := range []string{None, Compact, Flatten} {
			name := strings.ToLower(tr + "-" + out)
			t.Run(name, func(t *testing.T) {
				root := t.TempDir()
				w := NewResults(Dir(root), "results", "jobs/Rows#1.0", WriterConfig{OutputType: out, Transformation: tr})
				for _, c := range resultChildren {
					rec, err := jsonvalue.Decode([]byte(c.record))
					if err != nil {
						t.Fatal(err)
					}
					var output any
					if c.output != "" {
						if output, err = jsonvalue.Decode([]byte(c.output)); err != nil {
							t.Fatal(err)
						}
					}
					if err := w.Add(context.Background(), c.status, rec.(map[string]any), output); err != nil {
						t.Fatal(err)
					}
				}
				key, err := w.Close(context.Background(), "arn:map-run")
				if err != nil {
					t.Fatal(err)
				}
				if key != "jobs/Rows#1.0/manifest.json" {
					t.Errorf("manifest key %q", key)
				}
				got := dirText(t, filepath.Join(root, "jobs", "Rows#1.0"))
				golden := filepath.Join("testdata", "results", name+".golden")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("files written:\n%s\nwant:\n%s", got, want)
				}
			})
		}
	}
}

// dirText is every file of dir, by name, each after a "== name" line.
func dirText(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		text, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("== " + n + "\n")
		b.Write(text)
		if len(text) > 0 && text[len(text)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestEntries checks each transformation of one child, succeeded or not.
func TestEntries(t *testing.T) {
	rec := map[string]any{"Name": "c"}
	cases := []struct {
		tr, status string
		output     any
		want       string
	}{
		{"", Succeeded, []any{"a"}, `[{"Name":"c"}]`},
		{None, Succeeded, []any{"a"}, `[{"Name":"c"}]`},
		{Compact, Succeeded, []any{"a", "b"}, `[["a","b"]]`},
		{Flatten, Succeeded, []any{"a", "b"}, `["a","b"]`},
		{Flatten, Succeeded, []any{}, `[]`},
		{Flatten, Succeeded, map[string]any{"k": "v"}, `[{"k":"v"}]`},
		{Compact, Succeeded, nil, `[null]`},
		{Compact, Failed, nil, `[{"Name":"c"}]`},
		{Flatten, Pending, nil, `[{"Name":"c"}]`},
	}
	for _, c := range cases {
		got, err := jsonvalue.Marshal(Entries(c.tr, c.status, rec, c.output))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("Entries(%q, %s, %v) = %s, want %s", c.tr, c.status, c.output, got, c.want)
		}
	}
}
