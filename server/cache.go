package server

// The result cache of Tasks (ASL Cache, Idempotent): listed and purged by
// admins.

import (
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// cacheParams are the query parameters GET /v1/cache takes.
var cacheParams = []string{"workflow", "scope", "after", "limit", "results"}

// Bounds of GET /v1/cache.
const (
	defaultCacheLimit = 100
	maxCacheLimit     = 1000
)

// cacheStore is the server's store as a result cache, or the problem of a
// store that keeps none.
func (s *Server) cacheStore() (engine.CacheStore, error) {
	c, ok := s.st.(engine.CacheStore)
	if !ok {
		return nil, &problem{status: http.StatusNotImplemented, kind: "no-cache", title: "no result cache",
			detail: "this server's store keeps no result cache (the memory, bbolt and PostgreSQL stores do)"}
	}
	return c, nil
}

// cacheQuery is a checked query of GET /v1/cache.
type cacheQuery struct {
	filter  engine.CacheFilter
	results bool
}

// parseCacheQuery checks GET /v1/cache's query: each parameter known and
// given once; scope execution, workflow or global; after a key (64 hex digits);
// limit 1 to 1000; results 1, true, 0 or false.
func parseCacheQuery(q url.Values) (cacheQuery, error) {
	cq := cacheQuery{filter: engine.CacheFilter{Limit: defaultCacheLimit}}
	if err := checkQuery(q, cacheParams); err != nil {
		return cq, err
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(name)
		switch name {
		case "workflow":
			if v == "" || len(v) > 256 {
				return cq, badRequest("", "workflow must be 1 to 256 bytes")
			}
			cq.filter.Workflow = v
		case "scope":
			if v != engine.CacheScopeExecution && v != engine.CacheScopeWorkflow && v != engine.CacheScopeGlobal {
				return cq, badRequest("", "scope %q is not execution, workflow or global", v)
			}
			cq.filter.Scope = v
		case "after":
			if err := checkCacheKey(v); err != nil {
				return cq, badRequest("", "after: %v", err)
			}
			cq.filter.After = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxCacheLimit {
				return cq, badRequest("", "limit %q is not a number from 1 to %d", v, maxCacheLimit)
			}
			cq.filter.Limit = n
		case "results":
			switch v {
			case "1", "true":
				cq.results = true
			case "0", "false":
			default:
				return cq, badRequest("", "results %q is not 1, true, 0 or false", v)
			}
		}
	}
	return cq, nil
}

// checkCacheKey checks a cache key: 64 lower-case hex digits.
func checkCacheKey(k string) error {
	if len(k) != 64 || strings.ToLower(k) != k {
		return errBadKey(k)
	}
	if _, err := hex.DecodeString(k); err != nil {
		return errBadKey(k)
	}
	return nil
}

type errBadKey string

func (e errBadKey) Error() string {
	return "key " + strconv.Quote(clipText(string(e), 80)) + " is not a cache key (64 lower-case hex digits)"
}

// clipText cuts s to n bytes at most, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// listCache answers GET /v1/cache: a page of live entries in key order.
func (s *Server) listCache(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.cacheStore()
	if err != nil {
		return err
	}
	cq, err := parseCacheQuery(r.URL.Query())
	if err != nil {
		return err
	}
	f := cq.filter
	f.Limit++
	list, err := cs.ListCache(r.Context(), f, time.Now())
	if err != nil {
		return err
	}
	out := api.CachePage{Entries: []api.CacheEntry{}}
	if len(list) > cq.filter.Limit {
		list = list[:cq.filter.Limit]
		out.Next = list[len(list)-1].Key
	}
	for _, e := range list {
		ae := api.CacheEntry{Key: e.Key, Scope: e.Scope, Workflow: e.Workflow, State: e.State, Agent: e.Agent, Execution: e.Execution,
			Size: e.Size, Hits: e.Hits, CreatedAt: e.CreatedAt.UTC(), ExpiresAt: timePtr(e.ExpiresAt), LastHitAt: timePtr(e.LastHitAt)}
		if cq.results {
			ae.Result = rawOrNull(e.Result)
		}
		out.Entries = append(out.Entries, ae)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// purgeCache answers DELETE /v1/cache (every entry) and DELETE
// /v1/cache/{key} (one), with expired entries, and says how many.
func (s *Server) purgeCache(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.cacheStore()
	if err != nil {
		return err
	}
	key := r.PathValue("key")
	if r.Pattern == "DELETE /v1/cache/{key}" {
		if err := checkCacheKey(key); err != nil {
			return badRequest("", "%v", err)
		}
	}
	if len(r.URL.Query()) > 0 {
		return badRequest("", "DELETE %s takes no query parameters", r.URL.Path)
	}
	n, err := cs.PurgeCache(r.Context(), key, time.Now())
	if err != nil {
		return err
	}
	p, _ := principalOf(r.Context())
	s.log.Info("result cache purged", "by", p.Name, "key", key, "purged", n)
	writeJSON(w, http.StatusOK, api.CachePurged{Purged: n})
	return nil
}
