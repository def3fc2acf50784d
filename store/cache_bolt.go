package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// Bolt's result cache is one bucket, cache, made by the first write of
// the cache (a database that never cached has none, and reads as an empty
// cache). Its parts, by the first byte of their keys:
//
//	'r' key                   the entry's record (cacheRecord, JSON)
//	'u' last use NUL key      empty: the eviction order (timedKey)
//	'w' workflow NUL key      empty: the entries of a workflow, by key
//	'x' expiry NUL key        empty: the entries that expire, soonest first
//	'c' key                   the claim: until (8 bytes) and owner
//	't'                       the entries' count and bytes (8 bytes each)
//
// Every call is one write transaction of the commit loop (ListCache a
// read transaction): a hit counts itself, a miss writes its claim.
var bucketCache = []byte("cache")

// cacheTotalsKey is the key of the totals.
var cacheTotalsKey = []byte{'t'}

// boltCache is a transaction's cache bucket.
type boltCache struct {
	b                       *bbolt.Bucket
	records, used, wf, exp  outboxPart
	claims                  outboxPart
	count, bytes            int64
	totalsRead, totalsDirty bool
}

// openCache returns the transaction's cache; nil when it has no bucket
// and create is false (a read transaction).
func openCache(t *bbolt.Tx, create bool) (*boltCache, error) {
	b := t.Bucket(bucketCache)
	if b == nil {
		if !create {
			return nil, nil
		}
		var err error
		if b, err = t.CreateBucket(bucketCache); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", bucketCache, err)
		}
	}
	return &boltCache{b: b, records: outboxPart{b, 'r'}, used: outboxPart{b, 'u'}, wf: outboxPart{b, 'w'}, exp: outboxPart{b, 'x'}, claims: outboxPart{b, 'c'}}, nil
}

// totals reads the count and bytes once a transaction.
func (c *boltCache) totals() error {
	if c.totalsRead {
		return nil
	}
	v := c.b.Get(cacheTotalsKey)
	switch len(v) {
	case 0:
	case 16:
		c.count, c.bytes = int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
	default:
		return fmt.Errorf("bucket %s: totals of %d bytes, want 16", bucketCache, len(v))
	}
	c.totalsRead = true
	return nil
}

// flush writes the totals when they changed.
func (c *boltCache) flush() error {
	if !c.totalsDirty {
		return nil
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(c.count))
	return c.b.Put(cacheTotalsKey, binary.BigEndian.AppendUint64(v, uint64(c.bytes)))
}

// get returns the record of key, nil when there is none.
func (c *boltCache) get(key string) (*cacheRecord, error) {
	v := c.records.Get([]byte(key))
	if v == nil {
		return nil, nil
	}
	return decodeCacheRecord(key, v)
}

// indexes are the index keys of entry key whose record is r.
func (r *cacheRecord) indexes(c *boltCache, key string) []struct {
	p outboxPart
	k []byte
} {
	ix := []struct {
		p outboxPart
		k []byte
	}{{c.used, timedKey(CacheUsed(r.meta(key)), key)}, {c.wf, idKey(r.Workflow, key)}}
	if !r.ExpiresAt.IsZero() {
		ix = append(ix, struct {
			p outboxPart
			k []byte
		}{c.exp, timedKey(r.ExpiresAt, key)})
	}
	return ix
}

// remove removes entry key, whose record is r, and its indexes.
func (c *boltCache) remove(key string, r *cacheRecord) error {
	if err := c.totals(); err != nil {
		return err
	}
	if err := c.records.Delete([]byte(key)); err != nil {
		return err
	}
	for _, x := range r.indexes(c, key) {
		if err := x.p.Delete(x.k); err != nil {
			return err
		}
	}
	c.count, c.bytes, c.totalsDirty = c.count-1, c.bytes-r.Size, true
	return nil
}

// insert writes entry key, which has no record, and its indexes.
func (c *boltCache) insert(key string, r *cacheRecord) error {
	if err := c.totals(); err != nil {
		return err
	}
	data, err := marshalRecord(r)
	if err != nil {
		return fmt.Errorf("cache entry %q: %w", key, err)
	}
	if err := c.records.Put([]byte(key), data); err != nil {
		return err
	}
	for _, x := range r.indexes(c, key) {
		if err := x.p.Put(x.k, nil); err != nil {
			return err
		}
	}
	c.count, c.bytes, c.totalsDirty = c.count+1, c.bytes+r.Size, true
	return nil
}

// hit counts a hit at now on entry key, whose record is r.
func (c *boltCache) hit(key string, r *cacheRecord, now time.Time) error {
	old := timedKey(CacheUsed(r.meta(key)), key)
	r.Hits++
	r.LastHitAt = now.UTC()
	data, err := marshalRecord(r)
	if err != nil {
		return fmt.Errorf("cache entry %q: %w", key, err)
	}
	if err := c.records.Put([]byte(key), data); err != nil {
		return err
	}
	if err := c.used.Delete(old); err != nil {
		return err
	}
	return c.used.Put(timedKey(r.LastHitAt, key), nil)
}

// claim returns the claim on key (owner "" when there is none).
func (c *boltCache) claim(key string) cacheClaim {
	v := c.claims.Get([]byte(key))
	if len(v) < 8 {
		return cacheClaim{}
	}
	return cacheClaim{until: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), owner: string(v[8:])}
}

// putClaim makes owner the claimant of key until until.
func (c *boltCache) putClaim(key, owner string, until time.Time) error {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(owner)), timeKey(until))
	return c.claims.Put([]byte(key), append(v, owner...))
}

// errCacheUnchanged rejects a write request that has nothing to write, so
// that its transaction is not committed for it; its callers answer nil.
var errCacheUnchanged = errors.New("the cache is unchanged")

// unchanged returns err, nil for errCacheUnchanged.
func unchanged(err error) error {
	if errors.Is(err, errCacheUnchanged) {
		return nil
	}
	return err
}

// evict removes the least recently used entries until l holds.
func (c *boltCache) evict(l engine.CacheLimits) error {
	if err := c.totals(); err != nil {
		return err
	}
	for c.count > int64(l.MaxEntries) || c.bytes > l.MaxBytes {
		var first []byte
		if err := c.used.each(nil, func(k []byte) (bool, error) {
			first = bytes.Clone(k)
			return false, nil
		}); err != nil {
			return err
		}
		if len(first) < 9 {
			return fmt.Errorf("bucket %s: totals count %d entries of %d bytes, the eviction index none", bucketCache, c.count, c.bytes)
		}
		key := string(first[9:])
		r, err := c.get(key)
		switch {
		case err != nil:
			return err
		case r == nil:
			return fmt.Errorf("bucket %s: indexed entry %q has no record", bucketCache, key)
		}
		if err := c.remove(key, r); err != nil {
			return err
		}
	}
	return nil
}

var _ engine.CacheStore = (*Bolt)(nil)

// ClaimCache returns the live entry of key, counting a hit at now, or
// makes owner the one to compute it until now+lease (nil, nil), or fails
// with engine.ErrCacheBusy while another owner's claim runs. An expired
// entry it meets is removed.
func (b *Bolt) ClaimCache(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (*engine.CacheEntry, error) {
	if err := CheckCacheClaim(key, owner, lease, false); err != nil {
		return nil, err
	}
	var (
		found *cacheRecord
		busy  bool
	)
	err := b.write(ctx, func(x *tx) error {
		found, busy = nil, false
		c, err := openCache(x.heads.Tx(), true)
		if err != nil {
			return err
		}
		r, err := c.get(key)
		if err != nil {
			return err // the bucket may have been made: no rejection
		}
		busy = c.claim(key).busy(owner, now)
		switch {
		case r != nil && r.meta(key).Live(now):
			found = r
			return c.hit(key, r, now)
		case r != nil:
			if err := c.remove(key, r); err != nil {
				return err
			}
		case busy:
			// Nothing to write: the transaction need not commit for it.
			return reject(errCacheUnchanged)
		}
		if !busy {
			if err := c.putClaim(key, owner, now.Add(lease)); err != nil {
				return err
			}
		}
		return c.flush()
	})
	switch {
	case errors.Is(err, errCacheUnchanged):
		return nil, fmt.Errorf("claim cache %q: %w", key, engine.ErrCacheBusy)
	case err != nil:
		return nil, fmt.Errorf("claim cache %q: %w", key, err)
	case busy:
		return nil, fmt.Errorf("claim cache %q: %w", key, engine.ErrCacheBusy)
	case found != nil:
		return found.entry(key)
	}
	return nil, nil
}

// PutCache stores e, ends the claim on its key and removes the least
// recently used entries beyond limits.
func (b *Bolt) PutCache(ctx context.Context, e *engine.CacheEntry, limits engine.CacheLimits) error {
	p, result, err := PrepareCacheEntry(e)
	if err != nil {
		return err
	}
	l, err := CheckCacheLimits(limits)
	if err != nil {
		return err
	}
	rec := newCacheRecord(p, result)
	err = b.write(ctx, func(x *tx) error {
		c, err := openCache(x.heads.Tx(), true)
		if err != nil {
			return err
		}
		old, err := c.get(p.Key)
		if err != nil {
			return err // the bucket may have been made: no rejection
		}
		if err := c.claims.Delete([]byte(p.Key)); err != nil {
			return err
		}
		if old != nil {
			if err := c.remove(p.Key, old); err != nil {
				return err
			}
		}
		if p.Size <= l.MaxBytes {
			if err := c.insert(p.Key, rec); err != nil {
				return err
			}
			if err := c.evict(l); err != nil {
				return err
			}
		}
		return c.flush()
	})
	if err != nil {
		return fmt.Errorf("put cache %q: %w", p.Key, err)
	}
	return nil
}

// ReleaseCache ends owner's claim on key (another owner's claim stays).
func (b *Bolt) ReleaseCache(ctx context.Context, key, owner string) error {
	if err := CheckCacheClaim(key, owner, 0, true); err != nil {
		return err
	}
	err := b.write(ctx, func(x *tx) error {
		c, err := openCache(x.heads.Tx(), false)
		switch {
		case err != nil:
			return reject(err)
		case c == nil || c.claim(key).owner != owner:
			return reject(errCacheUnchanged)
		}
		return c.claims.Delete([]byte(key))
	})
	if err = unchanged(err); err != nil {
		return fmt.Errorf("release cache %q: %w", key, err)
	}
	return nil
}

// ListCache lists the live entries at now that f selects, by key, reading
// the workflow index when f names a workflow.
func (b *Bolt) ListCache(ctx context.Context, f engine.CacheFilter, now time.Time) ([]*engine.CacheEntry, error) {
	if err := CheckCacheFilter(f); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*engine.CacheEntry
	err := b.view(func(x *tx) error {
		c, err := openCache(x.heads.Tx(), false)
		if err != nil || c == nil {
			return err
		}
		part, prefix := c.records, []byte(nil)
		if f.Workflow != "" {
			part, prefix = c.wf, idKey(f.Workflow, "")
		}
		start := append(bytes.Clone(prefix), f.After...)
		return part.each(start, func(k []byte) (bool, error) {
			if !bytes.HasPrefix(k, prefix) || (f.Limit > 0 && len(out) == f.Limit) {
				return false, nil
			}
			if f.After != "" && bytes.Equal(k, start) {
				return true, nil
			}
			key := string(k[len(prefix):])
			r, err := c.get(key)
			switch {
			case err != nil:
				return false, err
			case r == nil:
				return false, fmt.Errorf("bucket %s: indexed entry %q has no record", bucketCache, key)
			case !cacheListed(r.meta(key), f, now):
				return true, nil
			}
			e, err := r.entry(key)
			if err != nil {
				return false, err
			}
			out = append(out, e)
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list cache: %w", err)
	}
	return out, nil
}

// PurgeCache removes the entry of key (every entry for "") and the
// entries expired at now, reading the expiry index, and returns how many
// it removed.
func (b *Bolt) PurgeCache(ctx context.Context, key string, now time.Time) (int, error) {
	if err := CheckCachePurge(key); err != nil {
		return 0, err
	}
	var n int
	err := b.write(ctx, func(x *tx) error {
		n = 0
		c, err := openCache(x.heads.Tx(), false)
		switch {
		case err != nil:
			return reject(err)
		case c == nil:
			return reject(errCacheUnchanged)
		}
		var keys []string
		if key == "" {
			err = c.records.each(nil, func(k []byte) (bool, error) {
				keys = append(keys, string(k))
				return true, nil
			})
		} else {
			keys = append(keys, key)
			limit := timeKey(now)
			err = c.exp.each(nil, func(k []byte) (bool, error) {
				if len(k) < 9 || binary.BigEndian.Uint64(k) > limit {
					return false, nil
				}
				if k := string(k[9:]); k != key {
					keys = append(keys, k)
				}
				return true, nil
			})
		}
		if err != nil {
			return reject(err)
		}
		for _, k := range keys {
			r, err := c.get(k)
			switch {
			case err != nil:
				return err
			case r == nil:
				continue
			}
			if err := c.remove(k, r); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return reject(errCacheUnchanged)
		}
		return c.flush()
	})
	if err = unchanged(err); err != nil {
		return 0, fmt.Errorf("purge cache: %w", err)
	}
	return n, nil
}
