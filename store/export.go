package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aslrun/aslrun/engine"
)

// Export: a Bolt database's contents in the records every backend shares
// (backend.go), for copying them into another backend. Bolt's records
// carry links only Bolt follows: a head's sealed form and the key of its
// last history record, each history record the key of the one before, a
// checkpoint the key of the history record that binds it, and a head the
// hashes of the checkpoints no event binds. Export takes them off, so
// that the records are as another backend's commits would have written
// them: the same events, hashes and chain, which verify on the target
// with VerifyHistory.

// ExportItem is one thing Export yields; exactly one field is set.
// Export yields every definition first, then the registered workflow
// versions, then the workflows' aliases, then the executions, then the agent memory records, then the
// feedback people gave, so that what an item refers to was yielded before
// it. The result cache (computed again when missing) and the webhook
// outbox are not exported.
type ExportItem struct {
	Definition *ExportedDefinition
	Workflow   *WorkflowVersion // its Definition is nil: it is a Definition item's
	Alias      *WorkflowAlias
	Execution  *ExportedExecution
	Memory     *MemoryWrite
	Feedback   *engine.Feedback
}

// ExportedDefinition is a stored definition under its hash.
type ExportedDefinition struct {
	Hash string
	Body []byte
}

// ExportedExecution is an execution's records: Spec and Head as
// PrepareCreate and Apply give them, the fields a backend indexes, its
// history records in order (record i's first event is at position
// FirstEvents[i] of the history, from 1), its scopes, the memory
// namespaces its commits named, and its checkpoints with their snapshots.
type ExportedExecution struct {
	ID         string
	Summary    Summary // WakeAt is set only while the execution is WAITING
	Spec, Head []byte
	// Events is the number of events of the history, LastHash the last
	// one's Hash (hex).
	Events      int64
	LastHash    string
	History     [][]byte
	FirstEvents []int64
	Scopes      []ScopeRecord
	Namespaces  []string
	// Checkpoints' Event is the position of the history event that
	// records the checkpoint's hash (0: none).
	Checkpoints []CheckpointWrite
	// HistoryDropped says that a commit dropped the execution's history
	// (engine.Commit.DropHistory); Head says it too, for the store that
	// loads it, and History holds only what later commits wrote.
	HistoryDropped bool
}

// Export calls f with every definition, registered workflow version,
// execution and agent memory record of the database, in the order
// ExportItem says, all read in one read transaction (as of one commit).
// It verifies what it exports as VerifyHistory does (every history, and
// every checkpoint against what binds it; a checkpoint's snapshot must be
// there, and its load on the target verifies it) and stops at the first
// record that does not verify, with an error naming it. f's error stops Export and is returned. The items' byte
// slices are f's to keep.
func (b *Bolt) Export(ctx context.Context, f func(ExportItem) error) error {
	return b.view(func(x *tx) error {
		c := x.definitions.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := f(ExportItem{Definition: &ExportedDefinition{Hash: string(k), Body: bytes.Clone(v)}}); err != nil {
				return err
			}
		}
		c = x.workflows.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			w, err := decodeWorkflow(k, v)
			if err != nil {
				return err
			}
			if x.definitions.Get([]byte(w.Hash)) == nil {
				return &recordError{fmt.Errorf("workflow %s version %d: definition %s is missing", w.Name, w.Version, w.Hash)}
			}
			if err := f(ExportItem{Workflow: &w}); err != nil {
				return err
			}
		}
		if err := x.exportAliases(f); err != nil {
			return err
		}
		c = x.executions.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := x.export(string(k))
			if err != nil {
				return err
			}
			if err := f(ExportItem{Execution: e}); err != nil {
				return err
			}
		}
		c = x.memory.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			ns, key, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return &recordError{fmt.Errorf("bucket %s: malformed key %q", bucketMemory, k)}
			}
			var r memoryRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return &recordError{fmt.Errorf("memory %s/%s: %w", ns, key, err)}
			}
			m := &MemoryWrite{Namespace: string(ns), Key: string(key), Record: bytes.Clone(v), UpdatedAt: r.UpdatedAt, ExpiresAt: r.ExpiresAt, Execution: r.Execution}
			if err := f(ExportItem{Memory: m}); err != nil {
				return err
			}
		}
		fb, err := openFeedback(x.heads.Tx(), false)
		if err != nil || fb == nil {
			return err
		}
		err = fb.records.each(nil, func(k []byte) (bool, error) {
			item, err := decodeFeedback(string(k), fb.records.Get(k))
			if err != nil {
				return false, &recordError{err}
			}
			return true, f(ExportItem{Feedback: &item})
		})
		if err != nil {
			return err
		}
		return ctx.Err()
	})
}

// export reads and verifies one execution's records and takes Bolt's
// links off them.
func (x *tx) export(id string) (*ExportedExecution, error) {
	rec, h, err := x.execution(id)
	if err != nil {
		return nil, err
	}
	records, err := x.historyRecords(id, h)
	if err != nil {
		return nil, err
	}
	parsed := make([]historyRecord, len(records))
	keys := make(map[uint64]bool, len(records))
	e := &ExportedExecution{
		ID: id, Summary: summary(id, rec, h), Spec: bytes.Clone(x.executions.Get([]byte(id))),
		Events: h.Events, LastHash: h.LastHash, HistoryDropped: h.HistoryDropped,
		History: make([][]byte, len(records)), FirstEvents: make([]int64, len(records)),
	}
	e.Summary.WakeAt = waitingAt(h)
	for i, r := range records {
		parsed[i], keys[r.key] = r.historyRecord, true
		// The previous record's key is Bolt's: another backend orders
		// records by their first event. It is outside every hash.
		v := bytes.Clone(r.value)
		clear(v[historyPrevAt:historyFirstAt])
		e.History[i], e.FirstEvents[i] = v, r.first
	}
	if err := verifyHistory(id, parsed, h); err != nil {
		return nil, err
	}
	prefix := idKey(id, "")
	err = scanPrefix(x.scopes, prefix, func(k, v []byte) error {
		e.Scopes = append(e.Scopes, ScopeRecord{Key: string(k[len(prefix):]), Value: bytes.Clone(v)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = scanPrefix(x.namespaces, prefix, func(k, _ []byte) error {
		e.Namespaces = append(e.Namespaces, string(k[len(prefix):]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = scanPrefix(x.checkpoints, prefix, func(k, v []byte) error {
		name := string(k[len(prefix):])
		bd, record, err := splitCheckpointValue(id, name, v)
		if err != nil {
			return err
		}
		if bd.key != 0 && !keys[bd.key] {
			return &IntegrityError{Execution: id, Checkpoint: name, Field: "record", Detail: fmt.Sprintf("history record %d that binds it is not in the execution's history", bd.key)}
		}
		_, r, err := x.checkpointValue(id, name, h, v, false)
		if err != nil {
			return err
		}
		blob := x.blobs.Get([]byte(r.Blob))
		if blob == nil {
			return fmt.Errorf("execution %s checkpoint %q: snapshot %s is missing: %w", id, name, r.Blob, ErrCorrupt)
		}
		cw := CheckpointWrite{Name: name, Record: bytes.Clone(record), Blob: r.Blob, Snapshot: bytes.Clone(blob), DocHash: r.DocHash, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
		if bd.key != 0 {
			cw.Event = bd.pos
		}
		e.Checkpoints = append(e.Checkpoints, cw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The head as another backend keeps it: unsealed, without the key of
	// its last record and the checkpoints bound to it (another backend
	// binds none to its head).
	out := *h
	out.LastRecord, out.Unbound = 0, nil
	e.Head = encodeHead(&out)
	return e, nil
}
