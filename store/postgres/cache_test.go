package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// TestCacheTwoServers: workers of two processes (two DBs on one
// database) asking for the same keys at once compute each key once, and
// the others get its entry.
func TestCacheTwoServers(t *testing.T) {
	ctx := context.Background()
	url := testServer.Schema(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, url, Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	t0 := time.Unix(1_700_000_000, 0)
	const keys = 20
	var mu sync.Mutex
	computed := make(map[string][]string)
	hits := 0
	var wg sync.WaitGroup
	for i, db := range dbs {
		for w := range 4 {
			owner := fmt.Sprintf("server-%d/%d", i, w)
			wg.Go(func() {
				for k := range keys {
					key := fmt.Sprintf("key-%02d", k)
					for {
						e, err := db.ClaimCache(ctx, key, owner, t0, time.Hour)
						if errors.Is(err, engine.ErrCacheBusy) {
							runtime.Gosched()
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						if e != nil {
							hits++
						} else {
							computed[key] = append(computed[key], owner)
						}
						mu.Unlock()
						if e == nil {
							err = db.PutCache(ctx, &engine.CacheEntry{Key: key, Scope: engine.CacheScopeGlobal, Result: key, CreatedAt: t0}, engine.CacheLimits{})
							if err != nil {
								t.Error(err)
							}
						} else if e.Result != key {
							t.Errorf("%s read %v for %s", owner, e.Result, key)
						}
						break
					}
				}
			})
		}
	}
	wg.Wait()
	for k := range keys {
		key := fmt.Sprintf("key-%02d", k)
		if len(computed[key]) != 1 {
			t.Errorf("%s computed by %q, want once", key, computed[key])
		}
	}
	if hits != keys*7 {
		t.Errorf("%d hits, want %d", hits, keys*7)
	}
}

// TestCacheTotals checks that cache_totals stays the count and sum of
// result_cache through concurrent random claims, puts, evictions and
// purges, within the limits.
func TestCacheTotals(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	t0 := time.Unix(1_700_000_000, 0)
	limits := engine.CacheLimits{MaxEntries: 15, MaxBytes: 500}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range 100 {
				now := t0.Add(time.Duration(i) * time.Second)
				key := fmt.Sprintf("k%02d", rng.IntN(30))
				var err error
				switch op := rng.IntN(10); {
				case op < 3:
					_, err = db.ClaimCache(ctx, key, fmt.Sprintf("w%d", w), now, time.Minute)
					if errors.Is(err, engine.ErrCacheBusy) {
						err = nil
					}
				case op < 9:
					e := &engine.CacheEntry{Key: key, Scope: engine.CacheScopeWorkflow, Workflow: "w",
						Result: map[string]any{"pad": string(make([]byte, rng.IntN(60)))}, CreatedAt: now}
					if rng.IntN(2) == 0 {
						e.ExpiresAt = now.Add(time.Duration(rng.IntN(30)) * time.Second)
					}
					err = db.PutCache(ctx, e, limits)
				default:
					_, err = db.PurgeCache(ctx, key, now)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var entries, bytes, count, sum int64
	err := db.pool.QueryRow(ctx, `SELECT t.entries, t.bytes, (SELECT count(*) FROM result_cache), (SELECT coalesce(sum(size), 0) FROM result_cache) FROM cache_totals t`).Scan(&entries, &bytes, &count, &sum)
	if err != nil {
		t.Fatal(err)
	}
	if entries != count || bytes != sum {
		t.Errorf("totals %d entries of %d bytes, the table %d of %d", entries, bytes, count, sum)
	}
	if count > int64(limits.MaxEntries) || sum > limits.MaxBytes {
		t.Errorf("%d entries of %d bytes, beyond %+v", count, sum, limits)
	}
}

// benchCacheEntry is an entry of key with an agent-like result of about
// 1 KiB.
func benchCacheEntry(b *testing.B, key string) *engine.CacheEntry {
	d, err := jsonvalue.Decode([]byte(`{"classification":{"intent":"refund","confidence":0.9371,"labels":["billing","duplicate-charge","refund"]},` +
		`"retrieved":[{"doc":"kb/refunds.md","score":0.88,"snippet":"Duplicate charges are refunded within 5 business days."},` +
		`{"doc":"kb/invoices.md","score":0.71,"snippet":"Invoices are issued on the 1st of each month."}],` +
		`"draft":"Dear Ada, we are sorry for the duplicate charge on invoice INV-7781. We have issued a refund of 49.90 EUR, which should reach your account within 5 business days.",` +
		`"notes":["customer verified by email","duplicate confirmed in ledger","refund within policy limit"],"usage":{"tokens":1843,"cost":0.01106}}`))
	if err != nil {
		b.Fatal(err)
	}
	return &engine.CacheEntry{Key: key, Scope: engine.CacheScopeWorkflow, Workflow: "bench", State: "Classify", Agent: "classifier",
		Execution: "e1", Result: d, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
}

// BenchmarkCacheHitPostgres measures ClaimCache of a live key (one
// UPDATE counting the hit).
func BenchmarkCacheHitPostgres(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, Options{})
	if err := db.PutCache(ctx, benchCacheEntry(b, "hot"), engine.CacheLimits{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e, err := db.ClaimCache(ctx, "hot", "bench", time.Now(), time.Minute)
		if err != nil || e == nil {
			b.Fatalf("ClaimCache = %v, %v", e, err)
		}
	}
}

// BenchmarkCacheMissPutPostgres measures a miss (ClaimCache of a new key)
// and the PutCache that follows, with 1000 entries at most (so that
// every put past the first thousand evicts one).
func BenchmarkCacheMissPutPostgres(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, Options{})
	e := benchCacheEntry(b, "")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		e.Key = fmt.Sprintf("key-%09d", i)
		got, err := db.ClaimCache(ctx, e.Key, "bench", time.Now(), time.Minute)
		if err != nil || got != nil {
			b.Fatalf("ClaimCache = %v, %v", got, err)
		}
		if err := db.PutCache(ctx, e, engine.CacheLimits{MaxEntries: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}
