package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// stagedAgent answers a batch by its first row's "fail" column: "no"
// succeeds; until it is fixed, "yes" fails once first is closed (so that
// the batch before it has succeeded) and "hang" waits until its call is
// cancelled (its child is aborted). It counts its calls by execution.
type stagedAgent struct {
	mu    sync.Mutex
	calls map[string]int
	fixed bool
	first chan struct{}
}

// count returns the calls made for execution id.
func (a *stagedAgent) count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[id]
}

func (a *stagedAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	a.mu.Lock()
	a.calls[req.Execution]++
	fixed := a.fixed
	a.mu.Unlock()
	in := req.Input.(map[string]any)
	items := in["Items"].([]any)
	row := items[0].(map[string]any)
	if !fixed {
		switch row["fail"] {
		case "yes":
			select {
			case <-a.first:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return nil, &asl.Error{Name: "Batch.Bad", Cause: "row " + row["id"].(string)}
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	var ids []any
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["id"])
	}
	return map[string]any{"ids": ids}, nil
}

// TestRedriveDistributedMap fails a Distributed Map by its threshold (one
// batch fails while two hang and are aborted), fixes the agent, redrives
// the execution, and checks that it succeeds as an uninterrupted run,
// that the child that had succeeded was not run again, that the others
// were redriven, and that the map run's counts say so.
func TestRedriveDistributedMap(t *testing.T) {
	in := t.TempDir()
	var b strings.Builder
	b.WriteString("id,fail\n")
	for i, f := range []string{"no", "hang", "yes", "hang"} {
		for j := range 3 {
			fmt.Fprintf(&b, "r%d,%s\n", 3*i+j, f)
		}
	}
	if err := os.WriteFile(filepath.Join(in, "rows.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	def := strings.Replace(fmt.Sprintf(distributedDef, 0, ""), `"MaxConcurrency":2`, `"MaxConcurrency":3`, 1)
	def = strings.Replace(def, `"BatchInput":{"run.$":"$.run"}`, `"BatchInput":{}`, 1)
	m := mustParse(t, def)
	first := engine.ChildID("p/Rows#1.0", 0)

	a := &stagedAgent{calls: map[string]int{}, first: make(chan struct{})}
	var once sync.Once
	hooks := engine.Hooks{ExecutionFinished: func(id string, status engine.Status) {
		if id == first && status == engine.StatusSucceeded {
			once.Do(func() { close(a.first) })
		}
	}}
	reg := registry(t, a, "Work")
	if err := reg.RegisterBucket("in", itemio.Dir(in)); err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st, Hooks: hooks})
	ctx := context.Background()
	res, err := x.Run(ctx, m, mustJSON(t, `{}`), engine.StartOptions{ID: "p"})
	if err != nil || res.Status != engine.StatusFailed || res.Error != string(asl.ErrExceedToleratedFailureThreshold) {
		t.Fatalf("Run = %+v, %v; want FAILED with States.ExceedToleratedFailureThreshold", res, err)
	}
	before := make([]engine.Status, 4)
	for i := range before {
		if e, err := st.Load(ctx, engine.ChildID("p/Rows#1.0", i)); err == nil {
			before[i] = e.Status
		}
	}
	// The hanging children were aborted, or never started when the
	// failure came first.
	if before[0] != engine.StatusSucceeded || before[2] != engine.StatusFailed ||
		before[1] != "" && before[1] != engine.StatusAborted || before[3] != "" && before[3] != engine.StatusAborted {
		t.Fatalf("children after the failure: %v; want 0 SUCCEEDED, 2 FAILED, 1 and 3 ABORTED or not started", before)
	}
	runs, err := x.MapRuns(ctx, "p")
	if err != nil || len(runs) != 1 || runs[0].Status != "FAILED" || runs[0].Succeeded != 1 || runs[0].Failed != 1 {
		t.Fatalf("MapRuns after the failure = %+v, %v", runs, err)
	}

	a.mu.Lock()
	a.fixed = true
	calls := a.calls[first]
	a.mu.Unlock()
	res, err = x.Redrive(ctx, "p", engine.RedriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `[{"ids":["r0","r1","r2"]},{"ids":["r3","r4","r5"]},{"ids":["r6","r7","r8"]},{"ids":["r9","r10","r11"]}]`)
	if n := a.count(first); n != calls {
		t.Errorf("the child that had succeeded was called %d times, %d before the redrive", n, calls)
	}
	for i := range 4 {
		id := engine.ChildID("p/Rows#1.0", i)
		e, err := st.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		redriven := 0
		if before[i] != "" && i != 0 {
			redriven = 1
		}
		if e.Status != engine.StatusSucceeded || e.RedriveCount != redriven {
			t.Errorf("child %d: %s, redriven %d times; want SUCCEEDED, %d", i, e.Status, e.RedriveCount, redriven)
		}
	}
	runs, err = x.MapRuns(ctx, "p")
	if err != nil || len(runs) != 1 {
		t.Fatalf("MapRuns = %+v, %v; want the one map run", runs, err)
	}
	r := runs[0]
	if r.ID != "p/Rows#1.0" || r.Status != "SUCCEEDED" || r.Total != 4 || r.Succeeded != 4 || r.Failed != 0 || r.Pending != 0 || r.RedriveCount != 1 || r.RedrivenAt.IsZero() {
		t.Errorf("map run after the redrive: %+v", r)
	}
	events, err := st.History(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if countEvents(events, engine.EventMapRunRedriven) != 1 || countEvents(events, engine.EventMapRunStarted) != 1 {
		t.Errorf("history has %d MapRunRedriven and %d MapRunStarted events, want 1 and 1",
			countEvents(events, engine.EventMapRunRedriven), countEvents(events, engine.EventMapRunStarted))
	}
	// A second redrive of a map run that succeeded is refused with its
	// execution.
	if _, err := x.Redrive(ctx, "p", engine.RedriveOptions{}); err == nil {
		t.Error("a second redrive of the SUCCEEDED execution was accepted")
	}
}

// TestRedriveDistributedMapFailsAgain redrives a map run whose child
// fails again: the execution fails again, the child is redriven once per
// redrive, and a second redrive (after the fix) still reuses the map run.
func TestRedriveDistributedMapFailsAgain(t *testing.T) {
	bolt, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	for name, st := range map[string]engine.Store{"memory": store.NewMemory(), "bolt": bolt} {
		t.Run(name, func(t *testing.T) { redriveFailsAgain(t, st) })
	}
}

func redriveFailsAgain(t *testing.T, st engine.Store) {
	in := t.TempDir()
	writeRows(t, in, 6, map[int]bool{3: true})
	a := &batchAgent{calls: map[string]int{}}
	x := engine.New(engine.Config{Agents: distRegistry(t, a, in, ""), Store: st})
	ctx := context.Background()
	// One child at a time: the first succeeds before the second fails.
	m := mustParse(t, strings.Replace(fmt.Sprintf(distributedDef, 0, ""), `"MaxConcurrency":2`, `"MaxConcurrency":1`, 1))
	res, err := x.Run(ctx, m, mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"})
	if err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("Run = %+v, %v; want FAILED", res, err)
	}
	if res, err = x.Redrive(ctx, "p", engine.RedriveOptions{}); err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("first redrive = %+v, %v; want FAILED", res, err)
	}
	e, err := st.Load(ctx, engine.ChildID("p/Rows#1.0", 1))
	if err != nil || e.Status != engine.StatusFailed || e.RedriveCount != 1 || a.count(e.ID) != 2 {
		t.Fatalf("failing child: %+v %v, %d calls; want FAILED, redriven once, 2 calls", e, err, a.count(e.ID))
	}
	runs, _ := x.MapRuns(ctx, "p")
	if len(runs) != 1 || runs[0].Status != "FAILED" || runs[0].RedriveCount != 1 {
		t.Fatalf("MapRuns = %+v", runs)
	}
	a.mu.Lock()
	a.fixed = true
	a.mu.Unlock()
	// Recorded, then continued (as the server redrives).
	if res, err = x.Redrive(ctx, "p", engine.RedriveOptions{RecordOnly: true}); err != nil || res.Status != engine.StatusRunning {
		t.Fatalf("second redrive recorded: %+v %v", res, err)
	}
	res, err = x.Resume(ctx, "p", engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("second redrive continued: %+v %v", res, err)
	}
	got, _ := jsonvalue.Marshal(res.Output)
	if want := `[{"ids":["r0","r1","r2"],"run":"r"},{"ids":["r3","r4","r5"],"run":"r"}]`; string(got) != want {
		t.Errorf("output %s, want %s", got, want)
	}
	if n := a.count(engine.ChildID("p/Rows#1.0", 0)); n != 1 {
		t.Errorf("the first child ran %d times, want 1", n)
	}
	runs, _ = x.MapRuns(ctx, "p")
	if len(runs) != 1 || runs[0].Status != "SUCCEEDED" || runs[0].RedriveCount != 2 || runs[0].Succeeded != 2 {
		t.Errorf("MapRuns after the second redrive = %+v", runs)
	}
}
