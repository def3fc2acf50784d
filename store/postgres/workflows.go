package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// RegisterWorkflow stores definition as the next version of the workflow
// name, unless it is its latest version again (store.SameAsLatest).
// Registrations of one name are serialised by a transaction-scoped
// advisory lock.
func (db *DB) RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta store.VersionMeta) (store.WorkflowVersion, error) {
	if err := store.CheckRegistration(name, definition, hash, meta); err != nil {
		return store.WorkflowVersion{}, err
	}
	if err := db.check(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	lock, err := lockText(meta.Lock)
	if err != nil {
		return store.WorkflowVersion{}, err
	}
	var w store.WorkflowVersion
	var refused error
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('aslrun workflow ' || $1, 0))`, name); err != nil {
			return err
		}
		versions, err := db.versions(ctx, tx, selectVersions+` WHERE name = $1 ORDER BY version`, name)
		if err != nil {
			return err
		}
		latest, same, err := store.SameAsLatest(name, versions, hash, meta)
		if err != nil {
			refused = err
			return nil
		}
		if same {
			w, err = db.workflow(ctx, tx, name, latest.Version)
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO definitions (hash, body) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, definition); err != nil {
			return err
		}
		w = store.WorkflowVersion{Name: name, Version: latest.Version + 1, Hash: hash, Label: meta.Label, Lock: meta.Lock}
		if err := tx.QueryRow(ctx, `INSERT INTO workflows (name, version, definition_hash, label, lock) VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
			name, w.Version, hash, meta.Label, lock).Scan(&w.CreatedAt); err != nil {
			return err
		}
		w.CreatedAt = w.CreatedAt.UTC()
		w.Definition = store.CompactDefinition(definition)
		return nil
	})
	if err != nil {
		return store.WorkflowVersion{}, db.dbErr("registering workflow "+name, err)
	}
	if refused != nil {
		return store.WorkflowVersion{}, fmt.Errorf("register workflow %s: %w", name, refused)
	}
	return w, nil
}

// lockText encodes a version's lock for column lock (nil: NULL).
func lockText(lock map[string]string) ([]byte, error) {
	if lock == nil {
		return nil, nil
	}
	return json.Marshal(lock)
}

// lockOf decodes column lock.
func lockOf(name string, v int, text []byte) (map[string]string, error) {
	if text == nil {
		return nil, nil
	}
	var lock map[string]string
	if err := json.Unmarshal(text, &lock); err != nil {
		return nil, fmt.Errorf("workflow %s version %d: column lock: %w", name, v, err)
	}
	return lock, nil
}

// errNoWorkflow is workflow's error for a version that is not there.
var errNoWorkflow = errors.New("no such workflow version")

// workflow reads version v of name (0: the latest) with its definition.
func (db *DB) workflow(ctx context.Context, q querier, name string, v int) (store.WorkflowVersion, error) {
	w := store.WorkflowVersion{Name: name}
	var def, lock []byte
	err := q.QueryRow(ctx, `SELECT w.version, w.definition_hash, w.created_at, w.label, w.lock, d.body FROM workflows w JOIN definitions d ON d.hash = w.definition_hash
WHERE w.name = $1 AND ($2 = 0 OR w.version = $2) ORDER BY w.version DESC LIMIT 1`, name, v).Scan(&w.Version, &w.Hash, &w.CreatedAt, &w.Label, &lock, &def)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, errNoWorkflow
	}
	if err != nil {
		return w, err
	}
	w.CreatedAt, w.Definition = w.CreatedAt.UTC(), store.CompactDefinition(def)
	w.Lock, err = lockOf(name, w.Version, lock)
	return w, err
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

// selectVersions reads versions without definitions, for versions.
const selectVersions = `SELECT name, version, definition_hash, created_at, label, lock FROM workflows`

// versions runs a query of workflow versions (selectVersions …), without
// definitions.
func (db *DB) versions(ctx context.Context, q querier, query string, args ...any) ([]store.WorkflowVersion, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.WorkflowVersion, error) {
		var w store.WorkflowVersion
		var at time.Time
		var lock []byte
		if err := row.Scan(&w.Name, &w.Version, &w.Hash, &at, &w.Label, &lock); err != nil {
			return w, err
		}
		w.CreatedAt = at.UTC()
		var err error
		w.Lock, err = lockOf(w.Name, w.Version, lock)
		return w, err
	})
}

// Workflows returns the latest version of every workflow, by name.
func (db *DB) Workflows(ctx context.Context) ([]store.WorkflowVersion, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	vs, err := db.versions(ctx, db.pool, `SELECT DISTINCT ON (name) name, version, definition_hash, created_at, label, lock FROM workflows ORDER BY name, version DESC`)
	if err != nil {
		return nil, db.dbErr("listing workflows", err)
	}
	return vs, nil
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
	vs, err := db.versions(ctx, db.pool, selectVersions+` WHERE name = $1 ORDER BY version`, name)
	if err != nil {
		return nil, db.dbErr("listing workflows", err)
	}
	if len(vs) == 0 {
		return nil, store.WorkflowNotFound(name, 0)
	}
	return vs, nil
}

// aliases reads the aliases of name, by alias.
func (db *DB) aliases(ctx context.Context, q querier, name string) ([]store.WorkflowAlias, error) {
	rows, err := q.Query(ctx, `SELECT alias, version, updated_at FROM workflow_aliases WHERE name = $1 ORDER BY alias`, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.WorkflowAlias, error) {
		a := store.WorkflowAlias{Name: name}
		err := row.Scan(&a.Alias, &a.Version, &a.UpdatedAt)
		a.UpdatedAt = a.UpdatedAt.UTC()
		return a, err
	})
}

// ResolveWorkflow returns the version of the workflow name that ref names
// (store.ParseRef), with its definition, read in one transaction.
func (db *DB) ResolveWorkflow(ctx context.Context, name, ref string) (store.WorkflowVersion, error) {
	if err := db.check(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	var w store.WorkflowVersion
	var refused error
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var dbErr error
		v, err := store.ResolveRef(name, ref, func() ([]store.WorkflowVersion, map[string]int, error) {
			if !storable(name) {
				return nil, nil, nil
			}
			versions, err := db.versions(ctx, tx, selectVersions+` WHERE name = $1 ORDER BY version`, name)
			if err != nil {
				dbErr = err
				return nil, nil, err
			}
			list, err := db.aliases(ctx, tx, name)
			if err != nil {
				dbErr = err
				return nil, nil, err
			}
			aliases := make(map[string]int, len(list))
			for _, a := range list {
				aliases[a.Alias] = a.Version
			}
			return versions, aliases, nil
		})
		switch {
		case dbErr != nil:
			return dbErr
		case err != nil:
			refused = err
			return nil
		}
		w, err = db.workflow(ctx, tx, name, v)
		if errors.Is(err, errNoWorkflow) {
			refused = store.WorkflowNotFound(name, v)
			return nil
		}
		return err
	})
	if err != nil {
		return store.WorkflowVersion{}, db.dbErr("resolving workflow "+name, err)
	}
	return w, refused
}

// SetWorkflowAlias points alias of the workflow name at version.
func (db *DB) SetWorkflowAlias(ctx context.Context, name, alias string, version int) (store.WorkflowAlias, error) {
	if err := db.check(ctx); err != nil {
		return store.WorkflowAlias{}, err
	}
	if err := store.CheckWorkflowName(name); err != nil {
		return store.WorkflowAlias{}, store.WorkflowNotFound(name, 0)
	}
	if err := store.CheckAlias(alias); err != nil {
		return store.WorkflowAlias{}, fmt.Errorf("workflow %s: %w", name, err)
	}
	a := store.WorkflowAlias{Name: name, Alias: alias, Version: version}
	err := db.pool.QueryRow(ctx, `INSERT INTO workflow_aliases (name, alias, version)
SELECT name, $2, version FROM workflows WHERE name = $1 AND version = $3
ON CONFLICT (name, alias) DO UPDATE SET version = EXCLUDED.version, updated_at = now()
RETURNING updated_at`, name, alias, version).Scan(&a.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.WorkflowAlias{}, fmt.Errorf("set alias %s of workflow %s: %w", alias, name, store.WorkflowNotFound(name, version))
	}
	if err != nil {
		return store.WorkflowAlias{}, db.dbErr("setting alias "+alias+" of workflow "+name, err)
	}
	a.UpdatedAt = a.UpdatedAt.UTC()
	return a, nil
}

// DeleteWorkflowAlias removes alias of the workflow name.
func (db *DB) DeleteWorkflowAlias(ctx context.Context, name, alias string) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	if err := store.CheckWorkflowName(name); err != nil {
		return store.WorkflowNotFound(name, 0)
	}
	if err := store.CheckAlias(alias); err != nil {
		return fmt.Errorf("workflow %s: %w", name, err)
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM workflow_aliases WHERE name = $1 AND alias = $2`, name, alias)
	if err != nil {
		return db.dbErr("deleting alias "+alias+" of workflow "+name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("workflow %s has no alias %s: %w", name, alias, engine.ErrNotFound)
	}
	return nil
}

// WorkflowAliases returns the aliases of the workflow name, by alias.
func (db *DB) WorkflowAliases(ctx context.Context, name string) ([]store.WorkflowAlias, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(name) {
		return nil, store.WorkflowNotFound(name, 0)
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workflows WHERE name = $1)`, name).Scan(&exists); err != nil {
		return nil, db.dbErr("reading workflow "+name, err)
	}
	if !exists {
		return nil, store.WorkflowNotFound(name, 0)
	}
	list, err := db.aliases(ctx, db.pool, name)
	if err != nil {
		return nil, db.dbErr("listing aliases of workflow "+name, err)
	}
	return list, nil
}
