//go:build pebble

package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// versionRow is a workflow version's record (its definition is stored
// under its hash).
type versionRow struct {
	Hash      string            `json:"hash"`
	CreatedAt int64             `json:"created_ns"`
	Label     string            `json:"label,omitempty"`
	Lock      map[string]string `json:"lock,omitempty"`
}

// aliasRow is a workflow alias's record.
type aliasRow struct {
	Version   int   `json:"version"`
	UpdatedAt int64 `json:"updated_ns"`
}

// versions reads the versions of name, oldest first, without
// definitions.
func (s *Store) versions(r pebble.Reader, name string) ([]store.WorkflowVersion, error) {
	var out []store.WorkflowVersion
	err := scan(r, under(kindWorkflow, name), func(k, v []byte) error {
		w, err := decodeVersion(name, k, v)
		out = append(out, w)
		return err
	})
	return out, err
}

// decodeVersion decodes the version row under k (the version, 8 bytes)
// of name.
func decodeVersion(name string, k, v []byte) (store.WorkflowVersion, error) {
	w := store.WorkflowVersion{Name: name}
	if len(k) != 8 {
		return w, fmt.Errorf("workflow %s: version key of %d bytes: %w", name, len(k), store.ErrDatabaseCorrupt)
	}
	w.Version = int(binary.BigEndian.Uint64(k))
	var row versionRow
	if err := json.Unmarshal(v, &row); err != nil {
		return w, fmt.Errorf("workflow %s version %d: %w: %w", name, w.Version, store.ErrDatabaseCorrupt, err)
	}
	w.Hash, w.CreatedAt, w.Label, w.Lock = row.Hash, time.Unix(0, row.CreatedAt).UTC(), row.Label, row.Lock
	return w, nil
}

// workflow reads version v of name (0: the latest) with its definition;
// ok false when there is none.
func (s *Store) workflow(r pebble.Reader, name string, v int) (store.WorkflowVersion, bool, error) {
	vs, err := s.versions(r, name)
	if err != nil || len(vs) == 0 || v > len(vs) {
		return store.WorkflowVersion{}, false, err
	}
	w := vs[len(vs)-1]
	if v > 0 {
		w = vs[v-1]
		if w.Version != v {
			return store.WorkflowVersion{}, false, fmt.Errorf("workflow %s: version %d is stored as the %dth: %w", name, w.Version, v, store.ErrDatabaseCorrupt)
		}
	}
	def, _, err := get(r, key(kindDefinition, w.Hash))
	if err != nil {
		return w, false, err
	}
	w.Definition = store.CompactDefinition(def)
	return w, true, nil
}

// RegisterWorkflow stores definition as the next version of the workflow
// name, unless it is its latest version again (store.SameAsLatest).
func (s *Store) RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta store.VersionMeta) (store.WorkflowVersion, error) {
	if err := store.CheckRegistration(name, definition, hash, meta); err != nil {
		return store.WorkflowVersion{}, err
	}
	if err := s.begin(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	defer s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	versions, err := s.versions(s.db, name)
	if err != nil {
		return store.WorkflowVersion{}, s.dbErr("registering workflow "+name, err)
	}
	latest, same, err := store.SameAsLatest(name, versions, hash, meta)
	if err != nil {
		return store.WorkflowVersion{}, fmt.Errorf("register workflow %s: %w", name, err)
	}
	if same {
		w, _, err := s.workflow(s.db, name, latest.Version)
		if err != nil {
			return store.WorkflowVersion{}, s.dbErr("registering workflow "+name, err)
		}
		return w, nil
	}
	w := store.WorkflowVersion{Name: name, Version: latest.Version + 1, Hash: hash, CreatedAt: time.Now().UTC(), Label: meta.Label, Lock: meta.Lock}
	row, err := json.Marshal(versionRow{Hash: hash, CreatedAt: w.CreatedAt.UnixNano(), Label: meta.Label, Lock: meta.Lock})
	if err != nil {
		return store.WorkflowVersion{}, fmt.Errorf("register workflow %s: %w", name, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	dk := key(kindDefinition, hash)
	_, ok, err := get(s.db, dk)
	if err != nil {
		return store.WorkflowVersion{}, s.dbErr("registering workflow "+name, err)
	}
	if !ok {
		b.Set(dk, definition, nil)
	}
	b.Set(numbered(kindWorkflow, name, uint64(w.Version)), row, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return store.WorkflowVersion{}, s.dbErr("registering workflow "+name, err)
	}
	w.Definition = store.CompactDefinition(definition)
	return w, nil
}

// Workflow returns version v of the workflow name (0: the latest).
func (s *Store) Workflow(ctx context.Context, name string, v int) (store.WorkflowVersion, error) {
	if err := s.begin(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	defer s.end()
	if v < 0 || !nameOK(name) {
		return store.WorkflowVersion{}, store.WorkflowNotFound(name, v)
	}
	snap := s.snapshot()
	defer snap.Close()
	w, ok, err := s.workflow(snap, name, v)
	switch {
	case err != nil:
		return store.WorkflowVersion{}, s.dbErr("reading workflow "+name, err)
	case !ok:
		return store.WorkflowVersion{}, store.WorkflowNotFound(name, v)
	}
	return w, nil
}

// Workflows returns the latest version of every workflow, by name.
func (s *Store) Workflows(ctx context.Context) ([]store.WorkflowVersion, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	var out []store.WorkflowVersion
	err := scan(s.db, []byte{kindWorkflow}, func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return fmt.Errorf("workflow key %q: %w", k, store.ErrDatabaseCorrupt)
		}
		w, err := decodeVersion(string(k[:i]), k[i+1:], v)
		if err != nil {
			return err
		}
		if n := len(out); n > 0 && out[n-1].Name == w.Name {
			out[n-1] = w
		} else {
			out = append(out, w)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing workflows: %w", err)
	}
	return out, nil
}

// WorkflowVersions returns every version of the workflow name, oldest
// first.
func (s *Store) WorkflowVersions(ctx context.Context, name string) ([]store.WorkflowVersion, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	if !nameOK(name) {
		return nil, store.WorkflowNotFound(name, 0)
	}
	vs, err := s.versions(s.db, name)
	if err != nil {
		return nil, fmt.Errorf("listing workflow %s: %w", name, err)
	}
	if len(vs) == 0 {
		return nil, store.WorkflowNotFound(name, 0)
	}
	return vs, nil
}

// aliases reads the aliases of name, by alias.
func (s *Store) aliases(r pebble.Reader, name string) ([]store.WorkflowAlias, error) {
	var out []store.WorkflowAlias
	err := scan(r, under(kindAlias, name), func(k, v []byte) error {
		var row aliasRow
		if err := json.Unmarshal(v, &row); err != nil {
			return fmt.Errorf("workflow %s alias %s: %w: %w", name, k, store.ErrDatabaseCorrupt, err)
		}
		out = append(out, store.WorkflowAlias{Name: name, Alias: string(k), Version: row.Version, UpdatedAt: time.Unix(0, row.UpdatedAt).UTC()})
		return nil
	})
	return out, err
}

// ResolveWorkflow returns the version of the workflow name that ref names
// (store.ParseRef), with its definition, read from one snapshot.
func (s *Store) ResolveWorkflow(ctx context.Context, name, ref string) (store.WorkflowVersion, error) {
	if err := s.begin(ctx); err != nil {
		return store.WorkflowVersion{}, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	v, err := store.ResolveRef(name, ref, func() ([]store.WorkflowVersion, map[string]int, error) {
		if !nameOK(name) {
			return nil, nil, nil
		}
		versions, err := s.versions(snap, name)
		if err != nil {
			return nil, nil, err
		}
		list, err := s.aliases(snap, name)
		if err != nil {
			return nil, nil, err
		}
		aliases := make(map[string]int, len(list))
		for _, a := range list {
			aliases[a.Alias] = a.Version
		}
		return versions, aliases, nil
	})
	if err != nil {
		return store.WorkflowVersion{}, err
	}
	w, ok, err := s.workflow(snap, name, v)
	switch {
	case err != nil:
		return store.WorkflowVersion{}, s.dbErr("resolving workflow "+name, err)
	case !ok:
		return store.WorkflowVersion{}, store.WorkflowNotFound(name, v)
	}
	return w, nil
}

// SetWorkflowAlias points alias of the workflow name at version.
func (s *Store) SetWorkflowAlias(ctx context.Context, name, alias string, version int) (store.WorkflowAlias, error) {
	if err := s.begin(ctx); err != nil {
		return store.WorkflowAlias{}, err
	}
	defer s.end()
	if err := store.CheckWorkflowName(name); err != nil {
		return store.WorkflowAlias{}, store.WorkflowNotFound(name, 0)
	}
	if err := store.CheckAlias(alias); err != nil {
		return store.WorkflowAlias{}, fmt.Errorf("workflow %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if version <= 0 {
		return store.WorkflowAlias{}, fmt.Errorf("set alias %s of workflow %s: %w", alias, name, store.WorkflowNotFound(name, version))
	}
	_, ok, err := get(s.db, numbered(kindWorkflow, name, uint64(version)))
	switch {
	case err != nil:
		return store.WorkflowAlias{}, s.dbErr("setting alias "+alias+" of workflow "+name, err)
	case !ok:
		return store.WorkflowAlias{}, fmt.Errorf("set alias %s of workflow %s: %w", alias, name, store.WorkflowNotFound(name, version))
	}
	a := store.WorkflowAlias{Name: name, Alias: alias, Version: version, UpdatedAt: time.Now().UTC()}
	row, err := json.Marshal(aliasRow{Version: version, UpdatedAt: a.UpdatedAt.UnixNano()})
	if err != nil {
		return store.WorkflowAlias{}, err
	}
	if err := s.db.Set(pair(kindAlias, name, alias), row, pebble.Sync); err != nil {
		return store.WorkflowAlias{}, s.dbErr("setting alias "+alias+" of workflow "+name, err)
	}
	return a, nil
}

// DeleteWorkflowAlias removes alias of the workflow name.
func (s *Store) DeleteWorkflowAlias(ctx context.Context, name, alias string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	if err := store.CheckWorkflowName(name); err != nil {
		return store.WorkflowNotFound(name, 0)
	}
	if err := store.CheckAlias(alias); err != nil {
		return fmt.Errorf("workflow %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := pair(kindAlias, name, alias)
	_, ok, err := get(s.db, k)
	switch {
	case err != nil:
		return s.dbErr("deleting alias "+alias+" of workflow "+name, err)
	case !ok:
		return fmt.Errorf("workflow %s has no alias %s: %w", name, alias, engine.ErrNotFound)
	}
	if err := s.db.Delete(k, pebble.Sync); err != nil {
		return s.dbErr("deleting alias "+alias+" of workflow "+name, err)
	}
	return nil
}

// WorkflowAliases returns the aliases of the workflow name, by alias.
func (s *Store) WorkflowAliases(ctx context.Context, name string) ([]store.WorkflowAlias, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	if !nameOK(name) {
		return nil, store.WorkflowNotFound(name, 0)
	}
	snap := s.snapshot()
	defer snap.Close()
	vs, err := s.versions(snap, name)
	if err != nil {
		return nil, fmt.Errorf("reading workflow %s: %w", name, err)
	}
	if len(vs) == 0 {
		return nil, store.WorkflowNotFound(name, 0)
	}
	list, err := s.aliases(snap, name)
	if err != nil {
		return nil, fmt.Errorf("listing aliases of workflow %s: %w", name, err)
	}
	return list, nil
}
