package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/tools/sandbox"
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
	limits, limitsErr := h.toolLimits(cfg)
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
		if limitsErr != nil {
			return nil, limitsErr
		}
		if defaults := cfg.Parameters[name]; len(defaults) > 0 {
			merged := maps.Clone(defaults)
			maps.Copy(merged, input)
			input = merged
		}
		if cfg.Before != nil {
			verdict, err := h.toolHook(ctx, cfg.Before, "Before", name, map[string]any{"tool": name, "input": anyMap(input)})
			if err != nil {
				return nil, err
			}
			if in, ok := verdict["input"].(map[string]any); ok {
				input = in
			}
		}
		v, checked := cfg.Validation[name]
		if checked && v.Input != nil {
			if err := v.Input.Validate(anyMap(input)); err != nil {
				return nil, asl.Errorf(asl.ErrAgentInvalidInput, "state '%s': the arguments of tool %q fail its Validation.Input.Schema: %s", h.name(), name, schemaReason(err))
			}
		}
		cctx := ctx
		if cfg.Timeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeoutCause(ctx, cfg.Timeout, errToolTimeout)
			defer cancel()
		}
		if limits != nil {
			cctx = agents.WithToolLimits(cctx, limits)
		}
		out, err := call(cctx, input)
		if ctx.Err() == nil && errors.Is(context.Cause(cctx), errToolTimeout) {
			return nil, asl.Errorf(asl.ErrTimeout, "state '%s': the tool %q did not answer within %s (Tools.Timeout)", h.name(), name, cfg.Timeout)
		}
		if err == nil && cfg.After != nil {
			if out, err = jsonvalue.Normalize(out); err != nil {
				return nil, asl.Errorf(asl.ErrAgentToolError, "state '%s': the result of tool %q is not JSON: %v", h.name(), name, err)
			}
			verdict, herr := h.toolHook(ctx, cfg.After, "After", name, map[string]any{"tool": name, "input": anyMap(input), "output": out})
			if herr != nil {
				return nil, herr
			}
			if rewritten, ok := verdict["output"]; ok {
				out = rewritten
			}
		}
		if err != nil || !checked {
			return out, err
		}
		if v.Sanitize || v.MaxOutput > 0 {
			if out, err = jsonvalue.Normalize(out); err != nil {
				return nil, asl.Errorf(asl.ErrAgentToolError, "state '%s': the result of tool %q is not JSON: %v", h.name(), name, err)
			}
		}
		if v.Sanitize {
			out = sanitize(out)
		}
		if v.MaxOutput > 0 && jsonvalue.SizeExceeds(out, int(min(v.MaxOutput, math.MaxInt32))) {
			return nil, asl.Errorf(asl.ErrAgentToolError, "state '%s': the result of tool %q is %d bytes, over its Validation.Output.MaxSize of %d", h.name(), name, jsonvalue.Size(out), v.MaxOutput)
		}
		return out, nil
	}
	return t
}

// toolLimits is what cfg narrows for each tool call beyond the tool set
// (Domains, FileSystem, Sandbox), with each Sandbox mount's bucket
// resolved to its folder; nil when it narrows nothing. The error, a
// mount whose bucket is not a folder of the owner's, fails every tool
// call of the state.
func (h *stateRun) toolLimits(cfg *states.ToolsConfig) (*agents.ToolLimits, error) {
	if cfg.Domains == nil && cfg.FileSystem == nil && !cfg.Sandboxed {
		return nil, nil
	}
	l := &agents.ToolLimits{State: h.name()}
	if d := cfg.Domains; d != nil {
		l.Domains = &agents.DomainLimits{Allowed: d.Allowed, HasAllowed: d.HasAllowed, Denied: d.Denied}
	}
	if f := cfg.FileSystem; f != nil {
		l.Files = &agents.FileLimits{AllowedPaths: f.AllowedPaths, DeniedPaths: f.DeniedPaths, AllowedExtensions: f.AllowedExtensions, MaxFileSize: f.MaxFileSize}
	}
	if sb := cfg.Sandbox; cfg.Sandboxed && sb != nil {
		l.Sandbox = &agents.SandboxLimits{Network: sb.Network, Memory: sb.Memory, CPU: sb.CPU, Timeout: sb.Timeout}
		for _, m := range sb.Mounts {
			dir, err := mountDir(h.r.agents, m.Bucket)
			if err != nil {
				return nil, asl.Errorf(asl.ErrPermissions, "state '%s': the Tools.Sandbox mount %s: %v", h.name(), m.Target, err)
			}
			l.Sandbox.Mounts = append(l.Sandbox.Mounts, agents.Mount{Target: m.Target, Dir: dir, Bucket: m.Bucket, ReadOnly: m.ReadOnly})
		}
	}
	return l, nil
}

// mountDir is the folder of the bucket a Sandbox mount names: a bucket
// the owner mapped to a folder (the agents file's Buckets, or an
// itemio.Dir registered from Go).
func mountDir(reg *agents.Registry, bucket string) (string, error) {
	b, ok := reg.Bucket(bucket)
	if !ok {
		return "", fmt.Errorf("bucket %q is not configured: map it to a folder in the agents file's Buckets", bucket)
	}
	dir, ok := b.(itemio.Dir)
	if !ok {
		return "", fmt.Errorf("bucket %q is not a folder on this machine (%T), and only a folder can be mounted", bucket, b)
	}
	return string(dir), nil
}

// sandboxAvailable says whether this machine can run sandboxed tools;
// tests replace it.
var sandboxAvailable = sandbox.Available

// checkSandboxes refuses to start m when it sandboxes tools (Tools
// Sandboxed) and this machine cannot, or a Sandbox mounts a bucket reg
// does not map to a folder: one problem per Tools block or mount, at its
// JSON Pointer. A sandboxed tool never runs unsandboxed.
func checkSandboxes(m *states.Machine, reg *agents.Registry) error {
	uses := m.Sandboxes()
	if len(uses) == 0 {
		return nil
	}
	var list states.ErrorList
	if err := sandboxAvailable(); err != nil {
		for _, u := range uses {
			list = append(list, &states.ValidationError{Pointer: u.Pointer, State: u.State, Msg: fmt.Sprintf(
				"the Tools block runs its tools in a sandbox (Sandboxed), and this machine cannot sandbox: %v; a sandboxed tool never runs unsandboxed", err)})
		}
		return list
	}
	for _, u := range uses {
		for _, mt := range u.Config.Sandbox.Mounts {
			if _, err := mountDir(reg, mt.Bucket); err != nil {
				list = append(list, &states.ValidationError{Pointer: mt.Pointer, State: u.State, Msg: fmt.Sprintf("the Sandbox mount %s: %v", mt.Target, err)})
			}
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
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

// anyMap is m as the schema validator reads it (a nil map is an empty
// object).
func anyMap(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// schemaReason is the innermost reason a schema validator gives, on one
// line.
func schemaReason(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	return strings.TrimLeft(strings.TrimSpace(lines[len(lines)-1]), "- ")
}

// sanitize removes control characters (but newline and tab) and
// invisible formatting characters (Unicode's Cf: zero-width spaces,
// bidirectional controls, …) from every string in v, keys included.
func sanitize(v any) any {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' || r == '\t' {
				return r
			}
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				return -1
			}
			return r
		}, s)
	}
	switch x := v.(type) {
	case string:
		return clean(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = sanitize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[clean(k)] = sanitize(e)
		}
		return out
	}
	return v
}

// toolHook calls a Tools hook (when is "Before" or "After") with what it
// is about (call, which gets the hook's Parameters too) and returns its
// verdict: an object, empty when it answered null. {"allow": false,
// "reason"} vetoes the tool call (Agent.ToolError naming the hook); an
// answer that is neither an object nor null is Agent.InvalidOutput.
func (h *stateRun) toolHook(ctx context.Context, hook *states.ToolHook, when, tool string, call map[string]any) (map[string]any, error) {
	if hook.Parameters != nil {
		call["parameters"] = hook.Parameters
	}
	out, _, err := h.callAgent(ctx, &states.Task{Agent: hook.Agent}, "tool-hook-"+strings.ToLower(when)+"/"+tool+"/"+hook.Agent, call, nil, 0, 0)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return map[string]any{}, nil
	}
	verdict, ok := out.(map[string]any)
	if !ok {
		return nil, asl.Errorf(asl.ErrAgentInvalidOutput, "state '%s': the Tools.Hooks.%s agent %q answered %s for tool %q: want an object ({\"allow\": false, \"reason\"} to veto, {\"input\"} or {\"output\"} to rewrite) or null", h.name(), when, hook.Agent, jsonvalue.TypeName(out), tool)
	}
	if allow, ok := verdict["allow"].(bool); ok && !allow {
		reason, _ := verdict["reason"].(string)
		if reason == "" {
			reason = "no reason given"
		}
		return nil, asl.Errorf(asl.ErrAgentToolError, "state '%s': the Tools.Hooks.%s agent %q vetoed the call of tool %q: %s", h.name(), when, hook.Agent, tool, reason)
	}
	return verdict, nil
}
