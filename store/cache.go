package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// The result cache (engine.CacheStore). An entry is kept under its key
// with where it was made, its result (JSON text), size, times and hits; a
// claim is the key's owner and the time (the callers' clock, as every
// time the cache is given) until which it computes the entry. Every store
// keeps the same rules, checked here:
//
//   - An entry whose ExpiresAt passed reads as absent: ClaimCache removes
//     it when it meets it, ListCache skips it, PurgeCache removes them all.
//   - An entry's Size is the length of its result's JSON as the store
//     encodes it (jsonvalue.Marshal), whatever the caller's Size said.
//   - Its last use is LastHitAt, else CreatedAt: past either limit,
//     PutCache removes entries by last use, the oldest first (ties by
//     key). An entry larger than the whole MaxBytes is not kept (the
//     entry of its key is removed, the claim ended).
//   - PutCache keeps the Hits and LastHitAt it is given (an entry put
//     anew comes with none).

// ErrCacheArgument reports an argument of a cache call that a store
// refuses (the error says which and why).
var ErrCacheArgument = errors.New("invalid cache argument")

// MaxCacheKey bounds the length of a cache key, of an owner and of the
// names an entry keeps, in bytes.
const MaxCacheKey = 4096

// cacheName checks a key, owner, or listed name: what must not be empty
// (when need) and must be UTF-8 text without NUL of at most MaxCacheKey
// bytes.
func cacheName(what, v string, need bool) error {
	switch {
	case v == "" && need:
		return fmt.Errorf("empty %s: %w", what, ErrCacheArgument)
	case len(v) > MaxCacheKey:
		return fmt.Errorf("%s of %d bytes is longer than %d: %w", what, len(v), MaxCacheKey, ErrCacheArgument)
	case !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%s %q is not UTF-8 text without NUL: %w", what, v, ErrCacheArgument)
	}
	return nil
}

// CheckCacheClaim checks ClaimCache's and ReleaseCache's arguments (lease
// is not checked when release).
func CheckCacheClaim(key, owner string, lease time.Duration, release bool) error {
	where := "claim cache"
	if release {
		where = "release cache"
	}
	if err := cacheName("key", key, true); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := cacheName("owner", owner, true); err != nil {
		return fmt.Errorf("%s %q: %w", where, key, err)
	}
	if !release && lease <= 0 {
		return fmt.Errorf("%s %q: lease is %v, want more than 0: %w", where, key, lease, ErrCacheArgument)
	}
	return nil
}

// CheckCachePurge checks PurgeCache's key ("" for every entry).
func CheckCachePurge(key string) error {
	if err := cacheName("key", key, false); err != nil {
		return fmt.Errorf("purge cache: %w", err)
	}
	return nil
}

// CheckCacheLimits checks PutCache's limits and returns them with zero
// fields set to engine.DefaultCacheLimits'.
func CheckCacheLimits(l engine.CacheLimits) (engine.CacheLimits, error) {
	if l.MaxEntries < 0 || l.MaxBytes < 0 {
		return l, fmt.Errorf("put cache: limits %d entries, %d bytes: want 0 (the default) or more: %w", l.MaxEntries, l.MaxBytes, ErrCacheArgument)
	}
	if l.MaxEntries == 0 {
		l.MaxEntries = engine.DefaultCacheLimits.MaxEntries
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = engine.DefaultCacheLimits.MaxBytes
	}
	return l, nil
}

// CheckCacheFilter checks ListCache's filter.
func CheckCacheFilter(f engine.CacheFilter) error {
	if f.Limit < 0 {
		return fmt.Errorf("list cache: limit %d, want 0 (all) or more: %w", f.Limit, ErrCacheArgument)
	}
	for _, x := range []struct{ what, v string }{{"workflow", f.Workflow}, {"scope", f.Scope}, {"after", f.After}} {
		if err := cacheName(x.what, x.v, false); err != nil {
			return fmt.Errorf("list cache: %w", err)
		}
	}
	return nil
}

// PrepareCacheEntry checks an entry PutCache is given and returns a copy
// to store, with its times in UTC and its Size set, and its result's JSON.
// An entry is refused (ErrCacheArgument) for a bad key, a scope that is
// not one of engine's, names that are not UTF-8 text without NUL, a zero
// CreatedAt, negative Hits, or a result that is not JSON.
func PrepareCacheEntry(e *engine.CacheEntry) (*engine.CacheEntry, []byte, error) {
	if e == nil {
		return nil, nil, fmt.Errorf("put cache: no entry: %w", ErrCacheArgument)
	}
	if err := cacheName("key", e.Key, true); err != nil {
		return nil, nil, fmt.Errorf("put cache: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("put cache %q: %s: %w", e.Key, fmt.Sprintf(format, args...), ErrCacheArgument)
	}
	switch e.Scope {
	case engine.CacheScopeExecution, engine.CacheScopeWorkflow, engine.CacheScopeGlobal:
	default:
		return nil, nil, bad("scope %q, want %s, %s or %s", e.Scope, engine.CacheScopeExecution, engine.CacheScopeWorkflow, engine.CacheScopeGlobal)
	}
	for _, x := range []struct{ what, v string }{{"workflow", e.Workflow}, {"state", e.State}, {"agent", e.Agent}, {"execution", e.Execution}} {
		if err := cacheName(x.what, x.v, false); err != nil {
			return nil, nil, fmt.Errorf("put cache %q: %w", e.Key, err)
		}
	}
	switch {
	case e.CreatedAt.IsZero():
		return nil, nil, bad("zero createdAt")
	case e.Hits < 0:
		return nil, nil, bad("hits %d, want 0 or more", e.Hits)
	}
	result, err := jsonvalue.Marshal(e.Result)
	if err != nil {
		return nil, nil, bad("result: %v", err)
	}
	c := *e
	c.Result = nil
	c.Size = int64(len(result))
	c.CreatedAt, c.ExpiresAt, c.LastHitAt = utc(e.CreatedAt), utc(e.ExpiresAt), utc(e.LastHitAt)
	return &c, result, nil
}

// DecodeCacheResult decodes the stored result of entry key.
func DecodeCacheResult(key string, data []byte) (any, error) {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("cache entry %q: result: %w", key, err)
	}
	return v, nil
}

// CacheUsed is when entry e was last used, as eviction orders entries:
// LastHitAt, else CreatedAt.
func CacheUsed(e *engine.CacheEntry) time.Time {
	if !e.LastHitAt.IsZero() {
		return e.LastHitAt
	}
	return e.CreatedAt
}

// cacheRecord is a cache entry as Bolt and Memory store it, under its key.
type cacheRecord struct {
	Scope     string          `json:"scope"`
	Workflow  string          `json:"workflow,omitempty"`
	State     string          `json:"state,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	Execution string          `json:"execution,omitempty"`
	Result    json.RawMessage `json:"result"`
	Size      int64           `json:"size"`
	CreatedAt time.Time       `json:"createdAt"`
	ExpiresAt time.Time       `json:"expiresAt,omitzero"`
	Hits      int64           `json:"hits,omitempty"`
	LastHitAt time.Time       `json:"lastHitAt,omitzero"`
}

// newCacheRecord is the record of a prepared entry and its result.
func newCacheRecord(e *engine.CacheEntry, result []byte) *cacheRecord {
	return &cacheRecord{
		Scope: e.Scope, Workflow: e.Workflow, State: e.State, Agent: e.Agent, Execution: e.Execution,
		Result: result, Size: e.Size, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, Hits: e.Hits, LastHitAt: e.LastHitAt,
	}
}

// decodeCacheRecord decodes the record of entry key.
func decodeCacheRecord(key string, data []byte) (*cacheRecord, error) {
	var r cacheRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("cache entry %q: %w", key, err)
	}
	return &r, nil
}

// meta is the entry of r without its result.
func (r *cacheRecord) meta(key string) *engine.CacheEntry {
	return &engine.CacheEntry{
		Key: key, Scope: r.Scope, Workflow: r.Workflow, State: r.State, Agent: r.Agent, Execution: r.Execution,
		Size: r.Size, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Hits: r.Hits, LastHitAt: r.LastHitAt,
	}
}

// entry is the entry of r with its result decoded.
func (r *cacheRecord) entry(key string) (*engine.CacheEntry, error) {
	e := r.meta(key)
	v, err := DecodeCacheResult(key, r.Result)
	if err != nil {
		return nil, err
	}
	e.Result = v
	return e, nil
}

// listed reports whether entry e passes filter f (whose After and Limit
// the caller applies) at now.
func cacheListed(e *engine.CacheEntry, f engine.CacheFilter, now time.Time) bool {
	return e.Live(now) && (f.Workflow == "" || e.Workflow == f.Workflow) && (f.Scope == "" || e.Scope == f.Scope)
}

// cacheClaim is a key's claim: who computes it, until when.
type cacheClaim struct {
	owner string
	until time.Time
}

// busy reports whether the claim keeps owner from claiming at now.
func (c cacheClaim) busy(owner string, now time.Time) bool {
	return c.owner != "" && c.owner != owner && now.Before(c.until)
}

// memCache is Memory's result cache: encoded records by key, the claims
// by key and the sum of the entries' sizes. Its zero value is empty; the
// maps are made at the first write.
type memCache struct {
	entries map[string][]byte
	sizes   map[string]int64
	bytes   int64
	claims  map[string]cacheClaim
}

// init makes the maps of an empty cache.
func (c *memCache) init() {
	if c.entries == nil {
		c.entries, c.sizes, c.claims = make(map[string][]byte), make(map[string]int64), make(map[string]cacheClaim)
	}
}

// remove removes the entry of key, reporting whether there was one.
func (c *memCache) remove(key string) bool {
	if _, ok := c.entries[key]; !ok {
		return false
	}
	c.bytes -= c.sizes[key]
	delete(c.entries, key)
	delete(c.sizes, key)
	return true
}

// evict removes the least recently used entries until l holds.
func (c *memCache) evict(l engine.CacheLimits) error {
	if len(c.entries) <= l.MaxEntries && c.bytes <= l.MaxBytes {
		return nil
	}
	type use struct {
		key string
		at  time.Time
	}
	uses := make([]use, 0, len(c.entries))
	for k, data := range c.entries {
		r, err := decodeCacheRecord(k, data)
		if err != nil {
			return err
		}
		uses = append(uses, use{k, CacheUsed(r.meta(k))})
	}
	slices.SortFunc(uses, func(a, b use) int {
		if n := a.at.Compare(b.at); n != 0 {
			return n
		}
		return strings.Compare(a.key, b.key)
	})
	for _, u := range uses {
		if len(c.entries) <= l.MaxEntries && c.bytes <= l.MaxBytes {
			break
		}
		c.remove(u.key)
	}
	return nil
}

var _ engine.CacheStore = (*Memory)(nil)

// ClaimCache returns the live entry of key, counting a hit at now, or
// makes owner the one to compute it until now+lease (nil, nil), or fails
// with engine.ErrCacheBusy while another owner's claim runs.
func (m *Memory) ClaimCache(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (*engine.CacheEntry, error) {
	if err := CheckCacheClaim(key, owner, lease, false); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	c := &m.cache
	c.init()
	if data, ok := c.entries[key]; ok {
		r, err := decodeCacheRecord(key, data)
		if err != nil {
			return nil, err
		}
		if r.meta(key).Live(now) {
			r.Hits++
			r.LastHitAt = now.UTC()
			if data, err = marshalRecord(r); err != nil {
				return nil, err
			}
			c.entries[key] = data
			return r.entry(key)
		}
		c.remove(key)
	}
	if c.claims[key].busy(owner, now) {
		return nil, fmt.Errorf("claim cache %q: %w", key, engine.ErrCacheBusy)
	}
	c.claims[key] = cacheClaim{owner: owner, until: now.Add(lease).UTC()}
	return nil, nil
}

// PutCache stores e, ends the claim on its key and removes the least
// recently used entries beyond limits.
func (m *Memory) PutCache(ctx context.Context, e *engine.CacheEntry, limits engine.CacheLimits) error {
	p, result, err := PrepareCacheEntry(e)
	if err != nil {
		return err
	}
	l, err := CheckCacheLimits(limits)
	if err != nil {
		return err
	}
	data, err := marshalRecord(newCacheRecord(p, result))
	if err != nil {
		return fmt.Errorf("put cache %q: %w", p.Key, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	c := &m.cache
	c.init()
	delete(c.claims, p.Key)
	c.remove(p.Key)
	if p.Size > l.MaxBytes {
		return nil
	}
	c.entries[p.Key], c.sizes[p.Key] = data, p.Size
	c.bytes += p.Size
	return c.evict(l)
}

// ReleaseCache ends owner's claim on key (another owner's claim stays).
func (m *Memory) ReleaseCache(ctx context.Context, key, owner string) error {
	if err := CheckCacheClaim(key, owner, 0, true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if cl, ok := m.cache.claims[key]; ok && cl.owner == owner {
		delete(m.cache.claims, key)
	}
	return nil
}

// ListCache lists the live entries at now that f selects, by key.
func (m *Memory) ListCache(ctx context.Context, f engine.CacheFilter, now time.Time) ([]*engine.CacheEntry, error) {
	if err := CheckCacheFilter(f); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []*engine.CacheEntry
	for _, k := range slices.Sorted(maps.Keys(m.cache.entries)) {
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		if k <= f.After {
			continue
		}
		r, err := decodeCacheRecord(k, m.cache.entries[k])
		if err != nil {
			return nil, err
		}
		if !cacheListed(r.meta(k), f, now) {
			continue
		}
		e, err := r.entry(k)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// PurgeCache removes the entry of key (every entry for "") and the
// entries expired at now, and returns how many it removed.
func (m *Memory) PurgeCache(ctx context.Context, key string, now time.Time) (int, error) {
	if err := CheckCachePurge(key); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	c := &m.cache
	n := 0
	for k, data := range c.entries {
		if key != "" && k != key {
			r, err := decodeCacheRecord(k, data)
			if err != nil {
				return n, err
			}
			if r.meta(k).Live(now) {
				continue
			}
		}
		c.remove(k)
		n++
	}
	return n, nil
}
