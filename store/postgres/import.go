package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Import: the other half of store.Bolt's Export. Each item is written as
// it comes, an execution with all its records in one transaction, so
// that a copy cut short leaves whole executions only: copying again with
// the ones already there skipped finishes it.

// Import writes one item of store.Bolt's Export: a definition, a
// registered workflow version, an execution or an agent memory record,
// byte for byte as given, so that histories keep their hashes and chain.
// An execution whose id the database has already is refused with an
// error wrapping engine.ErrExists, and so are a workflow version and a
// memory record the database holds with another definition or value (the
// same one is left as it is). Definitions are written before what refers
// to them, as Export yields them.
func (db *DB) Import(ctx context.Context, item store.ExportItem) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	switch {
	case item.Definition != nil:
		d := item.Definition
		if _, err := db.pool.Exec(ctx, `INSERT INTO definitions (hash, body) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, d.Hash, d.Body); err != nil {
			return db.dbErr("importing definition "+d.Hash, err)
		}
		return nil
	case item.Workflow != nil:
		return db.importWorkflow(ctx, item.Workflow)
	case item.Alias != nil:
		return db.importAlias(ctx, item.Alias)
	case item.Execution != nil:
		return db.importExecution(ctx, item.Execution)
	case item.Memory != nil:
		return db.importMemory(ctx, item.Memory)
	case item.Feedback != nil:
		// Feedback ids are UUIDv7s: one there already is this one,
		// copied before.
		if err := db.AddFeedback(ctx, item.Feedback); err != nil && !errors.Is(err, engine.ErrExists) {
			return err
		}
		return nil
	}
	return errors.New("import: an empty item")
}

// importWorkflow writes a registered workflow version, with its
// registration time (to the microsecond: a timestamptz).
func (db *DB) importWorkflow(ctx context.Context, w *store.WorkflowVersion) error {
	lock, err := lockText(w.Lock)
	if err != nil {
		return err
	}
	var have string
	err = db.pool.QueryRow(ctx, `WITH i AS (
  INSERT INTO workflows (name, version, definition_hash, created_at, label, lock) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (name, version) DO NOTHING RETURNING definition_hash)
SELECT definition_hash FROM i UNION ALL SELECT definition_hash FROM workflows WHERE name = $1 AND version = $2 LIMIT 1`,
		w.Name, w.Version, w.Hash, w.CreatedAt, w.Label, lock).Scan(&have)
	if err != nil {
		return db.dbErr(fmt.Sprintf("importing workflow %s version %d", w.Name, w.Version), err)
	}
	if have != w.Hash {
		return fmt.Errorf("workflow %s version %d is registered with definition %s, not %s: %w", w.Name, w.Version, have, w.Hash, engine.ErrExists)
	}
	return nil
}

// importAlias writes a workflow's alias; one the target has pointing to
// another version is engine.ErrExists.
func (db *DB) importAlias(ctx context.Context, a *store.WorkflowAlias) error {
	var have int
	err := db.pool.QueryRow(ctx, `WITH i AS (
  INSERT INTO workflow_aliases (name, alias, version, updated_at) VALUES ($1, $2, $3, $4)
  ON CONFLICT (name, alias) DO NOTHING RETURNING version)
SELECT version FROM i UNION ALL SELECT version FROM workflow_aliases WHERE name = $1 AND alias = $2 LIMIT 1`,
		a.Name, a.Alias, a.Version, a.UpdatedAt).Scan(&have)
	if err != nil {
		return db.dbErr(fmt.Sprintf("importing alias %s of workflow %s", a.Alias, a.Name), err)
	}
	if have != a.Version {
		return fmt.Errorf("alias %s of workflow %s points to version %d, not %d: %w", a.Alias, a.Name, have, a.Version, engine.ErrExists)
	}
	return nil
}

// importMemory writes an agent memory record.
func (db *DB) importMemory(ctx context.Context, m *store.MemoryWrite) error {
	var have []byte
	err := db.pool.QueryRow(ctx, `WITH i AS (
  INSERT INTO agent_memory (namespace, key, value, updated_ns, expires_ns, execution) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (namespace, key) DO NOTHING RETURNING value)
SELECT value FROM i UNION ALL SELECT value FROM agent_memory WHERE namespace = $1 AND key = $2 LIMIT 1`,
		m.Namespace, m.Key, m.Record, store.TimeKey(m.UpdatedAt), nsOrNull(m.ExpiresAt), m.Execution).Scan(&have)
	if err != nil {
		return db.dbErr(fmt.Sprintf("importing agent memory %s/%s", m.Namespace, m.Key), err)
	}
	if !slices.Equal(have, m.Record) {
		return fmt.Errorf("agent memory %s/%s holds another value: %w", m.Namespace, m.Key, engine.ErrExists)
	}
	return nil
}

// importExecution writes an execution and all its records in one
// transaction.
func (db *DB) importExecution(ctx context.Context, e *store.ExportedExecution) error {
	if len(e.History) != len(e.FirstEvents) {
		return fmt.Errorf("import execution %s: %d history records, %d first events", e.ID, len(e.History), len(e.FirstEvents))
	}
	s := &e.Summary
	var def, parent *string
	if s.DefinitionHash != "" {
		def = &s.DefinitionHash
	}
	if s.Parent != "" {
		parent = &s.Parent
	}
	if _, err := store.HashBytes(e.LastHash); err != nil {
		return fmt.Errorf("import execution %s: %w", e.ID, err)
	}
	b := &pgx.Batch{}
	// The head holds the history's length and last hash (event_count and
	// last_hash are NULL since migration 13).
	b.Queue(`INSERT INTO executions (id, machine_name, definition_hash, status, started_ns, stopped_ns, wake_ns, waiting_for, parent, error,
  history_dropped, spec, head)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		e.ID, s.MachineName, def, string(s.Status), store.TimeKey(s.StartedAt), nsOrNull(s.StoppedAt), nsOrNull(s.WakeAt), s.WaitingFor, parent, s.Error,
		e.HistoryDropped, e.Spec, e.Head)
	if s.Status == engine.StatusRunning {
		// No process holds it: queued for the first server with room.
		b.Queue(`INSERT INTO ready (execution, since) VALUES ($1, $2)`, e.ID, store.TimeKey(s.StartedAt))
	}
	if len(e.History) > 0 {
		history := make([][]byte, len(e.History))
		for i, rec := range e.History {
			var err error
			if history[i], err = db.hist.pack(e.ID, rec); err != nil {
				return fmt.Errorf("import execution %s: %w", e.ID, err)
			}
		}
		b.Queue(`INSERT INTO history_records (execution, first_event, body) SELECT $1, f, v FROM unnest($2::bigint[], $3::bytea[]) AS t(f, v)`,
			e.ID, e.FirstEvents, history)
	}
	if len(e.Scopes) > 0 {
		keys, values := scopeArrays(e.Scopes)
		b.Queue(`INSERT INTO scopes (execution, key, body) SELECT $1, k, v FROM unnest($2::text[], $3::bytea[]) AS t(k, v)`, e.ID, keys, values)
	}
	if len(e.Namespaces) > 0 {
		b.Queue(`INSERT INTO memory_namespaces (execution, namespace) SELECT $1, unnest($2::text[])`, e.ID, e.Namespaces)
	}
	for _, cp := range e.Checkpoints {
		blob, err := store.HashBytes(cp.Blob)
		if err != nil {
			return fmt.Errorf("import execution %s checkpoint %q: snapshot key: %w", e.ID, cp.Name, err)
		}
		doc, err := store.HashBytes(cp.DocHash)
		if err != nil {
			return fmt.Errorf("import execution %s checkpoint %q: document hash: %w", e.ID, cp.Name, err)
		}
		codec, format, err := store.SnapshotCodec(cp.Snapshot)
		if err != nil {
			return fmt.Errorf("import execution %s checkpoint %q: snapshot: %w", e.ID, cp.Name, err)
		}
		var event *int64
		if cp.Event > 0 {
			event = &cp.Event
		}
		b.Queue(`INSERT INTO snapshot_blobs (key, codec, format, body) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING`, blob, string(codec), format, cp.Snapshot)
		b.Queue(`INSERT INTO checkpoints (execution, name, blob, doc_hash, event_seq, created_ns, expires_ns, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			e.ID, cp.Name, blob, doc, event, store.TimeKey(cp.CreatedAt), nsOrNull(cp.ExpiresAt), cp.Record)
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	switch {
	case sqlState(err) == "23505":
		return fmt.Errorf("import execution %s: %w", e.ID, engine.ErrExists)
	case err != nil:
		return db.dbErr("importing execution "+e.ID, err)
	}
	return nil
}

// ExistingExecutions returns those of ids the database has, in the order
// given.
func (db *DB) ExistingExecutions(ctx context.Context, ids []string) ([]string, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	have, err := db.ids(ctx, "looking up executions", `SELECT id FROM executions WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(have))
	for _, id := range have {
		found[id] = true
	}
	out := make([]string, 0, len(have))
	for _, id := range ids {
		if found[id] {
			out = append(out, id)
		}
	}
	return out, nil
}
