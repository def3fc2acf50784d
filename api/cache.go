package api

import (
	"encoding/json"
	"time"
)

// CacheEntry is a Task result kept in the result cache (ASL Cache,
// Idempotent), as GET /v1/cache lists it.
type CacheEntry struct {
	// Key is the entry's key: a SHA-256, in hex, of what it was computed
	// from (it tells nothing of the key's text).
	Key string `json:"key"`
	// Scope is "execution", "workflow" or "global"; Workflow, State,
	// Agent and Execution say where it was made.
	Scope     string `json:"scope"`
	Workflow  string `json:"workflow"`
	State     string `json:"state"`
	Agent     string `json:"agent"`
	Execution string `json:"execution"`
	// Size is the bytes of the result's JSON; Hits how often it was
	// returned.
	Size      int64      `json:"size"`
	Hits      int64      `json:"hits"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	LastHitAt *time.Time `json:"lastHitAt,omitempty"`
	// Result is the cached result; only with ?results=1.
	Result json.RawMessage `json:"result,omitempty"`
}

// CachePage is a page of GET /v1/cache, in key order; Next, when set, is
// the cursor of the next page (?after=).
type CachePage struct {
	Entries []CacheEntry `json:"entries"`
	Next    string       `json:"next,omitempty"`
}

// CachePurged is the answer of DELETE /v1/cache and DELETE
// /v1/cache/{key}: how many entries were removed (expired ones too).
type CachePurged struct {
	Purged int `json:"purged"`
}
