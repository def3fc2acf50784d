package server

import (
	"context"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Store is what the server reads of a store, beside what its Executor
// writes and loads through the engine: executions and their history,
// checkpoints, agent memory and the workflow registry. store.Bolt,
// store.Memory and the PostgreSQL store satisfy it. Implementations must
// be safe for concurrent use, and reads see only committed data.
type Store interface {
	Executions
	Histories
	engine.Checkpoints
	MemoryLister
	Registry
	Workflows
}

// Executions reads executions as last committed.
type Executions interface {
	// Load returns an execution; an error wrapping engine.ErrNotFound when
	// there is none.
	Load(ctx context.Context, id string) (*engine.Execution, error)
	// List returns summaries of executions, newest first (store.Store's
	// List).
	List(ctx context.Context, opts store.ListOptions) ([]store.Summary, error)
}

// Histories reads and verifies executions' histories.
type Histories interface {
	// History returns an execution's events in order, without documents.
	History(ctx context.Context, id string) ([]engine.Event, error)
	// HistoryRange returns the events after position after (from 1), at
	// most limit of them (0: all), and the length of the whole history
	// (store.Store's HistoryRange), reading only what it returns.
	HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error)
	// VerifyHistory checks an execution's hash chain and head; an error
	// wrapping store.ErrTampered names what does not verify.
	VerifyHistory(ctx context.Context, id string) error
}

// MemoryLister lists a namespace of agent memory.
type MemoryLister interface {
	// ListMemory returns the entries of namespace not expired at now.
	ListMemory(ctx context.Context, namespace string, now time.Time) ([]*engine.MemoryEntry, error)
}

// Registry registers workflow versions and moves their aliases.
type Registry interface {
	// RegisterWorkflow stores definition as the next version of name
	// (store.Store's RegisterWorkflow).
	RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta store.VersionMeta) (store.WorkflowVersion, error)
	// SetWorkflowAlias points an alias of name at a version, and
	// DeleteWorkflowAlias removes it (store.Store's).
	SetWorkflowAlias(ctx context.Context, name, alias string, version int) (store.WorkflowAlias, error)
	DeleteWorkflowAlias(ctx context.Context, name, alias string) error
}

// Workflows reads the registered workflows.
type Workflows interface {
	// Workflow returns version v of name (0: the latest), with its
	// definition.
	Workflow(ctx context.Context, name string, v int) (store.WorkflowVersion, error)
	// WorkflowVersions returns every version of name, oldest first.
	WorkflowVersions(ctx context.Context, name string) ([]store.WorkflowVersion, error)
	// Workflows returns the latest version of every workflow.
	Workflows(ctx context.Context) ([]store.WorkflowVersion, error)
	// ResolveWorkflow returns the version of name a reference names
	// (store.ParseRef), with its definition.
	ResolveWorkflow(ctx context.Context, name, ref string) (store.WorkflowVersion, error)
	// WorkflowAliases returns the aliases of name, by alias.
	WorkflowAliases(ctx context.Context, name string) ([]store.WorkflowAlias, error)
}
