package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// The workflow registry. A version's definition text is kept with the
// executions' definitions, once per hash; its record keeps the hash and
// when it was registered. Versions are never changed or removed.

// workflowRecord is a version's record (bucket workflows).
type workflowRecord struct {
	Hash      string            `json:"hash"`
	CreatedAt time.Time         `json:"createdAt"`
	Label     string            `json:"label,omitempty"`
	Lock      map[string]string `json:"lock,omitempty"`
}

// checkRegistration checks RegisterWorkflow's arguments.
func checkRegistration(name string, definition []byte, hash string, meta VersionMeta) error {
	if err := CheckWorkflowName(name); err != nil {
		return err
	}
	if meta.Label != "" {
		if err := CheckLabel(meta.Label); err != nil {
			return fmt.Errorf("register workflow %s: %w", name, err)
		}
	}
	if err := CheckLock(meta.Lock); err != nil {
		return fmt.Errorf("register workflow %s: %w", name, err)
	}
	switch {
	case len(definition) == 0:
		return fmt.Errorf("register workflow %s: empty definition", name)
	case hash == "":
		return fmt.Errorf("register workflow %s: empty definition hash", name)
	case len(hash) > maxKeyLen:
		return fmt.Errorf("register workflow %s: definition hash %.40q… is longer than %d bytes", name, hash, maxKeyLen)
	}
	return nil
}

// compactDefinition returns a copy of a stored definition as compact JSON
// (an execution may have stored it with spacing); text that is not JSON
// is returned as it is.
func compactDefinition(def []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, def); err != nil {
		return bytes.Clone(def)
	}
	return buf.Bytes()
}

// workflowNotFound is the error of a version that does not exist (v 0:
// a workflow without versions).
func workflowNotFound(name string, v int) error {
	if v == 0 {
		return fmt.Errorf("workflow %s: %w", name, engine.ErrNotFound)
	}
	return fmt.Errorf("workflow %s version %d: %w", name, v, engine.ErrNotFound)
}

// Keys of bucket workflows: the name (which has no NUL), NUL, and the
// version, 8 bytes big-endian.

func workflowKey(name string, v int) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(name), 0), uint64(v))
}

// decodeWorkflow reads a version from its key and record, without its
// definition; its error is a recordError.
func decodeWorkflow(k, v []byte) (WorkflowVersion, error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) != i+9 {
		return WorkflowVersion{}, &recordError{fmt.Errorf("bucket %s: malformed key %q", bucketWorkflows, k)}
	}
	w := WorkflowVersion{Name: string(k[:i]), Version: int(binary.BigEndian.Uint64(k[i+1:]))}
	var r workflowRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return WorkflowVersion{}, &recordError{fmt.Errorf("workflow %s version %d: %w", w.Name, w.Version, err)}
	}
	w.Hash, w.CreatedAt, w.Label, w.Lock = r.Hash, r.CreatedAt, r.Label, r.Lock
	return w, nil
}

// latestWorkflow returns the latest version of name, without its
// definition; false when there is none.
func (x *tx) latestWorkflow(name string) (WorkflowVersion, bool, error) {
	c := x.workflows.Cursor()
	var k, v []byte
	if k, _ = c.Seek(append([]byte(name), 1)); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, append([]byte(name), 0)) {
		return WorkflowVersion{}, false, nil
	}
	w, err := decodeWorkflow(k, v)
	return w, err == nil, err
}

// withDefinition fills in w's definition; a missing one is a damaged
// database.
func (x *tx) withDefinition(w WorkflowVersion) (WorkflowVersion, error) {
	def := x.definitions.Get([]byte(w.Hash))
	if def == nil {
		return w, &recordError{fmt.Errorf("workflow %s version %d: definition %s is missing", w.Name, w.Version, w.Hash)}
	}
	w.Definition = compactDefinition(def)
	return w, nil
}

// RegisterWorkflow stores definition as the next version of name.
func (b *Bolt) RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta VersionMeta) (WorkflowVersion, error) {
	if err := checkRegistration(name, definition, hash, meta); err != nil {
		return WorkflowVersion{}, err
	}
	now := time.Now().UTC()
	rec, err := marshalRecord(&workflowRecord{Hash: hash, CreatedAt: now, Label: meta.Label, Lock: meta.Lock})
	if err != nil {
		return WorkflowVersion{}, err
	}
	var out WorkflowVersion
	err = b.write(ctx, func(x *tx) error {
		var versions []WorkflowVersion
		err := scanPrefix(x.workflows, append([]byte(name), 0), func(k, v []byte) error {
			w, err := decodeWorkflow(k, v)
			versions = append(versions, w)
			return err
		})
		if err != nil {
			return reject(err)
		}
		latest, same, err := SameAsLatest(name, versions, hash, meta)
		if err != nil {
			return reject(err)
		}
		if same {
			out, err = x.withDefinition(latest)
			return err
		}
		if x.definitions.Get([]byte(hash)) == nil {
			if err := x.definitions.Put([]byte(hash), bytes.Clone(definition)); err != nil {
				return err
			}
		}
		w := WorkflowVersion{Name: name, Version: latest.Version + 1, Hash: hash, CreatedAt: now, Label: meta.Label, Lock: meta.Lock}
		if err := x.workflows.Put(workflowKey(name, w.Version), rec); err != nil {
			return err
		}
		out, err = x.withDefinition(w)
		return err
	})
	if err != nil {
		return WorkflowVersion{}, fmt.Errorf("register workflow %s: %w", name, err)
	}
	return out, nil
}

// Workflow returns version v of name (0: the latest).
func (b *Bolt) Workflow(ctx context.Context, name string, v int) (WorkflowVersion, error) {
	var out WorkflowVersion
	err := b.view(func(x *tx) error {
		var w WorkflowVersion
		var ok bool
		switch {
		case CheckWorkflowName(name) != nil || v < 0:
		case v == 0:
			var err error
			if w, ok, err = x.latestWorkflow(name); err != nil {
				return err
			}
		default:
			k := workflowKey(name, v)
			if rec := x.workflows.Get(k); rec != nil {
				var err error
				if w, err = decodeWorkflow(k, rec); err != nil {
					return err
				}
				ok = true
			}
		}
		if !ok {
			return workflowNotFound(name, v)
		}
		var err error
		out, err = x.withDefinition(w)
		return err
	})
	return out, err
}

// Workflows returns the latest version of every workflow, by name: for
// each name, a seek past its versions and a step back.
func (b *Bolt) Workflows(ctx context.Context) ([]WorkflowVersion, error) {
	var out []WorkflowVersion
	err := b.view(func(x *tx) error {
		c := x.workflows.Cursor()
		for k, _ := c.First(); k != nil; {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return &recordError{fmt.Errorf("bucket %s: malformed key %q", bucketWorkflows, k)}
			}
			next := append(bytes.Clone(k[:i]), 1)
			k, _ = c.Seek(next)
			var lk, lv []byte
			if k == nil {
				lk, lv = c.Last()
			} else {
				lk, lv = c.Prev()
			}
			w, err := decodeWorkflow(lk, lv)
			if err != nil {
				return err
			}
			out = append(out, w)
			k, _ = c.Seek(next)
		}
		return nil
	})
	return out, err
}

// WorkflowVersions returns every version of name, oldest first.
func (b *Bolt) WorkflowVersions(ctx context.Context, name string) ([]WorkflowVersion, error) {
	var out []WorkflowVersion
	err := b.view(func(x *tx) error {
		if CheckWorkflowName(name) != nil {
			return workflowNotFound(name, 0)
		}
		err := scanPrefix(x.workflows, append([]byte(name), 0), func(k, v []byte) error {
			w, err := decodeWorkflow(k, v)
			out = append(out, w)
			return err
		})
		if err == nil && out == nil {
			return workflowNotFound(name, 0)
		}
		return err
	})
	return out, err
}

// memWorkflow is a version in the memory store.
type memWorkflow struct {
	hash      string
	createdAt time.Time
	label     string
	lock      map[string]string
}

// version returns the version v of name, without its definition.
func (w memWorkflow) version(name string, v int) WorkflowVersion {
	return WorkflowVersion{Name: name, Version: v, Hash: w.hash, CreatedAt: w.createdAt, Label: w.label, Lock: maps.Clone(w.lock)}
}

// withDefinition fills in w's definition, with m.mu held.
func (m *Memory) withDefinition(w WorkflowVersion) (WorkflowVersion, error) {
	def, ok := m.definitions[w.Hash]
	if !ok {
		return w, fmt.Errorf("workflow %s version %d: definition %s is missing", w.Name, w.Version, w.Hash)
	}
	w.Definition = compactDefinition(def)
	return w, nil
}

// RegisterWorkflow stores definition as the next version of name.
func (m *Memory) RegisterWorkflow(ctx context.Context, name string, definition []byte, hash string, meta VersionMeta) (WorkflowVersion, error) {
	if err := checkRegistration(name, definition, hash, meta); err != nil {
		return WorkflowVersion{}, err
	}
	if err := ctx.Err(); err != nil {
		return WorkflowVersion{}, err
	}
	now := time.Now().UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return WorkflowVersion{}, ErrClosed
	}
	vs := m.workflows[name]
	versions := make([]WorkflowVersion, len(vs))
	for i, w := range vs {
		versions[i] = w.version(name, i+1)
	}
	latest, same, err := SameAsLatest(name, versions, hash, meta)
	if err != nil {
		return WorkflowVersion{}, fmt.Errorf("register workflow %s: %w", name, err)
	}
	if same {
		return m.withDefinition(latest)
	}
	if _, ok := m.definitions[hash]; !ok {
		m.definitions[hash] = bytes.Clone(definition)
	}
	m.workflows[name] = append(vs, memWorkflow{hash: hash, createdAt: now, label: meta.Label, lock: maps.Clone(meta.Lock)})
	return m.withDefinition(m.workflows[name][len(vs)].version(name, len(vs)+1))
}

// Workflow returns version v of name (0: the latest).
func (m *Memory) Workflow(ctx context.Context, name string, v int) (WorkflowVersion, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return WorkflowVersion{}, ErrClosed
	}
	vs := m.workflows[name]
	if v == 0 {
		v = len(vs)
	}
	if v < 1 || v > len(vs) {
		return WorkflowVersion{}, workflowNotFound(name, v)
	}
	return m.withDefinition(vs[v-1].version(name, v))
}

// Workflows returns the latest version of every workflow, by name.
func (m *Memory) Workflows(ctx context.Context) ([]WorkflowVersion, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []WorkflowVersion
	for name, vs := range m.workflows {
		out = append(out, vs[len(vs)-1].version(name, len(vs)))
	}
	slices.SortFunc(out, func(a, b WorkflowVersion) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// WorkflowVersions returns every version of name, oldest first.
func (m *Memory) WorkflowVersions(ctx context.Context, name string) ([]WorkflowVersion, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	vs := m.workflows[name]
	if len(vs) == 0 {
		return nil, workflowNotFound(name, 0)
	}
	out := make([]WorkflowVersion, len(vs))
	for i, w := range vs {
		out[i] = w.version(name, i+1)
	}
	return out, nil
}
