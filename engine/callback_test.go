package engine_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

const callbackFlow = `{"StartAt":"Call","States":{
	"Call":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters":{"FunctionName":"Notify","Payload":{"token.$":"$$.Task.Token","order.$":"$.order"}},
		"ResultPath":"$.answer",
		"Retry":[{"ErrorEquals":["Busy"],"MaxAttempts":1,"IntervalSeconds":1}],
		"Catch":[{"ErrorEquals":["Rejected","States.Timeout","States.HeartbeatTimeout"],"ResultPath":"$.error","Next":"Handled"}],
		"Next":"Done"},
	"Done":{"Type":"Pass","End":true},
	"Handled":{"Type":"Pass","End":true}}}`

// notifier is the agent of a callback Task: it keeps the tokens it is
// handed, as a worker outside the engine would.
type notifier struct {
	mu     sync.Mutex
	tokens []string
	inputs []any
	states []string // the qualified state of each call
}

func (n *notifier) agent() agents.Agent {
	return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.inputs = append(n.inputs, req.Input)
		n.states = append(n.states, req.State)
		tok, _ := req.Input.(map[string]any)["token"].(string)
		n.tokens = append(n.tokens, tok)
		return map[string]any{"queued": true}, nil
	})
}

func (n *notifier) last(t *testing.T) string {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.tokens) == 0 || n.tokens[len(n.tokens)-1] == "" {
		t.Fatalf("the agent got no token: %v", n.inputs)
	}
	return n.tokens[len(n.tokens)-1]
}

func callbackExecutor(t *testing.T, st engine.Store, n *notifier) *engine.Executor {
	t.Helper()
	return engine.New(engine.Config{Agents: registry(t, n.agent(), "Notify"), Store: st})
}

func TestCallbackRoundTrip(t *testing.T) {
	st := store.NewMemory()
	n := &notifier{}
	x := callbackExecutor(t, st, n)
	ctx := context.Background()
	res, err := x.Run(ctx, mustParse(t, callbackFlow), mustJSON(t, `{"order":7}`), engine.StartOptions{ID: "cb"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForTaskToken || res.State != "Call" || !res.WakeAt.IsZero() {
		t.Fatalf("run = %+v, want WAITING for a TaskToken at Call, with no wake-up", res)
	}
	token := n.last(t)
	if got := n.inputs[0].(map[string]any)["order"]; compactOf(got) != "7" {
		t.Errorf("agent input order = %v, want 7", got)
	}
	if id, _, err := engine.ParseTaskToken(token); err != nil || id != "cb" {
		t.Fatalf("ParseTaskToken(%q) = %q, %v", token, id, err)
	}

	// The process restarts while the execution waits: a new executor on
	// the same store takes the token.
	y := callbackExecutor(t, st, n)
	if res, err = y.Resume(ctx, "cb", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForTaskToken {
		t.Fatalf("Resume while waiting = %+v, %v; want WAITING for the TaskToken again", res, err)
	}
	if err := y.SendTaskHeartbeat(ctx, token); err != nil {
		t.Fatalf("SendTaskHeartbeat = %v", err)
	}
	res, err = y.SendTaskSuccess(ctx, token, mustJSON(t, `{"shipped":true}`), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"answer":{"shipped":true},"order":7}` {
		t.Fatalf("after success: %+v (output %s)", res, compactOf(res.Output))
	}
	if len(n.tokens) != 1 {
		t.Errorf("the agent was called %d times, want 1", len(n.tokens))
	}

	// A token answers once; a forged one never.
	secret := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	forged := []string{
		token,
		"aslrun-tt1." + base64.RawURLEncoding.EncodeToString([]byte("cb")) + "." + secret,
		"aslrun-tt1." + base64.RawURLEncoding.EncodeToString([]byte("nosuch")) + "." + secret,
		token[:len(token)-2],
		"",
		"AAAAKLMNOP",
	}
	for _, tok := range forged {
		if _, err := y.SendTaskSuccess(ctx, tok, map[string]any{}, engine.ResumeOptions{}); !errors.Is(err, engine.ErrTaskTokenInvalid) {
			t.Errorf("SendTaskSuccess(%q) = %v, want ErrTaskTokenInvalid", tok, err)
		}
		if _, err := y.SendTaskFailure(ctx, tok, "E", "c", engine.ResumeOptions{}); !errors.Is(err, engine.ErrTaskTokenInvalid) {
			t.Errorf("SendTaskFailure(%q) = %v, want ErrTaskTokenInvalid", tok, err)
		}
		if err := y.SendTaskHeartbeat(ctx, tok); !errors.Is(err, engine.ErrTaskTokenInvalid) {
			t.Errorf("SendTaskHeartbeat(%q) = %v, want ErrTaskTokenInvalid", tok, err)
		}
	}
}

func TestCallbackFailureRetriedThenCaught(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		n := &notifier{}
		x := callbackExecutor(t, st, n)
		ctx := context.Background()
		if _, err := x.Run(ctx, mustParse(t, callbackFlow), mustJSON(t, `{"order":1}`), engine.StartOptions{ID: "f"}); err != nil {
			t.Fatal(err)
		}
		first := n.last(t)
		// Busy is retried: the next attempt issues a new token and waits.
		res, err := x.SendTaskFailure(ctx, first, "Busy", "try later", engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != engine.StatusWaiting || len(n.tokens) != 2 {
			t.Fatalf("after Busy: %+v with %d tokens, want WAITING on a second token", res, len(n.tokens))
		}
		second := n.last(t)
		if second == first {
			t.Fatal("the retry reused the token")
		}
		if _, err := x.SendTaskSuccess(ctx, first, map[string]any{}, engine.ResumeOptions{}); !errors.Is(err, engine.ErrTaskTokenInvalid) {
			t.Errorf("the first attempt's token after the retry: %v, want ErrTaskTokenInvalid", err)
		}
		res, err = x.SendTaskFailure(ctx, second, "Rejected", "no stock", engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"error":{"Cause":"no stock","Error":"Rejected"},"order":1}` {
			t.Fatalf("after Rejected: %+v (output %s), want caught", res, compactOf(res.Output))
		}
	})
}

func TestCallbackDeadlines(t *testing.T) {
	flow := func(fields string) string {
		return `{"StartAt":"Call","States":{
			"Call":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
				"Parameters":{"FunctionName":"Notify","Payload":{"token.$":"$$.Task.Token"}},` + fields + `,"End":true}}}`
	}
	cases := []struct {
		name   string
		fields string
		every  time.Duration // heartbeats sent this often (0: none)
		want   string
		after  time.Duration
	}{
		{"heartbeat missed", `"HeartbeatSeconds":5,"TimeoutSeconds":60`, 0, "States.HeartbeatTimeout", 5 * time.Second},
		{"heartbeats until the timeout", `"HeartbeatSeconds":4,"TimeoutSeconds":10`, 3 * time.Second, "States.Timeout", 10 * time.Second},
		{"timeout alone", `"TimeoutSeconds":7`, 0, "States.Timeout", 7 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := store.NewMemory()
				n := &notifier{}
				x := callbackExecutor(t, st, n)
				ctx := context.Background()
				start := time.Now()
				res, err := x.Run(ctx, mustParse(t, flow(c.fields)), map[string]any{}, engine.StartOptions{ID: "d"})
				if err != nil {
					t.Fatal(err)
				}
				token := n.last(t)
				// Woken by its timers as Serve would, heartbeating meanwhile.
				nextBeat := start.Add(c.every)
				for res.Status == engine.StatusWaiting {
					if res.WakeAt.IsZero() {
						t.Fatalf("waiting with no wake-up: %+v", res)
					}
					wake := res.WakeAt
					if c.every > 0 && nextBeat.Before(wake) {
						time.Sleep(time.Until(nextBeat))
						nextBeat = nextBeat.Add(c.every)
						if err := x.SendTaskHeartbeat(ctx, token); err != nil {
							t.Fatalf("heartbeat at %s: %v", time.Since(start), err)
						}
						continue
					}
					time.Sleep(time.Until(wake))
					if res, err = x.Resume(ctx, "d", engine.ResumeOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if res.Status != engine.StatusFailed || res.Error != c.want || time.Since(start) != c.after {
					t.Errorf("ended %s with %s (%s) after %s, want FAILED with %s after %s", res.Status, res.Error, res.Cause, time.Since(start), c.want, c.after)
				}
				if err := x.SendTaskHeartbeat(ctx, token); !errors.Is(err, engine.ErrTaskTokenInvalid) {
					t.Errorf("heartbeat after the task ended: %v, want ErrTaskTokenInvalid", err)
				}
			})
		})
	}
}

func TestCallbackInParallelBranches(t *testing.T) {
	const flow = `{"StartAt":"Both","States":{"Both":{"Type":"Parallel","End":true,"Branches":[
		{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters":{"FunctionName":"Notify","Payload":{"token.$":"$$.Task.Token"}},"End":true}}},
		{"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters":{"FunctionName":"Notify","Payload":{"token.$":"$$.Task.Token"}},"End":true}}}]}}}`
	st := store.NewMemory()
	n := &notifier{}
	x := callbackExecutor(t, st, n)
	ctx := context.Background()
	res, err := x.Run(ctx, mustParse(t, flow), map[string]any{}, engine.StartOptions{ID: "p"})
	if err != nil || res.Status != engine.StatusWaiting || len(n.tokens) != 2 {
		t.Fatalf("run = %+v, %v with %d tokens; want WAITING on two", res, err, len(n.tokens))
	}
	// Answered B first, each token reaches its own branch.
	byState := map[string]string{}
	for i, st := range n.states {
		byState[st[strings.LastIndex(st, "/")+1:]] = n.tokens[i]
	}
	first, second := byState["B"], byState["A"]
	if res, err = x.SendTaskSuccess(ctx, first, "b", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("first answer: %+v, %v; want WAITING on the other branch", res, err)
	}
	if res, err = x.SendTaskSuccess(ctx, second, "a", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("second answer: %+v, %v", res, err)
	}
	if got := compactOf(res.Output); got != `["a","b"]` {
		t.Errorf("output %s, want [\"a\",\"b\"] (branch order)", got)
	}
}

func TestCallbackJSONata(t *testing.T) {
	const flow = `{"QueryLanguage":"JSONata","StartAt":"Call","States":{
		"Call":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Arguments":{"FunctionName":"Notify","Payload":{"token":"{% $states.context.Task.Token %}","n":"{% $states.input.n %}"}},
			"Output":{"got":"{% $states.result.v %}","n":"{% $states.input.n %}"},"End":true}}}`
	st := store.NewMemory()
	n := &notifier{}
	x := callbackExecutor(t, st, n)
	ctx := context.Background()
	if _, err := x.Run(ctx, mustParse(t, flow), mustJSON(t, `{"n":3}`), engine.StartOptions{ID: "j"}); err != nil {
		t.Fatal(err)
	}
	res, err := x.SendTaskSuccess(ctx, n.last(t), mustJSON(t, `{"v":"yes"}`), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"got":"yes","n":3}` {
		t.Fatalf("result %+v (output %s)", res, compactOf(res.Output))
	}
}

func TestCallbackNeedsStore(t *testing.T) {
	n := &notifier{}
	x := engine.New(engine.Config{Agents: registry(t, n.agent(), "Notify")})
	_, err := x.Run(context.Background(), mustParse(t, callbackFlow), mustJSON(t, `{"order":1}`), engine.StartOptions{})
	if !errors.Is(err, engine.ErrDurability) || !strings.Contains(err.Error(), `state "Call" waits for its task token`) {
		t.Errorf("without a store: %v, want ErrDurability naming the state", err)
	}
	if _, err := x.SendTaskSuccess(context.Background(), "aslrun-tt1.Y2I."+base64.RawURLEncoding.EncodeToString(make([]byte, 32)), 1, engine.ResumeOptions{}); !errors.Is(err, engine.ErrNotDurable) {
		t.Errorf("SendTaskSuccess without a store: %v, want ErrNotDurable", err)
	}
}

func TestCallbackRecordOnly(t *testing.T) {
	st := store.NewMemory()
	n := &notifier{}
	x := callbackExecutor(t, st, n)
	ctx := context.Background()
	if _, err := x.Run(ctx, mustParse(t, callbackFlow), mustJSON(t, `{"order":2}`), engine.StartOptions{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	res, err := x.SendTaskSuccess(ctx, n.last(t), "ok", engine.ResumeOptions{RecordOnly: true})
	if err != nil || res.Status != engine.StatusRunning {
		t.Fatalf("RecordOnly = %+v, %v, want RUNNING", res, err)
	}
	if res, err = x.Resume(ctx, "r", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"answer":"ok","order":2}` {
		t.Fatalf("Resume = %+v, %v", res, err)
	}
}

func FuzzParseTaskToken(f *testing.F) {
	f.Add("aslrun-tt1.Y2I." + base64.RawURLEncoding.EncodeToString(make([]byte, 32)))
	f.Add("aslrun-tt1..")
	f.Add("aslrun-tt1.Y2I")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		id, hash, err := engine.ParseTaskToken(token)
		if err != nil {
			if !errors.Is(err, engine.ErrTaskTokenInvalid) {
				t.Fatalf("ParseTaskToken(%q) = %v, not ErrTaskTokenInvalid", token, err)
			}
			return
		}
		if id == "" || len(hash) != 64 {
			t.Fatalf("ParseTaskToken(%q) = %q, %q", token, id, hash)
		}
	})
}

func compactOf(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}
