package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// TestBoltCacheReopen: entries, hits and claims survive a reopening, and
// a database that never cached reads as an empty cache, read-only too.
func TestBoltCacheReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	ctx := t.Context()
	t0 := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	b := openBolt(t, path)
	if es, err := b.ListCache(ctx, engine.CacheFilter{}, t0); err != nil || len(es) != 0 {
		t.Fatalf("ListCache of a new database = %v, %v, want nothing", es, err)
	}
	if n, err := b.PurgeCache(ctx, "", t0); err != nil || n != 0 {
		t.Fatalf("PurgeCache of a new database = %d, %v, want 0", n, err)
	}
	if err := b.ReleaseCache(ctx, "k", "a"); err != nil {
		t.Fatalf("ReleaseCache of a new database = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenBolt(path, store.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if es, err := ro.ListCache(ctx, engine.CacheFilter{}, t0); err != nil || len(es) != 0 {
		t.Errorf("ListCache read-only without a cache = %v, %v, want nothing", es, err)
	}
	ro.Close()

	b = openBolt(t, path)
	if _, err := b.ClaimCache(ctx, "k", "a", t0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimCache(ctx, "busy", "a", t0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCache(ctx, &engine.CacheEntry{Key: "k", Scope: engine.CacheScopeGlobal, Result: "v", CreatedAt: t0}, engine.CacheLimits{MaxEntries: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimCache(ctx, "k", "b", t0.Add(time.Second), time.Hour); err != nil {
		t.Fatal(err)
	}
	b.Close()

	b = openBolt(t, path)
	e, err := b.ClaimCache(ctx, "k", "c", t0.Add(2*time.Second), time.Hour)
	if err != nil || e == nil || e.Result != "v" || e.Hits != 2 {
		t.Errorf("ClaimCache after reopening = %+v, %v, want v with 2 hits", e, err)
	}
	if _, err := b.ClaimCache(ctx, "busy", "c", t0.Add(2*time.Second), time.Hour); !errors.Is(err, engine.ErrCacheBusy) {
		t.Errorf("ClaimCache of a claimed key after reopening = %v, want ErrCacheBusy", err)
	}
	// The totals came back too: two more entries evict one.
	for _, k := range []string{"x", "y"} {
		if err := b.PutCache(ctx, &engine.CacheEntry{Key: k, Scope: engine.CacheScopeGlobal, Result: k, CreatedAt: t0.Add(3 * time.Second)}, engine.CacheLimits{MaxEntries: 2}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := b.ListCache(ctx, engine.CacheFilter{}, t0)
	if err != nil || len(es) != 2 || es[0].Key != "x" || es[1].Key != "y" {
		t.Errorf("ListCache after two more puts = %+v, %v, want x and y", es, err)
	}
}

// FuzzCacheEntry: any key and JSON result is either refused
// (ErrCacheArgument) or comes back from a hit as it was put, on Memory
// and on Bolt.
func FuzzCacheEntry(f *testing.F) {
	for _, s := range []struct{ key, doc string }{
		{"k", `{"a":1.50}`}, {"", `1`}, {"a\x00b", `null`}, {"\xff", `"x"`}, {"é", `[1,{"b":[]}]`}, {"k", `1e999`},
	} {
		f.Add(s.key, []byte(s.doc))
	}
	b, err := store.OpenBolt(filepath.Join(f.TempDir(), "fuzz.db"), store.BoltOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	m := store.NewMemory()
	t0 := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, key string, doc []byte) {
		v, err := jsonvalue.Decode(doc)
		if err != nil {
			return
		}
		want, err := jsonvalue.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%s) = %v", doc, err)
		}
		for _, c := range []engine.CacheStore{m, b} {
			name := fmt.Sprintf("%T", c)
			err := c.PutCache(t.Context(), &engine.CacheEntry{Key: key, Scope: engine.CacheScopeGlobal, Result: v, CreatedAt: t0}, engine.CacheLimits{})
			if err != nil {
				if !errors.Is(err, store.ErrCacheArgument) {
					t.Fatalf("%s: PutCache(%q) = %v, want nil or ErrCacheArgument", name, key, err)
				}
				continue
			}
			e, err := c.ClaimCache(t.Context(), key, "fuzz", t0, time.Minute)
			if err != nil || e == nil {
				t.Fatalf("%s: ClaimCache(%q) = %v, %v, want the entry", name, key, e, err)
			}
			got, err := jsonvalue.Marshal(e.Result)
			if err != nil || string(got) != string(want) || e.Size != int64(len(want)) {
				t.Fatalf("%s: result of %q = %s (size %d), %v, want %s", name, key, got, e.Size, err, want)
			}
		}
	})
}
