package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
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
	"github.com/aslrun/aslrun/store"
)

// spender reports the usage it is given on every call and echoes its
// input.
func spender(u agents.Usage) agents.Agent {
	return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		req.ReportUsage(u)
		return req.Input, nil
	})
}

// eventsOf returns the types of an execution's history events, in order.
func eventsOf(t *testing.T, st *store.Memory, id string) ([]engine.Event, []string) {
	t.Helper()
	hist, err := st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	types := make([]string, len(hist))
	for i, e := range hist {
		types[i] = e.Type
	}
	return hist, types
}

func TestToolHandle(t *testing.T) {
	var got *agents.Tools
	a := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		got = req.Tools
		return nil, nil
	})
	cases := []struct {
		name  string
		def   string
		all   bool
		names []string
		deny  []string
	}{
		{"no tools block", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}}`, true, nil, nil},
		{"allowed", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Tools":{"Allowed":["b","a"]},"End":true}}}`, false, []string{"a", "b"}, []string{"c"}},
		{"star minus denied", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Tools":{"Allowed":["*"],"Denied":["x"]},"End":true}}}`, true, nil, []string{"x"}},
		{"empty", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Tools":{"Allowed":[]},"End":true}}}`, false, nil, []string{"a"}},
		{"categories", `{"StartAt":"T","ToolCategories":{"web":["search","fetch"]},"States":{"T":{"Type":"Task","Agent":"A","Tools":{"AllowedCategories":["web"],"Denied":["fetch"]},"End":true}}}`, false, []string{"search"}, []string{"fetch", "other"}},
		{"default tools", `{"StartAt":"T","DefaultTools":{"Allowed":["search"]},"States":{"T":{"Type":"Task","Agent":"A","End":true}}}`, false, []string{"search"}, []string{"shell"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			wantStatus(t, execute(t, tc.def, `{}`, map[string]agents.Agent{"A": a}), engine.StatusSucceeded)
			if got == nil && !tc.all {
				t.Fatal("the agent got no tool set")
			}
			if got != nil && (got.All != tc.all || !slices.Equal(got.Names, tc.names)) {
				t.Errorf("tools = all %v %v, want all %v %v", got.All, got.Names, tc.all, tc.names)
			}
			for _, n := range tc.names {
				if !got.Allows(n) {
					t.Errorf("Allows(%q) = false", n)
				}
			}
			for _, n := range tc.deny {
				if got.Allows(n) {
					t.Errorf("Allows(%q) = true", n)
				}
			}
		})
	}
}

func wantStatus(t *testing.T, res *engine.Result, want engine.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status = %s (%s: %s), want %s", res.Status, res.Error, res.Cause, want)
	}
}

func TestRefusedToolFailsTheCallEvenIfIgnored(t *testing.T) {
	st := store.NewMemory()
	stubborn := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		var ae *asl.Error
		if _, err := req.Tools.Use(ctx, "shell"); !errors.As(err, &ae) || ae.Name != asl.ErrPermissions {
			return nil, errors.New("Use did not refuse the tool with States.Permissions")
		}
		return "done anyway", nil
	})
	x := engine.New(engine.Config{Agents: registry(t, stubborn, "A"), Store: st})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Tools":{"Allowed":["search"]},"End":true}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, asl.ErrPermissions, `may not use the tool "shell"`)
	hist, types := eventsOf(t, st, "t")
	i := slices.Index(types, engine.EventToolDenied)
	if i < 0 {
		t.Fatalf("no %s event in %v", engine.EventToolDenied, types)
	}
	if hist[i].State != "T" || hist[i].Detail.(map[string]any)["tool"] != "shell" {
		t.Errorf("ToolDenied event = %+v", hist[i])
	}
}

func TestRateLimitWaitsForTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			for range 3 {
				release, err := req.Tools.Use(ctx, "search")
				if err != nil {
					return nil, err
				}
				release()
			}
			return "ok", nil
		})
		start := time.Now()
		def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Tools":{"RateLimits":{"search":{"MaxPerMinute":2,"OnExceed":"wait"}}},"End":true}}}`
		wantOutput(t, execute(t, def, `{}`, map[string]agents.Agent{"A": a}), `"ok"`)
		if d := time.Since(start); d != time.Minute {
			t.Errorf("three uses at two a minute took %v, want 1m", d)
		}
	})
}

func TestRateLimitMaxConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inUse, most atomic.Int64
		a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
			release, err := req.Tools.Use(ctx, "search")
			if err != nil {
				return nil, err
			}
			defer release()
			n := inUse.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			defer inUse.Add(-1)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			return req.Input, nil
		})
		def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"T","States":{
			"T":{"Type":"Task","Agent":"A","Tools":{"RateLimits":{"search":{"MaxConcurrent":2,"OnExceed":"wait"}}},"End":true}}},"End":true}}}`
		wantOutput(t, execute(t, def, `[1,2,3,4,5]`, map[string]agents.Agent{"A": a}), `[1,2,3,4,5]`)
		if most.Load() != 2 {
			t.Errorf("at most %d uses at once, want 2", most.Load())
		}
		failing := strings.Replace(def, `"OnExceed":"wait"`, `"OnExceed":"fail"`, 1)
		wantError(t, execute(t, failing, `[1,2,3]`, map[string]agents.Agent{"A": a}), asl.ErrRateLimitExceeded, "over its rate limit")
	})
}

func TestBudgetEvents(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: registry(t, spender(agents.Usage{Tokens: 30, Cost: 0.25}), "A"), Store: st})
	def := `{"StartAt":"One","Budget":{"MaxCost":"$0.60","OnExceed":"Continue","Alerts":[{"At":0.5,"Message":"half"},{"At":0.8}]},"States":{
		"One":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Two"},
		"Two":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Three"},
		"Three":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Four"},
		"Four":{"Type":"Task","Agent":"A","ResultPath":null,"End":true}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, engine.StatusSucceeded)
	hist, types := eventsOf(t, st, "b")
	var got []string
	for _, e := range hist {
		switch e.Type {
		case engine.EventBudgetAlert:
			d := e.Detail.(map[string]any)
			got = append(got, e.State+" alert "+string(d["at"].(json.Number))+" "+d["message"].(string))
		case engine.EventBudgetOverridden:
			got = append(got, e.State+" over: "+e.Detail.(map[string]any)["reason"].(string))
		}
	}
	want := []string{
		"Two alert 0.5 half",
		"Two alert 0.8 ",
		"Three over: the execution has spent 0.75 USD, the workflow Budget.MaxCost is 0.6 USD",
	}
	if !slices.Equal(got, want) {
		t.Errorf("budget events = %q, want %q\n(all: %v)", got, want, types)
	}
	e, err := st.Load(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if u := e.Progress.Usage; u != (engine.Usage{Tokens: 120, Cost: 1}) {
		t.Errorf("stored usage = %+v, want 120 tokens, cost 1", u)
	}
}

func TestUsageSurvivesResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		x := engine.New(engine.Config{Agents: registry(t, spender(agents.Usage{InputTokens: 7, OutputTokens: 3, Cost: 0.1}), "A"), Store: st, ParkAfter: time.Minute})
		def := `{"StartAt":"One","Budget":{"MaxTokens":25,"Alerts":[{"At":0.5}]},"States":{
			"One":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Sleep"},
			"Sleep":{"Type":"Wait","Seconds":3600,"Next":"Two"},
			"Two":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Totals"},
			"Totals":{"Type":"Pass","Parameters":{"tokens.$":"$$.Execution.TokensUsed","cost.$":"States.CurrentCost()"},"Next":"Three"},
			"Three":{"Type":"Task","Agent":"A","End":true}}}`
		ctx := context.Background()
		res, err := x.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res, engine.StatusWaiting)
		time.Sleep(time.Hour)
		// A new executor (a new process) picks the totals up from the store.
		y := engine.New(engine.Config{Agents: registry(t, spender(agents.Usage{InputTokens: 7, OutputTokens: 3, Cost: 0.1}), "A"), Store: st})
		if res, err = y.Resume(ctx, "r", engine.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		// The third call would pass 25 tokens: it fails, after Totals read 20.
		wantError(t, res, asl.ErrBudgetExceeded, "the execution has used 30 tokens, the workflow Budget.MaxTokens is 25")
		hist, _ := eventsOf(t, st, "r")
		alerts := 0
		for _, e := range hist {
			if e.Type == engine.EventTaskScheduled && e.State == "Three" {
				// Three's input is what Totals read.
				if got, _ := jsonvalue.Marshal(e.Input); string(got) != `{"cost":0.2,"tokens":20}` {
					t.Errorf("Totals read %s, want 20 tokens and cost 0.2", got)
				}
			}
			if e.Type == engine.EventBudgetAlert {
				alerts++
			}
		}
		if alerts != 1 {
			t.Errorf("%d budget alerts, want 1 (the one given before the resume is not repeated)", alerts)
		}
	})
}

func TestForkStartsFromTheCheckpointTotalsAndRollbackKeepsThem(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: registry(t, spender(agents.Usage{Tokens: 10}), "A"), Store: st})
	def := `{"StartAt":"One","States":{
		"One":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Saved"},
		"Saved":{"Type":"Checkpoint","Name":"saved","Next":"Two"},
		"Two":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"Totals"},
		"Totals":{"Type":"Pass","Parameters":{"tokens.$":"$$.Execution.TokensUsed"},"End":true}}}`
	ctx := context.Background()
	res, err := x.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"tokens":20}`)
	if res, err = x.Fork(ctx, "p", "saved", engine.ResumeOptions{ForkID: "f"}); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"tokens":20}`)
	// A rollback does not give back what was spent: the execution spent it.
	if res, err = x.Rollback(ctx, "p", "saved", engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"tokens":30}`)
}

func TestBadUsageReportFailsTheCall(t *testing.T) {
	for _, u := range []agents.Usage{{Tokens: -1}, {Cost: math.Inf(1)}, {Cost: math.NaN()}, {InputTokens: -5}} {
		res := execute(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true}}}`, `{}`, map[string]agents.Agent{"A": spender(u)})
		wantError(t, res, asl.ErrTaskFailed, "reported usage that is negative or not finite")
	}
}

func TestUsageFromConcurrentReports(t *testing.T) {
	a := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() { req.ReportUsage(agents.Usage{InputTokens: 1, OutputTokens: 1, Cost: 0.01}) })
		}
		wg.Wait()
		return nil, nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","ResultPath":null,"Next":"P"},
		"P":{"Type":"Pass","Parameters":{"t.$":"$$.Execution.TokensUsed","c.$":"$$.Execution.Cost"},"End":true}}}`
	wantOutput(t, execute(t, def, `{}`, map[string]agents.Agent{"A": a}), `{"t":100,"c":0.5}`)
}
