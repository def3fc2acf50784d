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
	"github.com/aslrun/aslrun/jsonvalue"
)

// Agent memory (engine.MemoryStore): one record per namespace and key,
// under the key "namespace NUL key", written by the commits that complete
// the states writing them. An expired record reads as absent and GC
// removes it.

// memoryRecord is one memory entry.
type memoryRecord struct {
	Value     json.RawMessage `json:"value"`
	UpdatedAt time.Time       `json:"updatedAt"`
	ExpiresAt time.Time       `json:"expiresAt,omitzero"`
	Execution string          `json:"execution,omitempty"`
}

// memWrite is an engine.MemoryWrite encoded by prepareCommit.
type memWrite struct {
	key   []byte
	value json.RawMessage
	merge bool
	del   bool
	rec   memoryRecord
}

func prepareMemory(ws []engine.MemoryWrite, memo *docMemo) ([]memWrite, error) {
	out := make([]memWrite, len(ws))
	for i := range ws {
		w := &ws[i]
		if err := engine.CheckMemoryName("memory namespace", w.Namespace); err != nil {
			return nil, err
		}
		if err := engine.CheckMemoryName("memory key", w.Key); err != nil {
			return nil, err
		}
		raw, err := memo.raw(w.Value)
		if err != nil {
			return nil, fmt.Errorf("memory %s/%s: %w", w.Namespace, w.Key, err)
		}
		out[i] = memWrite{key: idKey(w.Namespace, w.Key), value: raw, merge: w.Merge, del: w.Delete,
			rec: memoryRecord{Value: raw, UpdatedAt: utc(w.At), ExpiresAt: utc(w.ExpiresAt), Execution: w.Execution}}
	}
	return out, nil
}

// memRecord is a memory record to write; data is nil to delete the key.
type memRecord struct {
	key       string
	data      []byte
	updatedAt time.Time
	expiresAt time.Time
	execution string
}

// applyMemoryWrites returns the records the writes leave, in the order
// their keys were first written, reading the current ones with get: a
// merge combines with the stored value (or with an earlier write of the
// same commit) unless it expired.
func applyMemoryWrites(ws []memWrite, get func(key []byte) []byte) ([]memRecord, error) {
	var out []memRecord
	index := make(map[string]int, len(ws))
	put := func(r memRecord) {
		if i, ok := index[r.key]; ok {
			out[i] = r
		} else {
			index[r.key] = len(out)
			out = append(out, r)
		}
	}
	for _, w := range ws {
		rec := w.rec
		if w.del {
			put(memRecord{key: string(w.key)})
			continue
		}
		if w.merge {
			var old []byte
			if i, ok := index[string(w.key)]; ok {
				old = out[i].data
			} else {
				old = get(w.key)
			}
			if old != nil {
				var r memoryRecord
				if err := json.Unmarshal(old, &r); err != nil {
					return nil, fmt.Errorf("memory record %q: %w", w.key, err)
				}
				if r.ExpiresAt.IsZero() || rec.UpdatedAt.Before(r.ExpiresAt) {
					prev, err := jsonvalue.Decode(r.Value)
					if err != nil {
						return nil, fmt.Errorf("memory record %q: %w", w.key, err)
					}
					add, err := jsonvalue.Decode(w.value)
					if err != nil {
						return nil, err
					}
					if rec.Value, err = jsonvalue.Marshal(jsonvalue.Combine(prev, add)); err != nil {
						return nil, err
					}
				}
			}
		}
		data, err := marshalRecord(&rec)
		if err != nil {
			return nil, err
		}
		put(memRecord{key: string(w.key), data: data, updatedAt: rec.UpdatedAt, expiresAt: rec.ExpiresAt, execution: rec.Execution})
	}
	return out, nil
}

// decodeMemory decodes the record under key; nil when it expired at now.
func decodeMemory(key, data []byte, now time.Time) (*engine.MemoryEntry, error) {
	ns, k, ok := bytes.Cut(key, []byte{0})
	if !ok {
		return nil, fmt.Errorf("memory: malformed key %q", key)
	}
	var r memoryRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("memory %s/%s: %w", ns, k, err)
	}
	e := &engine.MemoryEntry{Namespace: string(ns), Key: string(k), UpdatedAt: r.UpdatedAt, ExpiresAt: r.ExpiresAt, Execution: r.Execution}
	if !e.Live(now) {
		return nil, nil
	}
	v, err := jsonvalue.Decode(r.Value)
	if err != nil {
		return nil, fmt.Errorf("memory %s/%s: %w", ns, k, err)
	}
	e.Value = v
	return e, nil
}

// memoryExpiresAt reads the expiry of a memory record (zero: never).
func memoryExpiresAt(data []byte) (time.Time, error) {
	var r struct {
		ExpiresAt time.Time `json:"expiresAt,omitzero"`
	}
	err := json.Unmarshal(data, &r)
	return r.ExpiresAt, err
}

// memoryPrefix is the key prefix of a namespace's records ("" for all).
func memoryPrefix(namespace string) []byte {
	if namespace == "" {
		return nil
	}
	return append([]byte(namespace), 0)
}

var _ engine.MemoryStore = (*Bolt)(nil)

// writeMemory writes a commit's memory records (computed from the
// transaction's view before anything was written) and their expiry index.
func (x *tx) writeMemory(recs []memRecord) error {
	for _, r := range recs {
		key := []byte(r.key)
		ns, k, _ := strings.Cut(r.key, "\x00")
		if old := x.memory.Get(key); old != nil {
			exp, err := memoryExpiresAt(old)
			if err != nil {
				return fmt.Errorf("memory record %q: %w", key, err)
			}
			if !exp.IsZero() {
				if err := x.memExpiry.Delete(timedKey(exp, ns, k)); err != nil {
					return err
				}
			}
		}
		if r.data == nil {
			if err := x.memory.Delete(key); err != nil {
				return err
			}
			continue
		}
		if err := x.memory.Put(key, r.data); err != nil {
			return err
		}
		if !r.expiresAt.IsZero() {
			if err := x.memExpiry.Put(timedKey(r.expiresAt, ns, k), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// gcMemory removes the memory records expired at now.
func (x *tx) gcMemory(now time.Time, rep *GCReport) error {
	limit := timeKey(now)
	var keys [][]byte
	c := x.memExpiry.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) < 9 || binary.BigEndian.Uint64(k) > limit {
			break
		}
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := x.memExpiry.Delete(k); err != nil {
			return err
		}
		if err := x.memory.Delete(k[9:]); err != nil {
			return err
		}
		rep.Memory++
	}
	return nil
}

// ReadMemory returns the live entries of keys in namespace.
func (b *Bolt) ReadMemory(ctx context.Context, namespace string, keys []string, now time.Time) (map[string]*engine.MemoryEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]*engine.MemoryEntry, len(keys))
	err := b.view(func(x *tx) error {
		for _, k := range keys {
			key := idKey(namespace, k)
			v := x.memory.Get(key)
			if v == nil {
				continue
			}
			e, err := decodeMemory(key, v, now)
			if err != nil {
				return err
			}
			if e != nil {
				out[k] = e
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListMemory returns the live entries of namespace ("" for all), by
// namespace and key.
func (b *Bolt) ListMemory(ctx context.Context, namespace string, now time.Time) ([]*engine.MemoryEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*engine.MemoryEntry
	err := b.view(func(x *tx) error {
		return scanPrefix(x.memory, memoryPrefix(namespace), func(k, v []byte) error {
			e, err := decodeMemory(k, v, now)
			if e != nil {
				out = append(out, e)
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var _ engine.MemoryStore = (*Memory)(nil)

// ReadMemory returns the live entries of keys in namespace.
func (m *Memory) ReadMemory(ctx context.Context, namespace string, keys []string, now time.Time) (map[string]*engine.MemoryEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	out := make(map[string]*engine.MemoryEntry, len(keys))
	for _, k := range keys {
		key := idKey(namespace, k)
		v, ok := m.memory[string(key)]
		if !ok {
			continue
		}
		e, err := decodeMemory(key, v, now)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out[k] = e
		}
	}
	return out, nil
}

// ListMemory returns the live entries of namespace ("" for all), by
// namespace and key.
func (m *Memory) ListMemory(ctx context.Context, namespace string, now time.Time) ([]*engine.MemoryEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	prefix := string(memoryPrefix(namespace))
	keys := slices.Sorted(maps.Keys(m.memory))
	var out []*engine.MemoryEntry
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		e, err := decodeMemory([]byte(k), m.memory[k], now)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// gcMemory removes the memory records expired at now, with m.mu held.
func (m *Memory) gcMemory(now time.Time, rep *GCReport) error {
	for k, v := range m.memory {
		exp, err := memoryExpiresAt(v)
		if err != nil {
			return fmt.Errorf("memory record %q: %w", k, err)
		}
		if !exp.IsZero() && !now.Before(exp) {
			delete(m.memory, k)
			rep.Memory++
		}
	}
	return nil
}
