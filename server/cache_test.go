package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// TestCacheAPI: admins list the result cache's live entries in pages,
// with results when asked, filtered by workflow and scope, and purge one
// entry or all; other roles are refused; bad queries and keys are 400
// naming what is wrong.
func TestCacheAPI(t *testing.T) {
	ts := newTestServer(t)
	var cs engine.CacheStore = ts.st
	ctx := context.Background()
	now := time.Now().UTC()
	keys := []string{strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)}
	for i, k := range keys {
		wf := "triage"
		if i == 2 {
			wf = "digest"
		}
		if err := cs.PutCache(ctx, &engine.CacheEntry{Key: k, Scope: engine.CacheScopeWorkflow, Workflow: wf, State: "Classify", Agent: "Classifier",
			Execution: "e1", Result: map[string]any{"intent": "refund"}, Size: 19, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, engine.CacheLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	var page api.CachePage
	if code, body := ts.call(t, RoleAdmin, "GET", "/v1/cache?limit=2", nil, &page); code != http.StatusOK || len(page.Entries) != 2 || page.Next != keys[1] || page.Entries[0].Result != nil {
		t.Fatalf("first page: %d %s", code, body)
	}
	after := page.Next
	page = api.CachePage{}
	if code, body := ts.call(t, RoleAdmin, "GET", "/v1/cache?after="+after+"&results=1", nil, &page); code != http.StatusOK || len(page.Entries) != 1 || page.Next != "" || string(page.Entries[0].Result) != `{"intent":"refund"}` {
		t.Fatalf("second page: %d %s", code, body)
	}
	page = api.CachePage{}
	if code, body := ts.call(t, RoleAdmin, "GET", "/v1/cache?workflow=digest", nil, &page); code != http.StatusOK || len(page.Entries) != 1 || page.Entries[0].Key != keys[2] {
		t.Errorf("by workflow: %d %s", code, body)
	}
	for _, q := range []string{"?limit=0", "?limit=5000", "?scope=Global", "?after=zz", "?results=maybe", "?colour=red", "?limit=1&limit=2"} {
		if code, body := ts.call(t, RoleAdmin, "GET", "/v1/cache"+q, nil, nil); code != http.StatusBadRequest || !strings.Contains(string(body), `"detail"`) {
			t.Errorf("GET /v1/cache%s = %d %s, want 400 saying why", q, code, body)
		}
	}
	for _, role := range []Role{RoleViewer, RoleOperator, RoleApprover} {
		if code, _ := ts.call(t, role, "GET", "/v1/cache", nil, nil); code != http.StatusForbidden {
			t.Errorf("%v lists the cache: %d", role, code)
		}
		if code, _ := ts.call(t, role, "DELETE", "/v1/cache", nil, nil); code != http.StatusForbidden {
			t.Errorf("%v purges the cache: %d", role, code)
		}
	}
	var purged api.CachePurged
	if code, body := ts.call(t, RoleAdmin, "DELETE", "/v1/cache/"+keys[0], nil, &purged); code != http.StatusOK || purged.Purged != 1 {
		t.Errorf("purge one: %d %s", code, body)
	}
	if code, _ := ts.call(t, RoleAdmin, "DELETE", "/v1/cache/NOTAKEY", nil, nil); code != http.StatusBadRequest {
		t.Errorf("purge a bad key: %d", code)
	}
	if code, body := ts.call(t, RoleAdmin, "DELETE", "/v1/cache", nil, &purged); code != http.StatusOK || purged.Purged != 2 {
		t.Errorf("purge all: %d %s", code, body)
	}
	if code, _ := ts.call(t, RoleAdmin, "GET", "/v1/cache", nil, &page); code != http.StatusOK || len(page.Entries) != 0 {
		t.Errorf("after purging: %d %d entries", code, len(page.Entries))
	}
}

// TestCacheAPIWithoutCache: a store that keeps no cache answers 501.
func TestCacheAPIWithoutCache(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Store = noCache{c.Store} })
	if code, body := ts.call(t, RoleAdmin, "GET", "/v1/cache", nil, nil); code != http.StatusNotImplemented || !strings.Contains(string(body), `"type":"`+api.ProblemType+`no-cache"`) {
		t.Errorf("%d %s", code, body)
	}
}

// noCache is a store without the result cache.
type noCache struct{ Store }

// TestMemoryNamespacesOfCollections: GET /v1/memory names a collection's
// namespace, type and collection beside the namespace as stored.
func TestMemoryNamespacesOfCollections(t *testing.T) {
	ts := newTestServer(t)
	ts.startFlow(t, "m1", `{"StartAt":"S","States":{"S":{"Type":"Pass","Memory":{"Type":"semantic","Namespace":"kb","Write":{"Collection":"notes","Value":"hello"}},"End":true}}}`, `{}`, "", succeeded)
	var list api.MemoryNamespaceList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/memory", nil, &list); code != http.StatusOK || len(list.Namespaces) != 1 ||
		list.Namespaces[0].Of != "kb" || list.Namespaces[0].Type != "semantic" || list.Namespaces[0].Collection != "notes" || list.Namespaces[0].Keys != 1 {
		t.Fatalf("%d %s", code, body)
	}
	var entries api.MemoryEntryList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/memory/"+url.PathEscape(list.Namespaces[0].Namespace), nil, &entries); code != http.StatusOK || len(entries.Entries) != 1 {
		t.Errorf("the collection's entries: %d %s", code, body)
	}
}
