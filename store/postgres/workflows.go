package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/store"
)

// RegisterWorkflow stores definition as the next version of the workflow
// name, unless hash is its latest version's. Registrations of one name
// are serialised by a transaction-scoped advisory lock.
func (db *DB) RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string) (store.WorkflowVersion, error) {
	if err := store.CheckRegistration(name, definition, hash); err != nil {
		return store.WorkflowVersion{}, err
	}
	if err := db.check(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	var w store.WorkflowVersion
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('aslrun workflow ' || $1, 0))`, name); err != nil {
			return err
		}
		latest, err := db.workflow(ctx, tx, name, 0)
		switch {
		case err == nil && latest.Hash == hash:
			w = latest
			return nil
		case err != nil && !errors.Is(err, errNoWorkflow):
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO definitions (hash, body) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, definition); err != nil {
			return err
		}
		w = store.WorkflowVersion{Name: name, Version: latest.Version + 1, Hash: hash}
		if err := tx.QueryRow(ctx, `INSERT INTO workflows (name, version, definition_hash) VALUES ($1, $2, $3) RETURNING created_at`,
			name, w.Version, hash).Scan(&w.CreatedAt); err != nil {
			return err
		}
		w.CreatedAt = w.CreatedAt.UTC()
		w.Definition = store.CompactDefinition(definition)
		return nil
	})
	if err != nil {
		return store.WorkflowVersion{}, db.dbErr("registering workflow "+name, err)
	}
	return w, nil
}

// errNoWorkflow is workflow's error for a version that is not there.
var errNoWorkflow = errors.New("no such workflow version")

// workflow reads version v of name (0: the latest) with its definition.
func (db *DB) workflow(ctx context.Context, q querier, name string, v int) (store.WorkflowVersion, error) {
	w := store.WorkflowVersion{Name: name}
	var def []byte
	err := q.QueryRow(ctx, `SELECT w.version, w.definition_hash, w.created_at, d.body FROM workflows w JOIN definitions d ON d.hash = w.definition_hash
WHERE w.name = $1 AND ($2 = 0 OR w.version = $2) ORDER BY w.version DESC LIMIT 1`, name, v).Scan(&w.Version, &w.Hash, &w.CreatedAt, &def)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, errNoWorkflow
	}
	if err != nil {
		return w, err
	}
	w.CreatedAt, w.Definition = w.CreatedAt.UTC(), store.CompactDefinition(def)
	return w, nil
}

// Workflow returns version v of the workflow name (0: the latest).
func (db *DB) Workflow(ctx context.Context, name string, v int) (store.WorkflowVersion, error) {
	if err := db.check(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	if v < 0 || !storable(name) {
		return store.WorkflowVersion{}, store.WorkflowNotFound(name, v)
	}
	w, err := db.workflow(ctx, db.pool, name, v)
	switch {
	case errors.Is(err, errNoWorkflow):
		return store.WorkflowVersion{}, store.WorkflowNotFound(name, v)
	case err != nil:
		return store.WorkflowVersion{}, db.dbErr("reading workflow "+name, err)
	}
	return w, nil
}

// versions runs a query of workflow versions, without definitions.
func (db *DB) versions(ctx context.Context, query string, args ...any) ([]store.WorkflowVersion, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, db.dbErr("listing workflows", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.WorkflowVersion, error) {
		var w store.WorkflowVersion
		var at time.Time
		err := row.Scan(&w.Name, &w.Version, &w.Hash, &at)
		w.CreatedAt = at.UTC()
		return w, err
	})
	if err != nil {
		return nil, db.dbErr("listing workflows", err)
	}
	return out, nil
}

// Workflows returns the latest version of every workflow, by name.
func (db *DB) Workflows(ctx context.Context) ([]store.WorkflowVersion, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	return db.versions(ctx, `SELECT DISTINCT ON (name) name, version, definition_hash, created_at FROM workflows ORDER BY name, version DESC`)
}

// WorkflowVersions returns every version of the workflow name, oldest
// first.
func (db *DB) WorkflowVersions(ctx context.Context, name string) ([]store.WorkflowVersion, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(name) {
		return nil, store.WorkflowNotFound(name, 0)
	}
	vs, err := db.versions(ctx, `SELECT name, version, definition_hash, created_at FROM workflows WHERE name = $1 ORDER BY version`, name)
	if err == nil && len(vs) == 0 {
		return nil, store.WorkflowNotFound(name, 0)
	}
	return vs, err
}
