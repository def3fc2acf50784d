package engine

import (
	"context"
	"errors"
	"time"
)

// The result cache of Tasks (ASL's Cache and Idempotent fields): a Task
// whose cache key was stored within its TTL returns the stored result
// without calling its agent. Entries live in the execution store, shared
// by every process on it, bounded in entries and bytes (least recently
// used out first). CacheStore is what a store implements for it.

// Scopes of a cache entry: who shares it.
const (
	CacheScopeExecution = "execution"
	CacheScopeWorkflow  = "workflow"
	CacheScopeGlobal    = "global"
)

// CacheEntry is a Task's result kept in the cache.
type CacheEntry struct {
	// Key is the entry's key: the hex SHA-256 of what it was computed
	// from (the scope and what it is scoped to — the execution, the
	// workflow's name, nothing for global —, the agent's name and a hash
	// of its configuration, the state's definition, and the Task's key
	// or input); it says nothing of the key's text.
	Key string
	// Scope is CacheScopeExecution, CacheScopeWorkflow or
	// CacheScopeGlobal (shared by every registered workflow: executions
	// whose Execution.Registry is set); Workflow, State and Agent say
	// where it was made (for listing), Execution by which execution.
	Scope     string
	Workflow  string
	State     string
	Agent     string
	Execution string
	// Result is the agent's result (JSON), Size the bytes of its JSON.
	Result any
	Size   int64
	// CreatedAt is when it was stored, ExpiresAt when it expires (zero:
	// never), Hits how often it was returned and LastHitAt when last.
	CreatedAt time.Time
	ExpiresAt time.Time
	Hits      int64
	LastHitAt time.Time
}

// Live reports whether e has not expired at now.
func (e *CacheEntry) Live(now time.Time) bool {
	return e.ExpiresAt.IsZero() || now.Before(e.ExpiresAt)
}

// CacheLimits bound a store's cache; past either, the least recently used
// entries (by LastHitAt, else CreatedAt) are removed.
type CacheLimits struct {
	MaxEntries int
	MaxBytes   int64
}

// DefaultCacheLimits are the limits when a store is given none.
var DefaultCacheLimits = CacheLimits{MaxEntries: 100000, MaxBytes: 1 << 30}

// CacheFilter selects entries to list: by Workflow and Scope when set,
// after the key After, at most Limit (0: all).
type CacheFilter struct {
	Workflow string
	Scope    string
	After    string
	Limit    int
}

// ErrCacheBusy is ClaimCache's answer while another process computes the
// entry.
var ErrCacheBusy = errors.New("cache entry being computed by another process")

// CacheStore is implemented by stores that keep the result cache.
type CacheStore interface {
	// ClaimCache looks key up at now. A live entry is returned (its hit
	// counted, LastHitAt set to now). Else the caller is made the one to
	// compute it, for lease (until it puts the entry or the lease runs
	// out): the answer is (nil, nil). While another owner's lease on the
	// key runs, the answer is ErrCacheBusy: wait and ask again.
	ClaimCache(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (*CacheEntry, error)
	// PutCache stores e (replacing any entry of its key, ending the
	// claim on it) and removes the least recently used entries beyond
	// limits (zero fields: DefaultCacheLimits').
	PutCache(ctx context.Context, e *CacheEntry, limits CacheLimits) error
	// ReleaseCache ends owner's claim on key without an entry (the agent
	// failed): the next ClaimCache may compute it.
	ReleaseCache(ctx context.Context, key, owner string) error
	// ListCache lists live entries at now by key, as f selects.
	ListCache(ctx context.Context, f CacheFilter, now time.Time) ([]*CacheEntry, error)
	// PurgeCache removes the entry of key ("" removes every entry) and
	// returns how many it removed; expired entries are removed too.
	PurgeCache(ctx context.Context, key string, now time.Time) (int, error)
}
