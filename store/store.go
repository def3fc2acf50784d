package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// Store is what the command line needs of a store: the engine's
// interfaces plus listing, history, definitions and garbage collection.
// Bolt and Memory implement it; both pass storetest.Run.
//
// Implementations are safe for concurrent use. Reads see only committed
// data: a commit is visible entirely or not at all.
type Store interface {
	engine.Store
	engine.Checkpoints
	engine.Scheduler
	engine.MemoryStore

	// List returns summaries of the executions, newest (by StartedAt)
	// first and, among those started at the same nanosecond, by ID
	// descending; filtered, limited and continued by opts. An opts.After
	// that names no execution is an error wrapping engine.ErrNotFound.
	List(ctx context.Context, opts ListOptions) ([]Summary, error)
	// History returns an execution's history in order, with DocHash,
	// PrevHash, Hash and Superseded filled in and Document nil (documents
	// are not kept, only their hashes); ErrNotFound when there is no such
	// execution.
	History(ctx context.Context, id string) ([]engine.Event, error)
	// HistoryRange returns the events of an execution's history after
	// position after (events are numbered from 1; 0 reads from the
	// start), at most limit of them (0 or less: all that follow), as
	// History returns them, and the number of events of the whole
	// history; ErrNotFound when there is no such execution. It reads the
	// events it returns and the documents they show, not the whole
	// history, and verifies nothing (VerifyHistory does). An after past
	// the end returns no events.
	HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error)
	// VerifyHistory recomputes every event's hash from what is stored and
	// checks the chain; it returns an error wrapping ErrTampered that
	// names the first event that does not verify. It also checks that the
	// head agrees with the chain (its last hash and event count, and the
	// event that ended the execution), and Bolt that the head and the
	// checkpoint records are as written (an *IntegrityError).
	VerifyHistory(ctx context.Context, id string) error
	// Definition returns the definition text stored under its hash;
	// ErrNotFound when there is none.
	Definition(ctx context.Context, hash string) ([]byte, error)
	// RegisterWorkflow stores definition (compact JSON, validated by the
	// caller) as the next version of the workflow name, with hash its
	// canonical hash (jsonvalue.CanonicalHash of the decoded definition,
	// as engine.Execution.DefinitionHash), and returns that version. When
	// hash is the latest version's, it returns that version unchanged. The
	// definition text is kept once per hash, with the executions'
	// definitions (Definition). A name that is not 1 to 128 bytes of
	// ASCII letters, digits, '-', '_' and '.' is an error wrapping
	// ErrInvalidName; an empty definition or hash is an error too. meta
	// is kept in the version's record: a label that is not semver, or a
	// lock entry that is not name@N, is an error wrapping ErrInvalidRef,
	// and a label another version of name has one wrapping
	// engine.ErrExists. The latest version is returned unchanged only
	// when meta's label and lock are its own or left out.
	RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta VersionMeta) (WorkflowVersion, error)
	// Workflow returns version v of the workflow name (v 0: the latest),
	// with its definition; an error wrapping engine.ErrNotFound when there is
	// none.
	Workflow(ctx context.Context, name string, v int) (WorkflowVersion, error)
	// Workflows returns the latest version of every workflow, by name,
	// without definitions.
	Workflows(ctx context.Context) ([]WorkflowVersion, error)
	// WorkflowVersions returns every version of the workflow name, oldest
	// first, without definitions; an error wrapping engine.ErrNotFound when
	// there is no such workflow.
	WorkflowVersions(ctx context.Context, name string) ([]WorkflowVersion, error)
	// ResolveWorkflow returns the version of the workflow name that ref
	// names (ParseRef: "" or latest, a number, an alias, a semver label or
	// constraint), with its definition. A ref that does not parse is an
	// error wrapping ErrInvalidRef; one that names no version an error
	// wrapping engine.ErrNotFound that names the workflow, the ref and
	// what exists.
	ResolveWorkflow(ctx context.Context, name, ref string) (WorkflowVersion, error)
	// SetWorkflowAlias points alias (CheckAlias, else an error wrapping
	// ErrInvalidRef) of the workflow name at an existing version (else an
	// error wrapping engine.ErrNotFound), making or moving it. Executions
	// already started keep the version they started on.
	SetWorkflowAlias(ctx context.Context, name, alias string, version int) (WorkflowAlias, error)
	// DeleteWorkflowAlias removes an alias; an error wrapping
	// engine.ErrNotFound when it is not set.
	DeleteWorkflowAlias(ctx context.Context, name, alias string) error
	// WorkflowAliases returns the aliases of the workflow name, by alias;
	// an error wrapping engine.ErrNotFound when there is no such workflow.
	WorkflowAliases(ctx context.Context, name string) ([]WorkflowAlias, error)
	// GC removes the checkpoints expired at now, except the newest
	// checkpoint of an execution still RUNNING or WAITING (it may be
	// rolled back to), and the snapshot blobs no checkpoint references any
	// more, and the agent memory entries expired at now.
	GC(ctx context.Context, now time.Time) (GCReport, error)
	// Close releases the store; calls after Close fail with ErrClosed.
	Close() error
}

// ListOptions selects executions for List. The zero value lists them all.
//
// Start times are compared to the nanosecond, as Unix time: times before
// 1970 (and the zero time) count as 1970-01-01 00:00:00 UTC, for the
// order as for the bounds.
type ListOptions struct {
	// Status keeps only executions with this status ("" keeps all).
	Status engine.Status
	// MachineName keeps only executions of this machine ("" keeps all).
	MachineName string
	// StartedAfter keeps only executions started after it, and
	// StartedBefore only those started before it (both exclusive; the
	// zero time is no bound).
	StartedAfter, StartedBefore time.Time
	// After continues a listing: it is the ID of the last summary of the
	// previous page, and List returns the executions that come after it
	// in the order of List ("": from the start). The cursor is exact:
	// executions started or changed between pages are neither repeated
	// nor skipped (executions started after the first page was read come
	// before the cursor, and so are not listed by later pages).
	After string
	// Limit is the most summaries returned (0: no limit).
	Limit int
}

// Summary is what List says about one execution.
type Summary struct {
	ID          string
	MachineName string
	// DefinitionHash is the hash of the definition the execution runs
	// (engine.Execution.DefinitionHash).
	DefinitionHash string
	Status         engine.Status
	StartedAt      time.Time
	StoppedAt      time.Time
	Error          string
	Parent         string
	WaitingFor     string
	WakeAt         time.Time
}

// WorkflowVersion is one registered version of a workflow.
type WorkflowVersion struct {
	Name string
	// Version numbers the versions 1, 2, … in the order they were
	// registered.
	Version int
	// Hash is the definition's canonical hash, as
	// engine.Execution.DefinitionHash.
	Hash string
	// CreatedAt is when the version was registered, in UTC.
	CreatedAt time.Time
	// Definition is the definition's text, compact JSON; nil in listings.
	Definition []byte
	// Label is the version's semver label, "" for none (VersionMeta).
	Label string
	// Lock maps the definition's imports to the versions they resolved
	// to, "name@N"; nil for none (VersionMeta).
	Lock map[string]string
}

// maxWorkflowName bounds workflow names.
const maxWorkflowName = 128

// CheckWorkflowName reports whether name can name a workflow (or an
// inline definition started through the API): 1 to 128 bytes of ASCII
// letters, digits, '-', '_' and '.'. Its error wraps ErrInvalidName.
func CheckWorkflowName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty workflow name: %w", ErrInvalidName)
	case len(name) > maxWorkflowName:
		return fmt.Errorf("workflow name %.40q… is longer than %d bytes: %w", name, maxWorkflowName, ErrInvalidName)
	}
	for i := range len(name) {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return fmt.Errorf("workflow name %q: byte %d is %q, want a letter, a digit, '-', '_' or '.': %w", name, i, c, ErrInvalidName)
		}
	}
	return nil
}

// GCReport counts what GC removed.
type GCReport struct {
	// Checkpoints is the number of expired checkpoints removed and Blobs
	// the number of snapshot blobs no checkpoint referenced any more.
	Checkpoints int
	Blobs       int
	// Memory is the number of expired agent memory entries removed.
	Memory int
}

// Errors of the stores, besides engine.ErrNotFound and engine.ErrExists.
var (
	// ErrTampered reports a history that does not verify.
	ErrTampered = errors.New("history does not verify")
	// ErrLocked reports a database file held by another process.
	ErrLocked = errors.New("database is locked")
	// ErrNotOurs reports a file that is not an aslrun database, or one of
	// a newer format than this program reads.
	ErrNotOurs = errors.New("not an aslrun database")
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("store is closed")
	// ErrDatabaseCorrupt reports a database file whose pages are damaged:
	// bbolt could not read them. The error names the file and what went
	// wrong; what was committed and is still readable stays readable.
	ErrDatabaseCorrupt = errors.New("database is corrupt")
	// ErrInvalidName reports a workflow name RegisterWorkflow refuses.
	ErrInvalidName = errors.New("invalid workflow name")
)

// maxKeyLen bounds execution ids and checkpoint names, which become parts
// of bbolt keys (at most 32 KiB).
const maxKeyLen = 1024

// checkName reports whether s can be an execution id or a checkpoint name:
// not empty, not too long, and without NUL (the key separator).
func checkName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s", what)
	case len(s) > maxKeyLen:
		return fmt.Errorf("%s %.40q… is longer than %d bytes", what, s, maxKeyLen)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s %q contains a NUL byte", what, s)
	}
	return nil
}

// live reports whether an execution with status s may still run, so that
// its newest checkpoint must survive GC.
func live(s engine.Status) bool {
	return s == engine.StatusRunning || s == engine.StatusWaiting
}
