package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// mustParse parses a definition or fails the test.
func mustParse(t *testing.T, def string) *states.Machine {
	t.Helper()
	m, err := states.Parse([]byte(def))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// execute runs def on input with the given agents.
func execute(t *testing.T, def, input string, as map[string]agents.Agent) *engine.Result {
	t.Helper()
	reg := agents.NewRegistry()
	for n, a := range as {
		if err := reg.Register(n, a); err != nil {
			t.Fatal(err)
		}
	}
	x := engine.New(engine.Config{Agents: reg})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, input), engine.StartOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func wantOutput(t *testing.T, res *engine.Result, want string) {
	t.Helper()
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("status = %s (%s: %s), want SUCCEEDED", res.Status, res.Error, res.Cause)
	}
	if w := mustJSON(t, want); !jsonvalue.Equal(res.Output, w) {
		got, _ := jsonvalue.Marshal(res.Output)
		t.Errorf("output = %s, want %s", got, want)
	}
}

func wantError(t *testing.T, res *engine.Result, name asl.ErrorName, causePart string) {
	t.Helper()
	if res.Status != engine.StatusFailed {
		t.Fatalf("status = %s, want FAILED", res.Status)
	}
	if res.Error != string(name) {
		t.Errorf("error = %q (cause %q), want %q", res.Error, res.Cause, name)
	}
	if !strings.Contains(res.Cause, causePart) {
		t.Errorf("cause = %q, want it to contain %q", res.Cause, causePart)
	}
}

func TestPassFalsyResult(t *testing.T) {
	for _, result := range []string{`0`, `false`, `""`, `null`, `[]`, `{}`} {
		t.Run(result, func(t *testing.T) {
			def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":` + result + `,"End":true}}}`
			wantOutput(t, execute(t, def, `{"keep":1}`, nil), result)
		})
	}
}

func TestPassResultIsLiteral(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"a.$":"$.x","b":"$.y"},"End":true}}}`
	wantOutput(t, execute(t, def, `{"x":1}`, nil), `{"a.$":"$.x","b":"$.y"}`)
}

// failing returns an agent that fails with name for its first n calls and
// then returns {"ok":true}, recording the time and request of each call.
type failing struct {
	n     int
	name  asl.ErrorName
	mu    sync.Mutex
	times []time.Time
	reqs  []agents.Request
}

func (f *failing) Invoke(_ context.Context, req *agents.Request) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, time.Now())
	f.reqs = append(f.reqs, *req)
	if len(f.times) <= f.n {
		return nil, &asl.Error{Name: f.name, Cause: "try again"}
	}
	return map[string]any{"ok": true}, nil
}

func TestRetryBackoff(t *testing.T) {
	cases := []struct {
		name    string
		retrier string
		fails   int
		want    []time.Duration
		status  engine.Status
	}{
		{"exponential", `{"ErrorEquals":["Agent.ModelError"],"IntervalSeconds":2,"BackoffRate":3,"MaxAttempts":3}`, 3, []time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second}, engine.StatusSucceeded},
		{"capped", `{"ErrorEquals":["Agent.ModelError"],"IntervalSeconds":2,"BackoffRate":3,"MaxAttempts":3,"MaxDelaySeconds":5}`, 3, []time.Duration{2 * time.Second, 5 * time.Second, 5 * time.Second}, engine.StatusSucceeded},
		{"defaults", `{"ErrorEquals":["States.ALL"]}`, 3, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, engine.StatusSucceeded},
		{"exhausted", `{"ErrorEquals":["Agent.ModelError"],"MaxAttempts":1}`, 5, []time.Duration{time.Second}, engine.StatusFailed},
		{"no match", `{"ErrorEquals":["Other"],"MaxAttempts":3}`, 1, nil, engine.StatusFailed},
		{"zero attempts", `{"ErrorEquals":["Agent.ModelError"],"MaxAttempts":0}`, 1, nil, engine.StatusFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &failing{n: tc.fails, name: asl.ErrAgentModelError}
				def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Retry":[` + tc.retrier + `],"End":true}}}`
				res := execute(t, def, `{}`, map[string]agents.Agent{"A": a})
				if res.Status != tc.status {
					t.Fatalf("status = %s (%s), want %s", res.Status, res.Cause, tc.status)
				}
				var gaps []time.Duration
				for i := 1; i < len(a.times); i++ {
					gaps = append(gaps, a.times[i].Sub(a.times[i-1]))
				}
				if len(gaps) != len(tc.want) {
					t.Fatalf("retry delays = %v, want %v", gaps, tc.want)
				}
				for i := range gaps {
					if gaps[i] != tc.want[i] {
						t.Errorf("retry delay %d = %v, want %v", i, gaps[i], tc.want[i])
					}
				}
				for i, r := range a.reqs {
					if r.Attempt != i || r.Invocation != i {
						t.Errorf("call %d: Attempt %d Invocation %d, want %d and %d", i, r.Attempt, r.Invocation, i, i)
					}
				}
			})
		})
	}
}

func TestRetryFullJitterStaysWithinDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &failing{n: 3, name: asl.ErrAgentModelError}
		def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Retry":[{"ErrorEquals":["States.ALL"],"IntervalSeconds":4,"BackoffRate":2,"MaxAttempts":3,"JitterStrategy":"FULL"}],"End":true}}}`
		wantOutput(t, execute(t, def, `{}`, map[string]agents.Agent{"A": a}), `{"ok":true}`)
		limits := []time.Duration{4 * time.Second, 8 * time.Second, 16 * time.Second}
		for i := 1; i < len(a.times); i++ {
			if gap := a.times[i].Sub(a.times[i-1]); gap < 0 || gap > limits[i-1] {
				t.Errorf("jittered delay %d = %v, want within [0, %v]", i-1, gap, limits[i-1])
			}
		}
	})
}

func TestTaskTimeout(t *testing.T) {
	blocking := agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ignoring := agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
		time.Sleep(time.Hour) // ignores its context
		return "late", nil
	})
	for name, a := range map[string]agents.Agent{"honours ctx": blocking, "ignores ctx": ignoring} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","TimeoutSeconds":5,"End":true}}}`
				res := execute(t, def, `{}`, map[string]agents.Agent{"A": a})
				wantError(t, res, asl.ErrTimeout, "TimeoutSeconds")
				if d := time.Since(start); d != 5*time.Second {
					t.Errorf("timed out after %v, want 5s", d)
				}
				// Let an agent that ignores its context finish, so the
				// bubble ends with no goroutine left.
				time.Sleep(2 * time.Hour)
			})
		})
	}
}

func TestTaskTimeoutSecondsPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		start := time.Now()
		def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","TimeoutSecondsPath":"$.limit","End":true}}}`
		res := execute(t, def, `{"limit":7}`, map[string]agents.Agent{"A": a})
		wantError(t, res, asl.ErrTimeout, "")
		if d := time.Since(start); d != 7*time.Second {
			t.Errorf("timed out after %v, want 7s", d)
		}
	})
}

func TestHeartbeat(t *testing.T) {
	beating := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		for range 5 {
			time.Sleep(2 * time.Second)
			req.Heartbeat()
		}
		return "done", nil
	})
	silent := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		select {
		case <-time.After(time.Minute):
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","HeartbeatSeconds":3,"End":true}}}`
	t.Run("beating", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			wantOutput(t, execute(t, def, `{}`, map[string]agents.Agent{"A": beating}), `"done"`)
		})
	})
	t.Run("silent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			wantError(t, execute(t, def, `{}`, map[string]agents.Agent{"A": silent}), asl.ErrHeartbeatTimeout, "HeartbeatSeconds")
			if d := time.Since(start); d != 3*time.Second {
				t.Errorf("heartbeat timeout after %v, want 3s", d)
			}
		})
	})
}

func TestAgentPanicIsTaskFailed(t *testing.T) {
	a := agents.Func(func(context.Context, *agents.Request) (any, error) { panic("boom") })
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}}`
	wantError(t, execute(t, def, `{}`, map[string]agents.Agent{"A": a}), asl.ErrTaskFailed, "panicked: boom")
}

func TestPlainGoErrorIsTaskFailed(t *testing.T) {
	a := agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, errors.New("disk full") })
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}}`
	wantError(t, execute(t, def, `{}`, map[string]agents.Agent{"A": a}), asl.ErrTaskFailed, "disk full")
}

func TestUnregisteredAgent(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Nobody","End":true}}}`
	wantError(t, execute(t, def, `{}`, nil), asl.ErrTaskFailed, `"Nobody" is not registered`)
}

func TestNonFiniteAgentResultIsTaskFailed(t *testing.T) {
	a := agents.Func(func(context.Context, *agents.Request) (any, error) {
		return map[string]any{"score": func() float64 { z := 0.0; return z / z }()}, nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}}`
	wantError(t, execute(t, def, `{}`, map[string]agents.Agent{"A": a}), asl.ErrTaskFailed, "score")
}

func TestCatchDefaultResultPathReplacesInput(t *testing.T) {
	a := &failing{n: 9, name: "Custom.Error"}
	def := `{"StartAt":"T","States":{
		"T":{"Type":"Task","Agent":"A","Catch":[{"ErrorEquals":["Custom.Error"],"Next":"After"}],"End":true},
		"After":{"Type":"Pass","End":true}}}`
	wantOutput(t, execute(t, def, `{"input":1}`, map[string]agents.Agent{"A": a}), `{"Error":"Custom.Error","Cause":"try again"}`)
}

func TestRuntimeErrorsAreNeverCaught(t *testing.T) {
	def := `{"StartAt":"P","States":{
		"P":{"Type":"Pass","OutputPath":"$.missing","End":true}}}`
	res := execute(t, def, `{}`, nil)
	wantError(t, res, asl.ErrRuntime, "An error occurred while executing the state 'P' (entered at the event id #2).")
}

// TestMapConcurrencyBound checks that no more than MaxConcurrency items run
// at once, that the bound is reached, and that results keep item order.
func TestMapConcurrencyBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var running, peak atomic.Int32
		a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Second)
			running.Add(-1)
			return req.Input, nil
		})
		def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":3,"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Echo","End":true}}},"End":true}}}`
		items := make([]any, 20)
		for i := range items {
			items[i] = json.Number(itoa(i))
		}
		in, _ := jsonvalue.Marshal(items)
		start := time.Now()
		res := execute(t, def, string(in), map[string]agents.Agent{"Echo": a})
		wantOutput(t, res, string(in))
		if p := peak.Load(); p != 3 {
			t.Errorf("peak concurrency = %d, want 3", p)
		}
		if d := time.Since(start); d != 7*time.Second {
			t.Errorf("20 one-second items at concurrency 3 took %v, want 7s", d)
		}
	})
}

func itoa(i int) string { return string(json.Number(jsonvalue.IntNumber(int64(i)))) }

// TestParallelFailureCancelsOtherBranches checks that the first failing
// branch cancels the rest and decides the error.
func TestParallelFailureCancelsOtherBranches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan struct{})
		slow := agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
			select {
			case <-ctx.Done():
				close(cancelled)
				return nil, ctx.Err()
			case <-time.After(time.Hour):
				return "finished", nil
			}
		})
		fast := agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
			time.Sleep(time.Second)
			return nil, &asl.Error{Name: "Review.Rejected", Cause: "found a secret"}
		})
		def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[
			{"StartAt":"S","States":{"S":{"Type":"Task","Agent":"Slow","End":true}}},
			{"StartAt":"F","States":{"F":{"Type":"Task","Agent":"Fast","End":true}}}],"End":true}}}`
		start := time.Now()
		res := execute(t, def, `{}`, map[string]agents.Agent{"Slow": slow, "Fast": fast})
		wantError(t, res, "Review.Rejected", "found a secret")
		synctest.Wait() // let the cancelled agent see its context end
		select {
		case <-cancelled:
		default:
			t.Error("the slow branch was not cancelled")
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("Parallel failed after %v, want 1s", d)
		}
	})
}

func TestExecutionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Without a store a 60 s Wait is refused (it would park), unless
		// the execution times out before it could: here after 4 s.
		def := `{"StartAt":"W","TimeoutSeconds":4,"States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}`
		start := time.Now()
		res := execute(t, def, `{}`, nil)
		if res.Status != engine.StatusTimedOut || res.Error != string(asl.ErrTimeout) {
			t.Errorf("status %s error %q, want TIMED_OUT States.Timeout", res.Status, res.Error)
		}
		if d := time.Since(start); d != 4*time.Second {
			t.Errorf("timed out after %v, want 4s", d)
		}
	})
}

func TestWaitSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		def := `{"StartAt":"W","States":{"W":{"Type":"Wait","SecondsPath":"$.s","End":true}}}`
		wantOutput(t, execute(t, def, `{"s":42}`, nil), `{"s":42}`)
		if d := time.Since(start); d != 42*time.Second {
			t.Errorf("waited %v, want 42s", d)
		}
	})
}

func TestRequestIdentity(t *testing.T) {
	var got []agents.Request
	var mu sync.Mutex
	a := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		got = append(got, *req)
		mu.Unlock()
		return req.Input, nil
	})
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":1,"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}},"End":true}}}`
	reg := agents.NewRegistry()
	_ = reg.Register("A", a)
	x := engine.New(engine.Config{Agents: reg})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `["x","y"]`), engine.StartOptions{ID: "exec-1"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("run: %v %+v", err, res)
	}
	want := []string{"exec-1/M#1.0/0/T#1/0", "exec-1/M#1.0/1/T#1/0"}
	for i, r := range got {
		if k := r.IdempotencyKey(); k != want[i] {
			t.Errorf("call %d key = %q, want %q", i, k, want[i])
		}
		if r.Invocation != i {
			t.Errorf("call %d invocation = %d, want %d", i, r.Invocation, i)
		}
	}
}

func TestWaitTimestampPathInTheFuture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		until := start.Add(90 * time.Second).UTC().Format(time.RFC3339Nano)
		def := `{"StartAt":"W","States":{"W":{"Type":"Wait","TimestampPath":"$.until","End":true}}}`
		execute(t, def, `{"until":"`+until+`"}`, nil)
		if d := time.Since(start); d != 90*time.Second {
			t.Errorf("waited %v, want 90s", d)
		}
	})
}
