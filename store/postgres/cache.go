package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// The result cache (engine.CacheStore), in tables result_cache,
// cache_claims and cache_totals (migration 0008), with package store's
// rules (store.PrepareCacheEntry and the rest).
//
// Clocks: every time is the callers' (Unix nanoseconds), the claims'
// expiry too, as in the outbox: a claim only spares a second computation
// of an entry, so servers whose clocks disagree by less than a lease at
// worst compute an entry twice, and the entries' TTLs, which are the
// callers' times, and the claims agree.
//
// Locks, always taken in this order: a transaction-scoped advisory lock
// on the key (so that a claim and a put of one key never interleave: a
// claim that misses sees no put commit before it claims), then the one row
// of cache_totals (every transaction that adds or removes entries holds
// it, so the totals are exact and puts evict one at a time), then rows of
// result_cache. A hit is one UPDATE of its row and takes no other lock;
// a claim removes no expired entry (the put that follows replaces it).

var _ engine.CacheStore = (*DB)(nil)

// evictBatch is how many eviction candidates a put reads at a time.
const evictBatch = 64

// The cache's statements.
const (
	cacheColumns = `key, scope, workflow, state, agent, execution, result, size, created_ns, expires_ns, hits, last_hit_ns`

	lockCacheKey = `SELECT pg_advisory_xact_lock(hashtextextended('aslrun cache ' || $1, 0))`

	// hitCache counts a hit at $2 on the live entry of $1.
	hitCache = `UPDATE result_cache SET hits = hits + 1, last_hit_ns = $2, used_ns = $2
WHERE key = $1 AND (expires_ns IS NULL OR expires_ns > $2)
RETURNING ` + cacheColumns

	// claimCache makes $2 the claimant of $1 until $3, unless another
	// owner's claim runs at $4.
	claimCache = `INSERT INTO cache_claims AS c (key, owner, until_ns) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, until_ns = EXCLUDED.until_ns
WHERE c.owner = EXCLUDED.owner OR c.until_ns <= $4
RETURNING true`

	lockCacheTotals = `SELECT entries, bytes FROM cache_totals FOR UPDATE`

	insertCache = `INSERT INTO result_cache (` + cacheColumns + `, used_ns)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

	// evictCandidates are the least recently used entries.
	evictCandidates = `SELECT key, size FROM result_cache ORDER BY used_ns, key LIMIT $1`

	setCacheTotals = `UPDATE cache_totals SET entries = $1, bytes = $2`

	// purgeCache removes the entry of $1 (all for '') and those expired
	// at $2, and takes them off the totals.
	purgeCache = `WITH d AS (
  DELETE FROM result_cache WHERE $1 = '' OR key = $1 OR expires_ns <= $2 RETURNING size
), t AS (
  UPDATE cache_totals SET entries = entries - (SELECT count(*) FROM d), bytes = bytes - (SELECT coalesce(sum(size), 0) FROM d)
)
SELECT count(*) FROM d`

	// listCache lists the live entries at $4 after $3, of scope $2 ('':
	// any), at most $5 (NULL: all); listWorkflowCache those of workflow
	// $1, which read its index.
	listCache = `SELECT ` + cacheColumns + ` FROM result_cache
WHERE $1::text IS NULL AND ($2 = '' OR scope = $2) AND key > $3 AND (expires_ns IS NULL OR expires_ns > $4)
ORDER BY key LIMIT $5`
	listWorkflowCache = `SELECT ` + cacheColumns + ` FROM result_cache
WHERE workflow = $1 AND ($2 = '' OR scope = $2) AND key > $3 AND (expires_ns IS NULL OR expires_ns > $4)
ORDER BY workflow, key LIMIT $5`
)

// scanCacheEntry scans a row of cacheColumns.
func scanCacheEntry(r pgx.Row) (*engine.CacheEntry, error) {
	var e engine.CacheEntry
	var result []byte
	var created int64
	var expires, lastHit *int64
	if err := r.Scan(&e.Key, &e.Scope, &e.Workflow, &e.State, &e.Agent, &e.Execution, &result, &e.Size, &created, &expires, &e.Hits, &lastHit); err != nil {
		return nil, err
	}
	e.CreatedAt, e.ExpiresAt, e.LastHitAt = nsTime(&created), nsTime(expires), nsTime(lastHit)
	v, err := store.DecodeCacheResult(e.Key, result)
	if err != nil {
		return nil, err
	}
	e.Result = v
	return &e, nil
}

// ClaimCache returns the live entry of key, counting a hit at now, or
// makes owner the one to compute it until now+lease (nil, nil), or fails
// with engine.ErrCacheBusy while another owner's claim runs. A hit is one
// statement; a miss is a transaction that locks the key, looks again and
// claims.
func (db *DB) ClaimCache(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (*engine.CacheEntry, error) {
	if err := store.CheckCacheClaim(key, owner, lease, false); err != nil {
		return nil, err
	}
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	e, err := scanCacheEntry(db.pool.QueryRow(ctx, hitCache, key, store.TimeKey(now)))
	switch {
	case err == nil:
		return e, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, db.dbErr(fmt.Sprintf("claiming cache entry %q", key), err)
	}
	var busy bool
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		e, busy = nil, false
		if _, err := tx.Exec(ctx, lockCacheKey, key); err != nil {
			return err
		}
		var err error
		e, err = scanCacheEntry(tx.QueryRow(ctx, hitCache, key, store.TimeKey(now)))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var ok bool
		err = tx.QueryRow(ctx, claimCache, key, owner, store.TimeKey(now.Add(lease)), store.TimeKey(now)).Scan(&ok)
		if errors.Is(err, pgx.ErrNoRows) {
			busy, err = true, nil
		}
		return err
	})
	switch {
	case err != nil:
		return nil, db.dbErr(fmt.Sprintf("claiming cache entry %q", key), err)
	case busy:
		return nil, fmt.Errorf("claim cache %q: %w", key, engine.ErrCacheBusy)
	}
	return e, nil
}

// PutCache stores e, ends the claim on its key and removes the least
// recently used entries beyond limits, in one transaction that holds the
// totals' row: it reads the eviction index from its start, evictBatch
// entries at a time, so that a put reads what it evicts and little more.
func (db *DB) PutCache(ctx context.Context, e *engine.CacheEntry, limits engine.CacheLimits) error {
	p, result, err := store.PrepareCacheEntry(e)
	if err != nil {
		return err
	}
	l, err := store.CheckCacheLimits(limits)
	if err != nil {
		return err
	}
	if err := db.check(ctx); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockCacheKey, p.Key); err != nil {
			return err
		}
		var entries, bytes int64
		if err := tx.QueryRow(ctx, lockCacheTotals).Scan(&entries, &bytes); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cache_claims WHERE key = $1`, p.Key); err != nil {
			return err
		}
		var old int64
		switch err := tx.QueryRow(ctx, `DELETE FROM result_cache WHERE key = $1 RETURNING size`, p.Key).Scan(&old); {
		case err == nil:
			entries, bytes = entries-1, bytes-old
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if p.Size <= l.MaxBytes {
			_, err := tx.Exec(ctx, insertCache, p.Key, p.Scope, p.Workflow, p.State, p.Agent, p.Execution, result, p.Size,
				store.TimeKey(p.CreatedAt), nsOrNull(p.ExpiresAt), p.Hits, nsOrNull(p.LastHitAt), store.TimeKey(store.CacheUsed(p)))
			if err != nil {
				return err
			}
			entries, bytes = entries+1, bytes+p.Size
			if entries, bytes, err = evictCache(ctx, tx, entries, bytes, l); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, setCacheTotals, entries, bytes)
		return err
	})
	if err != nil {
		return db.dbErr(fmt.Sprintf("putting cache entry %q", p.Key), err)
	}
	return nil
}

// evictCache removes the least recently used entries until l holds, and
// returns the totals it leaves.
func evictCache(ctx context.Context, tx pgx.Tx, entries, bytes int64, l engine.CacheLimits) (int64, int64, error) {
	for entries > int64(l.MaxEntries) || bytes > l.MaxBytes {
		rows, err := tx.Query(ctx, evictCandidates, evictBatch)
		if err != nil {
			return 0, 0, err
		}
		var keys []string
		left, size := entries, bytes
		var key string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error {
			if left > int64(l.MaxEntries) || size > l.MaxBytes {
				keys = append(keys, key)
				left, size = left-1, size-n
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
		if len(keys) == 0 {
			return 0, 0, fmt.Errorf("cache totals count %d entries of %d bytes, the table none to evict", entries, bytes)
		}
		var removed, freed int64
		err = tx.QueryRow(ctx, `WITH d AS (DELETE FROM result_cache WHERE key = ANY($1) RETURNING size) SELECT count(*), coalesce(sum(size), 0) FROM d`, keys).Scan(&removed, &freed)
		if err != nil {
			return 0, 0, err
		}
		entries, bytes = entries-removed, bytes-freed
	}
	return entries, bytes, nil
}

// ReleaseCache ends owner's claim on key (another owner's claim stays).
func (db *DB) ReleaseCache(ctx context.Context, key, owner string) error {
	if err := store.CheckCacheClaim(key, owner, 0, true); err != nil {
		return err
	}
	if err := db.check(ctx); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM cache_claims WHERE key = $1 AND owner = $2`, key, owner); err != nil {
		return db.dbErr(fmt.Sprintf("releasing cache entry %q", key), err)
	}
	return nil
}

// ListCache lists the live entries at now that f selects, by key.
func (db *DB) ListCache(ctx context.Context, f engine.CacheFilter, now time.Time) ([]*engine.CacheEntry, error) {
	if err := store.CheckCacheFilter(f); err != nil {
		return nil, err
	}
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	var limit any
	if f.Limit > 0 {
		limit = f.Limit
	}
	query, workflow := listCache, any(nil)
	if f.Workflow != "" {
		query, workflow = listWorkflowCache, f.Workflow
	}
	rows, err := db.pool.Query(ctx, query, workflow, f.Scope, f.After, store.TimeKey(now), limit)
	if err != nil {
		return nil, db.dbErr("listing the cache", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*engine.CacheEntry, error) { return scanCacheEntry(r) })
	if err != nil {
		return nil, db.dbErr("listing the cache", err)
	}
	return out, nil
}

// PurgeCache removes the entry of key (every entry for "") and the
// entries expired at now, and returns how many it removed.
func (db *DB) PurgeCache(ctx context.Context, key string, now time.Time) (int, error) {
	if err := store.CheckCachePurge(key); err != nil {
		return 0, err
	}
	if err := db.check(ctx); err != nil {
		return 0, err
	}
	var n int
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockCacheTotals); err != nil {
			return err
		}
		return tx.QueryRow(ctx, purgeCache, key, store.TimeKey(now)).Scan(&n)
	})
	if err != nil {
		return 0, db.dbErr("purging the cache", err)
	}
	return n, nil
}
