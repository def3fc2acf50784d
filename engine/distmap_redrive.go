package engine

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// EventMapRunRedriven is the history event of a map run redriven with its
// execution (AWS's name); it takes the place of MapRunStarted.
const EventMapRunRedriven = "MapRunRedriven"

// The fields of a map run record (a Scope's Output) that say it was
// redriven: redriveAs is the key (<scope><state>#<visit>.<attempt>) of the
// Map's run that continues it, redriveCount and redrivenAt count the
// redrives and tell the last one's time.
const (
	recRedriveAs    = "redriveAs"
	recRedriveCount = "redriveCount"
	recRedrivenAt   = "redrivenAt"
)

// redriveMapRuns returns the map run records of an execution being
// redriven (scopes is its progress) at top, its failed position, to keep
// in its redrive's commit. When top is a Distributed Map whose last map
// run did not succeed, that record is marked to be redriven by the Map's
// next visit, at now.
func redriveMapRuns(m *states.Machine, scopes map[string]*Scope, top *Scope, now time.Time) map[string]*Scope {
	out := make(map[string]*Scope)
	for k, sc := range scopes {
		if strings.HasPrefix(k, mapRunPrefix) && sc != nil {
			out[k] = sc
		}
	}
	s, ok := m.States[top.Next].(*states.Map)
	if !ok || s.Mode != "DISTRIBUTED" {
		return out
	}
	visit := top.Visits[top.Next]
	failed := top.Next + "#" + itoa(visit) + "."
	best, bestAttempt := "", -1
	for k, sc := range out {
		rec, _ := sc.Output.(map[string]any)
		run := strings.TrimPrefix(k, mapRunPrefix)
		if as, _ := rec[recRedriveAs].(string); as != "" {
			run = as
		}
		rest, ok := strings.CutPrefix(run, failed)
		if !ok {
			continue
		}
		attempt, err := strconv.Atoi(rest)
		if err != nil || attempt <= bestAttempt {
			continue
		}
		best, bestAttempt = k, attempt
	}
	if best == "" {
		return out
	}
	rec, _ := out[best].Output.(map[string]any)
	if rec["status"] == string(StatusSucceeded) {
		return out
	}
	rec = maps.Clone(rec)
	rec["status"] = string(StatusRunning)
	delete(rec, "stoppedAt")
	rec[recRedriveAs] = top.Next + "#" + itoa(visit+1) + ".0"
	rec[recRedriveCount] = jsonvalue.IntNumber(int64(recInt(rec[recRedriveCount]) + 1))
	rec[recRedrivenAt] = now.Format(time.RFC3339Nano)
	out[best] = &Scope{Done: true, Output: rec}
	return out
}

// redrivenMapRun returns the key of the map run that the Map's run key
// redrives (a record marked by redriveMapRuns) and when it was redriven;
// "" when key redrives none.
func (r *run) redrivenMapRun(key string) (string, time.Time) {
	for k, sc := range r.loaded {
		if !strings.HasPrefix(k, mapRunPrefix) || sc == nil {
			continue
		}
		rec, _ := sc.Output.(map[string]any)
		if rec[recRedriveAs] == key {
			return strings.TrimPrefix(k, mapRunPrefix), parseTime(rec[recRedrivenAt])
		}
	}
	return "", time.Time{}
}

// redriveChild redrives child id of a map run redriven at since, when it
// ended without succeeding before then: from the state it failed in, or
// from its start when it was aborted before it recorded one. It returns
// nil when the child is not to be redriven (it succeeded, or it ended in
// this redrive already).
func (x *Executor) redriveChild(ctx context.Context, e *Execution, since time.Time, reg *agents.Registry) (*Result, error) {
	if e.Status == StatusSucceeded || since.IsZero() || !timeoutFrom(e).Before(since) {
		return nil, nil
	}
	for {
		res, err := x.redrive(ctx, e.ID, RedriveOptions{Agents: reg}, true)
		if !errors.Is(err, ErrBusy) {
			return res, err
		}
		// Another run of it holds it: wait for it.
		select {
		case <-ctx.Done():
			return nil, ctxError(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
