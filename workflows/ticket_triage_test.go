package workflows

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// exampleFiles reads an example's template files, relative to its
// directory; it has no registry of templates.
type exampleFiles string

func (dir exampleFiles) Open(from, p string) ([]byte, string, error) {
	rel := path.Join(path.Dir(from), p)
	data, err := os.ReadFile(filepath.Join(string(dir), filepath.FromSlash(rel)))
	return data, rel, err
}

func (exampleFiles) Registry(context.Context, string, string) ([]byte, string, error) {
	return nil, "", errors.New("the example imports no registry template")
}

// exampleRegistry is the registry the example's child workflows are in.
type exampleRegistry map[string][]byte

func (r exampleRegistry) ResolveWorkflow(_ context.Context, name, _ string) ([]byte, string, error) {
	def, ok := r[name]
	if !ok {
		return nil, "", engine.ErrNotFound
	}
	return def, name + "@1", nil
}

// TestChildExecutionExample runs workflows/ticket-triage as its README
// does: the triage workflow includes the shared review template (expanded
// when it is parsed) and calls the registered research workflow as a child
// execution; the output is output.json, and the child is linked to it.
func TestChildExecutionExample(t *testing.T) {
	const dir = "ticket-triage"
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(dir, "triage.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := states.ParseWith(ctx, data, states.ParseOptions{Imports: exampleFiles(dir)})
	if err != nil {
		t.Fatal(err)
	}
	research, err := os.ReadFile(filepath.Join(dir, "research.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched} {
		t.Run(string(mode), func(t *testing.T) {
			st := store.NewMemory()
			x := engine.New(engine.Config{Agents: mockRegistry(t, filepath.Join(dir, "mock.json")), Store: st, Durability: mode,
				Workflows: exampleRegistry{"research": research}})
			res, err := x.Run(ctx, m, readJSON(t, filepath.Join(dir, "input.json")), engine.StartOptions{ID: "t1", MachineName: "triage"})
			if err != nil {
				t.Fatal(err)
			}
			wantResult(t, res, readJSON(t, filepath.Join(dir, "output.json")))
			child, err := st.Load(ctx, engine.ChildWorkflowID("t1", "Research#1", 0))
			if err != nil || child.Parent != "t1" || child.Registry != "research@1" || child.Status != engine.StatusSucceeded {
				t.Errorf("the research child: %+v, %v", child, err)
			}
		})
	}
}
