package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

// Own history events of tools and budgets.
const (
	EventToolDenied       = "ToolDenied"
	EventToolRateLimited  = "ToolRateLimited"
	EventBudgetAlert      = "BudgetAlert"
	EventBudgetExceeded   = "BudgetExceeded"
	EventBudgetOverridden = "BudgetExceededContinue"
	// EventBudgetFallback: the workflow Budget is used up and its OnExceed
	// is UseFallback: later agent calls use its Fallback model.
	EventBudgetFallback = "BudgetExceededFallback"
)

// toolSet builds the effective tool set a Task's agent receives.
func (h *stateRun) toolSet(cfg *states.ToolsConfig, denied *string) *agents.Tools {
	if cfg == nil {
		return nil
	}
	all, names := cfg.Effective()
	t := &agents.Tools{All: all, Names: names, Permits: cfg.Permits}
	var mu sync.Mutex
	t.OnUse = func(ctx context.Context, name string) (func(), error) {
		if !cfg.Permits(name) {
			mu.Lock()
			if *denied == "" {
				*denied = name
			}
			mu.Unlock()
			h.r.ownEvent(Event{Type: EventToolDenied, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
				Detail: map[string]any{"tool": name}})
			return func() {}, h.permissionError(name)
		}
		return h.r.rateLimit(ctx, h, cfg, name)
	}
	t.OnRun = func(ctx context.Context, name string, input map[string]any, call agents.ToolCall) (any, error) {
		release, err := t.OnUse(ctx, name)
		if err != nil {
			return nil, err
		}
		defer release()
		if cfg.Timeout <= 0 {
			return call(ctx, input)
		}
		cctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errToolTimeout)
		defer cancel()
		out, err := call(cctx, input)
		if ctx.Err() == nil && errors.Is(context.Cause(cctx), errToolTimeout) {
			return nil, asl.Errorf(asl.ErrTimeout, "state '%s': the tool %q did not answer within %s (Tools.Timeout)", h.name(), name, cfg.Timeout)
		}
		return out, err
	}
	return t
}

// errToolTimeout ends a tool call at its Tools.Timeout.
var errToolTimeout = errors.New("the tool call timed out")

func (h *stateRun) permissionError(tool string) *asl.Error {
	return asl.Errorf(asl.ErrPermissions, "state '%s' may not use the tool %q: it is not in the state's Tools", h.name(), tool)
}

// limiter counts the uses of one tool under one RateLimit.
type limiter struct {
	mu       sync.Mutex
	uses     []time.Time // within the last day, oldest first
	inflight int64
}

// rateLimit applies the state's RateLimits for tool (its own and "*") and
// returns the function that ends the use.
func (r *run) rateLimit(ctx context.Context, h *stateRun, cfg *states.ToolsConfig, tool string) (func(), error) {
	var held []*limiter
	release := func() {
		for _, l := range held {
			l.mu.Lock()
			l.inflight--
			l.mu.Unlock()
		}
	}
	for _, key := range []string{tool, "*"} {
		rl, ok := cfg.RateLimits[key]
		if !ok {
			continue
		}
		l := r.x.limiterFor(r.workflowID() + "\x00" + h.name() + "\x00" + key)
		for {
			wait, ok := l.take(rl)
			if ok {
				held = append(held, l)
				break
			}
			if rl.OnExceed != "wait" {
				release()
				r.ownEvent(Event{Type: EventToolRateLimited, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
					Detail: map[string]any{"tool": tool, "limit": key}})
				return func() {}, asl.Errorf(asl.ErrRateLimitExceeded, "state '%s': the tool %q is over its rate limit (%s)", h.name(), tool, key)
			}
			if err := sleep(ctx, wait); err != nil {
				release()
				return func() {}, err
			}
		}
	}
	return release, nil
}

func (x *Executor) limiterFor(key string) *limiter {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.limiters == nil {
		x.limiters = make(map[string]*limiter)
	}
	l := x.limiters[key]
	if l == nil {
		l = &limiter{}
		x.limiters[key] = l
	}
	return l
}

// workflowID identifies the execution's workflow for rate limits: its
// definition hash, or (without a store, where it is not computed) the
// parsed machine.
func (r *run) workflowID() string {
	if h := r.exec.DefinitionHash; h != "" {
		return h
	}
	return fmt.Sprintf("%p", r.m)
}

// take records a use if rl allows one now; otherwise it says how long to
// wait before trying again.
func (l *limiter) take(rl states.RateLimit) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for len(l.uses) > 0 && now.Sub(l.uses[0]) >= 24*time.Hour {
		l.uses = l.uses[1:]
	}
	if rl.MaxConcurrent > 0 && l.inflight >= rl.MaxConcurrent {
		return 50 * time.Millisecond, false
	}
	windows := []struct {
		max int64
		d   time.Duration
	}{{rl.BurstLimit, time.Second}, {rl.MaxPerMinute, time.Minute}, {rl.MaxPerHour, time.Hour}, {rl.MaxPerDay, 24 * time.Hour}}
	for _, w := range windows {
		if w.max <= 0 {
			continue
		}
		var in []time.Time
		for i, u := range l.uses {
			if now.Sub(u) < w.d {
				in = l.uses[i:]
				break
			}
		}
		if int64(len(in)) >= w.max {
			// Wait until the oldest use within the window leaves it.
			return in[int64(len(in))-w.max].Add(w.d).Sub(now), false
		}
	}
	l.uses = append(l.uses, now)
	l.inflight++
	return 0, true
}
