package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// runCache runs the result cache's tests (engine.CacheStore), each on a
// fresh store; a store that keeps no cache skips them.
func runCache(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		test func(t *testing.T, c engine.CacheStore)
	}{
		{"ClaimPutHit", testCacheClaimPutHit},
		{"BusyAndRelease", testCacheBusy},
		{"Expiry", testCacheExpiry},
		{"EvictByEntries", testCacheEvictEntries},
		{"EvictByBytes", testCacheEvictBytes},
		{"Replace", testCacheReplace},
		{"ListFiltersAndPaging", testCacheList},
		{"Purge", testCachePurge},
		{"JSONRoundTrip", testCacheJSON},
		{"BadArguments", testCacheBadArguments},
		{"ConcurrentClaims", testCacheConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			c, ok := s.(engine.CacheStore)
			if !ok {
				t.Skipf("%T keeps no result cache", s)
			}
			tt.test(t, c)
		})
	}
}

// cacheEntry returns an entry of key made at created, expiring at
// expires (zero: never), whose result is the JSON text result.
func cacheEntry(t *testing.T, key, workflow, scope, result string, created, expires time.Time) *engine.CacheEntry {
	t.Helper()
	return &engine.CacheEntry{
		Key: key, Scope: scope, Workflow: workflow, State: "Classify", Agent: "classifier", Execution: "e-" + key,
		Result: Doc(t, result), CreatedAt: created, ExpiresAt: expires,
	}
}

// claimCache calls ClaimCache, failing t on an error.
func claimCache(t *testing.T, c engine.CacheStore, key, owner string, now time.Time, lease time.Duration) *engine.CacheEntry {
	t.Helper()
	e, err := c.ClaimCache(t.Context(), key, owner, now, lease)
	if err != nil {
		t.Fatalf("ClaimCache(%s, %s, %v) = %v", key, owner, now, err)
	}
	return e
}

// putCache calls PutCache, failing t on an error.
func putCache(t *testing.T, c engine.CacheStore, e *engine.CacheEntry, l engine.CacheLimits) {
	t.Helper()
	if err := c.PutCache(t.Context(), e, l); err != nil {
		t.Fatalf("PutCache(%s) = %v", e.Key, err)
	}
}

// cacheKeys lists the keys of the live entries at now that f selects.
func cacheKeys(t *testing.T, c engine.CacheStore, f engine.CacheFilter, now time.Time) []string {
	t.Helper()
	es, err := c.ListCache(t.Context(), f, now)
	if err != nil {
		t.Fatalf("ListCache(%+v) = %v", f, err)
	}
	keys := []string{}
	for _, e := range es {
		keys = append(keys, e.Key)
	}
	return keys
}

func testCacheClaimPutHit(t *testing.T, c engine.CacheStore) {
	if e := claimCache(t, c, "k1", "p1", t0, time.Minute); e != nil {
		t.Fatalf("ClaimCache of a new key = %+v, want nil (compute it)", e)
	}
	e := cacheEntry(t, "k1", "triage", engine.CacheScopeWorkflow, `{"label":"bug","score":0.93}`, at(time.Second), at(time.Hour))
	e.Size = 1 // the store counts it
	putCache(t, c, e, engine.CacheLimits{})
	for i, now := range []time.Time{at(2 * time.Second), at(3 * time.Second)} {
		got := claimCache(t, c, "k1", fmt.Sprintf("p%d", i+2), now, time.Minute)
		if got == nil {
			t.Fatalf("ClaimCache after PutCache = nil, want the entry")
		}
		want := `{"label":"bug","score":0.93}`
		if got.Key != "k1" || got.Scope != engine.CacheScopeWorkflow || got.Workflow != "triage" || got.State != "Classify" || got.Agent != "classifier" || got.Execution != "e-k1" {
			t.Errorf("hit %d = %+v, want the entry as put", i+1, got)
		}
		if text(got.Result) != want || got.Size != int64(len(want)) {
			t.Errorf("hit %d result = %s (size %d), want %s (size %d)", i+1, text(got.Result), got.Size, want, len(want))
		}
		if got.Hits != int64(i+1) || !got.LastHitAt.Equal(now) || !got.CreatedAt.Equal(at(time.Second)) || !got.ExpiresAt.Equal(at(time.Hour)) {
			t.Errorf("hit %d: hits %d, last hit %v, created %v, expires %v; want %d, %v, %v, %v", i+1, got.Hits, got.LastHitAt, got.CreatedAt, got.ExpiresAt, i+1, now, at(time.Second), at(time.Hour))
		}
	}
	list := cacheKeys(t, c, engine.CacheFilter{}, at(4*time.Second))
	if len(list) != 1 || list[0] != "k1" {
		t.Errorf("ListCache = %q, want [k1]", list)
	}
	// The store keeps what it was given, not the caller's values.
	e.Result.(map[string]any)["label"] = "changed"
	if got := claimCache(t, c, "k1", "p9", at(5*time.Second), time.Minute); got == nil || text(got.Result) != `{"label":"bug","score":0.93}` {
		t.Errorf("ClaimCache after the caller changed its value = %v, want the value as put", got)
	}
}

func testCacheBusy(t *testing.T, c engine.CacheStore) {
	ctx := t.Context()
	claimCache(t, c, "k", "a", t0, time.Minute)
	busy := func(owner string, now time.Time) {
		t.Helper()
		if e, err := c.ClaimCache(ctx, "k", owner, now, time.Minute); !errors.Is(err, engine.ErrCacheBusy) {
			t.Errorf("ClaimCache(k, %s, %v) = %v, %v, want ErrCacheBusy", owner, now.Sub(t0), e, err)
		}
	}
	busy("b", t0)
	busy("b", at(59*time.Second))
	// The owner may claim again (a retry of the same caller).
	if e := claimCache(t, c, "k", "a", at(10*time.Second), time.Minute); e != nil {
		t.Errorf("ClaimCache by the owner = %+v, want nil", e)
	}
	busy("b", at(69*time.Second))
	// Its lease (renewed until 70s) runs out: another may compute it.
	if e := claimCache(t, c, "k", "b", at(70*time.Second), time.Minute); e != nil {
		t.Errorf("ClaimCache after the lease ran out = %+v, want nil", e)
	}
	busy("a", at(71*time.Second))
	// A release by another owner changes nothing; by the owner, ends it.
	if err := c.ReleaseCache(ctx, "k", "a"); err != nil {
		t.Fatalf("ReleaseCache by another = %v", err)
	}
	busy("a", at(72*time.Second))
	if err := c.ReleaseCache(ctx, "k", "b"); err != nil {
		t.Fatalf("ReleaseCache = %v", err)
	}
	if e := claimCache(t, c, "k", "a", at(73*time.Second), time.Minute); e != nil {
		t.Errorf("ClaimCache after ReleaseCache = %+v, want nil", e)
	}
	// Releasing what is not claimed is not an error.
	if err := c.ReleaseCache(ctx, "never-claimed", "x"); err != nil {
		t.Errorf("ReleaseCache of an unclaimed key = %v, want nil", err)
	}
	// A put ends the claim whoever made it; a hit is never busy.
	putCache(t, c, cacheEntry(t, "k", "w", engine.CacheScopeGlobal, `1`, at(74*time.Second), time.Time{}), engine.CacheLimits{})
	if e := claimCache(t, c, "k", "b", at(75*time.Second), time.Minute); e == nil || text(e.Result) != "1" {
		t.Errorf("ClaimCache after the put = %+v, want the entry", e)
	}
}

func testCacheExpiry(t *testing.T, c engine.CacheStore) {
	claimCache(t, c, "k", "a", t0, time.Minute)
	putCache(t, c, cacheEntry(t, "k", "w", engine.CacheScopeWorkflow, `"v"`, t0, at(time.Hour)), engine.CacheLimits{})
	putCache(t, c, cacheEntry(t, "forever", "w", engine.CacheScopeWorkflow, `"f"`, t0, time.Time{}), engine.CacheLimits{})
	if e := claimCache(t, c, "k", "b", at(time.Hour-time.Nanosecond), time.Minute); e == nil {
		t.Errorf("ClaimCache just before the expiry = nil, want the entry")
	}
	if got := cacheKeys(t, c, engine.CacheFilter{}, at(time.Hour)); len(got) != 1 || got[0] != "forever" {
		t.Errorf("ListCache at the expiry = %q, want [forever]", got)
	}
	// Expired: absent, so the caller computes it.
	if e := claimCache(t, c, "k", "b", at(time.Hour), time.Minute); e != nil {
		t.Errorf("ClaimCache at the expiry = %+v, want nil (compute it)", e)
	}
	putCache(t, c, cacheEntry(t, "k", "w", engine.CacheScopeWorkflow, `"v2"`, at(time.Hour), at(2*time.Hour)), engine.CacheLimits{})
	if e := claimCache(t, c, "k", "a", at(90*time.Minute), time.Minute); e == nil || text(e.Result) != `"v2"` || e.Hits != 1 {
		t.Errorf("ClaimCache of the new entry = %+v, want v2 with 1 hit", e)
	}
}

// fillCache puts entries k0…k(n-1), each created a second after the last, of
// result result, with limits l.
func fillCache(t *testing.T, c engine.CacheStore, n int, result string, l engine.CacheLimits) {
	t.Helper()
	for i := range n {
		putCache(t, c, cacheEntry(t, fmt.Sprintf("k%d", i), "w", engine.CacheScopeGlobal, result, at(time.Duration(i)*time.Second), time.Time{}), l)
	}
}

func testCacheEvictEntries(t *testing.T, c engine.CacheStore) {
	l := engine.CacheLimits{MaxEntries: 3}
	fillCache(t, c, 3, `{"n":1}`, l)
	// k0 is hit: k1 is now the least recently used.
	if e := claimCache(t, c, "k0", "a", at(10*time.Second), time.Minute); e == nil {
		t.Fatal("ClaimCache(k0) = nil, want the entry")
	}
	putCache(t, c, cacheEntry(t, "k3", "w", engine.CacheScopeGlobal, `{"n":1}`, at(11*time.Second), time.Time{}), l)
	if got, want := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, at(time.Minute)), " "), "k0 k2 k3"; got != want {
		t.Errorf("after a put beyond 3 entries: %s, want %s", got, want)
	}
	// A smaller limit evicts several at once, oldest use first.
	putCache(t, c, cacheEntry(t, "k4", "w", engine.CacheScopeGlobal, `{"n":1}`, at(12*time.Second), time.Time{}), engine.CacheLimits{MaxEntries: 2})
	if got, want := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, at(time.Minute)), " "), "k3 k4"; got != want {
		t.Errorf("after a put with 2 entries at most: %s, want %s", got, want)
	}
	if e := claimCache(t, c, "k2", "a", at(13*time.Second), time.Minute); e != nil {
		t.Errorf("ClaimCache of an evicted entry = %+v, want nil", e)
	}
}

func testCacheEvictBytes(t *testing.T, c engine.CacheStore) {
	const result = `"0123456789"` // 12 bytes
	l := engine.CacheLimits{MaxBytes: 40}
	fillCache(t, c, 3, result, l) // 36 bytes
	if e := claimCache(t, c, "k0", "a", at(10*time.Second), time.Minute); e == nil {
		t.Fatal("ClaimCache(k0) = nil, want the entry")
	}
	putCache(t, c, cacheEntry(t, "k3", "w", engine.CacheScopeGlobal, result, at(11*time.Second), time.Time{}), l)
	if got, want := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, at(time.Minute)), " "), "k0 k2 k3"; got != want {
		t.Errorf("after a put beyond 40 bytes: %s, want %s", got, want)
	}
	// A larger entry needs two to go.
	putCache(t, c, cacheEntry(t, "big", "w", engine.CacheScopeGlobal, `"0123456789012345678"`, at(12*time.Second), time.Time{}), l)
	if got, want := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, at(time.Minute)), " "), "big k3"; got != want {
		t.Errorf("after a put of 21 bytes: %s, want %s", got, want)
	}
	// An entry larger than the limit is not kept, and evicts nothing.
	claimCache(t, c, "huge", "a", at(13*time.Second), time.Minute)
	putCache(t, c, cacheEntry(t, "huge", "w", engine.CacheScopeGlobal, `"`+strings.Repeat("x", 40)+`"`, at(13*time.Second), time.Time{}), l)
	if got, want := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, at(time.Minute)), " "), "big k3"; got != want {
		t.Errorf("after a put larger than the limit: %s, want %s", got, want)
	}
	if e := claimCache(t, c, "huge", "b", at(14*time.Second), time.Minute); e != nil {
		t.Errorf("ClaimCache of an entry too large to keep = %+v, want nil (its claim ended)", e)
	}
}

func testCacheReplace(t *testing.T, c engine.CacheStore) {
	l := engine.CacheLimits{MaxEntries: 2, MaxBytes: 100}
	putCache(t, c, cacheEntry(t, "a", "w", engine.CacheScopeGlobal, `"first"`, t0, time.Time{}), l)
	putCache(t, c, cacheEntry(t, "b", "w", engine.CacheScopeGlobal, `"b"`, at(time.Second), time.Time{}), l)
	// Replacing an entry counts it once, with its new size.
	putCache(t, c, cacheEntry(t, "a", "w2", engine.CacheScopeWorkflow, `"second"`, at(2*time.Second), at(time.Hour)), l)
	if got, want := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, at(time.Minute)), " "), "a b"; got != want {
		t.Fatalf("after a replacement: %s, want %s", got, want)
	}
	es, err := c.ListCache(t.Context(), engine.CacheFilter{Workflow: "w2"}, at(time.Minute))
	if err != nil || len(es) != 1 || text(es[0].Result) != `"second"` || es[0].Scope != engine.CacheScopeWorkflow || !es[0].ExpiresAt.Equal(at(time.Hour)) {
		t.Errorf("ListCache(w2) = %+v, %v, want the replacement", es, err)
	}
	if got := cacheKeys(t, c, engine.CacheFilter{Workflow: "w"}, at(time.Minute)); strings.Join(got, " ") != "b" {
		t.Errorf("ListCache(w) = %q, want [b]", got)
	}
}

func testCacheList(t *testing.T, c engine.CacheStore) {
	for i, x := range []struct{ key, workflow, scope string }{
		{"a1", "alpha", engine.CacheScopeWorkflow}, {"a2", "alpha", engine.CacheScopeExecution}, {"a3", "alpha", engine.CacheScopeWorkflow},
		{"b1", "beta", engine.CacheScopeWorkflow}, {"b2", "beta", engine.CacheScopeGlobal}, {"g1", "", engine.CacheScopeGlobal},
		{"ax", "alpha", engine.CacheScopeWorkflow},
	} {
		expires := time.Time{}
		if x.key == "ax" {
			expires = at(time.Minute)
		}
		putCache(t, c, cacheEntry(t, x.key, x.workflow, x.scope, fmt.Sprintf(`{"i":%d}`, i), t0, expires), engine.CacheLimits{})
	}
	now := at(time.Hour)
	for _, tt := range []struct {
		f    engine.CacheFilter
		want string
	}{
		{engine.CacheFilter{}, "a1 a2 a3 b1 b2 g1"},
		{engine.CacheFilter{Workflow: "alpha"}, "a1 a2 a3"},
		{engine.CacheFilter{Workflow: "alph"}, ""},
		{engine.CacheFilter{Scope: engine.CacheScopeWorkflow}, "a1 a3 b1"},
		{engine.CacheFilter{Workflow: "alpha", Scope: engine.CacheScopeWorkflow}, "a1 a3"},
		{engine.CacheFilter{Scope: engine.CacheScopeGlobal}, "b2 g1"},
		{engine.CacheFilter{Limit: 2}, "a1 a2"},
		{engine.CacheFilter{After: "a2", Limit: 2}, "a3 b1"},
		{engine.CacheFilter{After: "b", Limit: 2}, "b1 b2"},
		{engine.CacheFilter{After: "g1"}, ""},
		{engine.CacheFilter{Workflow: "alpha", After: "a1", Limit: 1}, "a2"},
		{engine.CacheFilter{Workflow: "alpha", Scope: engine.CacheScopeWorkflow, After: "a1"}, "a3"},
	} {
		if got := strings.Join(cacheKeys(t, c, tt.f, now), " "); got != tt.want {
			t.Errorf("ListCache(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
	if got := strings.Join(cacheKeys(t, c, engine.CacheFilter{Workflow: "alpha"}, t0), " "); got != "a1 a2 a3 ax" {
		t.Errorf("ListCache(alpha) before ax expired = %q, want a1 a2 a3 ax", got)
	}
	// Paging through everything.
	var all []string
	for after := ""; ; {
		page := cacheKeys(t, c, engine.CacheFilter{After: after, Limit: 4}, now)
		all = append(all, page...)
		if len(page) < 4 {
			break
		}
		after = page[len(page)-1]
	}
	if got := strings.Join(all, " "); got != "a1 a2 a3 b1 b2 g1" {
		t.Errorf("paged ListCache = %q", got)
	}
}

func testCachePurge(t *testing.T, c engine.CacheStore) {
	ctx := t.Context()
	purge := func(key string, now time.Time, want int, left string) {
		t.Helper()
		n, err := c.PurgeCache(ctx, key, now)
		if err != nil || n != want {
			t.Errorf("PurgeCache(%q) = %d, %v, want %d", key, n, err, want)
		}
		if got := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, t0), " "); got != left {
			t.Errorf("after PurgeCache(%q): %q, want %q", key, got, left)
		}
	}
	purge("", t0, 0, "")
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		expires := time.Time{}
		if k == "b" || k == "d" {
			expires = at(time.Duration(i) * time.Minute)
		}
		putCache(t, c, cacheEntry(t, k, "w", engine.CacheScopeGlobal, `true`, t0, expires), engine.CacheLimits{})
	}
	purge("a", t0, 1, "b c d e")
	purge("a", t0, 0, "b c d e")
	purge("zzz", t0, 0, "b c d e")
	// b expires at 1m, d at 3m: purging c at 2m removes b too.
	purge("c", at(2*time.Minute), 2, "d e")
	purge("", t0, 2, "")
	// The cache still works after a purge of everything, within its
	// limits (the purge forgot the removed entries' sizes).
	l := engine.CacheLimits{MaxEntries: 2}
	fillCache(t, c, 3, `null`, l)
	if got := strings.Join(cacheKeys(t, c, engine.CacheFilter{}, t0), " "); got != "k1 k2" {
		t.Errorf("after a purge and 3 puts: %q, want k1 k2", got)
	}
}

func testCacheJSON(t *testing.T, c engine.CacheStore) {
	for i, doc := range []string{
		`{"n":1.50,"big":12345678901234567890123,"neg":-0.0,"exp":1e400,"nested":{"list":[1,"two",null,true,{"k":[]}]},"s":"<é\u2028>"}`,
		`[]`, `"text"`, `0`, `null`, `false`, `{}`,
	} {
		key := fmt.Sprintf("k%d", i)
		want := Doc(t, doc)
		putCache(t, c, &engine.CacheEntry{Key: key, Scope: engine.CacheScopeExecution, Execution: "e1", Result: want, CreatedAt: t0}, engine.CacheLimits{})
		e := claimCache(t, c, key, "a", at(time.Second), time.Minute)
		if e == nil || !jsonvalue.Equal(e.Result, want) || text(e.Result) != text(want) {
			t.Errorf("result of %s = %v, want %s", key, e, doc)
			continue
		}
		if m, ok := e.Result.(map[string]any); ok && len(m) > 0 {
			if n, ok := m["n"].(json.Number); !ok || n != "1.50" {
				t.Errorf("number n = %#v, want json.Number 1.50", m["n"])
			}
		}
	}
}

func testCacheBadArguments(t *testing.T, c engine.CacheStore) {
	ctx := t.Context()
	good := func() *engine.CacheEntry {
		return cacheEntry(t, "k", "w", engine.CacheScopeGlobal, `1`, t0, time.Time{})
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"claim with no key", func() error { _, err := c.ClaimCache(ctx, "", "a", t0, time.Minute); return err }},
		{"claim with no owner", func() error { _, err := c.ClaimCache(ctx, "k", "", t0, time.Minute); return err }},
		{"claim with a NUL key", func() error { _, err := c.ClaimCache(ctx, "k\x00", "a", t0, time.Minute); return err }},
		{"claim with no lease", func() error { _, err := c.ClaimCache(ctx, "k", "a", t0, 0); return err }},
		{"release with no owner", func() error { return c.ReleaseCache(ctx, "k", "") }},
		{"put nil", func() error { return c.PutCache(ctx, nil, engine.CacheLimits{}) }},
		{"put with no key", func() error { e := good(); e.Key = ""; return c.PutCache(ctx, e, engine.CacheLimits{}) }},
		{"put with a bad scope", func() error { e := good(); e.Scope = "planet"; return c.PutCache(ctx, e, engine.CacheLimits{}) }},
		{"put with no creation", func() error { e := good(); e.CreatedAt = time.Time{}; return c.PutCache(ctx, e, engine.CacheLimits{}) }},
		{"put with a bad workflow", func() error { e := good(); e.Workflow = "\xff"; return c.PutCache(ctx, e, engine.CacheLimits{}) }},
		{"put a result that is not JSON", func() error { e := good(); e.Result = func() {}; return c.PutCache(ctx, e, engine.CacheLimits{}) }},
		{"put with negative limits", func() error { return c.PutCache(ctx, good(), engine.CacheLimits{MaxEntries: -1}) }},
		{"list with a negative limit", func() error { _, err := c.ListCache(ctx, engine.CacheFilter{Limit: -1}, t0); return err }},
		{"purge a NUL key", func() error { _, err := c.PurgeCache(ctx, "\x00", t0); return err }},
	}
	for _, x := range calls {
		if err := x.call(); !errors.Is(err, store.ErrCacheArgument) {
			t.Errorf("%s = %v, want ErrCacheArgument", x.name, err)
		}
	}
	if got := cacheKeys(t, c, engine.CacheFilter{}, t0); len(got) != 0 {
		t.Errorf("after refused calls the cache holds %q, want nothing", got)
	}
}

func testCacheConcurrent(t *testing.T, c engine.CacheStore) {
	const workers = 8
	var (
		mu       sync.Mutex
		computed []string
		hits     int
		wg       sync.WaitGroup
	)
	for w := range workers {
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				e, err := c.ClaimCache(t.Context(), "shared", owner, t0, time.Hour)
				switch {
				case errors.Is(err, engine.ErrCacheBusy):
					runtime.Gosched() // the computing worker puts soon
					continue
				case err != nil:
					t.Error(err)
					return
				case e != nil:
					mu.Lock()
					hits++
					mu.Unlock()
					if text(e.Result) != `{"by":"computed"}` {
						t.Errorf("%s read %s", owner, text(e.Result))
					}
					return
				}
				mu.Lock()
				computed = append(computed, owner)
				mu.Unlock()
				if err := c.PutCache(t.Context(), cacheEntry(t, "shared", "w", engine.CacheScopeGlobal, `{"by":"computed"}`, t0, time.Time{}), engine.CacheLimits{}); err != nil {
					t.Error(err)
				}
				return
			}
		})
	}
	wg.Wait()
	if len(computed) != 1 || hits != workers-1 {
		t.Errorf("computed by %q, %d hits; want one computation and %d hits", computed, hits, workers-1)
	}
	if e := claimCache(t, c, "shared", "late", at(time.Second), time.Minute); e == nil || e.Hits != workers {
		t.Errorf("entry after the race = %+v, want %d hits", e, workers)
	}
}
