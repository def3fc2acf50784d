//go:build pebble

package pebble

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// The result cache (engine.CacheStore), with the memory store's rules
// (store/cache.go): an entry is a cacheRow as JSON under 'x' key. Claims
// live in memory (one process owns the folder), as do the entries' count
// and total size, read from the database at the first write that needs
// them. Hits and puts are written without a sync: a crash may lose the
// last ones, which only costs a result computed again.

// kindCache is the kind of the cache's keys.
const kindCache = 'x'

var _ engine.CacheStore = (*Store)(nil)

// cacheRow is a stored cache entry, without its key; Result is its exact
// JSON text.
type cacheRow struct {
	Scope     string    `json:"scope"`
	Workflow  string    `json:"workflow,omitempty"`
	State     string    `json:"state,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Execution string    `json:"execution,omitempty"`
	Result    string    `json:"result"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Hits      int64     `json:"hits,omitempty"`
	LastHitAt time.Time `json:"lastHitAt,omitzero"`
}

func (r *cacheRow) meta(key string) *engine.CacheEntry {
	return &engine.CacheEntry{Key: key, Scope: r.Scope, Workflow: r.Workflow, State: r.State, Agent: r.Agent, Execution: r.Execution,
		Size: r.Size, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Hits: r.Hits, LastHitAt: r.LastHitAt}
}

func (r *cacheRow) entry(key string) (*engine.CacheEntry, error) {
	e := r.meta(key)
	v, err := store.DecodeCacheResult(key, []byte(r.Result))
	if err != nil {
		return nil, err
	}
	e.Result = v
	return e, nil
}

func decodeCacheRow(key string, data []byte) (*cacheRow, error) {
	var r cacheRow
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("cache entry %q: %w: %w", key, store.ErrDatabaseCorrupt, err)
	}
	return &r, nil
}

// cacheState is what the Store keeps of the cache in memory, guarded by
// s.mu.
type cacheState struct {
	claims map[string]cacheClaim
	// counted says whether entries and bytes were read from the database.
	counted        bool
	entries, bytes int64
}

// cacheClaim is a key's claim: who computes it, until when.
type cacheClaim struct {
	owner string
	until time.Time
}

// countCache reads the entries' count and size once, with s.mu held.
func (s *Store) countCache() error {
	c := &s.cache
	if c.counted {
		return nil
	}
	c.entries, c.bytes = 0, 0
	err := scan(s.db, []byte{kindCache}, func(k, v []byte) error {
		r, err := decodeCacheRow(string(k), v)
		if err != nil {
			return err
		}
		c.entries++
		c.bytes += r.Size
		return nil
	})
	if err != nil {
		return err
	}
	c.counted = true
	return nil
}

// removeCache adds the deletion of entry r of key to b, with s.mu held.
func (s *Store) removeCache(b *pebble.Batch, key string, r *cacheRow) {
	b.Delete(append([]byte{kindCache}, key...), nil)
	if s.cache.counted {
		s.cache.entries--
		s.cache.bytes -= r.Size
	}
}

// ClaimCache returns the live entry of key, counting a hit at now, or
// makes owner the one to compute it until now+lease (nil, nil), or fails
// with engine.ErrCacheBusy while another owner's claim runs.
func (s *Store) ClaimCache(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (*engine.CacheEntry, error) {
	if err := store.CheckCacheClaim(key, owner, lease, false); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := append([]byte{kindCache}, key...)
	data, ok, err := get(s.db, k)
	if err != nil {
		return nil, s.dbErr(fmt.Sprintf("claiming cache %q", key), err)
	}
	if ok {
		r, err := decodeCacheRow(key, data)
		if err != nil {
			return nil, err
		}
		b := s.db.NewBatch()
		defer b.Close()
		if r.meta(key).Live(now) {
			r.Hits++
			r.LastHitAt = now.UTC()
			data, err := json.Marshal(r)
			if err != nil {
				return nil, err
			}
			b.Set(k, data, nil)
		} else {
			s.removeCache(b, key, r)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			s.cache.counted = false
			return nil, s.dbErr(fmt.Sprintf("claiming cache %q", key), err)
		}
		if r.meta(key).Live(now) {
			return r.entry(key)
		}
	}
	if cl := s.cache.claims[key]; cl.owner != "" && cl.owner != owner && now.Before(cl.until) {
		return nil, fmt.Errorf("claim cache %q: %w", key, engine.ErrCacheBusy)
	}
	if s.cache.claims == nil {
		s.cache.claims = make(map[string]cacheClaim)
	}
	s.cache.claims[key] = cacheClaim{owner: owner, until: now.Add(lease).UTC()}
	return nil, nil
}

// PutCache stores e, ends the claim on its key and removes the least
// recently used entries beyond limits.
func (s *Store) PutCache(ctx context.Context, e *engine.CacheEntry, limits engine.CacheLimits) error {
	p, result, err := store.PrepareCacheEntry(e)
	if err != nil {
		return err
	}
	l, err := store.CheckCacheLimits(limits)
	if err != nil {
		return err
	}
	data, err := json.Marshal(cacheRow{Scope: p.Scope, Workflow: p.Workflow, State: p.State, Agent: p.Agent, Execution: p.Execution,
		Result: string(result), Size: p.Size, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt, Hits: p.Hits, LastHitAt: p.LastHitAt})
	if err != nil {
		return fmt.Errorf("put cache %q: %w", p.Key, err)
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.countCache(); err != nil {
		return s.dbErr(fmt.Sprintf("putting cache %q", p.Key), err)
	}
	delete(s.cache.claims, p.Key)
	k := append([]byte{kindCache}, p.Key...)
	b := s.db.NewBatch()
	defer b.Close()
	old, ok, err := get(s.db, k)
	if err != nil {
		return s.dbErr(fmt.Sprintf("putting cache %q", p.Key), err)
	}
	if ok {
		r, err := decodeCacheRow(p.Key, old)
		if err != nil {
			return err
		}
		s.removeCache(b, p.Key, r)
	}
	if p.Size <= l.MaxBytes {
		b.Set(k, data, nil)
		s.cache.entries++
		s.cache.bytes += p.Size
		if err := s.evictCache(b, l, p.Key, p); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		s.cache.counted = false
		return s.dbErr(fmt.Sprintf("putting cache %q", p.Key), err)
	}
	return nil
}

// evictCache adds to b the removal of the least recently used entries
// until l holds; added is the entry b writes under key.
func (s *Store) evictCache(b *pebble.Batch, l engine.CacheLimits, key string, added *engine.CacheEntry) error {
	c := &s.cache
	if c.entries <= int64(l.MaxEntries) && c.bytes <= l.MaxBytes {
		return nil
	}
	type use struct {
		key  string
		at   time.Time
		size int64
	}
	uses := []use{{key, store.CacheUsed(added), added.Size}}
	err := scan(s.db, []byte{kindCache}, func(k, v []byte) error {
		if string(k) == key {
			return nil
		}
		r, err := decodeCacheRow(string(k), v)
		if err != nil {
			return err
		}
		uses = append(uses, use{string(k), store.CacheUsed(r.meta(string(k))), r.Size})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(uses, func(a, b use) int {
		if n := a.at.Compare(b.at); n != 0 {
			return n
		}
		return strings.Compare(a.key, b.key)
	})
	for _, u := range uses {
		if c.entries <= int64(l.MaxEntries) && c.bytes <= l.MaxBytes {
			break
		}
		b.Delete(append([]byte{kindCache}, u.key...), nil)
		c.entries--
		c.bytes -= u.size
	}
	return nil
}

// ReleaseCache ends owner's claim on key (another owner's claim stays).
func (s *Store) ReleaseCache(ctx context.Context, key, owner string) error {
	if err := store.CheckCacheClaim(key, owner, 0, true); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	if cl, ok := s.cache.claims[key]; ok && cl.owner == owner {
		delete(s.cache.claims, key)
	}
	return nil
}

// ListCache lists the live entries at now that f selects, by key.
func (s *Store) ListCache(ctx context.Context, f engine.CacheFilter, now time.Time) ([]*engine.CacheEntry, error) {
	if err := store.CheckCacheFilter(f); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindCache}, UpperBound: []byte{kindCache + 1}})
	if err != nil {
		return nil, s.dbErr("listing the cache", err)
	}
	defer it.Close()
	ok := it.First()
	if f.After != "" {
		ok = it.SeekGE(append([]byte{kindCache}, append([]byte(f.After), 0)...))
	}
	var out []*engine.CacheEntry
	for ; ok && (f.Limit == 0 || len(out) < f.Limit); ok = it.Next() {
		k := string(it.Key()[1:])
		r, err := decodeCacheRow(k, it.Value())
		if err != nil {
			return nil, err
		}
		m := r.meta(k)
		if !m.Live(now) || f.Workflow != "" && m.Workflow != f.Workflow || f.Scope != "" && m.Scope != f.Scope {
			continue
		}
		e, err := r.entry(k)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := it.Error(); err != nil {
		return nil, s.dbErr("listing the cache", err)
	}
	return out, nil
}

// PurgeCache removes the entry of key (every entry for "") and the
// entries expired at now, and returns how many it removed.
func (s *Store) PurgeCache(ctx context.Context, key string, now time.Time) (int, error) {
	if err := store.CheckCachePurge(key); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	err := scan(s.db, []byte{kindCache}, func(k, v []byte) error {
		r, err := decodeCacheRow(string(k), v)
		if err != nil {
			return err
		}
		if key == "" || string(k) == key || !r.meta(string(k)).Live(now) {
			s.removeCache(b, string(k), r)
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		s.cache.counted = false
		return 0, s.dbErr("purging the cache", err)
	}
	return n, nil
}
