package states

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .errors files of testdata/invalid")

// TestValidDefinitions parses every definition of testdata/valid.
func TestValidDefinitions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid definitions found (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse(%s) failed:\n%v", file, err)
			}
			if m == nil || len(m.States) == 0 {
				t.Errorf("Parse(%s) = %v, want a machine with states", file, m)
			}
		})
	}
}

// TestInvalidDefinitions parses every definition of testdata/invalid and
// compares the problems reported, one per line, with the golden file
// beside it (rewritten by -update).
func TestInvalidDefinitions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid definitions found (%v)", err)
	}
	for _, file := range files {
		golden := strings.TrimSuffix(file, ".json") + ".errors"
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(data)
			if err == nil {
				t.Fatalf("Parse(%s) = %v, nil; want an error", file, m)
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse(%s) error = %T %v, want an ErrorList", file, err, err)
			}
			got := list.Error() + "\n"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./states -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Parse(%s) errors:\n%s\nwant (%s):\n%s", file, got, golden, want)
			}
		})
	}
}

// TestGoldenFilesHaveDefinitions catches a golden file left behind when its
// definition was renamed or removed.
func TestGoldenFilesHaveDefinitions(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.errors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		def := strings.TrimSuffix(g, ".errors") + ".json"
		if _, err := os.Stat(def); err != nil {
			t.Errorf("golden file %s has no definition: %v", g, err)
		}
	}
}
