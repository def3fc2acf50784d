package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// distItemsDef runs Work on each item of $.items as a child execution, at
// most 2 at a time.
const distItemsDef = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":2,
	"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"Work","End":true}}},
	"End":true}}}`

// hangAgent holds every call until it is cancelled, telling started of
// each call.
type hangAgent struct{ started chan string }

func (a *hangAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	a.started <- req.Execution
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStopDistributedMapRunning stops an execution while two children of
// its Distributed Map run: the children end ABORTED, the map run too, and
// its record stays listed with its counts.
func TestStopDistributedMapRunning(t *testing.T) {
	ctx := context.Background()
	a := &hangAgent{started: make(chan string, 4)}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: registry(t, a, "Work"), Store: st})
	var wg sync.WaitGroup
	var res *engine.Result
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err = x.Run(ctx, mustParse(t, distItemsDef), mustJSON(t, `{"items":[1,2,3,4,5]}`), engine.StartOptions{ID: "p"})
	}()
	<-a.started
	<-a.started
	stopped, serr := x.Stop(ctx, "p", "Ops.Stop", "enough")
	wg.Wait()
	if serr != nil || stopped.Status != engine.StatusAborted || stopped.ID != "p" || stopped.Error != "Ops.Stop" {
		t.Fatalf("Stop = %+v, %v; want p ABORTED with Ops.Stop", stopped, serr)
	}
	if err != nil || res.Status != engine.StatusAborted {
		t.Fatalf("Run = %+v, %v; want ABORTED", res, err)
	}
	checkAbortedMapRun(t, x, st, "p", "p/Each#1.0", 2)
}

// TestStopDistributedMapWaiting stops an execution that waits for its
// Distributed Map's children (each at a long Wait): no run holds it, so
// Stop ends the waiting children itself.
func TestStopDistributedMapWaiting(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items",
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"Later","States":{"Later":{"Type":"Wait","Seconds":3600,"End":true}}},
		"End":true}}}`
	res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"items":[1,2,3]}`), engine.StartOptions{ID: "w"})
	if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForMapRun {
		t.Fatalf("Run = %+v, %v; want WAITING for its map run", res, err)
	}
	stopped, err := x.Stop(ctx, "w", "", "")
	if err != nil || stopped.Status != engine.StatusAborted {
		t.Fatalf("Stop = %+v, %v", stopped, err)
	}
	checkAbortedMapRun(t, x, st, "w", "w/Each#1.0", 3)
}

// checkAbortedMapRun checks that execution id's one map run, mapRun, is
// ABORTED with n children ABORTED, as listed and as in its history.
func checkAbortedMapRun(t *testing.T, x *engine.Executor, st *store.Memory, id, mapRun string, n int) {
	t.Helper()
	ctx := context.Background()
	runs, err := x.MapRuns(ctx, id)
	if err != nil || len(runs) != 1 {
		t.Fatalf("MapRuns = %+v, %v; want the map run", runs, err)
	}
	r := runs[0]
	// Children launched but not started yet count as pending.
	if r.ID != mapRun || r.Status != "ABORTED" || r.Aborted != n || r.Total != n+r.Pending || r.Succeeded != 0 || r.Failed != 0 || r.StoppedAt.IsZero() {
		t.Errorf("map run %+v; want ABORTED with %d children aborted, the others pending", r, n)
	}
	children, err := x.MapRunChildren(ctx, mapRun)
	if err != nil || len(children) != n {
		t.Fatalf("MapRunChildren = %+v, %v; want %d", children, err, n)
	}
	for _, c := range children {
		if c.Status != engine.StatusAborted {
			t.Errorf("child %s is %s, want ABORTED", c.ID, c.Status)
		}
		if _, err := x.Resume(ctx, c.ID, engine.ResumeOptions{}); err == nil {
			t.Errorf("child %s resumed after its parent was stopped", c.ID)
		}
	}
	events, err := st.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if countEvents(events, engine.EventMapRunAborted) != 1 {
		t.Errorf("history has %d MapRunAborted events, want 1", countEvents(events, engine.EventMapRunAborted))
	}
	if last := events[len(events)-1].Type; last != engine.EventExecutionAborted {
		t.Errorf("last event %s, want %s", last, engine.EventExecutionAborted)
	}
}
