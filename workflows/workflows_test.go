package workflows

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/states"
)

func readJSON(t *testing.T, file string) any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonpath.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// TestExamples parses and runs every example with its mock file and checks
// the output. Retry delays run on the synctest clock.
func TestExamples(t *testing.T) {
	dirs, err := filepath.Glob("*/workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 3 {
		t.Fatalf("found %d example workflows, want at least 3", len(dirs))
	}
	for _, def := range dirs {
		dir := filepath.Dir(def)
		t.Run(dir, func(t *testing.T) {
			data, err := os.ReadFile(def)
			if err != nil {
				t.Fatal(err)
			}
			m, err := states.Parse(data)
			if err != nil {
				t.Fatalf("parse %s: %v", def, err)
			}
			mockData, err := os.ReadFile(filepath.Join(dir, "mock.json"))
			if err != nil {
				t.Fatal(err)
			}
			mocks, err := agents.ParseMocks(mockData)
			if err != nil {
				t.Fatal(err)
			}
			reg := agents.NewRegistry()
			if err := mocks.Register(reg); err != nil {
				t.Fatal(err)
			}
			input := readJSON(t, filepath.Join(dir, "input.json"))
			want := readJSON(t, filepath.Join(dir, "output.json"))
			synctest.Test(t, func(t *testing.T) {
				x := engine.New(engine.Config{Agents: reg})
				res, err := x.Run(context.Background(), m, input, engine.StartOptions{MachineName: dir})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != engine.StatusSucceeded {
					t.Fatalf("status %s (%s: %s), want SUCCEEDED", res.Status, res.Error, res.Cause)
				}
				if !jsonpath.Equal(res.Output, want) {
					got, _ := jsonpath.Marshal(res.Output)
					w, _ := jsonpath.Marshal(want)
					t.Errorf("output = %s, want %s", got, w)
				}
			})
		})
	}
}
