package store

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// cacheCensus counts Bolt's cache records, their bytes and index keys.
type cacheCensus struct {
	records, bytes, used, wf, exp int64
	totals                        [2]int64
}

func censusOf(t *testing.T, b *Bolt) cacheCensus {
	t.Helper()
	var n cacheCensus
	err := b.db.View(func(tx *bbolt.Tx) error {
		c, err := openCache(tx, false)
		if err != nil || c == nil {
			return err
		}
		if err := c.totals(); err != nil {
			return err
		}
		n.totals = [2]int64{c.count, c.bytes}
		for _, p := range []struct {
			part outboxPart
			n    *int64
		}{{c.used, &n.used}, {c.wf, &n.wf}, {c.exp, &n.exp}} {
			if err := p.part.each(nil, func([]byte) (bool, error) { *p.n++; return true, nil }); err != nil {
				return err
			}
		}
		return c.records.each(nil, func(k []byte) (bool, error) {
			r, err := c.get(string(k))
			if err != nil {
				return false, err
			}
			n.records++
			n.bytes += r.Size
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBoltCacheTotals checks that Bolt's totals and indexes stay those of
// its records through random claims, puts, replacements, evictions and
// purges.
func TestBoltCacheTotals(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "cache.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	limits := engine.CacheLimits{MaxEntries: 20, MaxBytes: 600}
	for i := range 400 {
		now := t0.Add(time.Duration(i) * time.Second)
		key := fmt.Sprintf("k%02d", rng.IntN(40))
		switch op := rng.IntN(10); {
		case op < 4:
			if _, err := b.ClaimCache(ctx, key, "o", now, time.Minute); err != nil {
				t.Fatal(err)
			}
		case op < 9:
			e := &engine.CacheEntry{Key: key, Scope: engine.CacheScopeWorkflow, Workflow: fmt.Sprintf("w%d", rng.IntN(3)),
				Result: map[string]any{"pad": string(make([]byte, rng.IntN(80)))}, CreatedAt: now}
			if rng.IntN(2) == 0 {
				e.ExpiresAt = now.Add(time.Duration(rng.IntN(60)) * time.Second)
			}
			if err := b.PutCache(ctx, e, limits); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := b.PurgeCache(ctx, key, now); err != nil {
				t.Fatal(err)
			}
		}
		n := censusOf(t, b)
		if n.totals != [2]int64{n.records, n.bytes} || n.used != n.records || n.wf != n.records || n.exp > n.records {
			t.Fatalf("step %d: %+v, want totals, eviction and workflow indexes of the records", i, n)
		}
		if n.records > int64(limits.MaxEntries) || n.bytes > limits.MaxBytes {
			t.Fatalf("step %d: %d entries of %d bytes, beyond %+v", i, n.records, n.bytes, limits)
		}
	}
}

// benchCacheEntry is an entry of key whose result is commitBenchDoc.
func benchCacheEntry(b *testing.B, key string) *engine.CacheEntry {
	d, err := jsonvalue.Decode([]byte(commitBenchDoc))
	if err != nil {
		b.Fatal(err)
	}
	return &engine.CacheEntry{Key: key, Scope: engine.CacheScopeWorkflow, Workflow: "bench", State: "Classify", Agent: "classifier",
		Execution: "e1", Result: d, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
}

// BenchmarkCacheHitBolt measures ClaimCache of a live key (a durable
// write: the hit is counted).
func BenchmarkCacheHitBolt(b *testing.B) {
	s := openBench(b)
	if err := s.PutCache(b.Context(), benchCacheEntry(b, "hot"), engine.CacheLimits{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e, err := s.ClaimCache(b.Context(), "hot", "bench", time.Now(), time.Minute)
		if err != nil || e == nil {
			b.Fatalf("ClaimCache = %v, %v", e, err)
		}
	}
}

// BenchmarkCacheMissPutBolt measures a miss (ClaimCache of a new key)
// and the PutCache that follows, with 1000 entries at most (so that
// every put past the first thousand evicts one).
func BenchmarkCacheMissPutBolt(b *testing.B) {
	s := openBench(b)
	e := benchCacheEntry(b, "")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		e.Key = fmt.Sprintf("key-%09d", i)
		got, err := s.ClaimCache(b.Context(), e.Key, "bench", time.Now(), time.Minute)
		if err != nil || got != nil {
			b.Fatalf("ClaimCache = %v, %v", got, err)
		}
		if err := s.PutCache(b.Context(), e, engine.CacheLimits{MaxEntries: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}
