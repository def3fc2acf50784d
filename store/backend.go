package store

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// What a store backend other than Bolt and Memory needs of this package:
// the records it keeps, encoded and decoded here so that every backend
// writes the same bytes, hashes the same events and chains them the same
// way (a history copied from one backend to another verifies on both).
// A backend stores the records it is given as opaque values, indexes
// them by the fields it is given beside them, and hands them back to be
// decoded. Memory applies its commits with the same code.

// Records encodes and decodes a backend's records. It keeps what a
// backend's commits share: the snapshot codecs and, per execution, the
// documents its history already holds (so that a commit's history record
// does not repeat them). A Records is safe for concurrent use; a backend
// has one.
type Records struct {
	codec      Codec
	codecs     Codecs
	migrations *Migrations
	docs       docCache
}

// NewRecords returns the Records of a backend that compresses checkpoint
// snapshots with codec ("" for CodecZstd) and migrates old snapshots
// with m (nil: none registered).
func NewRecords(codec Codec, m *Migrations) (*Records, error) {
	c, err := ParseCodec(string(codec))
	if err != nil {
		return nil, err
	}
	return &Records{codec: c, migrations: m}, nil
}

// ScopeRecord is an encoded scope of an execution under its key; a nil
// Value deletes the key.
type ScopeRecord struct {
	Key   string
	Value []byte
}

// NewExecution is an execution encoded for Create: its fixed record
// (Spec), its head, its scopes and the definition to store under
// DefinitionHash (nil when the execution carries none), with the fields a
// backend indexes.
type NewExecution struct {
	ID             string
	DefinitionHash string
	Definition     []byte
	Spec, Head     []byte
	Scopes         []ScopeRecord
	Summary        Summary
}

// PrepareCreate encodes e for Create.
func PrepareCreate(e *engine.Execution) (*NewExecution, error) {
	c, err := newExecution(e)
	if err != nil {
		return nil, err
	}
	n := &NewExecution{ID: c.id, DefinitionHash: c.definitionHash, Spec: c.exec, Head: encodeHead(&c.head), Summary: c.summary}
	if c.definitionHash != "" && len(c.definition) > 0 {
		n.Definition = c.definition
	}
	n.Summary.DefinitionHash = c.definitionHash
	n.Summary.WakeAt, n.Summary.WaitingFor, n.Summary.Error = waitingAt(&c.head), c.head.WaitingFor, c.head.Error
	n.Summary.StoppedAt = c.head.StoppedAt
	for _, w := range c.scopes {
		if w.value != nil {
			n.Scopes = append(n.Scopes, ScopeRecord{Key: w.key, Value: w.value})
		}
	}
	return n, nil
}

// PreparedCommit is an engine.Commit encoded outside any transaction,
// ready to be applied to the execution's head (Apply). It keeps nothing
// of the Commit.
type PreparedCommit struct{ p *prepared }

// PrepareCommit encodes c. A backend whose view of the execution's
// history may be stale (another process committed to it) calls Forget
// first, so that the commit's history record carries every document it
// refers to.
func (r *Records) PrepareCommit(c *engine.Commit) (*PreparedCommit, error) {
	p, err := prepareCommit(c, &r.codecs, r.codec, &r.docs)
	if err != nil {
		return nil, err
	}
	return &PreparedCommit{p: p}, nil
}

// Execution is the id of the commit's execution.
func (c *PreparedCommit) Execution() string { return c.p.id }

// RollsBack reports whether the commit rolls back: Apply needs the
// execution's history records, to mark the events it supersedes.
func (c *PreparedCommit) RollsBack() bool { return c.p.rollback != nil }

// Committed tells r that c, applied, was committed: the documents of its
// history record are the execution's.
func (r *Records) Committed(c *PreparedCommit) { c.p.committed(&r.docs) }

// Forget drops what r knows of an execution's history.
func (r *Records) Forget(id string) { r.docs.forget(id) }

// AppliedCommit is what a commit writes, applied to the execution's head:
// the new head and the fields a backend indexes, then each record to
// write.
type AppliedCommit struct {
	Head       []byte
	Status     engine.Status
	StoppedAt  time.Time
	WakeAt     time.Time // when a WAITING execution is due; zero otherwise
	WaitingFor string
	Error      string
	// Events is the number of events of the history after the commit,
	// LastHash the last one's Hash (hex).
	Events   int64
	LastHash string
	// DropHistory says that the commit drops the execution's history
	// (engine.Commit.DropHistory): the backend deletes its history
	// records, its checkpoints and the snapshots only they referenced
	// before it writes the rest. History and Checkpoint are then nil, and
	// the head's history is empty (Events 0, LastHash "").
	DropHistory bool
	// History is the commit's history record (nil when it has no event),
	// whose first event is at position FirstEvent of the history (from 1).
	History    []byte
	FirstEvent int64
	// Superseded holds, by their index among the records given to Apply,
	// the history records a rollback changed, as they are to be stored.
	Superseded map[int][]byte
	// DropScopes are prefixes of scope keys to delete before Scopes are
	// written.
	DropScopes []string
	Scopes     []ScopeRecord
	Checkpoint *CheckpointWrite
	Memory     []MemoryWrite
	// MemoryRead holds the agent memory records the commit's merges read
	// (nil for an absent one): the commit is valid only while they are
	// unchanged.
	MemoryRead []MemoryWrite
	// Namespaces are memory namespaces the execution now uses.
	Namespaces []string
	// Outbox are the commit's outbox entries (CheckOutbox), to write
	// pending and due at their CreatedAt; an id already stored fails the
	// commit (engine.ErrExists).
	Outbox []engine.OutboxEntry
}

// CheckpointWrite is a checkpoint to write, replacing the execution's of
// the same name: its record, its snapshot under the snapshot's key (Blob,
// hex), the canonical hash of its document, and the position of the
// history event that records the record's hash (0: none).
type CheckpointWrite struct {
	Name                 string
	Record               []byte
	Blob                 string
	Snapshot             []byte
	DocHash              string
	CreatedAt, ExpiresAt time.Time
	Event                int64
}

// MemoryWrite is an agent memory record to write (Record nil: delete the
// key), with the fields a backend indexes.
type MemoryWrite struct {
	Namespace, Key       string
	Record               []byte
	UpdatedAt, ExpiresAt time.Time
	Execution            string
}

// Apply applies c to head, the execution's head record as stored, and
// returns what to write. history is the execution's history records in
// order, needed only when c RollsBack; memory returns the stored agent
// memory record of a namespace and key (nil when none). Apply may be
// called again, on another head, when the first could not be written.
func (c *PreparedCommit) Apply(head []byte, history [][]byte, memory func(namespace, key string) ([]byte, error)) (*AppliedCommit, error) {
	var readErr error
	var read []MemoryWrite
	get := func(k []byte) []byte {
		ns, key, _ := bytes.Cut(k, []byte{0})
		v, err := memory(string(ns), string(key))
		if err != nil && readErr == nil {
			readErr = err
		}
		read = append(read, MemoryWrite{Namespace: string(ns), Key: string(key), Record: v})
		return v
	}
	a, err := c.p.apply(head, history, get)
	if err == nil {
		err = readErr
	}
	if err != nil {
		return nil, err
	}
	a.MemoryRead = read
	return a, nil
}

// apply is Apply, memory read by get as applyMemoryWrites does.
func (p *prepared) apply(head []byte, history [][]byte, get func([]byte) []byte) (*AppliedCommit, error) {
	h, err := decodeHead(p.id, head)
	if err != nil {
		return nil, err
	}
	p.applyHead(h)
	a := &AppliedCommit{DropHistory: p.dropHistory, FirstEvent: h.Events + 1, DropScopes: slices.Clone(p.drop), Namespaces: p.namespaces, Outbox: p.outboxed}
	if p.rollback != nil {
		n := 0
		for i, rec := range history {
			r, err := parseHistoryRecord(rec)
			if err != nil {
				return nil, err
			}
			var changed historyRecord
			var value []byte
			for j, v := range r.events {
				n++
				ok, err := supersedes(p.rollback, v)
				if err != nil {
					return nil, fmt.Errorf("history event %d: %w", n, err)
				}
				if !ok {
					continue
				}
				if value == nil {
					value = bytes.Clone(rec)
					changed, _ = parseHistoryRecord(value) // it parsed above
				}
				changed.events[j][1] |= eventSuperseded
			}
			if value != nil {
				if a.Superseded == nil {
					a.Superseded = make(map[int][]byte)
				}
				a.Superseded[i] = value
			}
		}
	}
	if err := p.history.seal(h); err != nil {
		return nil, err
	}
	if len(p.history.values) > 0 {
		a.History = p.history.record
	}
	if len(p.memory) > 0 {
		recs, err := applyMemoryWrites(p.memory, get)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			ns, key, _ := strings.Cut(r.key, "\x00")
			a.Memory = append(a.Memory, MemoryWrite{Namespace: ns, Key: key, Record: r.data, UpdatedAt: r.updatedAt, ExpiresAt: r.expiresAt, Execution: r.execution})
		}
	}
	for _, w := range p.scopes {
		a.Scopes = append(a.Scopes, ScopeRecord{Key: w.key, Value: w.value})
	}
	if cp := p.checkpoint; cp != nil {
		_, r, err := decodeCheckpoint(p.id, cp.name, cp.record, false)
		if err != nil {
			return nil, err
		}
		a.Checkpoint = &CheckpointWrite{Name: cp.name, Record: cp.record, Blob: cp.blob, Snapshot: cp.data, DocHash: r.DocHash, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
		if cp.event >= 0 && a.History != nil {
			a.Checkpoint.Event = a.FirstEvent + int64(cp.event)
		}
	}
	a.Head = encodeHead(h)
	a.Status, a.StoppedAt, a.WakeAt, a.WaitingFor, a.Error = h.Status, h.StoppedAt, waitingAt(h), h.WaitingFor, h.Error
	a.Events, a.LastHash = h.Events, h.LastHash
	return a, nil
}

// LoadExecution assembles an execution from the records a backend keeps:
// its Spec and Head as PrepareCreate and Apply gave them, its definition
// (nil when none), its scopes and the memory namespaces its commits named.
func LoadExecution(id string, spec, head, definition []byte, scopes []ScopeRecord, namespaces []string) (*engine.Execution, error) {
	rec, err := decodeExec(id, spec)
	if err != nil {
		return nil, err
	}
	h, err := decodeHead(id, head)
	if err != nil {
		return nil, err
	}
	ss := make(map[string]*engine.Scope, len(scopes))
	for _, s := range scopes {
		if ss[s.Key], err = decodeScope(s.Value); err != nil {
			return nil, fmt.Errorf("execution %s: scope %q: %w", id, s.Key, err)
		}
	}
	e, err := execution(id, rec, h, definition, ss)
	if err != nil {
		return nil, err
	}
	if len(namespaces) > 0 {
		e.Progress.Namespaces = slices.Sorted(slices.Values(namespaces))
	}
	return e, nil
}

// ExecutionSummary is List's summary of an execution from its Spec and
// Head records.
func ExecutionSummary(id string, spec, head []byte) (Summary, error) {
	rec, err := decodeExec(id, spec)
	if err != nil {
		return Summary{}, err
	}
	h, err := decodeHead(id, head)
	if err != nil {
		return Summary{}, err
	}
	return summary(id, rec, h), nil
}

// ReadHistory decodes an execution's history records, in order, into its
// events, as Store.History returns them.
func ReadHistory(id string, records [][]byte) ([]engine.Event, error) {
	parsed, err := memRecords(records)
	if err != nil {
		return nil, fmt.Errorf("execution %s: %w", id, err)
	}
	return readHistory(id, parsed)
}

// VerifyHistory checks an execution's history records against each
// other and its head, as Store.VerifyHistory does: an error wrapping
// ErrTampered names the first event that does not verify.
func VerifyHistory(id string, head []byte, records [][]byte) error {
	h, err := decodeHead(id, head)
	if err != nil {
		return err
	}
	parsed := make([]historyRecord, len(records))
	for i, v := range records {
		if parsed[i], err = parseHistoryRecord(v); err != nil {
			return fmt.Errorf("execution %s: %w", id, err)
		}
	}
	return verifyHistory(id, parsed, h)
}

// CheckpointInfo decodes a checkpoint record, without its document (as
// ListCheckpoints returns it).
func CheckpointInfo(id, name string, record []byte) (*engine.Checkpoint, error) {
	cp, _, err := decodeCheckpoint(id, name, record, false)
	return cp, err
}

// LoadCheckpoint decodes a checkpoint record and its snapshot (found
// reports whether the backend had the snapshot): a snapshot that is
// missing or does not verify is an error wrapping ErrCorrupt.
func (r *Records) LoadCheckpoint(id, name string, record, snapshot []byte, found bool) (*engine.Checkpoint, error) {
	return loadCheckpoint(id, name, record, snapshot, found, &r.codecs, r.migrations)
}

// SortCheckpoints orders checkpoints as ListCheckpoints returns them:
// oldest first, by CreatedAt, then name.
func SortCheckpoints(cps []*engine.Checkpoint) { sortCheckpoints(cps) }

// SnapshotCodec returns the codec and format version of a snapshot's
// header.
func SnapshotCodec(data []byte) (Codec, int, error) {
	h, err := parseHeader(data, SnapshotVersion)
	if err != nil {
		return "", 0, err
	}
	switch h.codec {
	case codecIDGzip:
		return CodecGzip, h.version, nil
	case codecIDZstd:
		return CodecZstd, h.version, nil
	}
	return CodecNone, h.version, nil
}

// DecodeMemory decodes an agent memory record; nil when it expired at
// now.
func DecodeMemory(namespace, key string, record []byte, now time.Time) (*engine.MemoryEntry, error) {
	return decodeMemory(idKey(namespace, key), record, now)
}

// CheckRegistration checks RegisterWorkflow's arguments: the name (an
// error wrapping ErrInvalidName), the definition and its hash, and meta.
func CheckRegistration(name string, definition []byte, hash string, meta VersionMeta) error {
	return checkRegistration(name, definition, hash, meta)
}

// CompactDefinition returns a stored definition as Workflow returns it.
func CompactDefinition(definition []byte) []byte { return compactDefinition(definition) }

// WorkflowNotFound is the error of Workflow and WorkflowVersions for a
// workflow name (and version v, 0 for any) that is not registered.
func WorkflowNotFound(name string, v int) error { return workflowNotFound(name, v) }

// CursorError is List's error for an After that names no execution.
func CursorError(id string) error { return cursorError(id) }

// CheckName checks an execution id or a checkpoint name (what says
// which): not empty, at most 1024 bytes, without NUL.
func CheckName(what, s string) error { return checkName(what, s) }

// TimeKey is a time as List and Due order it: Unix nanoseconds, times
// before 1970 (and the zero time) as 0.
func TimeKey(t time.Time) int64 { return int64(timeKey(t)) }

// HashBytes decodes a hex SHA-256 (a blob key, a document hash); nil for
// "".
func HashBytes(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("hash %q: %w", s, err)
	}
	return b, nil
}

// Live reports whether an execution of status s may still run, so that
// GC keeps its newest checkpoint.
func Live(s engine.Status) bool { return live(s) }
