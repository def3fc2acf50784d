package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Agent memory (DESIGN.md §3, Memory): key-value memory kept per namespace
// in the execution store, shared by every execution that names the
// namespace, with a time to live. A state's Memory.Read loads keys into its
// effective input before Parameters; its Memory.Write stores values after
// ResultPath, and the writes are committed atomically with the state's
// completion: a state that did not complete wrote nothing, and a completed
// one's writes are never applied twice.

// DefaultNamespace is the memory namespace of a state when neither it nor
// the workflow's Memory block names one.
const DefaultNamespace = "default"

// MaxMemoryName is the longest namespace or key, in bytes.
const MaxMemoryName = 512

// History events of agent memory (own events).
const (
	EventMemoryRead    = "MemoryRead"
	EventMemoryWritten = "MemoryWritten"
)

// MemoryWrite is one key a state writes, applied by the commit that
// records the state's completion.
type MemoryWrite struct {
	Namespace string
	Key       string
	// Value is stored, or combined with the stored value when Merge is set
	// (jsonvalue.Combine: objects merge, arrays append).
	Value any
	Merge bool
	// Delete removes the key instead (restoring a checkpoint's memory).
	Delete bool
	// At is when the state wrote it; ExpiresAt is when it expires (zero:
	// never).
	At        time.Time
	ExpiresAt time.Time
	// Execution is the execution that wrote it.
	Execution string
}

// MemoryEntry is a value kept in agent memory.
type MemoryEntry struct {
	Namespace string
	Key       string
	Value     any
	// UpdatedAt is when it was last written, by Execution; ExpiresAt is
	// when it expires (zero: never).
	UpdatedAt time.Time
	ExpiresAt time.Time
	Execution string
}

// Live reports whether e has not expired at now.
func (e *MemoryEntry) Live(now time.Time) bool {
	return e.ExpiresAt.IsZero() || now.Before(e.ExpiresAt)
}

// MemoryStore is implemented by stores that keep agent memory (both of the
// store package's); the values are written by Commit (Commit.Memory).
type MemoryStore interface {
	// ReadMemory returns the entries of keys in namespace that have not
	// expired at now; a key that is not stored is not in the map.
	ReadMemory(ctx context.Context, namespace string, keys []string, now time.Time) (map[string]*MemoryEntry, error)
	// ListMemory returns the entries of namespace ("" for every namespace)
	// that have not expired at now, by namespace and key.
	ListMemory(ctx context.Context, namespace string, now time.Time) ([]*MemoryEntry, error)
}

// ApplyMemoryWrite returns the entry that storing w over old (nil when
// there is none, or it expired) gives; nil when w deletes the key.
func ApplyMemoryWrite(old *MemoryEntry, w *MemoryWrite) *MemoryEntry {
	if w.Delete {
		return nil
	}
	v := w.Value
	if w.Merge && old != nil {
		v = jsonvalue.Combine(old.Value, w.Value)
	}
	return &MemoryEntry{Namespace: w.Namespace, Key: w.Key, Value: v, UpdatedAt: w.At, ExpiresAt: w.ExpiresAt, Execution: w.Execution}
}

// CheckMemoryName checks a namespace or key: not empty, valid UTF-8, at
// most MaxMemoryName bytes, without NUL (stores use it as a separator).
func CheckMemoryName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", what)
	case len(name) > MaxMemoryName:
		return fmt.Errorf("%s is %d bytes long, more than %d", what, len(name), MaxMemoryName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s %q is not valid UTF-8", what, name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("%s %q contains a NUL character", what, name)
	}
	return nil
}

// localMemory is the memory of an executor without a store: it lives as
// long as the executor, shared by its executions.
type localMemory struct {
	mu      sync.Mutex
	entries map[string]map[string]*MemoryEntry
}

func (m *localMemory) ReadMemory(_ context.Context, ns string, keys []string, now time.Time) (map[string]*MemoryEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]*MemoryEntry, len(keys))
	for _, k := range keys {
		if e, ok := m.entries[ns][k]; ok && e.Live(now) {
			out[k] = e
		}
	}
	return out, nil
}

func (m *localMemory) ListMemory(_ context.Context, ns string, now time.Time) ([]*MemoryEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*MemoryEntry
	for name, keys := range m.entries {
		if ns != "" && name != ns {
			continue
		}
		for _, e := range keys {
			if e.Live(now) {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b *MemoryEntry) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out, nil
}

func (m *localMemory) apply(writes []MemoryWrite) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = make(map[string]map[string]*MemoryEntry)
	}
	for i := range writes {
		w := &writes[i]
		ns := m.entries[w.Namespace]
		if ns == nil {
			ns = make(map[string]*MemoryEntry)
			m.entries[w.Namespace] = ns
		}
		old := ns[w.Key]
		if old != nil && !old.Live(w.At) {
			old = nil
		}
		if e := ApplyMemoryWrite(old, w); e != nil {
			ns[w.Key] = e
		} else {
			delete(ns, w.Key)
		}
	}
}

// memoryOf returns the Memory block of a state, nil when it has none.
func memoryOf(st states.State) *states.MemoryConfig {
	switch s := st.(type) {
	case *states.Task:
		return s.Memory
	case *states.Pass:
		return s.Memory
	}
	return nil
}

// memoryStore returns where this run's memory is kept.
func (h *stateRun) memoryStore() (MemoryStore, error) {
	x := h.r.x
	if !x.durable {
		return &x.local, nil
	}
	if ms, ok := x.store.(MemoryStore); ok {
		return ms, nil
	}
	return nil, asl.Errorf(asl.ErrRuntime, "state %s: Memory needs a store that keeps agent memory; this executor's store (%T) does not", h.name(), x.store)
}

// memoryNamespace resolves the state's namespace on its effective input:
// Namespace.$, Namespace, the workflow's Memory.Namespace (on the
// execution input), or DefaultNamespace.
func (h *stateRun) memoryNamespace(m *states.MemoryConfig, input any) (string, error) {
	var (
		ns  string
		err error
	)
	field := "Memory.Namespace"
	switch wm := h.r.m.Extensions; {
	case m.NamespaceExpr != nil:
		field = "Memory.Namespace.$"
		var v any
		if v, err = m.NamespaceExpr.Eval(input, h.env); err == nil {
			s, ok := v.(string)
			if !ok {
				return "", h.runtimeError(fmt.Sprintf("%s gave %s, not a string", field, jsonvalue.TypeName(v)))
			}
			ns = s
		}
	case !m.Namespace.IsZero():
		ns, err = m.Namespace.Render(input, h.env)
	case wm != nil && wm.Memory != nil && !wm.Memory.Namespace.IsZero():
		field = "the workflow's Memory.Namespace"
		ns, err = wm.Memory.Namespace.Render(h.r.exec.Input, h.env)
	default:
		ns = DefaultNamespace
	}
	if err != nil {
		return "", h.runtimeError(fmt.Sprintf("%s: %v", field, err))
	}
	if err := CheckMemoryName("the namespace", ns); err != nil {
		return "", h.runtimeError(fmt.Sprintf("%s: %v", field, err))
	}
	if strings.Contains(ns, memorySep) {
		return "", h.runtimeError(fmt.Sprintf("%s: the namespace %q holds the character U+001F, which separates the collections of semantic and episodic memory", field, ns))
	}
	// The namespaces an execution uses are committed, so that its
	// checkpoints can snapshot them.
	if h.r.useNamespace(ns) {
		h.sc.callsMu.Lock()
		h.sc.namespaces = append(h.sc.namespaces, ns)
		h.sc.callsMu.Unlock()
	}
	return ns, nil
}

// memoryRead loads the keys of Memory.Read and places them, as an object
// of key to value, at InjectAt in input (a copy). A key that is not
// stored gets Default: Default's own field of the key's name when Default
// is an object that has one, else Default itself; null without Default.
func (h *stateRun) memoryRead(ctx context.Context, m *states.MemoryConfig, input any) (any, error) {
	if m == nil || m.Read == nil {
		return input, nil
	}
	ns, err := h.memoryNamespace(m, input)
	if err != nil {
		return nil, err
	}
	ms, err := h.memoryStore()
	if err != nil {
		return nil, err
	}
	if err := h.r.flushMemory(ctx); err != nil {
		return nil, err
	}
	switch m.Type {
	case "semantic":
		return h.semanticRead(ctx, ms, m.Read, ns, input)
	case "episodic":
		return h.episodicRead(ctx, ms, m.Read, ns, input)
	}
	found, err := ms.ReadMemory(ctx, ns, m.Read.Keys, time.Now())
	if err != nil {
		return nil, fmt.Errorf("state %s: read memory namespace %q: %w", h.name(), ns, err)
	}
	loaded := make(map[string]any, len(m.Read.Keys))
	var hits, misses []any
	for _, k := range m.Read.Keys {
		if e, ok := found[k]; ok {
			loaded[k] = e.Value
			hits = append(hits, k)
			continue
		}
		misses = append(misses, k)
		var v any
		if m.Read.HasDefault {
			v = m.Read.Default
			if obj, ok := v.(map[string]any); ok {
				if own, ok := obj[k]; ok {
					v = own
				}
			}
		}
		loaded[k] = v
	}
	out, err := m.Read.InjectAt.Set(input, loaded)
	if err != nil {
		return nil, h.runtimeError(fmt.Sprintf("Memory.Read.InjectAt: %v", err))
	}
	h.r.ownEvent(Event{Type: EventMemoryRead, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
		Detail: map[string]any{"namespace": ns, "found": nonNil(hits), "missing": nonNil(misses)}})
	return out, nil
}

func nonNil(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// memoryWrites computes the state's Memory.Write values (Value, Value.$ on
// proposed, the document after ResultPath, or else the result) and keeps
// them in h until the state completes (see run.step).
func (h *stateRun) memoryWrites(m *states.MemoryConfig, input, result, proposed any) error {
	h.memWrites = nil
	if m == nil || len(m.Write) == 0 {
		return nil
	}
	ns, err := h.memoryNamespace(m, input)
	if err != nil {
		return err
	}
	if _, err := h.memoryStore(); err != nil {
		return err
	}
	now := time.Now().UTC()
	var defaultTTL states.TTL
	if e := h.r.m.Extensions; e != nil && e.Memory != nil {
		defaultTTL = e.Memory.DefaultTTL
	}
	writes := make([]MemoryWrite, 0, len(m.Write))
	for i := range m.Write {
		w := &m.Write[i]
		v := result
		switch {
		case w.HasValue:
			v = w.Value
		case w.ValueExpr != nil:
			if v, err = w.ValueExpr.Eval(proposed, h.env); err != nil {
				return h.runtimeError(fmt.Sprintf("Memory.Write %q: Value.$: %v", w.Key, err))
			}
		}
		if _, err := h.fits(v, unknownSize); err != nil {
			return err
		}
		ttl := w.TTL
		if ttl.IsZero() {
			ttl = defaultTTL
		}
		mw := MemoryWrite{Namespace: ns, Key: w.Key, Value: v, Merge: w.Merge, At: now, Execution: h.r.exec.ID}
		switch m.Type {
		case "semantic":
			if err := h.semanticWrite(&mw, w, i, input, proposed); err != nil {
				return err
			}
		case "episodic":
			if err := h.episodicWrite(&mw, w, i); err != nil {
				return err
			}
		}
		if ttl.Duration > 0 {
			mw.ExpiresAt = now.Add(ttl.Duration)
		}
		writes = append(writes, mw)
	}
	h.memWrites = writes
	return nil
}

// commitMemory hands a completed state's memory writes to its scope, to
// be committed with its completion (at once without a store), and records
// them in the history.
func (h *stateRun) commitMemory() {
	if len(h.memWrites) == 0 {
		return
	}
	for i := range h.memWrites {
		w := &h.memWrites[i]
		d := map[string]any{"namespace": w.Namespace, "key": w.Key, "merge": w.Merge, "value": w.Value}
		if ns, kind, coll, ok := SplitMemoryNamespace(w.Namespace); ok {
			d["namespace"], d["type"], d["collection"] = ns, kind, coll
			if kind == "semantic" {
				// The history keeps what was stored but the vector.
				if v, ok := w.Value.(map[string]any); ok {
					d["value"] = map[string]any{"text": v["text"], "value": v["value"], "model": v["model"]}
				}
			}
		}
		if !w.ExpiresAt.IsZero() {
			d["expiresAt"] = w.ExpiresAt.Format(time.RFC3339Nano)
		}
		h.r.ownEvent(Event{Type: EventMemoryWritten, State: h.name(), Scope: h.sc.prefix, Detail: d})
	}
	if !h.r.x.durable {
		h.r.x.local.apply(h.memWrites)
		h.r.x.vectors.committed(h.memWrites)
	} else {
		h.sc.callsMu.Lock()
		h.sc.memory = append(h.sc.memory, h.memWrites...)
		h.sc.callsMu.Unlock()
	}
	h.memWrites = nil
}

// useNamespace records that the execution uses the memory namespace ns;
// it reports whether that is new.
func (r *run) useNamespace(ns string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.namespaces[ns] {
		return false
	}
	if r.namespaces == nil {
		r.namespaces = make(map[string]bool)
	}
	r.namespaces[ns] = true
	return true
}

// memoryNamespaces returns the namespaces the execution has used, sorted.
func (r *run) memoryNamespaces() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.namespaces))
}

// memorySnapshot is what a checkpoint keeps of agent memory: the
// namespaces the execution has used so far and their live entries.
func (r *run) memorySnapshot(ctx context.Context) (any, error) {
	names := r.memoryNamespaces()
	if len(names) == 0 {
		return nil, nil
	}
	ms, ok := r.x.store.(MemoryStore)
	if !ok {
		return nil, nil
	}
	now := time.Now()
	nsList := make([]any, len(names))
	entries := []any{}
	for i, ns := range names {
		nsList[i] = ns
		list, err := ms.ListMemory(ctx, ns, now)
		if err != nil {
			return nil, fmt.Errorf("snapshot memory namespace %q: %w", ns, err)
		}
		for _, e := range list {
			entries = append(entries, map[string]any{
				"namespace": e.Namespace, "key": e.Key, "value": e.Value,
				"updatedAt": e.UpdatedAt.UTC().Format(time.RFC3339Nano), "expiresAt": formatOptionalTime(e.ExpiresAt),
			})
		}
	}
	return map[string]any{"namespaces": nsList, "entries": entries}, nil
}

// snapshotNamespaces returns the namespaces of a checkpoint's memory
// snapshot.
func snapshotNamespaces(snapshot any) []string {
	obj, _ := snapshot.(map[string]any)
	list, _ := obj["namespaces"].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if ns, ok := v.(string); ok {
			out = append(out, ns)
		}
	}
	return out
}

// restoreMemory returns the writes that put the namespaces of a
// checkpoint's memory snapshot back as they were: its entries are written
// again (those expired since are deleted) and keys added since are
// deleted. Other namespaces are not touched.
func (x *Executor) restoreMemory(ctx context.Context, snapshot any, execution string) ([]MemoryWrite, error) {
	if snapshot == nil {
		return nil, nil
	}
	obj, ok := snapshot.(map[string]any)
	names, okNames := obj["namespaces"].([]any)
	entries, okEntries := obj["entries"].([]any)
	if !ok || !okNames || !okEntries {
		return nil, fmt.Errorf("checkpoint memory is not {namespaces, entries}")
	}
	ms, ok := x.store.(MemoryStore)
	if !ok {
		return nil, fmt.Errorf("the store (%T) does not keep agent memory", x.store)
	}
	now := time.Now().UTC()
	kept := map[[2]string]bool{}
	var writes []MemoryWrite
	for i, v := range entries {
		e, _ := v.(map[string]any)
		ns, _ := e["namespace"].(string)
		key, _ := e["key"].(string)
		if ns == "" || key == "" {
			return nil, fmt.Errorf("checkpoint memory entry %d has no namespace or key", i)
		}
		w := MemoryWrite{Namespace: ns, Key: key, Value: e["value"], At: now, Execution: execution}
		if s, ok := e["expiresAt"].(string); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("checkpoint memory entry %s/%s: %w", ns, key, err)
			}
			w.ExpiresAt = t
			if !now.Before(t) {
				w.Delete = true
			}
		}
		kept[[2]string{ns, key}] = !w.Delete
		writes = append(writes, w)
	}
	for _, v := range names {
		ns, _ := v.(string)
		list, err := ms.ListMemory(ctx, ns, now)
		if err != nil {
			return nil, fmt.Errorf("memory namespace %q: %w", ns, err)
		}
		for _, e := range list {
			if _, ok := kept[[2]string{ns, e.Key}]; !ok {
				writes = append(writes, MemoryWrite{Namespace: ns, Key: e.Key, Delete: true, At: now, Execution: execution})
			}
		}
	}
	return writes, nil
}
