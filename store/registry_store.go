package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// Aliases and resolution in Bolt and Memory.
//
// Bolt keeps aliases in bucket aliases, made by the first
// SetWorkflowAlias: the key is the workflow's name, NUL, and the alias;
// the record says the version and when it was set.

var bucketAliases = []byte("aliases")

// aliasRecord is an alias's record (bucket aliases).
type aliasRecord struct {
	Version   int       `json:"version"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func aliasKey(name, alias string) []byte {
	return append(append([]byte(name), 0), alias...)
}

// checkAliasArgs checks the name and alias of an alias call.
func checkAliasArgs(name, alias string) error {
	if err := CheckWorkflowName(name); err != nil {
		return workflowNotFound(name, 0)
	}
	if err := CheckAlias(alias); err != nil {
		return fmt.Errorf("workflow %s: %w", name, err)
	}
	return nil
}

// noAlias is the error of an alias that is not set.
func noAlias(name, alias string) error {
	return fmt.Errorf("workflow %s has no alias %s: %w", name, alias, engine.ErrNotFound)
}

// versionsOf reads the versions of name, oldest first, without
// definitions.
func (x *tx) versionsOf(name string) ([]WorkflowVersion, error) {
	var out []WorkflowVersion
	err := scanPrefix(x.workflows, append([]byte(name), 0), func(k, v []byte) error {
		w, err := decodeWorkflow(k, v)
		out = append(out, w)
		return err
	})
	return out, err
}

// aliasesOf reads the aliases of name, by alias.
func (x *tx) aliasesOf(name string) ([]WorkflowAlias, error) {
	bkt := x.workflows.Tx().Bucket(bucketAliases)
	if bkt == nil {
		return nil, nil
	}
	var out []WorkflowAlias
	prefix := append([]byte(name), 0)
	err := scanPrefix(bkt, prefix, func(k, v []byte) error {
		var r aliasRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return &recordError{fmt.Errorf("bucket %s: alias %q: %w", bucketAliases, k, err)}
		}
		out = append(out, WorkflowAlias{Name: name, Alias: string(k[len(prefix):]), Version: r.Version, UpdatedAt: r.UpdatedAt})
		return nil
	})
	return out, err
}

func aliasMap(list []WorkflowAlias) map[string]int {
	m := make(map[string]int, len(list))
	for _, a := range list {
		m[a.Alias] = a.Version
	}
	return m
}

// SetWorkflowAlias points alias of the workflow name at version, making
// the alias or moving it.
func (b *Bolt) SetWorkflowAlias(ctx context.Context, name, alias string, version int) (WorkflowAlias, error) {
	if err := checkAliasArgs(name, alias); err != nil {
		return WorkflowAlias{}, err
	}
	out := WorkflowAlias{Name: name, Alias: alias, Version: version, UpdatedAt: time.Now().UTC()}
	rec, err := marshalRecord(&aliasRecord{Version: version, UpdatedAt: out.UpdatedAt})
	if err != nil {
		return WorkflowAlias{}, err
	}
	err = b.write(ctx, func(x *tx) error {
		if version < 1 || x.workflows.Get(workflowKey(name, version)) == nil {
			return reject(workflowNotFound(name, version))
		}
		bkt, err := x.workflows.Tx().CreateBucketIfNotExists(bucketAliases)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketAliases, err)
		}
		return bkt.Put(aliasKey(name, alias), rec)
	})
	if err != nil {
		return WorkflowAlias{}, fmt.Errorf("set alias %s of workflow %s: %w", alias, name, err)
	}
	return out, nil
}

// DeleteWorkflowAlias removes alias of the workflow name.
func (b *Bolt) DeleteWorkflowAlias(ctx context.Context, name, alias string) error {
	if err := checkAliasArgs(name, alias); err != nil {
		return err
	}
	return b.write(ctx, func(x *tx) error {
		bkt := x.workflows.Tx().Bucket(bucketAliases)
		if bkt == nil || bkt.Get(aliasKey(name, alias)) == nil {
			return reject(noAlias(name, alias))
		}
		return bkt.Delete(aliasKey(name, alias))
	})
}

// WorkflowAliases returns the aliases of the workflow name, by alias.
func (b *Bolt) WorkflowAliases(ctx context.Context, name string) ([]WorkflowAlias, error) {
	var out []WorkflowAlias
	err := b.view(func(x *tx) error {
		if CheckWorkflowName(name) != nil || x.workflows.Get(workflowKey(name, 1)) == nil {
			return workflowNotFound(name, 0)
		}
		var err error
		out, err = x.aliasesOf(name)
		return err
	})
	return out, err
}

// ResolveWorkflow returns the version of the workflow name that ref names
// (ParseRef), with its definition.
func (b *Bolt) ResolveWorkflow(ctx context.Context, name, ref string) (WorkflowVersion, error) {
	var out WorkflowVersion
	err := b.view(func(x *tx) error {
		var versions []WorkflowVersion
		v, err := ResolveRef(name, ref, func() ([]WorkflowVersion, map[string]int, error) {
			var err error
			if versions, err = x.versionsOf(name); err != nil {
				return nil, nil, err
			}
			aliases, err := x.aliasesOf(name)
			return versions, aliasMap(aliases), err
		})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(versions, func(w WorkflowVersion) bool { return w.Version == v })
		if i < 0 {
			return workflowNotFound(name, v)
		}
		out, err = x.withDefinition(versions[i])
		return err
	})
	return out, err
}

// SetWorkflowAlias points alias of the workflow name at version.
func (m *Memory) SetWorkflowAlias(ctx context.Context, name, alias string, version int) (WorkflowAlias, error) {
	if err := checkAliasArgs(name, alias); err != nil {
		return WorkflowAlias{}, err
	}
	if err := ctx.Err(); err != nil {
		return WorkflowAlias{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return WorkflowAlias{}, ErrClosed
	}
	if version < 1 || version > len(m.workflows[name]) {
		return WorkflowAlias{}, fmt.Errorf("set alias %s of workflow %s: %w", alias, name, workflowNotFound(name, version))
	}
	a := WorkflowAlias{Name: name, Alias: alias, Version: version, UpdatedAt: time.Now().UTC()}
	if m.aliases == nil {
		m.aliases = make(map[string]WorkflowAlias)
	}
	m.aliases[string(aliasKey(name, alias))] = a
	return a, nil
}

// DeleteWorkflowAlias removes alias of the workflow name.
func (m *Memory) DeleteWorkflowAlias(ctx context.Context, name, alias string) error {
	if err := checkAliasArgs(name, alias); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	k := string(aliasKey(name, alias))
	if _, ok := m.aliases[k]; !ok {
		return noAlias(name, alias)
	}
	delete(m.aliases, k)
	return nil
}

// aliasesOf returns the aliases of name, by alias, with m.mu held.
func (m *Memory) aliasesOf(name string) []WorkflowAlias {
	var out []WorkflowAlias
	prefix := string(aliasKey(name, ""))
	for k, a := range m.aliases {
		if strings.HasPrefix(k, prefix) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b WorkflowAlias) int { return strings.Compare(a.Alias, b.Alias) })
	return out
}

// WorkflowAliases returns the aliases of the workflow name, by alias.
func (m *Memory) WorkflowAliases(ctx context.Context, name string) ([]WorkflowAlias, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	if len(m.workflows[name]) == 0 {
		return nil, workflowNotFound(name, 0)
	}
	return m.aliasesOf(name), nil
}

// ResolveWorkflow returns the version of the workflow name that ref names
// (ParseRef), with its definition.
func (m *Memory) ResolveWorkflow(ctx context.Context, name, ref string) (WorkflowVersion, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return WorkflowVersion{}, ErrClosed
	}
	vs := m.workflows[name]
	v, err := ResolveRef(name, ref, func() ([]WorkflowVersion, map[string]int, error) {
		versions := make([]WorkflowVersion, len(vs))
		for i, w := range vs {
			versions[i] = w.version(name, i+1)
		}
		return versions, aliasMap(m.aliasesOf(name)), nil
	})
	if err != nil {
		return WorkflowVersion{}, err
	}
	if v < 1 || v > len(vs) {
		return WorkflowVersion{}, workflowNotFound(name, v)
	}
	return m.withDefinition(vs[v-1].version(name, v))
}

// exportAliases calls f with every alias, for Export.
func (x *tx) exportAliases(f func(ExportItem) error) error {
	bkt := x.workflows.Tx().Bucket(bucketAliases)
	if bkt == nil {
		return nil
	}
	c := bkt.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		name, alias, ok := bytes.Cut(k, []byte{0})
		var r aliasRecord
		if !ok {
			return &recordError{fmt.Errorf("bucket %s: malformed key %q", bucketAliases, k)}
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return &recordError{fmt.Errorf("bucket %s: alias %q: %w", bucketAliases, k, err)}
		}
		if x.workflows.Get(workflowKey(string(name), r.Version)) == nil {
			return &recordError{fmt.Errorf("alias %s of workflow %s: version %d is missing", alias, name, r.Version)}
		}
		if err := f(ExportItem{Alias: &WorkflowAlias{Name: string(name), Alias: string(alias), Version: r.Version, UpdatedAt: r.UpdatedAt}}); err != nil {
			return err
		}
	}
	return nil
}
