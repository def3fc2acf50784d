package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// EventTaskCacheHit records a Task that returned a cached result instead
// of calling its agent; EventTaskCached one whose result was stored.
const (
	EventTaskCacheHit = "TaskCacheHit"
	EventTaskCached   = "TaskCached"
)

// Bounds of the single flight: how long a process may compute an entry
// before another may (at least), and how long a Task waits for another
// process's entry between two looks.
const (
	cacheLeaseMin  = time.Minute
	cacheWaitFirst = 20 * time.Millisecond
	cacheWaitMax   = time.Second
)

// taskCache is one cached Task call: its key and, once the lookup
// missed, the claim this process holds on it.
type taskCache struct {
	cs      CacheStore
	key     string
	owner   string
	claimed bool
	scope   string
}

// cacheStore returns where the executor keeps its result cache.
func (h *stateRun) cacheStore() (CacheStore, error) {
	x := h.r.x
	if !x.durable {
		return &x.localCache, nil
	}
	if cs, ok := x.store.(CacheStore); ok {
		return cs, nil
	}
	return nil, h.runtimeError(fmt.Sprintf("Cache: this executor's store (%T) keeps no result cache", x.store))
}

// cacheKey computes the Task's cache key: a hash of its scope (and what
// it is scoped to), its agent and the agent's configuration, the state's
// definition, and its key (Key, Key.$, else the agent's input).
func (h *stateRun) cacheKey(s *states.Task, input, params any) (string, error) {
	c := s.Cache
	var text string
	switch {
	case c.KeyJSONata != nil:
		v, err := h.evalJSONata(h.ctx, c.KeyJSONata, h.jsonataScope(input), "Cache Key")
		if err != nil {
			return "", err
		}
		data, err := jsonvalue.Canonical(v)
		if err != nil {
			return "", h.runtimeError("Cache key (Key): " + err.Error())
		}
		text = "k" + string(data)
	case c.KeyExpr != nil:
		v, err := c.KeyExpr.Eval(input, h.env)
		if err != nil {
			return "", h.runtimeError("Cache key (Key.$): " + err.Error())
		}
		data, err := jsonvalue.Canonical(v)
		if err != nil {
			return "", h.runtimeError("Cache key (Key.$): " + err.Error())
		}
		text = "k" + string(data)
	case !c.Key.IsZero():
		s, err := c.Key.Render(input, h.env)
		if err != nil {
			return "", h.runtimeError("Cache key: " + err.Error())
		}
		text = "t" + s
	default:
		data, err := jsonvalue.Canonical(params)
		if err != nil {
			return "", h.runtimeError("Cache key (the agent's input): " + err.Error())
		}
		text = "i" + string(data)
	}
	// What the entry is scoped to: the workflow (by its name), the
	// execution, or nothing (global: every registered workflow).
	var scopeID string
	switch c.Scope {
	case states.CacheScopeExecution:
		scopeID = h.r.exec.ID
	case states.CacheScopeGlobal:
		// Run refuses it in an unregistered execution; an execution
		// made otherwise (a fork of one made before Registry was kept)
		// fails here rather than share what it must not.
		if h.r.exec.Registry == "" {
			return "", h.runtimeError(c.ScopePointer + ": " + globalRefusal)
		}
	default:
		scopeID = h.r.exec.MachineName
	}
	agent := s.Agent
	if agent == "" && s.Resource != nil {
		agent = s.Resource.ARN
	}
	sum := sha256.New()
	for _, part := range []string{c.Scope, scopeID, agent, h.agentConfigHash(agent), c.StateHash, text} {
		sum.Write([]byte(part))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// checkCacheScopes refuses the Tasks of m (nested machines included) that
// cache with Scope global when the execution runs no registered workflow
// (registry ""): a global entry is shared by every workflow, so only
// workflows an admin registered may write or read one. Each problem names
// the Task and its Scope field.
func checkCacheScopes(m *states.Machine, registry string) error {
	if registry != "" {
		return nil
	}
	var list states.ErrorList
	m.Each(func(_, name string, st states.State) bool {
		if t, ok := st.(*states.Task); ok && t.Cache != nil && t.Cache.Enabled && t.Cache.Scope == states.CacheScopeGlobal {
			list = append(list, &states.ValidationError{Pointer: t.Cache.ScopePointer, State: name, Msg: globalRefusal})
		}
		return true
	})
	return list.Err()
}

// globalRefusal says why a global cache is refused to an unregistered
// execution.
const globalRefusal = `global caches only for workflows an admin registered; register it with POST /v1/workflows or use "workflow"`

// agentConfigHash is a hash of the configuration of the named agent in
// the execution's agents or mock file (the file's entry of that name,
// else the whole file); "" for agents registered from Go.
func (h *stateRun) agentConfigHash(agent string) string {
	e := h.r.exec
	if len(e.Agents) == 0 {
		return ""
	}
	if v, err := jsonvalue.Decode(e.Agents); err == nil {
		if m, ok := v.(map[string]any); ok {
			if entry, ok := m[agent]; ok {
				if hash, err := jsonvalue.CanonicalHash(entry); err == nil {
					return e.AgentsKind + ":" + hash
				}
			}
		}
	}
	sum := sha256.Sum256(e.Agents)
	return e.AgentsKind + ":" + hex.EncodeToString(sum[:])
}

// cacheLookup looks the Task's key up: a live entry is the Task's result
// (a TaskCacheHit event, nothing charged); else this process claims the
// key (another one computing it is waited for) and the caller calls the
// agent, then stores or releases (taskCache.store, release).
func (h *stateRun) cacheLookup(ctx context.Context, s *states.Task, input, params any, timeout time.Duration) (tc *taskCache, result any, hit bool, err error) {
	cs, err := h.cacheStore()
	if err != nil {
		return nil, nil, false, err
	}
	key, err := h.cacheKey(s, input, params)
	if err != nil {
		return nil, nil, false, err
	}
	// The claim's owner is the call (the execution and the state's
	// visit), not the process: a call resumed after a crash takes its
	// own claim back, and two calls of one process wait for each other.
	tc = &taskCache{cs: cs, key: key, owner: h.r.exec.ID + "/" + h.step(), scope: s.Cache.Scope}
	lease := max(cacheLeaseMin, 2*timeout)
	wait := cacheWaitFirst
	for {
		e, err := cs.ClaimCache(ctx, key, tc.owner, time.Now(), lease)
		switch {
		case err == nil && e != nil:
			h.r.ownEvent(Event{Type: EventTaskCacheHit, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
				Detail: map[string]any{"key": key, "scope": e.Scope, "storedAt": e.CreatedAt.UTC().Format(time.RFC3339Nano), "execution": e.Execution}})
			result := e.Result
			if sec := h.r.secrets; sec != nil {
				// An entry keeps the secrets of the run that stored it
				// sealed; they are this run's secrets too.
				if result, _, err = sec.unseal(result); err != nil {
					return nil, nil, false, fmt.Errorf("state %s: cache entry: %w", h.name(), err)
				}
			}
			return tc, result, true, nil
		case err == nil:
			tc.claimed = true
			return tc, nil, false, nil
		case !errors.Is(err, ErrCacheBusy):
			return nil, nil, false, fmt.Errorf("state %s: cache: %w", h.name(), err)
		}
		// Another process computes it: wait for its entry.
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, false, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, cacheWaitMax)
	}
}

// store keeps the Task's result under its key, for ttl (zero: a day).
func (tc *taskCache) store(ctx context.Context, h *stateRun, s *states.Task, result any) {
	ttl := s.Cache.TTL.Duration
	if ttl == 0 && !s.Cache.TTL.Never {
		ttl = states.DefaultCacheTTL * time.Second
	}
	now := time.Now().UTC()
	if sec := h.r.secrets; sec != nil {
		// The cache is in the store: no plain secret goes there either.
		sec.learn(h.raw)
		result = sec.stored(result)
	}
	e := &CacheEntry{Key: tc.key, Scope: tc.scope, Workflow: h.r.exec.MachineName, State: h.name(), Agent: s.Agent, Execution: h.r.exec.ID,
		Result: result, Size: int64(jsonvalue.Size(result)), CreatedAt: now}
	if ttl > 0 {
		e.ExpiresAt = now.Add(ttl)
	}
	if err := tc.cs.PutCache(ctx, e, h.r.x.cacheLimits); err != nil {
		// The result is the state's all the same; the next call computes
		// it again.
		h.r.x.log.Warn("a Task's result could not be cached", "execution", h.r.exec.ID, "state", h.name(), "error", err)
		return
	}
	tc.claimed = false
	h.r.ownEvent(Event{Type: EventTaskCached, State: h.name(), Scope: h.sc.prefix, Detail: map[string]any{"key": tc.key, "scope": tc.scope}})
}

// release ends the claim when no entry was stored (the agent failed).
func (tc *taskCache) release(ctx context.Context) {
	if tc != nil && tc.claimed {
		tc.cs.ReleaseCache(context.WithoutCancel(ctx), tc.key, tc.owner)
		tc.claimed = false
	}
}

// localCache is the result cache of an executor without a store.
type localCache struct {
	mu      sync.Mutex
	entries map[string]*CacheEntry
	claims  map[string]cacheClaim
}

type cacheClaim struct {
	owner string
	until time.Time
}

func (c *localCache) ClaimCache(_ context.Context, key, owner string, now time.Time, lease time.Duration) (*CacheEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil && e.Live(now) {
		e.Hits++
		e.LastHitAt = now
		cp := *e
		return &cp, nil
	}
	if cl, ok := c.claims[key]; ok && cl.owner != owner && now.Before(cl.until) {
		return nil, ErrCacheBusy
	}
	if c.claims == nil {
		c.claims = make(map[string]cacheClaim)
	}
	c.claims[key] = cacheClaim{owner, now.Add(lease)}
	return nil, nil
}

func (c *localCache) PutCache(_ context.Context, e *CacheEntry, limits CacheLimits) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]*CacheEntry)
	}
	cp := *e
	c.entries[e.Key] = &cp
	delete(c.claims, e.Key)
	if limits.MaxEntries <= 0 {
		limits.MaxEntries = DefaultCacheLimits.MaxEntries
	}
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultCacheLimits.MaxBytes
	}
	var total int64
	for _, x := range c.entries {
		total += x.Size
	}
	for len(c.entries) > limits.MaxEntries || total > limits.MaxBytes && len(c.entries) > 1 {
		var oldest *CacheEntry
		for _, x := range c.entries {
			if oldest == nil || lastUse(x).Before(lastUse(oldest)) {
				oldest = x
			}
		}
		delete(c.entries, oldest.Key)
		total -= oldest.Size
	}
	return nil
}

// lastUse is when an entry was last returned, else made.
func lastUse(e *CacheEntry) time.Time {
	if e.LastHitAt.IsZero() {
		return e.CreatedAt
	}
	return e.LastHitAt
}

func (c *localCache) ReleaseCache(_ context.Context, key, owner string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.claims[key]; ok && cl.owner == owner {
		delete(c.claims, key)
	}
	return nil
}

func (c *localCache) ListCache(_ context.Context, f CacheFilter, now time.Time) ([]*CacheEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*CacheEntry
	for _, e := range c.entries {
		if !e.Live(now) || f.Workflow != "" && e.Workflow != f.Workflow || f.Scope != "" && e.Scope != f.Scope || e.Key <= f.After {
			continue
		}
		cp := *e
		out = append(out, &cp)
	}
	slices.SortFunc(out, func(a, b *CacheEntry) int { return strings.Compare(a.Key, b.Key) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (c *localCache) PurgeCache(_ context.Context, key string, now time.Time) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, e := range c.entries {
		if key == "" || k == key || !e.Live(now) {
			delete(c.entries, k)
			n++
		}
	}
	return n, nil
}
