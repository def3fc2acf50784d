package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/memory/vector"
	"github.com/aslrun/aslrun/states"
)

// Semantic and episodic memory (Memory.Type "semantic" and "episodic")
// are kept as key-value memory, in namespaces of their own: a collection
// C of namespace N lives in the namespace N␟semantic␟C (␟ is U+001F, which
// no namespace a definition names may hold), so that every store keeps
// them, writes are committed with the state's completion (exactly once
// across crashes), TTLs expire them, and checkpoints snapshot them, as
// they do key-value memory. A semantic entry's value is
// {"text", "value", "model", "vector"} (the vector little-endian float32,
// base64); an episodic entry's is {"event", "at"}, under a key that sorts
// by time.
//
// Searching a semantic collection goes through an in-process index
// (memory/vector: exact below 2000 vectors, HNSW above), loaded from the
// store at its first search, kept up to date with this process's writes
// (the keys it wrote are read again before the next search), and, on a
// store other processes write (MemoryFingerprinter), loaded again when
// the store's fingerprint of the collection changed.

// memorySep separates a namespace from its kind and collection.
const memorySep = "\x1f"

// collectionNamespace is the namespace holding collection of kind
// ("semantic" or "episodic") in namespace ns.
func collectionNamespace(ns, kind, collection string) string {
	return ns + memorySep + kind + memorySep + collection
}

// SplitMemoryNamespace reads a namespace of semantic or episodic memory:
// the namespace a definition named, the kind and the collection; ok is
// false for a namespace of key-value memory.
func SplitMemoryNamespace(stored string) (ns, kind, collection string, ok bool) {
	parts := strings.SplitN(stored, memorySep, 3)
	if len(parts) != 3 {
		return stored, "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// MemoryFingerprinter is implemented by stores that other processes write
// too (PostgreSQL): a fingerprint of a namespace's entries that changes
// when any is written or removed, cheaper to read than the entries.
type MemoryFingerprinter interface {
	MemoryFingerprint(ctx context.Context, namespace string) (string, error)
}

// semanticEntry is what a semantic collection's index knows of an entry
// besides its vector.
type semanticEntry struct {
	text      string
	value     any
	updated   time.Time
	expiresAt time.Time
}

// collectionIndex is the index of one semantic collection.
type collectionIndex struct {
	// used is when it was last got (vectorCache.clock), under the
	// cache's mutex.
	used    uint64
	mu      sync.Mutex
	loaded  bool
	model   string
	print   string
	idx     *vector.Index
	entries map[string]*semanticEntry
	// dirty are keys this process wrote since the last search: read
	// again before the next.
	dirty map[string]bool
}

// vectorCache holds the indexes of semantic collections, by stored
// namespace.
type vectorCache struct {
	mu    sync.Mutex
	all   map[string]*collectionIndex
	clock uint64 // counts gets, for used
}

// maxCollections bounds the collections whose indexes a process keeps:
// past it, the least recently searched is dropped (and loaded again from
// the store at its next search).
const maxCollections = 256

// get returns the index of stored namespace ns (made empty), marked as
// used now.
func (c *vectorCache) get(ns string) *collectionIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all == nil {
		c.all = make(map[string]*collectionIndex)
	}
	c.clock++
	ci := c.all[ns]
	if ci == nil {
		if len(c.all) >= maxCollections {
			oldest, at := "", c.clock
			for k, x := range c.all {
				if x.used < at {
					oldest, at = k, x.used
				}
			}
			delete(c.all, oldest)
		}
		ci = &collectionIndex{}
		c.all[ns] = ci
	}
	ci.used = c.clock
	return ci
}

// committed marks the semantic entries that writes (committed) changed,
// so that the next search reads them again.
func (c *vectorCache) committed(writes []MemoryWrite) {
	for i := range writes {
		w := &writes[i]
		if _, kind, _, ok := SplitMemoryNamespace(w.Namespace); !ok || kind != "semantic" {
			continue
		}
		c.mu.Lock()
		ci := c.all[w.Namespace]
		c.mu.Unlock()
		if ci == nil {
			continue // not searched here: loaded whole at its first search
		}
		ci.mu.Lock()
		if ci.dirty == nil {
			ci.dirty = make(map[string]bool)
		}
		ci.dirty[w.Key] = true
		ci.mu.Unlock()
	}
}

// semanticValue is the stored value of a semantic entry.
func semanticValue(text string, value any, model string, vec []float32) map[string]any {
	return map[string]any{"text": text, "value": value, "model": model, "vector": base64.StdEncoding.EncodeToString(vector.Encode(vec))}
}

// decodeSemantic reads a stored semantic entry.
func decodeSemantic(e *MemoryEntry) (*semanticEntry, string, []float32, error) {
	m, ok := e.Value.(map[string]any)
	if !ok {
		return nil, "", nil, fmt.Errorf("entry %q is %s, not a semantic entry", e.Key, jsonvalue.TypeName(e.Value))
	}
	text, _ := m["text"].(string)
	model, _ := m["model"].(string)
	enc, _ := m["vector"].(string)
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, "", nil, fmt.Errorf("entry %q: its vector: %w", e.Key, err)
	}
	vec, err := vector.Decode(raw)
	if err != nil || len(vec) == 0 {
		return nil, "", nil, fmt.Errorf("entry %q: its vector: %v", e.Key, err)
	}
	return &semanticEntry{text: text, value: m["value"], updated: e.UpdatedAt, expiresAt: e.ExpiresAt}, model, vec, nil
}

// search returns the TopK entries of the collection nearest to q (of the
// executor's model), refreshing the index first.
func (ci *collectionIndex) search(ctx context.Context, ms MemoryStore, ns, model string, q []float32, k int, minScore float32, now time.Time) ([]vector.Result, map[string]*semanticEntry, error) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if err := ci.refresh(ctx, ms, ns, model, now); err != nil {
		return nil, nil, err
	}
	if ci.idx.Len() == 0 {
		return nil, nil, nil
	}
	live := func(id string) bool {
		e := ci.entries[id]
		return e != nil && (e.expiresAt.IsZero() || now.Before(e.expiresAt))
	}
	res, err := ci.idx.Search(q, k, minScore, live)
	if err != nil {
		return nil, nil, err
	}
	picked := make(map[string]*semanticEntry, len(res))
	for _, r := range res {
		picked[r.ID] = ci.entries[r.ID]
	}
	return res, picked, nil
}

// refresh brings the index up to date: loaded whole the first time (or
// when another process changed the collection), else the keys written
// here since read again. ci.mu is held.
func (ci *collectionIndex) refresh(ctx context.Context, ms MemoryStore, ns, model string, now time.Time) error {
	if fp, ok := ms.(MemoryFingerprinter); ok {
		print, err := fp.MemoryFingerprint(ctx, ns)
		if err != nil {
			return err
		}
		if ci.loaded && print != ci.print {
			ci.loaded = false
		}
		defer func() { ci.print = print }()
	}
	if !ci.loaded || ci.model != model {
		list, err := ms.ListMemory(ctx, ns, now)
		if err != nil {
			return err
		}
		ci.idx, ci.entries, ci.model, ci.dirty = vector.NewIndex(vector.Config{}), make(map[string]*semanticEntry, len(list)), model, nil
		for _, e := range list {
			if err := ci.add(e, model); err != nil {
				ci.loaded = false
				return err
			}
		}
		ci.loaded = true
		return nil
	}
	if len(ci.dirty) == 0 {
		return nil
	}
	keys := make([]string, 0, len(ci.dirty))
	for k := range ci.dirty {
		keys = append(keys, k)
	}
	found, err := ms.ReadMemory(ctx, ns, keys, now)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if e, ok := found[k]; ok {
			if err := ci.add(e, model); err != nil {
				return err
			}
		} else {
			ci.idx.Delete(k)
			delete(ci.entries, k)
		}
	}
	ci.dirty = nil
	return nil
}

// add puts a stored entry in the index. An entry of another model is an
// error: its vector cannot be compared.
func (ci *collectionIndex) add(e *MemoryEntry, model string) error {
	se, m, vec, err := decodeSemantic(e)
	if err != nil {
		return err
	}
	if m != model {
		return fmt.Errorf("entry %q was embedded with %s, and this executor embeds with %s: vectors of two models cannot be compared (write the collection again with one model, or read another collection)", e.Key, m, model)
	}
	if err := ci.idx.Add(e.Key, vec); err != nil {
		return fmt.Errorf("entry %q: %w", e.Key, err)
	}
	ci.entries[e.Key] = se
	return nil
}

// queryText evaluates a Query or Query.$ on input: a string (any other
// JSON value is refused, naming the field).
func (h *stateRun) queryText(field string, q states.Text, expr *jsonpath.Expr, input any) (string, error) {
	if expr != nil {
		v, err := expr.Eval(input, h.env)
		if err != nil {
			return "", h.runtimeError(fmt.Sprintf("%s.$: %v", field, err))
		}
		s, ok := v.(string)
		if !ok {
			return "", h.runtimeError(fmt.Sprintf("%s.$ gave %s, not a string", field, jsonvalue.TypeName(v)))
		}
		if strings.TrimSpace(s) == "" {
			return "", h.runtimeError(fmt.Sprintf("%s.$ gave an empty string", field))
		}
		return s, nil
	}
	s, err := q.Render(input, h.env)
	if err != nil {
		return "", h.runtimeError(fmt.Sprintf("%s: %v", field, err))
	}
	if strings.TrimSpace(s) == "" {
		return "", h.runtimeError(fmt.Sprintf("%s gave an empty string", field))
	}
	return s, nil
}

// textOf is the text a value is embedded as: a string as it is, any other
// JSON value as its JSON.
func textOf(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	data, err := jsonvalue.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(data), nil
}
