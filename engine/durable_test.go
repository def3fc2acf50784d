package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// calls records agent calls by idempotency key, and can "crash" the
// process (cancel the run's context) during one chosen call.
type calls struct {
	mu      sync.Mutex
	keys    []string
	crashAt int // 1-based call number that crashes; 0: none
	cancel  context.CancelFunc
}

func (c *calls) agent() agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		c.mu.Lock()
		c.keys = append(c.keys, req.IdempotencyKey())
		n := len(c.keys)
		crash := n == c.crashAt
		c.mu.Unlock()
		if crash {
			c.cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		in, _ := req.Input.(map[string]any)
		return map[string]any{"by": req.Agent, "step": req.Step, "in": in}, nil
	})
}

func (c *calls) repeated() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]int{}
	var rep []string
	for _, k := range c.keys {
		seen[k]++
		if seen[k] == 2 {
			rep = append(rep, k)
		}
	}
	return rep
}

func registry(t *testing.T, a agents.Agent, names ...string) *agents.Registry {
	t.Helper()
	reg := agents.NewRegistry()
	for _, n := range names {
		if err := reg.Register(n, a); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

const pipeline = `{"StartAt":"A","States":{
	"A":{"Type":"Task","Agent":"Worker","ResultPath":"$.a","Next":"Fan"},
	"Fan":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,"ResultPath":"$.items","ItemProcessor":{"StartAt":"Item","States":{
		"Item":{"Type":"Task","Agent":"Worker","Next":"Again"},
		"Again":{"Type":"Task","Agent":"Worker","End":true}}},"Next":"Both"},
	"Both":{"Type":"Parallel","ResultPath":"$.both","Branches":[
		{"StartAt":"L","States":{"L":{"Type":"Task","Agent":"Worker","End":true}}},
		{"StartAt":"R","States":{"R":{"Type":"Task","Agent":"Worker","End":true}}}],"Next":"Z"},
	"Z":{"Type":"Task","Agent":"Worker","ResultPath":"$.z","End":true}}}`

// TestResumeAfterCrash crashes the run during each agent call in turn,
// resumes it, and checks that the execution ends as an uninterrupted run
// does and that only the call in flight is made again.
func TestResumeAfterCrash(t *testing.T) {
	m := mustParse(t, pipeline)
	input := `{"items":[{"i":1},{"i":2},{"i":3}]}`
	clean := &calls{}
	x := engine.New(engine.Config{Agents: registry(t, clean.agent(), "Worker"), Store: store.NewMemory()})
	want, err := x.Run(context.Background(), m, mustJSON(t, input), engine.StartOptions{ID: "clean"})
	if err != nil || want.Status != engine.StatusSucceeded {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}
	total := len(clean.keys)
	for crash := 1; crash <= total; crash++ {
		t.Run("crash at call "+itoa(crash), func(t *testing.T) {
			st := store.NewMemory()
			c := &calls{crashAt: crash}
			ctx, cancel := context.WithCancel(context.Background())
			c.cancel = cancel
			x := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st})
			_, err := x.Run(ctx, m, mustJSON(t, input), engine.StartOptions{ID: "e"})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("run during a crash: %v, want context.Canceled", err)
			}
			// A new process: a new executor on the same store.
			x2 := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st})
			res, err := x2.Resume(context.Background(), "e", engine.ResumeOptions{})
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if res.Status != engine.StatusSucceeded || !jsonvalue.Equal(res.Output, want.Output) {
				got, _ := jsonvalue.Marshal(res.Output)
				w, _ := jsonvalue.Marshal(want.Output)
				t.Fatalf("resumed output %s (%s), want %s", got, res.Status, w)
			}
			// Only calls in flight when the process died (the crashing one,
			// and a concurrent Parallel branch's) may be made again; a call
			// whose outcome was committed never is, so its completion is in
			// the history once.
			if rep := c.repeated(); len(rep) > 2 {
				t.Errorf("calls made again: %v, want at most the ones in flight", rep)
			}
			hist, err := st.History(context.Background(), "e")
			if err != nil {
				t.Fatal(err)
			}
			done := map[string]bool{}
			for _, e := range hist {
				if e.Type != engine.EventTaskSucceeded {
					continue
				}
				d := e.Detail.(map[string]any)
				key := fmt.Sprint(d["step"], "/", d["attempt"])
				if done[key] {
					t.Errorf("the call %s completed twice in the history", key)
				}
				done[key] = true
			}
			if len(done) != total {
				t.Errorf("%d calls completed in the history, want %d", len(done), total)
			}
			if _, err := x2.Resume(context.Background(), "e", engine.ResumeOptions{}); !errors.Is(err, engine.ErrEnded) {
				t.Errorf("resuming an ended execution: %v, want ErrEnded", err)
			}
		})
	}
}

func TestLongWaitParksAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		def := `{"StartAt":"Before","States":{
			"Before":{"Type":"Pass","Result":"x","ResultPath":"$.before","Next":"Sleep"},
			"Sleep":{"Type":"Wait","Seconds":3600,"Next":"After"},
			"After":{"Type":"Pass","Result":"y","ResultPath":"$.after","End":true}}}`
		st := store.NewMemory()
		x := engine.New(engine.Config{Store: st})
		start := time.Now()
		res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != engine.StatusWaiting || res.State != "Sleep" || res.WaitingFor != "Wait" || !res.WakeAt.Equal(start.Add(time.Hour)) {
			t.Fatalf("result %+v, want WAITING at Sleep until %v", res, start.Add(time.Hour))
		}
		due, _ := st.Due(context.Background(), time.Now())
		if len(due) != 0 {
			t.Errorf("due now: %v, want none", due)
		}
		// Resuming early goes on waiting and changes nothing: no event,
		// no commit.
		before, _ := st.History(context.Background(), "w")
		loaded, _ := st.Load(context.Background(), "w")
		for range 3 {
			early, err := x.Resume(context.Background(), "w", engine.ResumeOptions{})
			if err != nil || early.Status != engine.StatusWaiting || early.State != "Sleep" || !early.WakeAt.Equal(res.WakeAt) || early.WaitingFor != "Wait" {
				t.Fatalf("early resume: %+v, %v; want WAITING at Sleep until %v", early, err, res.WakeAt)
			}
		}
		after, _ := st.History(context.Background(), "w")
		reloaded, _ := st.Load(context.Background(), "w")
		if len(after) != len(before) || reloaded.Seq != loaded.Seq {
			t.Errorf("early resumes: %d events and commit %d, want %d and %d as before", len(after), reloaded.Seq, len(before), loaded.Seq)
		}
		time.Sleep(time.Hour)
		due, _ = st.Due(context.Background(), time.Now())
		if len(due) != 1 || due[0] != "w" {
			t.Fatalf("due after an hour: %v, want [w]", due)
		}
		res, err = x.Resume(context.Background(), "w", engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantOutput(t, res, `{"before":"x","after":"y"}`)
		if d := time.Since(start); d != time.Hour {
			t.Errorf("ended after %v, want exactly 1h", d)
		}
	})
}

func TestLongRetryDelayParks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &failing{n: 2, name: asl.ErrAgentModelError}
		def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Retry":[{"ErrorEquals":["Agent.ModelError"],"IntervalSeconds":60,"MaxAttempts":3,"BackoffRate":1}],"End":true}}}`
		st := store.NewMemory()
		x := engine.New(engine.Config{Agents: registry(t, a, "A"), Store: st})
		res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "r"})
		if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != "Retry" {
			t.Fatalf("first run: %+v, %v; want WAITING for Retry", res, err)
		}
		for res.Status == engine.StatusWaiting {
			time.Sleep(time.Until(res.WakeAt))
			if res, err = x.Resume(context.Background(), "r", engine.ResumeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		wantOutput(t, res, `{"ok":true}`)
		for i, r := range a.reqs {
			if r.Attempt != i {
				t.Errorf("call %d has Attempt %d, want %d", i, r.Attempt, i)
			}
		}
		if len(a.reqs) != 3 {
			t.Errorf("%d calls, want 3", len(a.reqs))
		}
	})
}

const checkpointed = `{"StartAt":"Draft","States":{
	"Draft":{"Type":"Task","Agent":"Worker","ResultPath":"$.draft","Next":"Saved"},
	"Saved":{"Type":"Checkpoint","Name":"drafted","Next":"Review"},
	"Review":{"Type":"Task","Agent":"Worker","ResultPath":"$.review","Next":"Reviewed"},
	"Reviewed":{"Type":"Checkpoint","Name":"reviewed","TTL":"1h","Next":"Publish"},
	"Publish":{"Type":"Task","Agent":"Worker","ResultPath":"$.published","End":true}}}`

func TestRollbackAndFork(t *testing.T) {
	st := store.NewMemory()
	c := &calls{}
	x := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st})
	ctx := context.Background()
	m := mustParse(t, checkpointed)
	first, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "doc"})
	if err != nil || first.Status != engine.StatusSucceeded {
		t.Fatalf("run: %+v, %v", first, err)
	}
	list, err := st.ListCheckpoints(ctx, "doc")
	if err != nil || len(list) != 2 {
		t.Fatalf("checkpoints: %v, %v; want 2", list, err)
	}

	// Roll back to the first checkpoint: Review and Publish run again.
	before := len(c.keys)
	res, err := x.Rollback(ctx, "doc", "drafted", engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("rollback: %+v, %v", res, err)
	}
	if n := len(c.keys) - before; n != 2 {
		t.Errorf("rollback to drafted made %d calls, want 2 (Review, Publish)", n)
	}
	// A later checkpoint is still usable.
	before = len(c.keys)
	if res, err = x.Rollback(ctx, "doc", "reviewed", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("rollback to reviewed: %+v, %v", res, err)
	}
	if n := len(c.keys) - before; n != 1 {
		t.Errorf("rollback to reviewed made %d calls, want 1 (Publish)", n)
	}
	hist, err := st.History(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	superseded, rolledBack := 0, 0
	for _, e := range hist {
		if e.Superseded {
			superseded++
		}
		if e.Type == engine.EventExecutionRolledBack {
			rolledBack++
		}
	}
	if superseded == 0 || rolledBack != 2 {
		t.Errorf("history has %d superseded events and %d rollbacks, want some and 2", superseded, rolledBack)
	}
	if err := st.VerifyHistory(ctx, "doc"); err != nil {
		t.Errorf("history does not verify after rollbacks: %v", err)
	}

	// Fork from the first checkpoint: a new execution linked to its parent.
	res, err = x.Fork(ctx, "doc", "drafted", engine.ResumeOptions{ForkID: "doc-2"})
	if err != nil || res.Status != engine.StatusSucceeded || res.ID != "doc-2" {
		t.Fatalf("fork: %+v, %v", res, err)
	}
	child, err := st.Load(ctx, "doc-2")
	if err != nil || child.Parent != "doc" || child.ParentCheckpoint != "drafted" {
		t.Errorf("fork record: %+v, %v; want parent doc at drafted", child, err)
	}

	// An unknown checkpoint is not found (the CLI test checks that the
	// message lists the available ones).
	_, err = x.Rollback(ctx, "doc", "published", engine.ResumeOptions{})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown checkpoint: %v, want %v", err, engine.ErrNotFound)
	}
}

func TestServeRecoversAndWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		c := &calls{crashAt: 1}
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		x := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st})
		m := mustParse(t, pipeline)
		if _, err := x.Run(ctx, m, mustJSON(t, `{"items":[]}`), engine.StartOptions{ID: "crashed"}); err == nil {
			t.Fatal("the crashing run did not stop")
		}
		wait := mustParse(t, `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":600,"End":true}}}`)
		if res, err := x.Run(context.Background(), wait, map[string]any{}, engine.StartOptions{ID: "sleeper"}); err != nil || res.Status != engine.StatusWaiting {
			t.Fatalf("sleeper: %+v, %v", res, err)
		}
		done := make(chan string, 2)
		worker := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st})
		sctx, stop := context.WithCancel(context.Background())
		go worker.Serve(sctx, engine.ServeOptions{OnResult: func(id string, res *engine.Result, err error) {
			if err == nil && res.Status == engine.StatusSucceeded {
				done <- id
			}
		}})
		if id := <-done; id != "crashed" {
			t.Errorf("first finished: %s, want the recovered execution", id)
		}
		start := time.Now()
		if id := <-done; id != "sleeper" {
			t.Errorf("then: %s, want sleeper", id)
		}
		if d := time.Since(start); d > 600*time.Second {
			t.Errorf("sleeper woke after %v, want within 600s", d)
		}
		stop()
		synctest.Wait()
	})
}

// TestStarted: Started gets a copy of the execution as created, RUNNING
// with nothing run yet, before Created gets its id; changing the copy
// changes nothing of the run.
func TestStarted(t *testing.T) {
	st := store.NewMemory()
	agent := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) { return map[string]any{"ok": true}, nil })
	x := engine.New(engine.Config{Agents: registry(t, agent, "Work"), Store: st})
	m := mustParse(t, `{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"Work","End":true}}}`)
	var got *engine.Execution
	var status engine.Status
	var order []string
	res, err := x.Run(context.Background(), m, map[string]any{"n": 1}, engine.StartOptions{ID: "s", MachineName: "M",
		Started: func(e *engine.Execution) {
			order = append(order, "started")
			got, status = e, e.Status
			e.Status = engine.StatusFailed
		},
		Created: func(id string) { order = append(order, "created "+id) },
	})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v; want SUCCEEDED whatever Started did to its copy", res, err)
	}
	if len(order) != 2 || order[0] != "started" || order[1] != "created s" {
		t.Errorf("calls %v, want [started, created s]", order)
	}
	if status != engine.StatusRunning {
		t.Errorf("Started got the execution %s, want RUNNING", status)
	}
	if got == nil || got.ID != "s" || got.MachineName != "M" || got.DefinitionHash == "" || got.StartedAt.IsZero() || len(got.Progress.Scopes) != 0 {
		t.Errorf("Started got %+v, want execution s of M as created, its definition stored, nothing run", got)
	}
	stored, err := st.Load(context.Background(), "s")
	if err != nil || stored.Status != engine.StatusSucceeded || !stored.StartedAt.Equal(got.StartedAt) {
		t.Errorf("stored %+v, %v; want SUCCEEDED, started when Started said", stored, err)
	}
}
