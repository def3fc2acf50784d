package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Activities: a Task whose Resource is an activity ARN
// (arn:aws:states:REGION:ACCOUNT:activity:NAME) is not run by an agent of
// this process. Its task waits, durably, until a worker polls for activity
// NAME (PollActivity, ClaimActivity: Step Functions' GetActivityTask),
// which receives the state's effective input and a task token; the worker
// sends heartbeats and answers with the token (SendTaskHeartbeat,
// SendTaskSuccess, SendTaskFailure), as for the callback pattern.
//
// Activities are named by NAME alone: the ARN's partition, region and
// account are not compared. A resources map entry (agents file, or
// agents.Registry.RegisterResource) for the activity's exact ARN runs the
// Task with that agent instead, like any other Resource: tests and local
// runs use it to stand in for workers.

// WaitingForActivity is the WaitingFor of an execution stopped at a Task of
// an activity: its task waits for a worker, or for the worker's answer.
const WaitingForActivity = "Activity"

// The history events of a Task of an activity, with AWS Step Functions'
// names. ActivityScheduled carries the input handed to the worker and the
// detail {"resource", "timeoutInSeconds", "heartbeatInSeconds"};
// ActivityStarted, recorded when a worker took the task, {"workerName"}.
const (
	EventActivityScheduled = "ActivityScheduled"
	EventActivityStarted   = "ActivityStarted"
	EventActivitySucceeded = "ActivitySucceeded"
	EventActivityFailed    = "ActivityFailed"
	EventActivityTimedOut  = "ActivityTimedOut"
)

// ErrNoActivityTask is returned (wrapped) by ClaimActivity when the
// execution has no task of the activity waiting for a worker (none was
// scheduled, another worker took it, or it timed out).
var ErrNoActivityTask = errors.New("no task of the activity is waiting for a worker")

// ErrActivityName is returned (wrapped) for an activity name that no
// activity ARN can have.
var ErrActivityName = errors.New("not an activity name (1 to 80 letters, digits, '-', '_' and '.')")

// ActivityTask is a task of an activity: waiting for a worker, or handed to
// one.
type ActivityTask struct {
	// Execution is the execution's id; State the Task state's name,
	// qualified by the scope it runs in ("Map/3/Work").
	Execution string
	State     string
	// Activity is the activity's name.
	Activity string
	// Input is the state's effective input (after Parameters or
	// Arguments): what the worker works on.
	Input any
	// Attempt is the Task's attempt (0, then one per retry).
	Attempt int
	// ScheduledAt is when the task was scheduled; Deadline when it fails
	// with States.Timeout (zero: no TimeoutSeconds).
	ScheduledAt time.Time
	Deadline    time.Time
	// StartedAt is when a worker took the task (zero while it waits for
	// one), and Worker that worker's name (which may be empty).
	Worker    string
	StartedAt time.Time
	// Token is the task token, set only in what ClaimActivity and
	// PollActivity return: the engine keeps only its hash.
	Token string
}

// eventTypes returns the types of the events recording a callback's
// success, failure and timeout.
func (cb *PendingCallback) eventTypes() (succeeded, failed, timedOut string) {
	if cb.Activity != "" {
		return EventActivitySucceeded, EventActivityFailed, EventActivityTimedOut
	}
	return EventTaskSucceeded, EventTaskFailed, EventTaskTimedOut
}

// what names what a callback waits for, in causes.
func (cb *PendingCallback) what() string {
	if cb.Activity != "" {
		return fmt.Sprintf("task of activity %s", cb.Activity)
	}
	return "task token"
}

// isActivity reports whether s is a Task of an activity.
func isActivity(s *states.Task) bool { return s.Resource != nil && s.Resource.Kind == states.Activity }

// toWorkers reports whether a Task of an activity goes to the activity's
// workers: yes, unless the execution's agents map its ARN to an agent (or
// register an agent under it), which then runs it as any Resource.
func (h *stateRun) toWorkers(s *states.Task) bool {
	return isActivity(s) && !mappedActivity(h.r.agents, s)
}

// mappedActivity reports whether reg runs the Task of an activity s with
// an agent: one its resources map names for the ARN, or one registered
// under the ARN itself.
func mappedActivity(reg *agents.Registry, s *states.Task) bool {
	name, ok := reg.ResolveResource(s.Resource.ARN, "", "")
	return name != "" || ok
}

// scheduleActivity schedules the task of a Task of an activity with input
// (the state's effective input) and parks the state until a worker's
// answer or a deadline: TimeoutSeconds counts from now, HeartbeatSeconds
// from when a worker takes the task.
func (h *stateRun) scheduleActivity(ctx context.Context, s *states.Task, input any, timeout, heartbeat time.Duration) error {
	if !h.r.x.durable {
		return h.runtimeError(fmt.Sprintf("A Task of an activity (%s) waits for a worker, which needs an executor with a store (engine.Config.Store).", s.Resource.ARN))
	}
	now := time.Now()
	cb := &PendingCallback{Attempt: h.env.retry, IssuedAt: now, Heartbeat: heartbeat, Activity: s.Resource.Name, Input: input, State: h.name(), Scope: h.sc.prefix}
	detail := map[string]any{"resource": s.Resource.ARN}
	if timeout > 0 {
		cb.Deadline = now.Add(timeout)
		detail["timeoutInSeconds"] = jsonvalue.IntNumber(int64(timeout / time.Second))
	}
	if heartbeat > 0 {
		detail["heartbeatInSeconds"] = jsonvalue.IntNumber(int64(heartbeat / time.Second))
	}
	h.r.event(Event{Type: EventActivityScheduled, State: h.name(), Scope: h.sc.prefix, Input: input, Document: h.raw, Detail: detail})
	return h.awaitToken(ctx, cb)
}

// ValidActivityName reports whether name is one an activity ARN can end
// with.
func ValidActivityName(name string) bool { return states.ValidActivityName(name) }

// ActivityTasksOf lists the tasks of activities of e that are waiting for
// a worker or for a worker's answer, oldest first. An execution that is
// neither WAITING nor RUNNING has none.
func ActivityTasksOf(e *Execution) []ActivityTask {
	var out []ActivityTask
	for _, key := range activityKeys(e) {
		cb := e.Progress.Scopes[key].Step.Callback
		out = append(out, ActivityTask{
			Execution: e.ID, State: cb.Scope + cb.State, Activity: cb.Activity, Input: cb.Input, Attempt: cb.Attempt,
			ScheduledAt: cb.IssuedAt, Deadline: cb.Deadline, Worker: cb.Worker, StartedAt: cb.StartedAt,
		})
	}
	return out
}

// activityKeys returns the keys of the scopes of e whose Task of an
// activity waits (for a worker or an answer), oldest task first.
func activityKeys(e *Execution) []string {
	if e.Status != StatusWaiting && e.Status != StatusRunning {
		return nil
	}
	var keys []string
	for k, s := range e.Progress.Scopes {
		if s == nil || s.Done || s.Step == nil || s.Step.Callback == nil {
			continue
		}
		if cb := s.Step.Callback; cb.Activity != "" && cb.Outcome == nil && cb.Attempt == s.Step.Attempt {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := e.Progress.Scopes[keys[i]].Step.Callback, e.Progress.Scopes[keys[j]].Step.Callback
		if !a.IssuedAt.Equal(b.IssuedAt) {
			return a.IssuedAt.Before(b.IssuedAt)
		}
		return keys[i] < keys[j]
	})
	return keys
}

// unclaimed returns the key of the oldest task of activity name in e that
// waits for a worker and has not timed out at now.
func unclaimed(e *Execution, name string, now time.Time) (string, bool) {
	for _, k := range activityKeys(e) {
		cb := e.Progress.Scopes[k].Step.Callback
		if cb.Activity == name && cb.StartedAt.IsZero() && (cb.Deadline.IsZero() || now.Before(cb.Deadline)) {
			return k, true
		}
	}
	return "", false
}

// moreUnclaimed reports whether e has a task of activity name waiting for
// a worker besides the one at key.
func moreUnclaimed(e *Execution, name, key string) bool {
	for _, k := range activityKeys(e) {
		if cb := e.Progress.Scopes[k].Step.Callback; k != key && cb.Activity == name && cb.StartedAt.IsZero() {
			return true
		}
	}
	return false
}

// ClaimActivity hands the oldest task of activity name that waits in
// execution id to worker (its workerName): the hand-out (ActivityStarted,
// with the hash of a new task token) is committed through the commit
// point, under the execution's hold and lease, before the token is
// returned, so that a task goes to one worker only, whichever process
// claims it. From then on the task's HeartbeatSeconds count. It fails with
// ErrNoActivityTask when no task of the activity waits there, and with
// ErrBusy when the execution is held (running, or being claimed) elsewhere.
func (x *Executor) ClaimActivity(ctx context.Context, id, name, worker string) (_ *ActivityTask, err error) {
	if !ValidActivityName(name) {
		return nil, fmt.Errorf("activity %q: %w", name, ErrActivityName)
	}
	ctx, release, err := x.hold(ctx, id, false)
	if err != nil {
		return nil, err
	}
	defer release()
	defer func() { err = stopped(ctx, id, err) }()
	e, m, err := x.load(ctx, id)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	key, ok := unclaimed(e, name, now)
	if !ok {
		return nil, fmt.Errorf("execution %s, activity %s: %w", id, name, ErrNoActivityTask)
	}
	token, hash, err := newTaskToken(id)
	if err != nil {
		return nil, err
	}
	scope := *e.Progress.Scopes[key]
	step := *scope.Step
	cb := *step.Callback
	cb.SecretHash, cb.Worker, cb.StartedAt = hash, worker, now
	if cb.Heartbeat > 0 {
		cb.HeartbeatDeadline = now.Add(cb.Heartbeat)
	}
	step.Callback = &cb
	scope.Step = &step
	r := x.resumed(m, e, nil)
	r.event(Event{Type: EventActivityStarted, State: cb.State, Scope: cb.Scope, Document: scope.Doc, Detail: map[string]any{"workerName": worker}})
	c := &Commit{Scopes: map[string]*Scope{key: &scope}}
	if wake := cb.HeartbeatDeadline; e.Status == StatusWaiting && !wake.IsZero() {
		// The execution is woken when the heartbeat is due, unless it
		// is woken earlier already.
		if !e.WakeAt.IsZero() && e.WakeAt.Before(wake) {
			wake = e.WakeAt
		}
		c.Status, c.WakeAt, c.WaitingFor = StatusWaiting, wake, e.WaitingFor
	}
	// Once begun, the hand-out is written whatever becomes of the
	// poll: its outcome is never in doubt.
	if err := r.commit(context.WithoutCancel(ctx), nil, c); err != nil {
		return nil, err
	}
	if !moreUnclaimed(e, name, key) {
		x.acts.forget(name, id)
	}
	x.acts.poke()
	return &ActivityTask{
		Execution: id, State: cb.Scope + cb.State, Activity: name, Input: cb.Input, Attempt: cb.Attempt,
		ScheduledAt: cb.IssuedAt, Deadline: cb.Deadline, Worker: worker, StartedAt: now, Token: token,
	}, nil
}

// PollOptions tune PollActivity.
type PollOptions struct {
	// Worker is the worker's name (workerName in ActivityStarted); empty
	// is allowed.
	Worker string
	// Wait is how long to wait for a task; 0 looks once.
	Wait time.Duration
	// Find lists the executions that may have activity tasks waiting: the
	// WAITING executions whose WaitingFor includes WaitingForActivity, by
	// whatever process they were scheduled (a server reads them from its
	// store's listing). It is called at most every ActivityRefresh/2,
	// and one call serves every poll of the executor: every poll of one
	// Executor is to pass the same Find. Nil finds only the tasks
	// scheduled in this process since it started.
	Find func(ctx context.Context) ([]string, error)
}

// ActivityRefresh is how often a waiting PollActivity with a Find looks
// again for tasks scheduled by other processes (or whose execution was
// busy); tasks scheduled in this process are seen at once.
const ActivityRefresh = time.Second

// PollActivity waits up to opts.Wait for a task of activity name and hands
// it to the worker (ClaimActivity): the task, with its token, or nil when
// none came in time, when ctx ended, or when the executor drains (no task
// is handed out then). Tasks go to pollers oldest first.
func (x *Executor) PollActivity(ctx context.Context, name string, opts PollOptions) (*ActivityTask, error) {
	if !ValidActivityName(name) {
		return nil, fmt.Errorf("activity %q: %w", name, ErrActivityName)
	}
	if !x.durable {
		return nil, fmt.Errorf("activity %s: %w", name, ErrNotDurable)
	}
	deadline := time.Now().Add(opts.Wait)
	b := &x.acts
	for {
		if x.draining.Load() || ctx.Err() != nil {
			return nil, nil
		}
		changed := b.changed()
		if opts.Find != nil {
			if err := x.readActivities(ctx, opts.Find); err != nil {
				if ctx.Err() != nil {
					return nil, nil
				}
				return nil, err
			}
		}
		busy := false
		for _, id := range b.candidates(name) {
			t, err := x.ClaimActivity(ctx, id, name, opts.Worker)
			switch {
			case err == nil:
				return t, nil
			case errors.Is(err, ErrBusy):
				busy = true
			case ctx.Err() != nil:
				return nil, nil
			case errors.Is(err, ErrNoActivityTask), errors.Is(err, ErrNotFound), errors.Is(err, ErrEnded):
				b.forget(name, id)
			default:
				return nil, err
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if opts.Find != nil || busy {
			// Look again then: another process may have scheduled a
			// task, or a busy execution let go.
			left = min(left, ActivityRefresh)
		}
		t := time.NewTimer(left)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// readActivities refreshes the activity board from find, unless it was
// read less than ActivityRefresh/2 ago: it loads each execution find
// lists and notes which activities have tasks waiting there.
func (x *Executor) readActivities(ctx context.Context, find func(ctx context.Context) ([]string, error)) error {
	b := &x.acts
	b.reading.Lock()
	defer b.reading.Unlock()
	b.mu.Lock()
	fresh := !b.readAt.IsZero() && time.Since(b.readAt) < ActivityRefresh/2
	b.mu.Unlock()
	if fresh {
		return nil
	}
	started := time.Now()
	ids, err := find(ctx)
	if err != nil {
		return fmt.Errorf("activities: %w", err)
	}
	found := map[string]map[string]time.Time{}
	for _, id := range ids {
		e, err := x.store.Load(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("activities: %w", err)
		}
		for _, t := range ActivityTasksOf(e) {
			if !t.StartedAt.IsZero() {
				continue
			}
			if found[t.Activity] == nil {
				found[t.Activity] = map[string]time.Time{}
			}
			if at, seen := found[t.Activity][id]; !seen || t.ScheduledAt.Before(at) {
				found[t.Activity][id] = t.ScheduledAt
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.found, b.readAt = found, time.Now()
	// What this process noted before the read and the store no longer
	// shows waiting has been taken or has ended: forget it, so that
	// tasks nobody polls for do not pile up.
	for name, ids := range b.local {
		for id, at := range ids {
			if _, ok := found[name][id]; !ok && at.Before(started) {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(b.local, name)
		}
	}
	return nil
}

// activityBoard knows which executions have tasks of which activities
// waiting for a worker: those parked in this process (local), and those a
// PollOptions.Find listed (found). It is safe for concurrent use; the
// zero value is ready.
type activityBoard struct {
	reading sync.Mutex // held while the store is read

	mu sync.Mutex // guards what follows
	// wake is closed (and replaced) when a task may have become
	// claimable.
	wake chan struct{}
	// local and found map an activity's name to the executions with a
	// task of it, and when its oldest such task was scheduled.
	local, found map[string]map[string]time.Time
	readAt       time.Time
}

// changed returns a channel closed at the next poke.
func (b *activityBoard) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wake == nil {
		b.wake = make(chan struct{})
	}
	return b.wake
}

// poke wakes the waiting polls.
func (b *activityBoard) poke() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pokeLocked()
}

func (b *activityBoard) pokeLocked() {
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
}

// parked notes the tasks of activities an execution of this process
// parked on, and wakes the polls.
func (b *activityBoard) parked(id string, names []string) {
	if len(names) == 0 {
		return
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.local == nil {
		b.local = map[string]map[string]time.Time{}
	}
	for _, n := range names {
		if b.local[n] == nil {
			b.local[n] = map[string]time.Time{}
		}
		if _, ok := b.local[n][id]; !ok {
			b.local[n][id] = now
		}
	}
	b.pokeLocked()
}

// forget drops an execution that has no task of activity name waiting.
func (b *activityBoard) forget(name, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.local[name], id)
	delete(b.found[name], id)
}

// candidates lists the executions that may have a task of activity name
// waiting, oldest task first.
func (b *activityBoard) candidates(name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	at := map[string]time.Time{}
	for _, m := range []map[string]time.Time{b.local[name], b.found[name]} {
		for id, t := range m {
			if old, ok := at[id]; !ok || t.Before(old) {
				at[id] = t
			}
		}
	}
	ids := make([]string, 0, len(at))
	for id := range at {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if !at[ids[i]].Equal(at[ids[j]]) {
			return at[ids[i]].Before(at[ids[j]])
		}
		return ids[i] < ids[j]
	})
	return ids
}

// ActivityCount is how many tasks of one activity wait for a worker
// (Pending) and how many workers hold (Started).
type ActivityCount struct {
	Activity         string
	Pending, Started int
}

// CountActivities counts the tasks of activities in executions, by
// activity name, sorted by name.
func CountActivities(executions []*Execution) []ActivityCount {
	by := map[string]*ActivityCount{}
	for _, e := range executions {
		for _, t := range ActivityTasksOf(e) {
			c := by[t.Activity]
			if c == nil {
				c = &ActivityCount{Activity: t.Activity}
				by[t.Activity] = c
			}
			if t.StartedAt.IsZero() {
				c.Pending++
			} else {
				c.Started++
			}
		}
	}
	out := make([]ActivityCount, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Activity < out[j].Activity })
	return out
}

// WaitsForActivity reports whether an execution's WaitingFor says it waits
// at a Task of an activity.
func WaitsForActivity(waitingFor string) bool {
	for _, w := range strings.Split(waitingFor, ", ") {
		if w == WaitingForActivity {
			return true
		}
	}
	return false
}
