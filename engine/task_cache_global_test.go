package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// TestTaskCacheGlobalShared: two registered workflows (other names, other
// versions) with the same agent, state definition and key share one
// global entry: the agent is called once, the entry's scope is global and
// it names the workflow that made it. With Scope workflow the same two
// workflows share nothing.
func TestTaskCacheGlobalShared(t *testing.T) {
	for _, tc := range []struct {
		scope string
		calls int64
	}{
		{engine.CacheScopeGlobal, 1},
		{engine.CacheScopeWorkflow, 2},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			var n atomic.Int64
			st := store.NewMemory()
			x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier"), Store: st})
			ctx := context.Background()
			m := mustParse(t, fmt.Sprintf(classify, `"Cache":{"Key.$":"$.text","Scope":"`+tc.scope+`"}`))
			var outs []string
			for _, wf := range []struct{ name, registry string }{{"triage", "triage@1"}, {"digest", "digest@3"}} {
				res, err := x.Run(ctx, m, mustJSON(t, `{"text":"refund please"}`), engine.StartOptions{ID: wf.name + "-1", MachineName: wf.name, Registry: wf.registry})
				if err != nil || res.Status != engine.StatusSucceeded {
					t.Fatalf("Run of %s = %+v, %v", wf.registry, res, err)
				}
				outs = append(outs, fmt.Sprint(res.Output))
				e, err := st.Load(ctx, res.ID)
				if err != nil || e.Registry != wf.registry {
					t.Fatalf("Load(%s).Registry = %q (%v), want %q", res.ID, e.Registry, err, wf.registry)
				}
			}
			if got := n.Load(); got != tc.calls {
				t.Fatalf("%d calls, want %d (outputs %v)", got, tc.calls, outs)
			}
			entries, err := st.ListCache(ctx, engine.CacheFilter{}, time.Now())
			if err != nil || int64(len(entries)) != tc.calls {
				t.Fatalf("ListCache = %d entries, %v; want %d", len(entries), err, tc.calls)
			}
			if tc.scope == engine.CacheScopeGlobal {
				if outs[0] != outs[1] {
					t.Errorf("digest's hit gave %s, triage's call %s", outs[1], outs[0])
				}
				if e := entries[0]; e.Scope != engine.CacheScopeGlobal || e.Workflow != "triage" || e.Execution != "triage-1" {
					t.Errorf("entry = scope %q, workflow %q, execution %q; want global, made by triage's triage-1", e.Scope, e.Workflow, e.Execution)
				}
				global, err := st.ListCache(ctx, engine.CacheFilter{Scope: engine.CacheScopeGlobal}, time.Now())
				if err != nil || len(global) != 1 {
					t.Errorf("ListCache(scope global) = %d entries, %v; want 1", len(global), err)
				}
			}
		})
	}
}

// TestTaskCacheGlobalRedrive: a registered execution keeps its registry
// through the store: redriven after a failure before its global-scope
// Task, it runs that Task (which an unregistered execution could not).
func TestTaskCacheGlobalRedrive(t *testing.T) {
	var n, failing atomic.Int64
	flaky := agents.Func(func(context.Context, *agents.Request) (any, error) {
		if failing.Add(1) == 1 {
			return nil, errors.New("down")
		}
		return "fetched", nil
	})
	reg := registry(t, counting(&n), "Classifier")
	if err := reg.Register("Fetch", flaky); err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st})
	ctx := context.Background()
	m := mustParse(t, `{"StartAt":"Fetch","States":{
		"Fetch":{"Type":"Task","Agent":"Fetch","ResultPath":"$.fetched","Next":"Classify"},
		"Classify":{"Type":"Task","Agent":"Classifier","Parameters":{"text.$":"$.text"},"Cache":{"Scope":"global"},"End":true}}}`)
	res, err := x.Run(ctx, m, mustJSON(t, `{"text":"a"}`), engine.StartOptions{ID: "r", MachineName: "triage", Registry: "triage@2"})
	if err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("Run = %+v, %v; want FAILED at Fetch", res, err)
	}
	res, err = x.Redrive(ctx, "r", engine.RedriveOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Redrive = %+v, %v; want SUCCEEDED", res, err)
	}
	entries, err := st.ListCache(ctx, engine.CacheFilter{Scope: engine.CacheScopeGlobal}, time.Now())
	if err != nil || len(entries) != 1 || n.Load() != 1 {
		t.Errorf("after the redrive: %d global entries (%v), %d calls; want 1 and 1", len(entries), err, n.Load())
	}
}

// TestTaskCacheGlobalUnregistered: an execution of no registered workflow
// whose Task (at the top or nested) caches with Scope global is refused at
// start, naming the Task and its Scope field: nothing is created and no
// agent is called. A disabled global block caches nothing, and runs.
func TestTaskCacheGlobalUnregistered(t *testing.T) {
	const nested = `{"StartAt":"Both","States":{"Both":{"Type":"Parallel","End":true,"Branches":[
		{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
		{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","End":true,"ItemProcessor":{"StartAt":"C","States":{
			"C":{"Type":"Task","Agent":"Classifier","Cache":{"Scope":"global"},"End":true}}}}}}]}}}`
	for _, tc := range []struct {
		name, def, pointer, state string
	}{
		{"top level", fmt.Sprintf(classify, `"Cache":{"Scope":"global","TTL":"7d"}`), "/States/Classify/Cache/Scope", "Classify"},
		{"in a Map in a Parallel", nested, "/States/Both/Branches/1/States/Each/ItemProcessor/States/C/Cache/Scope", "C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			st := store.NewMemory()
			x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier"), Store: st})
			ctx := context.Background()
			res, err := x.Run(ctx, mustParse(t, tc.def), mustJSON(t, `{"text":"a","items":[1]}`), engine.StartOptions{ID: "inline", MachineName: "triage"})
			var list states.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("Run = %+v, %v; want one problem", res, err)
			}
			want := `global caches only for workflows an admin registered; register it with POST /v1/workflows or use "workflow"`
			if got := list[0]; got.Pointer != tc.pointer || got.State != tc.state || got.Msg != want {
				t.Errorf("problem = %s, want %s (%s): %s", got, tc.pointer, tc.state, want)
			}
			if _, err := st.Load(ctx, "inline"); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("Load of the refused execution: %v, want ErrNotFound", err)
			}
			if got := n.Load(); got != 0 {
				t.Errorf("%d calls, want none", got)
			}
		})
	}
	var n atomic.Int64
	x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier")})
	for range 2 {
		if res := runOn(t, x, fmt.Sprintf(classify, `"Cache":{"Scope":"global","Enabled":false}`), `{"text":"a"}`); res.Status != engine.StatusSucceeded {
			t.Fatalf("a disabled global block: %+v", res)
		}
	}
	if got := n.Load(); got != 2 {
		t.Errorf("a disabled global block: %d calls, want 2 (nothing cached)", got)
	}
}

// TestTaskCacheGlobalDistributedMap: the child executions of a registered
// execution's Distributed Map keep its registry, so their global-scope
// Tasks cache (once for all items of one key) instead of being refused.
func TestTaskCacheGlobalDistributedMap(t *testing.T) {
	var n atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier"), Store: st})
	ctx := context.Background()
	m := mustParse(t, `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,"End":true,
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"C","States":{
			"C":{"Type":"Task","Agent":"Classifier","Parameters":{"text":"same"},"Cache":{"Scope":"global"},"End":true}}}}}}`)
	res, err := x.Run(ctx, m, mustJSON(t, `{"items":[1,2,3]}`), engine.StartOptions{ID: "p", MachineName: "batch", Registry: "batch@4"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v; want SUCCEEDED", res, err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d calls, want 1 (one key, three items)", got)
	}
	child, err := st.Load(ctx, engine.ChildID("p/Each#1.0", 0))
	if err != nil || child.Registry != "batch@4" {
		t.Errorf("the first child's registry: %q (%v), want batch@4", child.Registry, err)
	}
}

// TestTaskCacheGlobalFork: a fork of a registered execution is registered
// as its parent was: its global cache Task runs (a hit of the parent's
// entry).
func TestTaskCacheGlobalFork(t *testing.T) {
	var n atomic.Int64
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier"), Store: st})
	ctx := context.Background()
	m := mustParse(t, `{"StartAt":"Save","States":{"Save":{"Type":"Checkpoint","Name":"start","Next":"Classify"},
		"Classify":{"Type":"Task","Agent":"Classifier","Parameters":{"text.$":"$.text"},"Cache":{"Scope":"global"},"End":true}}}`)
	res, err := x.Run(ctx, m, mustJSON(t, `{"text":"a"}`), engine.StartOptions{ID: "parent", Registry: "triage@2"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	fork, err := x.Fork(ctx, "parent", "start", engine.ResumeOptions{ForkID: "child"})
	if err != nil || fork.Status != engine.StatusSucceeded {
		t.Fatalf("Fork = %+v, %v", fork, err)
	}
	if e, err := st.Load(ctx, "child"); err != nil || e.Registry != "triage@2" {
		t.Errorf("the fork's registry = %q (%v), want triage@2", e.Registry, err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d calls, want 1 (the fork hits the parent's entry)", got)
	}
}
