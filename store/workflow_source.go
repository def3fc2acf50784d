package store

import (
	"context"
	"strconv"

	"github.com/aslrun/aslrun/engine"
)

// Resolver is a registry that resolves workflow references (every Store).
type Resolver interface {
	ResolveWorkflow(ctx context.Context, name, ref string) (WorkflowVersion, error)
}

// WorkflowSource returns the engine.WorkflowSource of a store's registry:
// the workflows Workflow states and states:startExecution Tasks run are
// its registered versions, named "name@N".
func WorkflowSource(r Resolver) engine.WorkflowSource { return registrySource{r} }

type registrySource struct{ r Resolver }

func (s registrySource) ResolveWorkflow(ctx context.Context, name, ref string) ([]byte, string, error) {
	v, err := s.r.ResolveWorkflow(ctx, name, ref)
	if err != nil {
		return nil, "", err
	}
	return v.Definition, v.Name + "@" + strconv.Itoa(v.Version), nil
}
