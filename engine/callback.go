package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// WaitingForTaskToken is the WaitingFor of an execution stopped at a Task
// of the callback pattern (.waitForTaskToken), until its task token is
// sent back.
const WaitingForTaskToken = "TaskToken"

// EventTaskSubmitted records that the agent of a callback Task took the
// task token: the Task now waits for SendTaskSuccess or SendTaskFailure.
const EventTaskSubmitted = "TaskSubmitted"

// ErrTaskTokenInvalid is returned (wrapped) by SendTaskSuccess,
// SendTaskFailure and SendTaskHeartbeat for a token that is malformed,
// forged, already used, or whose task attempt has ended. The execution is
// left as it was.
var ErrTaskTokenInvalid = errors.New("task token is not valid (already used, or its task ended)")

// tokenPrefix starts every task token, naming its format.
const tokenPrefix = "aslrun-tt1."

// tokenSecretBytes is the length of a task token's secret: 256 random bits.
const tokenSecretBytes = 32

// PendingCallback is the durable record of a Task waiting for its task
// token, kept with the state's progress so the process may exit while it
// waits. The token itself is not kept: only its secret's hash.
type PendingCallback struct {
	// Attempt is the attempt that issued the token; a token of an earlier
	// attempt is not valid.
	Attempt int
	// SecretHash is the hex SHA-256 of the token's secret.
	SecretHash string
	// IssuedAt is when the token was issued; Deadline ends the Task with
	// States.Timeout (zero: no TimeoutSeconds).
	IssuedAt time.Time
	Deadline time.Time
	// Heartbeat is HeartbeatSeconds (zero: none), and HeartbeatDeadline
	// when the Task fails with States.HeartbeatTimeout unless a heartbeat
	// or an answer comes first.
	Heartbeat         time.Duration
	HeartbeatDeadline time.Time
	// Outcome is the answer once one is sent (nil while waiting):
	// {"output": v} for success, {"error": e, "cause": c} for failure.
	Outcome map[string]any

	// Activity names the activity of a Task whose Resource is an activity
	// ARN (empty for the callback pattern). Its task waits to be handed to
	// a worker (ClaimActivity): until then Worker is empty, no token
	// exists (SecretHash is empty) and HeartbeatSeconds does not count.
	Activity string
	// Input is the effective input handed to the activity's worker (after
	// Parameters or Arguments); State and Scope name the state and the
	// scope prefix it runs in ("" at the top level, "Map/3/" in a Map
	// item).
	Input        any
	State, Scope string
	// StartedAt is when the activity task was handed to a worker (zero
	// until then), and Worker that worker's workerName (which may be
	// empty).
	Worker    string
	StartedAt time.Time
}

// newTaskToken returns a token for execution id with a fresh random
// secret, and the secret's hash to record.
func newTaskToken(id string) (token, secretHash string, err error) {
	secret := make([]byte, tokenSecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return "", "", fmt.Errorf("task token: %w", err)
	}
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(id)) + "." + base64.RawURLEncoding.EncodeToString(secret)
	return token, hashSecret(secret), nil
}

func hashSecret(secret []byte) string {
	sum := sha256.Sum256(secret)
	return hex.EncodeToString(sum[:])
}

// ParseTaskToken reads a task token: the execution it belongs to and the
// hash of its secret. A token that is not in the engine's form is an
// error wrapping ErrTaskTokenInvalid, saying what is wrong with it.
func ParseTaskToken(token string) (execution, secretHash string, err error) {
	bad := func(msg string) (string, string, error) {
		return "", "", fmt.Errorf("%s: %w", msg, ErrTaskTokenInvalid)
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return bad("a task token starts with " + strings.TrimSuffix(tokenPrefix, "."))
	}
	idPart, secretPart, ok := strings.Cut(rest, ".")
	if !ok {
		return bad("a task token has an execution part and a secret part")
	}
	id, err := base64.RawURLEncoding.DecodeString(idPart)
	if err != nil || len(id) == 0 {
		return bad("the task token's execution part is not base64url")
	}
	secret, err := base64.RawURLEncoding.DecodeString(secretPart)
	if err != nil || len(secret) != tokenSecretBytes {
		return bad(fmt.Sprintf("the task token's secret is not %d base64url bytes", tokenSecretBytes))
	}
	return string(id), hashSecret(secret), nil
}

// awaiting returns the pending callback of the running attempt when the
// state was resumed while waiting for its token; nil otherwise.
func (h *stateRun) awaiting() *PendingCallback {
	if p := h.progress; p != nil && p.Callback != nil && p.Callback.Attempt == h.env.retry {
		return p.Callback
	}
	return nil
}

// issueToken makes the attempt's task token, readable as $$.Task.Token
// (JSONata: $states.context.Task.Token), and returns its pending record.
func (h *stateRun) issueToken(timeout, heartbeat time.Duration) (*PendingCallback, error) {
	if !h.r.x.durable {
		return nil, h.runtimeError("A .waitForTaskToken Task waits for its task token, which needs an executor with a store (engine.Config.Store).")
	}
	token, hash, err := newTaskToken(h.r.exec.ID)
	if err != nil {
		return nil, err
	}
	h.env.token = token
	h.env.ctxObject = nil
	now := time.Now()
	cb := &PendingCallback{Attempt: h.env.retry, SecretHash: hash, IssuedAt: now, Heartbeat: heartbeat}
	if timeout > 0 {
		cb.Deadline = now.Add(timeout)
	}
	if heartbeat > 0 {
		cb.HeartbeatDeadline = now.Add(heartbeat)
	}
	return cb, nil
}

// awaitToken parks the state until its token is answered or a deadline
// passes.
func (h *stateRun) awaitToken(ctx context.Context, cb *PendingCallback) error {
	wake := cb.Deadline
	if d := cb.HeartbeatDeadline; !d.IsZero() && (wake.IsZero() || d.Before(wake)) {
		wake = d
	}
	what := WaitingForTaskToken
	if cb.Activity != "" {
		what = WaitingForActivity
	}
	return h.park(ctx, what, wake, &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: h.retries, Callback: cb})
}

// callbackResult is the result of a resumed callback Task: the answer sent
// with its token, States.Timeout or States.HeartbeatTimeout when a
// deadline passed first, or errParked when it goes on waiting.
func (h *stateRun) callbackResult(ctx context.Context, cb *PendingCallback) (any, int, error) {
	r := h.r
	now := time.Now()
	succeeded, failed, timedOut := cb.eventTypes()
	var ae *asl.Error
	switch {
	case cb.Outcome != nil:
		if name, failed := cb.Outcome["error"].(string); failed {
			cause, _ := cb.Outcome["cause"].(string)
			ae = &asl.Error{Name: asl.ErrorName(name), Cause: cause}
			break
		}
		out := cb.Outcome["output"]
		size, err := h.fits(out, unknownSize)
		if err != nil {
			return nil, 0, err
		}
		r.event(Event{Type: succeeded, State: h.name(), Scope: h.sc.prefix, Output: out, Document: h.raw})
		return out, size, nil
	case !cb.Deadline.IsZero() && !now.Before(cb.Deadline):
		ae = asl.Errorf(asl.ErrTimeout, "no answer to the %s within TimeoutSeconds (%s)", cb.what(), cb.Deadline.Sub(cb.IssuedAt))
	case !cb.HeartbeatDeadline.IsZero() && !now.Before(cb.HeartbeatDeadline):
		ae = asl.Errorf(asl.ErrHeartbeatTimeout, "no heartbeat for the %s within HeartbeatSeconds (%s)", cb.what(), cb.Heartbeat)
	default:
		return nil, 0, h.awaitToken(ctx, cb)
	}
	typ := failed
	if ae.Name == asl.ErrTimeout || ae.Name == asl.ErrHeartbeatTimeout {
		typ = timedOut
	}
	r.event(Event{Type: typ, State: h.name(), Scope: h.sc.prefix, Error: string(ae.Name), Cause: ae.Cause, Document: h.raw})
	return nil, 0, ae
}

// SendTaskSuccess answers a task token with the Task's result and
// continues the execution in this process, as Decide does (with
// opts.RecordOnly, only records the answer). output is any JSON value. A
// token that is malformed, forged, used already or of an attempt that
// ended is refused with ErrTaskTokenInvalid.
func (x *Executor) SendTaskSuccess(ctx context.Context, token string, output any, opts ResumeOptions) (*Result, error) {
	out, err := jsonvalue.Normalize(output)
	if err != nil {
		return nil, fmt.Errorf("task success: the output is not JSON: %w", err)
	}
	return x.answerToken(ctx, token, map[string]any{"output": out}, opts)
}

// SendTaskFailure answers a task token with a failure: the Task fails with
// errName and cause, which its Retry and Catch see. An empty errName is
// States.TaskFailed. It continues the execution as SendTaskSuccess does.
func (x *Executor) SendTaskFailure(ctx context.Context, token, errName, cause string, opts ResumeOptions) (*Result, error) {
	if errName == "" {
		errName = string(asl.ErrTaskFailed)
	}
	return x.answerToken(ctx, token, map[string]any{"error": errName, "cause": cause}, opts)
}

// SendTaskHeartbeat tells a callback Task its token is still being worked
// on: its HeartbeatSeconds count again from now. The execution goes on
// waiting.
func (x *Executor) SendTaskHeartbeat(ctx context.Context, token string) error {
	_, err := x.withToken(ctx, token, ResumeOptions{}, func(cb *PendingCallback) (bool, error) {
		if cb.Heartbeat > 0 {
			cb.HeartbeatDeadline = time.Now().Add(cb.Heartbeat)
		}
		return false, nil
	})
	return err
}

func (x *Executor) answerToken(ctx context.Context, token string, outcome map[string]any, opts ResumeOptions) (*Result, error) {
	return x.withToken(ctx, token, opts, func(cb *PendingCallback) (bool, error) {
		cb.Outcome = outcome
		return true, nil
	})
}

// withToken finds the pending callback a token answers, lets change alter a
// copy of it, and commits it; when change says so, the execution runs on
// from there (unless opts.RecordOnly).
func (x *Executor) withToken(ctx context.Context, token string, opts ResumeOptions, change func(*PendingCallback) (bool, error)) (_ *Result, err error) {
	id, hash, err := ParseTaskToken(token)
	if err != nil {
		return nil, err
	}
	ctx, release, err := x.holdSoon(ctx, id)
	if err != nil {
		return nil, err
	}
	defer release()
	defer func() { err = stopped(ctx, id, err) }()
	e, m, err := x.load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		// A forged token must not tell which executions exist.
		return nil, ErrTaskTokenInvalid
	}
	if err != nil {
		return nil, err
	}
	key, found := pendingCallback(e, hash)
	if !found {
		return nil, fmt.Errorf("execution %s: %w", id, ErrTaskTokenInvalid)
	}
	scope := *e.Progress.Scopes[key]
	step := *scope.Step
	cb := *step.Callback
	run, err := change(&cb)
	if err != nil {
		return nil, err
	}
	step.Callback = &cb
	scope.Step = &step
	e.Progress.Scopes[key] = &scope
	reg, err := x.agentsOf(e, opts)
	if err != nil {
		return nil, err
	}
	r := x.resumed(m, e, reg)
	c := &Commit{Scopes: map[string]*Scope{key: &scope}}
	if run {
		c.Status = StatusRunning
	}
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	if !run {
		return &Result{ID: id, Status: e.Status}, nil
	}
	if opts.RecordOnly {
		return &Result{ID: id, Status: StatusRunning}, nil
	}
	return r.execute(ctx, e.Progress.Scopes[""])
}

// busyWait is how long an answer to a task token waits for the execution
// held by something else of this process (another answer or heartbeat, a
// worker's claim, a run on its way to wait again) before it is refused
// with ErrBusy.
const busyWait = 5 * time.Second

// holdSoon holds execution id as hold does (waiting for its lease), and
// waits up to busyWait while this process holds it for something else.
func (x *Executor) holdSoon(ctx context.Context, id string) (context.Context, func(), error) {
	deadline := time.Now().Add(busyWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		hctx, release, err := x.hold(ctx, id, true)
		if !errors.Is(err, ErrBusy) || !time.Now().Add(delay).Before(deadline) {
			return hctx, release, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx, nil, fmt.Errorf("execution %s: %w", id, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// pendingCallback returns the key of the scope of e waiting for the token
// whose secret hashes to hash; false when none is.
func pendingCallback(e *Execution, hash string) (string, bool) {
	if e.Status != StatusWaiting && e.Status != StatusRunning {
		return "", false
	}
	keys := make([]string, 0, len(e.Progress.Scopes))
	for k := range e.Progress.Scopes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := e.Progress.Scopes[k]
		if s == nil || s.Done || s.Step == nil || s.Step.Callback == nil {
			continue
		}
		cb := s.Step.Callback
		if cb.Outcome == nil && cb.Attempt == s.Step.Attempt && subtle.ConstantTimeCompare([]byte(cb.SecretHash), []byte(hash)) == 1 {
			return k, true
		}
	}
	return "", false
}

// Value returns the pending callback as a JSON value, the form stores keep
// (PendingCallbackFromValue reads it back).
func (cb *PendingCallback) Value() map[string]any {
	v := map[string]any{
		"attempt":    jsonvalue.IntNumber(int64(cb.Attempt)),
		"secretHash": cb.SecretHash,
		"issuedAt":   cb.IssuedAt.UTC().Format(time.RFC3339Nano),
	}
	if cb.Heartbeat > 0 {
		v["heartbeatMillis"] = jsonvalue.IntNumber(cb.Heartbeat.Milliseconds())
	}
	for k, t := range map[string]time.Time{"deadline": cb.Deadline, "heartbeatDeadline": cb.HeartbeatDeadline} {
		if !t.IsZero() {
			v[k] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	if cb.Outcome != nil {
		v["outcome"] = cb.Outcome
	}
	if cb.Activity != "" {
		v["activity"] = cb.Activity
		v["input"] = cb.Input
		v["state"] = cb.State
		v["scope"] = cb.Scope
		if !cb.StartedAt.IsZero() {
			v["worker"] = cb.Worker
			v["startedAt"] = cb.StartedAt.UTC().Format(time.RFC3339Nano)
		}
	}
	if cb.SecretHash == "" {
		delete(v, "secretHash")
	}
	return v
}

// PendingCallbackFromValue reads what Value wrote.
func PendingCallbackFromValue(v any) (*PendingCallback, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("pending callback is %s, not an object", jsonvalue.TypeName(v))
	}
	cb := &PendingCallback{}
	var bad []string
	when := func(k string) time.Time {
		raw, has := obj[k]
		if !has {
			return time.Time{}
		}
		s, isStr := raw.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if !isStr || err != nil {
			bad = append(bad, k)
		}
		return t
	}
	integer := func(k string) int64 {
		raw, has := obj[k]
		if !has {
			return 0
		}
		n, isNum := numberValue(raw)
		if !isNum || n < 0 {
			bad = append(bad, k)
		}
		return n
	}
	cb.Attempt = int(integer("attempt"))
	cb.Heartbeat = time.Duration(integer("heartbeatMillis")) * time.Millisecond
	str := func(k string) string {
		raw, has := obj[k]
		s, isStr := raw.(string)
		if has && !isStr {
			bad = append(bad, k)
		}
		return s
	}
	cb.SecretHash = str("secretHash")
	cb.Activity, cb.State, cb.Scope, cb.Worker = str("activity"), str("state"), str("scope"), str("worker")
	cb.Input = obj["input"]
	cb.IssuedAt, cb.Deadline, cb.HeartbeatDeadline = when("issuedAt"), when("deadline"), when("heartbeatDeadline")
	cb.StartedAt = when("startedAt")
	// An activity task has a token once it was handed to a worker.
	if len(cb.SecretHash) != 2*sha256.Size && (cb.Activity == "" || !cb.StartedAt.IsZero() || cb.SecretHash != "") {
		bad = append(bad, "secretHash")
	}
	if o, has := obj["outcome"]; has {
		if cb.Outcome, ok = o.(map[string]any); !ok {
			bad = append(bad, "outcome")
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("pending callback: bad or missing fields: %s", strings.Join(bad, ", "))
	}
	return cb, nil
}

// waitsForToken reports whether s uses the callback pattern.
func waitsForToken(s *states.Task) bool { return s.Resource.WaitsForTaskToken() }

// submit calls a callback Task's agent, which takes the token: its result
// is not the Task's (the answer to the token is), but its failure is.
func (h *stateRun) submit(ctx context.Context, s *states.Task, args any, timeout, heartbeat time.Duration) (any, int, error) {
	h.submitting = true
	defer func() { h.submitting = false }()
	return h.callAgent(ctx, s, "", args, nil, timeout, heartbeat)
}

// noRegenerate is the Guardrails.Output retry of a callback Task: the
// answer came with the token and cannot be asked for again.
func noRegenerate(context.Context, string) (any, int, error) {
	return nil, 0, asl.Errorf(asl.ErrTaskFailed, "Guardrails.Output refused the answer to the task token, which cannot be asked for again")
}
