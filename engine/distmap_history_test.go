package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// historyDef is a Distributed Map over $.items, tolerating %d failed
// children, with %s before its ItemProcessor (a ResultWriter) and %s in
// its ProcessorConfig (an ExecutionType): each child runs First, then
// Work, which fails an item whose "fail" is true.
const historyDef = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ToleratedFailureCount":%d,"MaxConcurrency":%d,%s
	"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"%s},"StartAt":"First","States":{
		"First":{"Type":"Task","Agent":"Work","ResultPath":"$.first","Next":"Work"},
		"Work":{"Type":"Task","Agent":"Work","End":true}}},
	"End":true}}}`

// historyItems are the items of historyDef's runs: b fails until fixed.
const historyItems = `{"items":[{"id":"a"},{"id":"b","fail":true},{"id":"c"}]}`

// executionType is the ProcessorConfig field of historyDef for t ("":
// none).
func executionType(t string) string {
	if t == "" {
		return ""
	}
	return `,"ExecutionType":"` + t + `"`
}

// itemAgent answers First with "ok" and Work with {"id"} of its input,
// fails Work for an item whose "fail" is true until fixed, counts its
// calls by execution and state, and cancels cancel once it has been
// called crashAfter times (0: never).
type itemAgent struct {
	mu         sync.Mutex
	calls      map[string]int
	fixed      bool
	crashAfter int
	cancel     context.CancelFunc
}

func newItemAgent() *itemAgent { return &itemAgent{calls: map[string]int{}} }

// count returns the calls made by state of execution id.
func (a *itemAgent) count(id, state string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[id+" "+state]
}

// snapshot returns the calls made so far, by execution and state.
func (a *itemAgent) snapshot() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.calls))
	for k, v := range a.calls {
		out[k] = v
	}
	return out
}

func (a *itemAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	a.mu.Lock()
	a.calls[req.Execution+" "+req.State]++
	n := 0
	for _, c := range a.calls {
		n += c
	}
	if a.crashAfter > 0 && n == a.crashAfter {
		a.cancel()
	}
	fixed := a.fixed
	a.mu.Unlock()
	in, _ := req.Input.(map[string]any)
	if req.State == "First" {
		return "ok", nil
	}
	if fail, _ := in["fail"].(bool); fail && !fixed {
		return nil, &asl.Error{Name: "Item.Bad", Cause: fmt.Sprintf("item %v", in["id"])}
	}
	return map[string]any{"id": in["id"]}, nil
}

// childHistory returns child i of map run p/Each#1.0 as stored, and its
// history.
func childHistory(t *testing.T, st *store.Memory, i int) (*engine.Execution, []engine.Event) {
	t.Helper()
	id := engine.ChildID("p/Each#1.0", i)
	e, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	events, err := st.History(context.Background(), id)
	if err != nil {
		t.Fatalf("History(%q): %v", id, err)
	}
	return e, events
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDistributedMapChildHistories runs a map run whose second child
// fails (tolerated) and checks what each child keeps: a STANDARD child
// (ExecutionType STANDARD or absent) that succeeded keeps its head and no
// history, one that failed its whole history; an EXPRESS child keeps no
// history whatever it ended as; with KeepChildHistory every child keeps
// its history. Under batched durability too (DropHistory survives the
// merging of commits).
func TestDistributedMapChildHistories(t *testing.T) {
	cases := []struct {
		name, execType string
		keep           bool
		durability     engine.Durability
	}{
		{"standard", "STANDARD", false, engine.DurabilityStrict},
		{"absent batched", "", false, engine.DurabilityBatched},
		{"express", "EXPRESS", false, engine.DurabilityStrict},
		{"express batched", "EXPRESS", false, engine.DurabilityBatched},
		{"keep standard", "STANDARD", true, engine.DurabilityStrict},
		{"keep express batched", "EXPRESS", true, engine.DurabilityBatched},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := store.NewMemory()
			x := engine.New(engine.Config{Agents: registry(t, newItemAgent(), "Work"), Store: st, KeepChildHistory: c.keep, Durability: c.durability})
			m := mustParse(t, fmt.Sprintf(historyDef, 1, 2, "", executionType(c.execType)))
			res, err := x.Run(context.Background(), m, mustJSON(t, historyItems), engine.StartOptions{ID: "p"})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			if got, want := compact(res.Output), `[{"id":"a"},{"Cause":"item b","Error":"Item.Bad"},{"id":"c"}]`; got != want {
				t.Errorf("output %s, want %s", got, want)
			}
			express := c.execType == "EXPRESS"
			wantInputs := []string{`{"id":"a"}`, `{"fail":true,"id":"b"}`, `{"id":"c"}`}
			for i, wantIn := range wantInputs {
				e, events := childHistory(t, st, i)
				succeeded := e.Status == engine.StatusSucceeded
				wantDropped := !c.keep && (express || succeeded)
				if e.HistoryDropped != wantDropped || (len(events) == 0) != wantDropped {
					t.Errorf("child %d (%s): HistoryDropped %v with %d events; want dropped %v", i, e.Status, e.HistoryDropped, len(events), wantDropped)
				}
				// The head stays: input, output or error, status.
				if got := compact(e.Input); got != wantIn {
					t.Errorf("child %d: Input %s, want %s", i, got, wantIn)
				}
				switch {
				case i == 1 && (e.Status != engine.StatusFailed || e.Error != "Item.Bad" || e.Cause != "item b"):
					t.Errorf("child 1: %s %s %q, want FAILED Item.Bad", e.Status, e.Error, e.Cause)
				case i != 1 && (!succeeded || compact(e.Output) != strings.Replace(wantIn, `"fail":true,`, "", 1)):
					t.Errorf("child %d: %s with output %s, want SUCCEEDED with %s", i, e.Status, compact(e.Output), wantIn)
				}
			}
			// The parent keeps its history, and lists its children.
			if events, err := st.History(context.Background(), "p"); err != nil || len(events) == 0 {
				t.Errorf("parent history: %d events, %v", len(events), err)
			}
			if p, err := st.Load(context.Background(), "p"); err != nil || p.HistoryDropped {
				t.Errorf("parent: HistoryDropped %v, %v", p != nil && p.HistoryDropped, err)
			}
			children, err := x.MapRunChildren(context.Background(), "p/Each#1.0")
			if err != nil || len(children) != 3 || children[1].Status != engine.StatusFailed || children[0].Status != engine.StatusSucceeded {
				t.Errorf("MapRunChildren = %+v, %v", children, err)
			}
		})
	}
}

// TestDistributedMapWaitingChildHistory parks the children of a map run
// at a long Wait: a waiting STANDARD child keeps its history, an EXPRESS
// one has none from its first commit on.
func TestDistributedMapWaitingChildHistory(t *testing.T) {
	for _, execType := range []string{"STANDARD", "EXPRESS"} {
		t.Run(execType, func(t *testing.T) {
			st := store.NewMemory()
			x := engine.New(engine.Config{Store: st, ParkAfter: time.Second})
			m := mustParse(t, `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items",
				"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"`+executionType(execType)+`},"StartAt":"Hold","States":{
					"Hold":{"Type":"Wait","Seconds":3600,"End":true}}},"End":true}}}`)
			res, err := x.Run(context.Background(), m, mustJSON(t, `{"items":[1]}`), engine.StartOptions{ID: "p"})
			if err != nil || res.Status != engine.StatusWaiting {
				t.Fatalf("Run = %+v, %v; want WAITING", res, err)
			}
			e, events := childHistory(t, st, 0)
			express := execType == "EXPRESS"
			if e.Status != engine.StatusWaiting || e.HistoryDropped != express || (len(events) == 0) != express {
				t.Errorf("waiting child: %s, HistoryDropped %v with %d events; want WAITING, dropped %v", e.Status, e.HistoryDropped, len(events), express)
			}
		})
	}
}

// TestDistributedMapResumeDroppedChildren stops the process (a cancelled
// context) after some children ended, their histories dropped, resumes
// the parent and checks that it ends as an uninterrupted run, reading the
// ended children from their heads without running them again.
func TestDistributedMapResumeDroppedChildren(t *testing.T) {
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf(`{"id":"i%d"}`, i))
	}
	input := `{"items":[` + strings.Join(items, ",") + `]}`
	for _, execType := range []string{"STANDARD", "EXPRESS"} {
		t.Run(execType, func(t *testing.T) {
			m := mustParse(t, fmt.Sprintf(historyDef, 0, 2, "", executionType(execType)))
			want, err := engine.New(engine.Config{Agents: registry(t, newItemAgent(), "Work"), Store: store.NewMemory()}).
				Run(context.Background(), m, mustJSON(t, input), engine.StartOptions{ID: "p"})
			if err != nil || want.Status != engine.StatusSucceeded {
				t.Fatalf("uninterrupted: %+v %v", want, err)
			}
			st := store.NewMemory()
			ctx, cancel := context.WithCancel(context.Background())
			a := newItemAgent()
			a.crashAfter, a.cancel = 9, cancel
			x := engine.New(engine.Config{Agents: registry(t, a, "Work"), Store: st})
			if _, err := x.Run(ctx, m, mustJSON(t, input), engine.StartOptions{ID: "p"}); err == nil {
				t.Fatal("Run after the crash returned no error")
			}
			var ended []string
			for i := range 12 {
				id := engine.ChildID("p/Each#1.0", i)
				e, err := st.Load(context.Background(), id)
				if err != nil || !e.Status.Ended() {
					continue
				}
				ended = append(ended, id)
				if !e.HistoryDropped {
					t.Errorf("child %s ended %s before the crash with its history kept", id, e.Status)
				}
			}
			if len(ended) == 0 || len(ended) == 12 {
				t.Fatalf("%d children ended before the crash, want some but not all", len(ended))
			}
			a.mu.Lock()
			a.crashAfter = 0
			a.mu.Unlock()
			before := a.snapshot()
			got, err := x.Resume(context.Background(), "p", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != want.Status || compact(got.Output) != compact(want.Output) {
				t.Errorf("resumed %s %s, want %s %s", got.Status, compact(got.Output), want.Status, compact(want.Output))
			}
			after := a.snapshot()
			for _, id := range ended {
				for _, state := range []string{"First", "Work"} {
					if k := id + " " + state; after[k] != before[k] {
						t.Errorf("ended child %s: %s ran again (%d calls, %d before the resume)", id, state, after[k], before[k])
					}
				}
			}
			for i := range 12 {
				if e, events := childHistory(t, st, i); e.Status != engine.StatusSucceeded || !e.HistoryDropped || len(events) != 0 {
					t.Errorf("child %d: %s, HistoryDropped %v, %d events; want SUCCEEDED, dropped", i, e.Status, e.HistoryDropped, len(events))
				}
			}
		})
	}
}

// TestDistributedMapResultWriterDroppedHistories writes a map run's
// results with children's histories kept and dropped: the files are the
// same (their times aside), each child's record read from its head.
func TestDistributedMapResultWriterDroppedHistories(t *testing.T) {
	writer := `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"res"}},`
	for _, execType := range []string{"STANDARD", "EXPRESS"} {
		t.Run(execType, func(t *testing.T) {
			m := mustParse(t, fmt.Sprintf(historyDef, 1, 2, writer, executionType(execType)))
			files := map[bool]map[string]any{}
			for _, keep := range []bool{true, false} {
				out := t.TempDir()
				reg := registry(t, newItemAgent(), "Work")
				if err := reg.RegisterBucket("out", itemio.Dir(out)); err != nil {
					t.Fatal(err)
				}
				st := store.NewMemory()
				x := engine.New(engine.Config{Agents: reg, Store: st, KeepChildHistory: keep})
				res, err := x.Run(context.Background(), m, mustJSON(t, historyItems), engine.StartOptions{ID: "p", MachineName: "M"})
				if err != nil || res.Status != engine.StatusSucceeded {
					t.Fatalf("Run (keep %v) = %+v, %v", keep, res, err)
				}
				if e, _ := childHistory(t, st, 0); e.HistoryDropped == keep {
					t.Fatalf("keep %v: child 0 HistoryDropped %v", keep, e.HistoryDropped)
				}
				files[keep] = readResults(t, filepath.Join(out, "res", "Each#1.0"))
			}
			kept, dropped := files[true], files[false]
			if len(kept) != 3 {
				t.Errorf("files written: %v, want SUCCEEDED_0.json, FAILED_0.json and manifest.json", slices.Sorted(maps.Keys(kept)))
			}
			if compact(kept) != compact(dropped) {
				t.Errorf("with histories dropped the ResultWriter wrote\n%s\nwith them kept\n%s", compact(dropped), compact(kept))
			}
		})
	}
}

// readResults reads the JSON files of a ResultWriter's folder by name,
// without what differs from one run to another: the children's start and
// stop times, and the sizes of the files that hold them.
func readResults(t *testing.T, dir string) map[string]any {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, en := range entries {
		var v any
		readJSON(t, filepath.Join(dir, en.Name()), &v)
		switch v := v.(type) {
		case []any:
			for _, rec := range v {
				r, _ := rec.(map[string]any)
				delete(r, "StartDate")
				delete(r, "StopDate")
			}
		case map[string]any:
			files, _ := v["ResultFiles"].(map[string]any)
			for _, list := range files {
				for _, f := range list.([]any) {
					delete(f.(map[string]any), "Size")
				}
			}
		}
		out[en.Name()] = v
	}
	return out
}

// TestDistributedMapRedriveDroppedChildren fails a map run (its second
// child fails), fixes the agent and redrives the execution: a failed
// STANDARD child, which kept its history, is redriven from the state it
// failed in; a failed EXPRESS child, which kept none, runs again from its
// first state on its input, as AWS restarts them. The child that
// succeeded is not run again either way.
func TestDistributedMapRedriveDroppedChildren(t *testing.T) {
	for _, c := range []struct {
		execType   string
		wantFirsts int
	}{{"STANDARD", 1}, {"EXPRESS", 2}} {
		t.Run(c.execType, func(t *testing.T) {
			st := store.NewMemory()
			a := newItemAgent()
			x := engine.New(engine.Config{Agents: registry(t, a, "Work"), Store: st})
			m := mustParse(t, fmt.Sprintf(historyDef, 0, 1, "", executionType(c.execType)))
			ctx := context.Background()
			res, err := x.Run(ctx, m, mustJSON(t, `{"items":[{"id":"a"},{"id":"b","fail":true}]}`), engine.StartOptions{ID: "p"})
			if err != nil || res.Status != engine.StatusFailed || res.Error != string(asl.ErrExceedToleratedFailureThreshold) {
				t.Fatalf("Run = %+v, %v; want FAILED with States.ExceedToleratedFailureThreshold", res, err)
			}
			failed, events := childHistory(t, st, 1)
			if express := c.execType == "EXPRESS"; failed.Status != engine.StatusFailed || failed.HistoryDropped != express || (len(events) == 0) != express {
				t.Fatalf("failed child: %s, HistoryDropped %v, %d events; want FAILED, dropped %v", failed.Status, failed.HistoryDropped, len(events), express)
			}
			a.mu.Lock()
			a.fixed = true
			a.mu.Unlock()
			res, err = x.Redrive(ctx, "p", engine.RedriveOptions{})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("Redrive = %+v, %v", res, err)
			}
			if got, want := compact(res.Output), `[{"id":"a"},{"id":"b"}]`; got != want {
				t.Errorf("redriven output %s, want %s", got, want)
			}
			a0, a1 := engine.ChildID("p/Each#1.0", 0), engine.ChildID("p/Each#1.0", 1)
			if n := a.count(a0, "First") + a.count(a0, "Work"); n != 2 {
				t.Errorf("the child that succeeded made %d calls, want 2 (not run again)", n)
			}
			if n := a.count(a1, "First"); n != c.wantFirsts {
				t.Errorf("the redriven child called First %d times, want %d", n, c.wantFirsts)
			}
			e, events := childHistory(t, st, 1)
			if e.Status != engine.StatusSucceeded || e.RedriveCount != 1 || !e.HistoryDropped || len(events) != 0 {
				t.Errorf("redriven child: %s, RedriveCount %d, HistoryDropped %v, %d events; want SUCCEEDED, 1, dropped", e.Status, e.RedriveCount, e.HistoryDropped, len(events))
			}
		})
	}
}

// TestDistributedMapExecutionTypeRefused: an ExecutionType other than
// STANDARD or EXPRESS is refused at its pointer, before anything runs.
func TestDistributedMapExecutionTypeRefused(t *testing.T) {
	_, err := states.Parse([]byte(fmt.Sprintf(historyDef, 0, 1, "", executionType("FAST"))))
	var list states.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse = %v, want a states.ErrorList", err)
	}
	const want = "/States/Each/ItemProcessor/ProcessorConfig/ExecutionType"
	if len(list) != 1 || list[0].Pointer != want {
		t.Errorf("Parse refused %v, want one problem at %s", err, want)
	}
}
