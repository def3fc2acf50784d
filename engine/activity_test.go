package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

const activityFlow = `{"StartAt":"Review","States":{
	"Review":{"Type":"Task","Resource":"arn:aws:states:us-east-1:123456789012:activity:review",
		"Parameters":{"doc.$":"$.doc","lang":"en"},
		"ResultPath":"$.review",
		"TimeoutSeconds":60,"HeartbeatSeconds":10,
		"Retry":[{"ErrorEquals":["Busy"],"MaxAttempts":1,"IntervalSeconds":1}],
		"Catch":[{"ErrorEquals":["Rejected","States.Timeout","States.HeartbeatTimeout"],"ResultPath":"$.error","Next":"Handled"}],
		"Next":"Done"},
	"Done":{"Type":"Pass","End":true},
	"Handled":{"Type":"Pass","End":true}}}`

func eventCounts(t *testing.T, st *store.Memory, id string) map[string]int {
	t.Helper()
	h, err := st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range h {
		n[e.Type]++
	}
	return n
}

func wakeAt(t *testing.T, st *store.Memory, id string) time.Time {
	t.Helper()
	e, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e.WakeAt
}

func TestActivityRoundTrip(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	res, err := x.Run(ctx, mustParse(t, activityFlow), mustJSON(t, `{"doc":"d1"}`), engine.StartOptions{ID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForActivity || res.State != "Review" {
		t.Fatalf("run = %+v, want WAITING for an Activity at Review", res)
	}
	e, err := st.Load(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if e.WakeAt.IsZero() {
		t.Errorf("WakeAt is zero, want the TimeoutSeconds deadline")
	}
	tasks := engine.ActivityTasksOf(e)
	if len(tasks) != 1 || tasks[0].Activity != "review" || tasks[0].Worker != "" || tasks[0].State != "Review" || compactOf(tasks[0].Input) != `{"doc":"d1","lang":"en"}` {
		t.Fatalf("ActivityTasksOf = %+v, want one task of review waiting with the effective input", tasks)
	}
	if got := engine.CountActivities([]*engine.Execution{e}); len(got) != 1 || got[0] != (engine.ActivityCount{Activity: "review", Pending: 1}) {
		t.Errorf("CountActivities = %+v", got)
	}

	// Another activity's poll finds nothing; review's poller gets it once.
	if task, err := x.PollActivity(ctx, "other", engine.PollOptions{Worker: "w"}); task != nil || err != nil {
		t.Fatalf("PollActivity(other) = %+v, %v; want nothing", task, err)
	}
	task, err := x.PollActivity(ctx, "review", engine.PollOptions{Worker: "w1"})
	if err != nil || task == nil {
		t.Fatalf("PollActivity(review) = %+v, %v", task, err)
	}
	if task.Execution != "a1" || task.Worker != "w1" || task.Token == "" || compactOf(task.Input) != `{"doc":"d1","lang":"en"}` {
		t.Errorf("task = %+v", task)
	}
	if again, err := x.ClaimActivity(ctx, "a1", "review", "w2"); !errors.Is(err, engine.ErrNoActivityTask) {
		t.Errorf("second ClaimActivity = %+v, %v; want ErrNoActivityTask", again, err)
	}
	if again, err := x.PollActivity(ctx, "review", engine.PollOptions{Worker: "w2"}); again != nil || err != nil {
		t.Errorf("second PollActivity = %+v, %v; want nothing", again, err)
	}
	if e, _ = st.Load(ctx, "a1"); e.WakeAt.After(task.StartedAt.Add(10 * time.Second)) {
		t.Errorf("WakeAt %v is after the heartbeat deadline", e.WakeAt)
	}

	// A new process answers (the token is all it needs).
	y := engine.New(engine.Config{Store: st})
	if err := y.SendTaskHeartbeat(ctx, task.Token); err != nil {
		t.Fatalf("SendTaskHeartbeat = %v", err)
	}
	res, err = y.SendTaskSuccess(ctx, task.Token, mustJSON(t, `{"ok":true}`), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"doc":"d1","review":{"ok":true}}` {
		t.Fatalf("after success: %+v (output %s)", res, compactOf(res.Output))
	}
	if _, err := y.SendTaskSuccess(ctx, task.Token, mustJSON(t, `{}`), engine.ResumeOptions{}); !errors.Is(err, engine.ErrTaskTokenInvalid) {
		t.Errorf("second answer = %v, want ErrTaskTokenInvalid", err)
	}
	got := eventCounts(t, st, "a1")
	want := map[string]int{engine.EventActivityScheduled: 1, engine.EventActivityStarted: 1, engine.EventActivitySucceeded: 1, engine.EventTaskScheduled: 0, engine.EventTaskSucceeded: 0}
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("%d %s events, want %d", got[typ], typ, n)
		}
	}
	h, _ := st.History(ctx, "a1")
	for _, ev := range h {
		if ev.Type == engine.EventActivityStarted && compactOf(ev.Detail) != `{"workerName":"w1"}` {
			t.Errorf("ActivityStarted detail = %s", compactOf(ev.Detail))
		}
		if ev.Type == engine.EventActivityScheduled && compactOf(ev.Detail) != `{"heartbeatInSeconds":10,"resource":"arn:aws:states:us-east-1:123456789012:activity:review","timeoutInSeconds":60}` {
			t.Errorf("ActivityScheduled detail = %s", compactOf(ev.Detail))
		}
	}
}

func TestActivityFailureRetriedThenCaught(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		if _, err := x.Run(ctx, mustParse(t, activityFlow), mustJSON(t, `{"doc":"d"}`), engine.StartOptions{ID: "f"}); err != nil {
			t.Fatal(err)
		}
		first, err := x.PollActivity(ctx, "review", engine.PollOptions{})
		if err != nil || first == nil {
			t.Fatalf("poll = %v, %v", first, err)
		}
		// Busy is retried (after a second, slept in this process): the
		// next attempt is a new task, with a new token.
		start := time.Now()
		res, err := x.SendTaskFailure(ctx, first.Token, "Busy", "later", engine.ResumeOptions{})
		if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForActivity {
			t.Fatalf("after Busy: %+v, %v", res, err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("the retry took %v, want its IntervalSeconds", got)
		}
		second, err := x.PollActivity(ctx, "review", engine.PollOptions{})
		if err != nil || second == nil || second.Attempt != 1 {
			t.Fatalf("second poll = %+v, %v; want attempt 1", second, err)
		}
		if err := x.SendTaskHeartbeat(ctx, first.Token); !errors.Is(err, engine.ErrTaskTokenInvalid) {
			t.Errorf("the first attempt's token = %v, want ErrTaskTokenInvalid", err)
		}
		res, err = x.SendTaskFailure(ctx, second.Token, "Rejected", "no", engine.ResumeOptions{})
		if err != nil || res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"doc":"d","error":{"Cause":"no","Error":"Rejected"}}` {
			t.Fatalf("after Rejected: %+v (%s), %v", res, compactOf(res.Output), err)
		}
	})
	if got := eventCounts(t, st, "f"); got[engine.EventActivityFailed] != 2 || got[engine.EventActivityScheduled] != 2 || got[engine.EventActivityStarted] != 2 {
		t.Errorf("events = %v, want 2 ActivityScheduled, ActivityStarted and ActivityFailed", got)
	}
}

func TestActivityTimeouts(t *testing.T) {
	cases := []struct {
		name      string
		claim     bool
		beats     int // heartbeats sent every 8 s after the claim
		wantError string
		wantAfter time.Duration
	}{
		// Nobody polls: TimeoutSeconds counts from scheduling;
		// HeartbeatSeconds only once a worker has the task.
		{name: "never polled", wantError: "States.Timeout", wantAfter: 60 * time.Second},
		// A worker takes it and dies: no heartbeat.
		{name: "worker dies", claim: true, wantError: "States.HeartbeatTimeout", wantAfter: 10 * time.Second},
		// Heartbeats keep it alive, TimeoutSeconds still ends it.
		{name: "heartbeats until the timeout", claim: true, beats: 10, wantError: "States.Timeout", wantAfter: 60 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := store.NewMemory()
				x := engine.New(engine.Config{Store: st})
				ctx := context.Background()
				start := time.Now()
				res, err := x.Run(ctx, mustParse(t, activityFlow), mustJSON(t, `{"doc":"d"}`), engine.StartOptions{ID: "t"})
				if err != nil {
					t.Fatal(err)
				}
				beats := 0
				if tc.claim {
					beats = tc.beats
				}
				var token string
				if tc.claim {
					task, err := x.PollActivity(ctx, "review", engine.PollOptions{Worker: "w"})
					if err != nil || task == nil {
						t.Fatalf("poll = %v, %v", task, err)
					}
					token = task.Token
				}
				// A heartbeat every 8 s, and the execution resumed when
				// the store says it is due (a claim moves it earlier), as
				// a server's Serve would.
				next := time.Now().Add(8 * time.Second)
				for res.Status == engine.StatusWaiting {
					due := wakeAt(t, st, "t")
					if beats > 0 && next.Before(due) {
						time.Sleep(time.Until(next))
						if err := x.SendTaskHeartbeat(ctx, token); err != nil {
							t.Fatalf("heartbeat at %v: %v", time.Since(start), err)
						}
						next, beats = next.Add(8*time.Second), beats-1
						continue
					}
					time.Sleep(time.Until(due))
					if res, err = x.Resume(ctx, "t", engine.ResumeOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if res.Status != engine.StatusSucceeded || compactOf(res.Output.(map[string]any)["error"].(map[string]any)["Error"]) != `"`+tc.wantError+`"` {
					t.Fatalf("ended %+v (%s), want caught %s", res, compactOf(res.Output), tc.wantError)
				}
				if got := time.Since(start); got != tc.wantAfter {
					t.Errorf("ended after %v, want %v", got, tc.wantAfter)
				}
				if got := eventCounts(t, st, "t"); got[engine.EventActivityTimedOut] != 1 {
					t.Errorf("events = %v, want one ActivityTimedOut", got)
				}
			})
		})
	}
}

// TestActivityOneWorkerEach has many pollers race for a few tasks: each
// task goes to exactly one of them.
func TestActivityOneWorkerEach(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	const tasks, pollers = 6, 12
	flow := `{"StartAt":"Fan","States":{"Fan":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"Work","States":{
		"Work":{"Type":"Task","Resource":"arn:aws:states:eu-west-1:123456789012:activity:work","End":true}}},"End":true}}}`
	res, err := x.Run(ctx, mustParse(t, flow), mustJSON(t, `{"items":[0,1,2,3,4,5]}`), engine.StartOptions{ID: "m"})
	if err != nil || res.WaitingFor != engine.WaitingForActivity {
		t.Fatalf("run = %+v, %v", res, err)
	}
	// Half the pollers find them through Find (as for tasks another
	// process scheduled), half through this process's own notice.
	find := func(context.Context) ([]string, error) { return []string{"m"}, nil }
	var (
		mu  sync.Mutex
		got = map[string]int{} // input → how many workers got it
		wg  sync.WaitGroup
	)
	for i := range pollers {
		wg.Go(func() {
			opts := engine.PollOptions{Worker: "w", Wait: 200 * time.Millisecond}
			if i%2 == 1 {
				opts.Find = find
			}
			task, err := x.PollActivity(ctx, "work", opts)
			if err != nil {
				t.Error(err)
				return
			}
			if task != nil {
				mu.Lock()
				got[compactOf(task.Input)]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != tasks {
		t.Errorf("%d distinct tasks handed out, want %d: %v", len(got), tasks, got)
	}
	for in, n := range got {
		if n != 1 {
			t.Errorf("task %s handed to %d workers", in, n)
		}
	}
}

// TestActivityPollWaits: a poll that waits gets a task scheduled later in
// this process at once.
func TestActivityPollWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		x := engine.New(engine.Config{Store: st})
		ctx := context.Background()
		start := time.Now()
		done := make(chan *engine.ActivityTask)
		go func() {
			task, err := x.PollActivity(ctx, "review", engine.PollOptions{Wait: time.Minute})
			if err != nil {
				t.Error(err)
			}
			done <- task
		}()
		time.Sleep(5 * time.Second)
		if _, err := x.Run(ctx, mustParse(t, activityFlow), mustJSON(t, `{"doc":"d"}`), engine.StartOptions{ID: "later"}); err != nil {
			t.Fatal(err)
		}
		task := <-done
		if task == nil || task.Execution != "later" {
			t.Fatalf("poll = %+v, want the task of later", task)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("the poll returned after %v, want 5s", got)
		}
		// With nothing scheduled, a poll returns nothing after its wait.
		start = time.Now()
		if task, err := x.PollActivity(ctx, "review", engine.PollOptions{Wait: 20 * time.Second}); task != nil || err != nil {
			t.Errorf("empty poll = %+v, %v", task, err)
		}
		if got := time.Since(start); got != 20*time.Second {
			t.Errorf("the empty poll returned after %v, want 20s", got)
		}
	})
}

func TestActivityMappedToAgent(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.Register("local-review", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		return map[string]any{"by": "agent", "in": req.Input}, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterResource("arn:aws:states:us-east-1:123456789012:activity:review", "local-review"); err != nil {
		t.Fatal(err)
	}
	x := engine.New(engine.Config{Store: store.NewMemory(), Agents: reg})
	res, err := x.Run(context.Background(), mustParse(t, activityFlow), mustJSON(t, `{"doc":"d"}`), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded || compactOf(res.Output) != `{"doc":"d","review":{"by":"agent","in":{"doc":"d","lang":"en"}}}` {
		t.Fatalf("run = %+v (%s), want the mapped agent's result", res, compactOf(res.Output))
	}
}

func TestActivityRefused(t *testing.T) {
	ctx := context.Background()
	// Without a store there is nowhere to wait for a worker.
	if _, err := engine.New(engine.Config{}).Run(ctx, mustParse(t, activityFlow), mustJSON(t, `{}`), engine.StartOptions{}); !errors.Is(err, engine.ErrDurability) {
		t.Errorf("Run without a store = %v, want ErrDurability", err)
	}
	x := engine.New(engine.Config{Store: store.NewMemory()})
	for _, name := range []string{"", "a b", "x/y", string(make([]byte, 81))} {
		if _, err := x.PollActivity(ctx, name, engine.PollOptions{}); !errors.Is(err, engine.ErrActivityName) {
			t.Errorf("PollActivity(%q) = %v, want ErrActivityName", name, err)
		}
		if _, err := x.ClaimActivity(ctx, "e", name, ""); !errors.Is(err, engine.ErrActivityName) {
			t.Errorf("ClaimActivity(%q) = %v, want ErrActivityName", name, err)
		}
	}
	if _, err := x.ClaimActivity(ctx, "nosuch", "review", ""); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("ClaimActivity of no execution = %v, want ErrNotFound", err)
	}
	if _, err := engine.New(engine.Config{}).PollActivity(ctx, "review", engine.PollOptions{}); !errors.Is(err, engine.ErrNotDurable) {
		t.Errorf("PollActivity without a store = %v, want ErrNotDurable", err)
	}
}

func TestPendingActivityValue(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, cb := range []*engine.PendingCallback{
		{Attempt: 1, IssuedAt: now, Heartbeat: 10 * time.Second, Activity: "review", Input: mustJSON(t, `{"a":1}`), State: "Work", Scope: "Map/3/"},
		{Attempt: 0, SecretHash: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", IssuedAt: now, Activity: "review", Input: "x", State: "Work", Worker: "w", StartedAt: now.Add(time.Second), HeartbeatDeadline: now.Add(11 * time.Second)},
	} {
		back, err := engine.PendingCallbackFromValue(cb.Value())
		if err != nil {
			t.Fatalf("PendingCallbackFromValue(%v) = %v", compactOf(cb.Value()), err)
		}
		if compactOf(back.Value()) != compactOf(cb.Value()) {
			t.Errorf("round trip = %s, want %s", compactOf(back.Value()), compactOf(cb.Value()))
		}
	}
	// A token is required once a worker has the task, and for the
	// callback pattern.
	for _, v := range []string{
		`{"attempt":0,"issuedAt":"2026-01-02T03:04:05Z","activity":"review","worker":"w","startedAt":"2026-01-02T03:04:05Z","state":"S","scope":""}`,
		`{"attempt":0,"issuedAt":"2026-01-02T03:04:05Z"}`,
		`{"attempt":0,"issuedAt":"2026-01-02T03:04:05Z","activity":7}`,
	} {
		if _, err := engine.PendingCallbackFromValue(mustJSON(t, v)); err == nil {
			t.Errorf("PendingCallbackFromValue(%s) accepted", v)
		}
	}
}

// TestActivityConcurrentAnswers: workers answer the tasks of one
// execution at once, with heartbeats meanwhile: each answer waits its turn
// instead of being refused as busy.
func TestActivityConcurrentAnswers(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	flow := `{"StartAt":"Fan","States":{"Fan":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"Work","States":{
		"Work":{"Type":"Task","Resource":"arn:aws:states:eu-west-1:123456789012:activity:work","HeartbeatSeconds":60,"End":true}}},"End":true}}}`
	if _, err := x.Run(ctx, mustParse(t, flow), mustJSON(t, `{"items":[0,1,2,3,4,5]}`), engine.StartOptions{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	var tasks []*engine.ActivityTask
	for {
		task, err := x.PollActivity(ctx, "work", engine.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if task == nil {
			break
		}
		tasks = append(tasks, task)
	}
	if len(tasks) != 6 {
		t.Fatalf("%d tasks handed out, want 6", len(tasks))
	}
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Go(func() {
			if err := x.SendTaskHeartbeat(ctx, task.Token); err != nil {
				t.Errorf("heartbeat: %v", err)
			}
			if _, err := x.SendTaskSuccess(ctx, task.Token, task.Input, engine.ResumeOptions{}); err != nil {
				t.Errorf("answer: %v", err)
			}
		})
	}
	wg.Wait()
	e, err := st.Load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != engine.StatusSucceeded || compactOf(e.Output) != `[0,1,2,3,4,5]` {
		t.Errorf("execution %s %s, want SUCCEEDED with the items in order", e.Status, compactOf(e.Output))
	}
}
