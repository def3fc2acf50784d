package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// mocked builds agents from a mock file's text.
func mocked(t *testing.T, src string) *agents.Registry {
	t.Helper()
	ms, err := agents.ParseMocks([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := ms.Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// historyStore is what the redrive tests read of a store.
type historyStore interface {
	engine.Store
	History(ctx context.Context, id string) ([]engine.Event, error)
	VerifyHistory(ctx context.Context, id string) error
}

func countEvents(events []engine.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// flaky fails its first call and succeeds on its second.
const flaky = `{"Flaky":{"0":{"Throw":{"Error":"Agent.Down","Cause":"try later"}},"1":{"Return":{"ok":true}}}}`

func TestRedriveAfterTaskFailure(t *testing.T) {
	bolt, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	for name, st := range map[string]historyStore{"memory": store.NewMemory(), "bolt": bolt} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			x := engine.New(engine.Config{Agents: mocked(t, flaky), Store: st})
			m := mustParse(t, `{"StartAt":"Prep","States":{
				"Prep":{"Type":"Pass","Result":1,"ResultPath":"$.prep","Next":"Work"},
				"Work":{"Type":"Task","Agent":"Flaky","ResultPath":"$.work","End":true}}}`)
			res, err := x.Run(ctx, m, map[string]any{"in": "x"}, engine.StartOptions{ID: "e"})
			if err != nil || res.Status != engine.StatusFailed || res.Error != "Agent.Down" {
				t.Fatalf("run: %+v, %v; want FAILED with Agent.Down", res, err)
			}
			before, err := st.History(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			res, err = x.Redrive(ctx, "e", engine.RedriveOptions{})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("redrive: %+v, %v; want SUCCEEDED", res, err)
			}
			wantOutput(t, res, `{"in":"x","prep":1,"work":{"ok":true}}`)
			after, err := st.History(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			if len(after) <= len(before) {
				t.Fatalf("history has %d events after the redrive, %d before", len(after), len(before))
			}
			for i := range before {
				if after[i].Hash != before[i].Hash || after[i].Superseded {
					t.Errorf("event %d (%s) changed by the redrive", i, before[i].Type)
				}
			}
			if got := after[len(before)].Type; got != engine.EventExecutionRedriven {
				t.Errorf("first event after the failure is %s, want %s", got, engine.EventExecutionRedriven)
			}
			if n := countEvents(after, "PassStateEntered"); n != 1 {
				t.Errorf("Prep entered %d times, want 1 (a redrive runs from the failed state)", n)
			}
			if n := countEvents(after, "TaskStateEntered"); n != 2 {
				t.Errorf("Work entered %d times, want 2", n)
			}
			if err := st.VerifyHistory(ctx, "e"); err != nil {
				t.Errorf("history does not verify after the redrive: %v", err)
			}
			e, err := st.Load(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			if e.Status != engine.StatusSucceeded || e.Error != "" || e.RedriveCount != 1 || e.RedrivenAt.IsZero() {
				t.Errorf("execution after the redrive: status %s, error %q, redrives %d at %v; want SUCCEEDED, no error, 1",
					e.Status, e.Error, e.RedriveCount, e.RedrivenAt)
			}
			// A SUCCEEDED execution is not redriven.
			if _, err := x.Redrive(ctx, "e", engine.RedriveOptions{}); !errors.Is(err, engine.ErrNotRedrivable) {
				t.Errorf("redrive of a SUCCEEDED execution: %v, want %v", err, engine.ErrNotRedrivable)
			}
		})
	}
}

func TestRedrivePatchFixesChoice(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	m := mustParse(t, `{"StartAt":"Count","States":{
		"Count":{"Type":"Pass","Assign":{"counted":true},"Next":"Route"},
		"Route":{"Type":"Choice","Choices":[{"Variable":"$.kind","StringEquals":"a","Next":"A"}]},
		"A":{"Type":"Pass","Parameters":{"kind.$":"$.kind","counted.$":"$counted"},"End":true}}}`)
	res, err := x.Run(ctx, m, map[string]any{"kind": "z"}, engine.StartOptions{ID: "c"})
	if err != nil || res.Status != engine.StatusFailed || res.Error != "States.NoChoiceMatched" {
		t.Fatalf("run: %+v, %v; want FAILED with States.NoChoiceMatched", res, err)
	}
	// Without a patch it fails the same way, and stays redrivable.
	if res, err = x.Redrive(ctx, "c", engine.RedriveOptions{}); err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("redrive without a patch: %+v, %v; want FAILED", res, err)
	}
	patch, err := engine.ParsePatch(mustJSON(t, `[{"op":"test","path":"/kind","value":"z"},{"op":"replace","path":"/kind","value":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err = x.Redrive(ctx, "c", engine.RedriveOptions{Patch: patch})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("redrive with a patch: %+v, %v; want SUCCEEDED", res, err)
	}
	// The variables assigned before the failure are kept.
	wantOutput(t, res, `{"kind":"a","counted":true}`)
	hist, err := st.History(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	var detail any
	for _, e := range hist {
		if e.Type == engine.EventExecutionRedriven {
			detail = e.Detail
		}
	}
	d, _ := detail.(map[string]any)
	if d == nil || !jsonvalue.Equal(d["patch"], patch.Value()) || d["state"] != "Route" || d["from"] != "FAILED" {
		t.Errorf("ExecutionRedriven detail = %v, want the patch, state Route, from FAILED", detail)
	}
	if n := countEvents(hist, engine.EventExecutionRedriven); n != 2 {
		t.Errorf("%d ExecutionRedriven events, want 2", n)
	}
	if e, err := st.Load(ctx, "c"); err != nil || e.RedriveCount != 2 {
		t.Errorf("Load: %+v, %v; want 2 redrives", e, err)
	}
	if err := st.VerifyHistory(ctx, "c"); err != nil {
		t.Errorf("history does not verify: %v", err)
	}
}

func TestRedriveRefusedPatchChangesNothing(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: mocked(t, flaky), Store: st})
	m := mustParse(t, `{"StartAt":"Work",
		"Governance":{"Guard":{"Schema":{"type":"object","required":["order"]}},"WritePolicy":{"Deny":["$.secret"]}},
		"States":{"Work":{"Type":"Task","Agent":"Flaky","ResultPath":"$.work","End":true}}}`)
	if res, err := x.Run(ctx, m, map[string]any{"order": "o-1"}, engine.StartOptions{ID: "g"}); err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("run: %+v, %v; want FAILED", res, err)
	}
	before, err := st.Load(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, patch string
		want        error // a *GovernanceError's violation name, or the error
		violation   string
	}{
		{"schema", `[{"op":"remove","path":"/order"}]`, nil, string(governance.ErrSchemaViolation)},
		{"write policy", `[{"op":"add","path":"/secret","value":1}]`, nil, string(governance.ErrWriteDenied)},
		{"test fails", `[{"op":"test","path":"/order","value":"o-2"}]`, engine.ErrPatchTest, ""},
		{"missing member", `[{"op":"replace","path":"/nope","value":1}]`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := engine.ParsePatch(mustJSON(t, tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.Redrive(ctx, "g", engine.RedriveOptions{Patch: patch})
			var ge *engine.GovernanceError
			var pe *engine.PatchError
			switch {
			case tc.violation != "":
				if !errors.As(err, &ge) || string(ge.Violation.Name) != tc.violation {
					t.Errorf("Redrive: %v, want a %s *GovernanceError", err, tc.violation)
				}
			case !errors.As(err, &pe):
				t.Errorf("Redrive: %v, want a *PatchError", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("Redrive: %v, want %v", err, tc.want)
			}
			after, err := st.Load(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			if after.Status != engine.StatusFailed || after.Seq != before.Seq || after.Progress.LastOwnEvent != before.Progress.LastOwnEvent || after.RedriveCount != 0 {
				t.Errorf("after a refused redrive: status %s, seq %d, own events %d, redrives %d; want FAILED, %d, %d, 0",
					after.Status, after.Seq, after.Progress.LastOwnEvent, after.RedriveCount, before.Seq, before.Progress.LastOwnEvent)
			}
		})
	}
	// The execution can still be redriven with an acceptable patch.
	patch, err := engine.ParsePatch(mustJSON(t, `[{"op":"add","path":"/note","value":"retry"}]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Redrive(ctx, "g", engine.RedriveOptions{Patch: patch})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("redrive: %+v, %v; want SUCCEEDED", res, err)
	}
	wantOutput(t, res, `{"order":"o-1","note":"retry","work":{"ok":true}}`)
}

func TestRedriveRefusesWhatDidNotFail(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	waiting := mustParse(t, `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`)
	if res, err := x.Run(ctx, waiting, map[string]any{}, engine.StartOptions{ID: "w"}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("run: %+v, %v; want WAITING", res, err)
	}
	if _, err := x.Redrive(ctx, "w", engine.RedriveOptions{}); !errors.Is(err, engine.ErrNotRedrivable) {
		t.Errorf("redrive of a WAITING execution: %v, want %v", err, engine.ErrNotRedrivable)
	}
	if _, err := x.Redrive(ctx, "nope", engine.RedriveOptions{}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("redrive of an unknown execution: %v, want %v", err, engine.ErrNotFound)
	}
	if _, err := engine.New(engine.Config{}).Redrive(ctx, "w", engine.RedriveOptions{}); !errors.Is(err, engine.ErrNotDurable) {
		t.Errorf("redrive without a store: %v, want %v", err, engine.ErrNotDurable)
	}
}

func TestRedriveReRunsFailedMap(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	// The second item fails on the first run; every later call succeeds.
	x := engine.New(engine.Config{Agents: mocked(t, `{"Item":{"0":{"Return":"a"},"1":{"Throw":{"Error":"Agent.Down"}},"2-9":{"Return":"b"}}}`), Store: st})
	m := mustParse(t, `{"StartAt":"Fan","States":{
		"Fan":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,"ResultPath":"$.out","ItemProcessor":{"StartAt":"I","States":{
			"I":{"Type":"Task","Agent":"Item","End":true}}},"End":true}}}`)
	res, err := x.Run(ctx, m, mustJSON(t, `{"items":[1,2,3]}`), engine.StartOptions{ID: "map"})
	if err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("run: %+v, %v; want FAILED", res, err)
	}
	res, err = x.Redrive(ctx, "map", engine.RedriveOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("redrive: %+v, %v; want SUCCEEDED", res, err)
	}
	// The Map runs again from scratch: invocations 2, 3 and 4.
	wantOutput(t, res, `{"items":[1,2,3],"out":["b","b","b"]}`)
	hist, err := st.History(ctx, "map")
	if err != nil {
		t.Fatal(err)
	}
	if n := countEvents(hist, "MapStateEntered"); n != 2 {
		t.Errorf("Fan entered %d times, want 2", n)
	}
	if err := st.VerifyHistory(ctx, "map"); err != nil {
		t.Errorf("history does not verify: %v", err)
	}
}

func TestRedriveTimedOutRestartsTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := store.NewMemory()
		// A call cut short by the timeout is not counted (as one cut
		// short by a crash): count the calls here.
		var calls atomic.Int32
		slowOnce := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return "done", nil
		})
		x := engine.New(engine.Config{Agents: registry(t, slowOnce, "Slow"), Store: st})
		m := mustParse(t, `{"StartAt":"S","TimeoutSeconds":1,"States":{"S":{"Type":"Task","Agent":"Slow","End":true}}}`)
		res, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "t"})
		if err != nil || res.Status != engine.StatusTimedOut {
			t.Fatalf("run: %+v, %v; want TIMED_OUT", res, err)
		}
		// The execution's TimeoutSeconds run from the redrive.
		res, err = x.Redrive(ctx, "t", engine.RedriveOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("redrive: %+v, %v; want SUCCEEDED", res, err)
		}
		wantOutput(t, res, `"done"`)
	})
}
