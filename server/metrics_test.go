package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// scraper reads a registry's metrics over HTTP, as Prometheus does.
type scraper struct {
	t   *testing.T
	url string
}

func newScraper(t *testing.T, reg *prometheus.Registry) *scraper {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return &scraper{t: t, url: srv.URL}
}

// scrape returns every sample of the text exposition by series
// (`name{labels}`).
func (s *scraper) scrape() map[string]float64 {
	s.t.Helper()
	resp, err := http.Get(s.url)
	if err != nil {
		s.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("scrape: status %d: %s", resp.StatusCode, body)
	}
	samples := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			s.t.Fatalf("scrape: bad line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			s.t.Fatalf("scrape: bad line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		s.t.Fatalf("scrape: %v", err)
	}
	return samples
}

func parse(t *testing.T, def string) *states.Machine {
	t.Helper()
	m, err := states.Parse([]byte(def))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

// counted counts the calls of each chained hook.
type counted struct {
	started, finished, exited, commits, agentCalls atomic.Int64
}

func (c *counted) hooks() engine.Hooks {
	return engine.Hooks{
		ExecutionStarted:  func(string) { c.started.Add(1) },
		ExecutionFinished: func(string, engine.Status) { c.finished.Add(1) },
		StateExited:       func(string, string) { c.exited.Add(1) },
		Committed:         func(time.Duration, error) { c.commits.Add(1) },
		AgentCalled:       func(context.Context, string, string, time.Duration, engine.Usage, error) { c.agentCalls.Add(1) },
	}
}

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var x *engine.Executor
	pending := func() int {
		waiting, err := st.List(ctx, store.ListOptions{Status: engine.StatusWaiting})
		if err != nil {
			t.Errorf("list: %v", err)
		}
		n := 0
		for _, w := range waiting {
			p, err := x.Pending(ctx, w.ID)
			if err != nil {
				t.Errorf("pending %s: %v", w.ID, err)
			}
			n += len(p)
		}
		return n
	}
	var dueAt sync.Mutex
	now := time.Now()
	due := func() int {
		dueAt.Lock()
		at := now
		dueAt.Unlock()
		ids, err := st.Due(ctx, at)
		if err != nil {
			t.Errorf("due: %v", err)
		}
		return len(ids)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, pending, due)
	var next counted
	reg2 := agents.NewRegistry()
	ok := agents.Func(func(_ context.Context, req *agents.Request) (any, error) { return req.Input, nil })
	bad := agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, errors.New("no luck") })
	for name, a := range map[string]agents.Agent{"ok": ok, "bad": bad} {
		if err := reg2.Register(name, a); err != nil {
			t.Fatal(err)
		}
	}
	x = engine.New(engine.Config{Agents: reg2, Store: st, Hooks: m.Hooks(next.hooks())})
	s := newScraper(t, reg)

	before := s.scrape()
	for series, want := range map[string]float64{
		"aslrun_executions_started_total":                   0,
		`aslrun_executions_finished_total{status="FAILED"}`: 0,
		"aslrun_state_transitions_total":                    0,
		"aslrun_commit_duration_seconds_count":              0,
		"aslrun_approvals_pending":                          0,
		"aslrun_timers_due":                                 0,
	} {
		if got, ok := before[series]; !ok || got != want {
			t.Errorf("before any run: %s = %v (exported: %t), want %v", series, got, ok, want)
		}
	}

	runs := []struct {
		id, def, input string
		want           engine.Status
	}{
		{"work", `{"StartAt":"Prep","States":{
			"Prep":{"Type":"Task","Agent":"ok","Next":"Each"},
			"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.done","ItemProcessor":{"StartAt":"Work","States":{
				"Work":{"Type":"Task","Agent":"ok","End":true}}},"Next":"Bad"},
			"Bad":{"Type":"Task","Agent":"bad","End":true}}}`, `{"items":[1,2]}`, engine.StatusFailed},
		{"hello", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"ok","End":true}}}`, `{}`, engine.StatusSucceeded},
		{"approve", `{"StartAt":"Ask","States":{"Ask":{"Type":"Approval","Prompt":"ok?","End":true}}}`, `{}`, engine.StatusWaiting},
		{"sleep", `{"StartAt":"Sleep","States":{"Sleep":{"Type":"Wait","Seconds":3600,"End":true}}}`, `{}`, engine.StatusWaiting},
	}
	for _, r := range runs {
		in, err := jsonvalue.Decode([]byte(r.input))
		if err != nil {
			t.Fatal(err)
		}
		res, err := x.Run(ctx, parse(t, r.def), in, engine.StartOptions{ID: r.id})
		if err != nil {
			t.Fatalf("run %s: %v", r.id, err)
		}
		if res.Status != r.want {
			t.Fatalf("run %s: status %s (%s: %s), want %s", r.id, res.Status, res.Error, res.Cause, r.want)
		}
	}

	after := s.scrape()
	commits := float64(next.commits.Load())
	for series, want := range map[string]float64{
		"aslrun_executions_started_total":                      4,
		`aslrun_executions_finished_total{status="FAILED"}`:    1,
		`aslrun_executions_finished_total{status="SUCCEEDED"}`: 1,
		`aslrun_executions_finished_total{status="TIMED_OUT"}`: 0,
		`aslrun_executions_finished_total{status="ABORTED"}`:   0,
		// Prep, Each/0/Work, Each/1/Work, Each; T.
		"aslrun_state_transitions_total":                          5,
		"aslrun_commit_duration_seconds_count":                    commits,
		`aslrun_agent_call_duration_seconds_count{agent="ok"}`:    4,
		`aslrun_agent_call_duration_seconds_count{agent="bad"}`:   1,
		`aslrun_agent_call_duration_seconds_count{agent="other"}`: 0,
		`aslrun_agent_call_errors_total{agent="ok"}`:              0,
		`aslrun_agent_call_errors_total{agent="bad"}`:             1,
		"aslrun_approvals_pending":                                1,
		"aslrun_timers_due":                                       0,
	} {
		if got, ok := after[series]; !ok || got != want {
			t.Errorf("after the runs: %s = %v (exported: %t), want %v", series, got, ok, want)
		}
	}
	if commits == 0 || after["aslrun_commit_duration_seconds_sum"] <= 0 {
		t.Errorf("commits: %v calls of the chained hook, %v seconds in all, want both > 0", commits, after["aslrun_commit_duration_seconds_sum"])
	}
	// The chained hooks were called as often as the metrics counted.
	for name, got := range map[string]int64{
		"ExecutionStarted": next.started.Load(), "ExecutionFinished": next.finished.Load(),
		"StateExited": next.exited.Load(), "AgentCalled": next.agentCalls.Load(),
	} {
		want := map[string]int64{"ExecutionStarted": 4, "ExecutionFinished": 2, "StateExited": 5, "AgentCalled": 5}[name]
		if got != want {
			t.Errorf("chained %s called %d times, want %d", name, got, want)
		}
	}

	// The gauges are read at every scrape: an hour later the Wait is due.
	dueAt.Lock()
	now = now.Add(2 * time.Hour)
	dueAt.Unlock()
	if got := s.scrape()["aslrun_timers_due"]; got != 1 {
		t.Errorf("two hours later: aslrun_timers_due = %v, want 1", got)
	}

	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestMetricsAgentLabelCapped(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewMetrics(reg, nil, nil).Hooks(engine.Hooks{})
	fail := errors.New("failed")
	const extra = 50
	for i := range maxAgentLabels + extra {
		h.AgentCalled(t.Context(), "e", "agent"+strconv.Itoa(i), time.Millisecond, engine.Usage{}, fail)
	}
	// An agent with its own label keeps it after the cap is reached.
	h.AgentCalled(t.Context(), "e", "agent0", time.Millisecond, engine.Usage{}, nil)
	got := newScraper(t, reg).scrape()
	agentSeries := 0
	for series := range got {
		if strings.HasPrefix(series, "aslrun_agent_call_duration_seconds_count{") {
			agentSeries++
		}
	}
	if want := maxAgentLabels + 1; agentSeries != want {
		t.Errorf("%d agent label values, want %d (the cap and other)", agentSeries, want)
	}
	for series, want := range map[string]float64{
		`aslrun_agent_call_duration_seconds_count{agent="agent0"}`:   2,
		`aslrun_agent_call_errors_total{agent="agent0"}`:             1,
		`aslrun_agent_call_duration_seconds_count{agent="agent199"}`: 1,
		`aslrun_agent_call_duration_seconds_count{agent="other"}`:    extra,
		`aslrun_agent_call_errors_total{agent="other"}`:              extra,
	} {
		if g, ok := got[series]; !ok || g != want {
			t.Errorf("%s = %v (exported: %t), want %v", series, g, ok, want)
		}
	}
	if _, ok := got[`aslrun_agent_call_duration_seconds_count{agent="agent200"}`]; ok {
		t.Errorf("agent200 has its own series, want it counted as other")
	}
	// Without their funcs the gauges are left out.
	for _, name := range []string{"aslrun_approvals_pending", "aslrun_timers_due"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s exported without its func, want it left out", name)
		}
	}
}

// TestMetricsRegisteredTwice: a second NewMetrics on the same registry
// shares the first one's metrics rather than failing.
func TestMetricsRegisteredTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	one := NewMetrics(reg, func() int { return 1 }, nil).Hooks(engine.Hooks{})
	two := NewMetrics(reg, func() int { return 2 }, nil).Hooks(engine.Hooks{})
	one.ExecutionStarted("a")
	two.ExecutionStarted("b")
	if got := newScraper(t, reg).scrape()["aslrun_executions_started_total"]; got != 2 {
		t.Errorf("aslrun_executions_started_total = %v, want 2", got)
	}
}

// TestMetricsEventsEmitted: events of prometheus channels are counted by
// workflow, channel and type, other channels' not at all, and label sets
// past the cap under "other".
func TestMetricsEventsEmitted(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewMetrics(reg, nil, nil).Hooks(engine.Hooks{})
	h.Emitted("orders", "count", "prometheus", "state.entered")
	h.Emitted("orders", "count", "prometheus", "state.entered")
	h.Emitted("orders", "hooks", "webhook", "state.entered")
	for i := range maxEventLabels + 3 {
		h.Emitted("wf"+strconv.Itoa(i), "count", "prometheus", "execution.succeeded")
	}
	got := newScraper(t, reg).scrape()
	for series, want := range map[string]float64{
		`aslrun_events_emitted_total{channel="count",type="state.entered",workflow="orders"}`: 2,
		`aslrun_events_emitted_total{channel="other",type="other",workflow="other"}`:          4,
	} {
		if g, ok := got[series]; !ok || g != want {
			t.Errorf("%s = %v (exported: %t), want %v", series, g, ok, want)
		}
	}
	if _, ok := got[`aslrun_events_emitted_total{channel="hooks",type="state.entered",workflow="orders"}`]; ok {
		t.Error("a webhook channel's events were counted")
	}
}

// TestMetricsParts: Map items and Parallel branches running and ended
// are counted by workflow.
func TestMetricsParts(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewMetrics(reg, nil, nil).Hooks(engine.Hooks{})
	h.PartsMoved("orders", 1, 0, 0)
	h.PartsMoved("orders", 1, 0, 0)
	h.PartsMoved("orders", -1, 1, 0)
	h.PartsMoved("orders", 1, 0, 0)
	h.PartsMoved("orders", -1, 0, 1)
	got := newScraper(t, reg).scrape()
	for series, want := range map[string]float64{
		`aslrun_parts_in_progress{workflow="orders"}`:                       1,
		`aslrun_parts_finished_total{status="completed",workflow="orders"}`: 1,
		`aslrun_parts_finished_total{status="failed",workflow="orders"}`:    1,
	} {
		if g, ok := got[series]; !ok || g != want {
			t.Errorf("%s = %v (exported: %t), want %v", series, g, ok, want)
		}
	}
}

// TestMetricsStateAudited: a state with an Audit block exports the
// measures its Metrics list, by workflow and state name (a Map item's
// states share their series); past maxEventLabels label sets, "other".
func TestMetricsStateAudited(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewMetrics(reg, nil, nil).Hooks(engine.Hooks{})
	ctx := context.Background()
	all := engine.AuditRecord{Workflow: "kyc", State: "Verify", Duration: 2 * time.Second, Usage: engine.Usage{Tokens: 40, Cost: 0.5}, Status: "succeeded", Latency: true, Tokens: true, Cost: true}
	h.StateAudited(ctx, all)
	item := all
	item.Scope, item.Status, item.Error = "Each/3/", "failed", "States.TaskFailed"
	h.StateAudited(ctx, item)
	costOnly := engine.AuditRecord{Workflow: "kyc", State: "Summarize", Duration: time.Second, Usage: engine.Usage{Tokens: 7, Cost: 0.25}, Status: "succeeded", Cost: true}
	h.StateAudited(ctx, costOnly)
	waiting := all
	waiting.State, waiting.Status = "Hold", "waiting"
	h.StateAudited(ctx, waiting)
	for i := range maxEventLabels + 2 {
		h.StateAudited(ctx, engine.AuditRecord{Workflow: "many", State: "S" + strconv.Itoa(i), Status: "succeeded", Usage: engine.Usage{Tokens: 1}, Tokens: true})
	}
	got := newScraper(t, reg).scrape()
	for series, want := range map[string]float64{
		`aslrun_state_duration_seconds_count{state="Verify",status="succeeded",workflow="kyc"}`: 1,
		`aslrun_state_duration_seconds_count{state="Verify",status="failed",workflow="kyc"}`:    1,
		`aslrun_state_tokens_total{state="Verify",workflow="kyc"}`:                              80,
		`aslrun_state_cost_total{state="Verify",workflow="kyc"}`:                                1,
		`aslrun_state_cost_total{state="Summarize",workflow="kyc"}`:                             0.25,
		`aslrun_state_tokens_total{state="other",workflow="other"}`:                             5, // 3 label sets of kyc, then 497 of many
	} {
		if g, ok := got[series]; !ok || g != want {
			t.Errorf("%s = %v (exported: %t), want %v", series, g, ok, want)
		}
	}
	for _, absent := range []string{
		`aslrun_state_tokens_total{state="Summarize",workflow="kyc"}`,
		`aslrun_state_duration_seconds_count{state="Summarize",status="succeeded",workflow="kyc"}`,
		`aslrun_state_duration_seconds_count{state="Hold",status="waiting",workflow="kyc"}`,
	} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s is exported", absent)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
