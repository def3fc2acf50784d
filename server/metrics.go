package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aslrun/aslrun/engine"
)

// maxAgentLabels is how many distinct agent names get their own value of
// the agent label; calls of further agents are counted under
// otherAgent. Agent names come from workflow definitions, so without a
// bound a server running many workflows would grow without limit.
const maxAgentLabels = 200

// otherAgent is the agent label value of the agents past maxAgentLabels.
const otherAgent = "other"

// Metrics are the server's Prometheus metrics. They are updated by the
// engine hooks Hooks returns and read by the registry they were registered
// on. A Metrics is safe for concurrent use.
type Metrics struct {
	started     prometheus.Counter
	finished    *prometheus.CounterVec
	transitions prometheus.Counter
	commits     prometheus.Histogram
	agentCalls  *prometheus.HistogramVec
	agentErrors *prometheus.CounterVec
	emitted     *prometheus.CounterVec
	partsNow    *prometheus.GaugeVec
	partsDone   *prometheus.CounterVec
	stateTime   *prometheus.HistogramVec
	stateTokens *prometheus.CounterVec
	stateCost   *prometheus.CounterVec

	mu     sync.RWMutex
	agents map[string]agentSeries // by agent name, at most maxAgentLabels
	other  agentSeries
	// events are the series of emitted events, by workflow, channel and
	// type, at most maxEventLabels.
	events map[[3]string]prometheus.Counter
	// workflows are the workflow label values of the parts series, at
	// most maxWorkflowLabels.
	workflows map[string]string
	// states are the label sets of the audited states' series, at most
	// maxEventLabels.
	states map[[2]string]bool
}

// maxWorkflowLabels bounds the workflow label values of the parts
// series; the workflows past it are counted as "other".
const maxWorkflowLabels = 500

// maxEventLabels bounds the series of aslrun_events_emitted_total; the
// events of label sets past it are counted under "other".
const maxEventLabels = 500

// agentSeries are the series of one agent label value.
type agentSeries struct {
	duration prometheus.Observer
	errors   prometheus.Counter
}

// commitBuckets are the upper bounds of aslrun_commit_duration_seconds:
// 50µs to about 0.8s, doubling.
var commitBuckets = prometheus.ExponentialBuckets(50e-6, 2, 15)

// agentBuckets are the upper bounds of aslrun_agent_call_duration_seconds:
// agents range from local functions (milliseconds) to model calls (minutes).
var agentBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// NewMetrics registers the metrics on reg. pending and due are read at
// every scrape: the number of approvals pending and of timers due; a nil
// func leaves its gauge out. A metric already registered on reg (by an
// earlier NewMetrics) is shared with it.
func NewMetrics(reg prometheus.Registerer, pending, due func() int) *Metrics {
	m := &Metrics{
		started: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aslrun_executions_started_total",
			Help: "Executions created (run or forked).",
		})),
		finished: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aslrun_executions_finished_total",
			Help: "Executions that ended, by final status.",
		}, []string{"status"})),
		transitions: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aslrun_state_transitions_total",
			Help: "States completed, at any nesting level (Map items and Parallel branches included).",
		})),
		commits: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "aslrun_commit_duration_seconds",
			Help:    "Time of one store commit (one transaction), failed ones included.",
			Buckets: commitBuckets,
		})),
		agentCalls: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aslrun_agent_call_duration_seconds",
			Help:    "Time of one agent invocation, failed and timed out ones included, by agent (agents past the first 200 names are counted as \"other\").",
			Buckets: agentBuckets,
		}, []string{"agent"})),
		agentErrors: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aslrun_agent_call_errors_total",
			Help: "Agent invocations that failed or timed out, by agent (agents past the first 200 names are counted as \"other\").",
		}, []string{"agent"})),
		emitted: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aslrun_events_emitted_total",
			Help: "Events emitted to workflows' prometheus channels (ASL Events), by workflow, channel and event type (label sets past the first 500 are counted as \"other\").",
		}, []string{"workflow", "channel", "type"})),
		partsNow: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "aslrun_parts_in_progress",
			Help: "Map items and Parallel branches running now, by workflow (workflows past the first 500 are counted as \"other\").",
		}, []string{"workflow"})),
		partsDone: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aslrun_parts_finished_total",
			Help: "Map items and Parallel branches that ended, by workflow and status (completed or failed).",
		}, []string{"workflow", "status"})),
		stateTime: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aslrun_state_duration_seconds",
			Help:    "Time of one run of a state whose Audit.Metrics lists latency (all with an Audit block and no Metrics), by workflow, state and status (label sets past the first 500 are counted as \"other\").",
			Buckets: agentBuckets,
		}, []string{"workflow", "state", "status"})),
		stateTokens: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aslrun_state_tokens_total",
			Help: "Tokens the agents of states whose Audit.Metrics lists tokens reported, by workflow and state.",
		}, []string{"workflow", "state"})),
		stateCost: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aslrun_state_cost_total",
			Help: "Cost (in the workflow Budget's currency) the agents of states whose Audit.Metrics lists cost reported, by workflow and state.",
		}, []string{"workflow", "state"})),
		states:    make(map[[2]string]bool),
		agents:    make(map[string]agentSeries),
		events:    make(map[[3]string]prometheus.Counter),
		workflows: make(map[string]string),
	}
	for _, s := range []engine.Status{engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut, engine.StatusAborted} {
		// Every status is exported from the start, at 0.
		m.finished.WithLabelValues(string(s))
	}
	m.other = m.series(otherAgent)
	if pending != nil {
		register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aslrun_approvals_pending",
			Help: "Approvals waiting for a decision.",
		}, func() float64 { return float64(pending()) }))
	}
	if due != nil {
		register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aslrun_timers_due",
			Help: "Waiting executions whose timer (a Wait, a Retry delay, an approval's timeout or escalation) is due and not yet resumed.",
		}, func() float64 { return float64(due()) }))
	}
	return m
}

// register registers c on reg and returns it, or the equal collector
// registered before. A collector reg refuses otherwise (a clash with
// another metric of the same name) still counts, but is not exported.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

// Hooks returns engine hooks that update the metrics and then call next's
// hooks that are not nil.
func (m *Metrics) Hooks(next engine.Hooks) engine.Hooks {
	return engine.Hooks{
		ExecutionStarted: func(id string) {
			m.started.Inc()
			if next.ExecutionStarted != nil {
				next.ExecutionStarted(id)
			}
		},
		ExecutionFinished: func(id string, status engine.Status) {
			m.finished.WithLabelValues(string(status)).Inc()
			if next.ExecutionFinished != nil {
				next.ExecutionFinished(id, status)
			}
		},
		StateExited: func(id, state string) {
			m.transitions.Inc()
			if next.StateExited != nil {
				next.StateExited(id, state)
			}
		},
		Committed: func(d time.Duration, err error) {
			m.commits.Observe(d.Seconds())
			if next.Committed != nil {
				next.Committed(d, err)
			}
		},
		Emitted: func(workflow, channel, channelType, eventType string) {
			if channelType == "prometheus" {
				m.event(workflow, channel, eventType).Inc()
			}
			if next.Emitted != nil {
				next.Emitted(workflow, channel, channelType, eventType)
			}
		},
		PartsMoved: func(workflow string, running, completed, failed int64) {
			w := m.workflow(workflow)
			m.partsNow.WithLabelValues(w).Add(float64(running))
			if completed > 0 {
				m.partsDone.WithLabelValues(w, "completed").Add(float64(completed))
			}
			if failed > 0 {
				m.partsDone.WithLabelValues(w, "failed").Add(float64(failed))
			}
			if next.PartsMoved != nil {
				next.PartsMoved(workflow, running, completed, failed)
			}
		},
		StateAudited: func(ctx context.Context, a engine.AuditRecord) {
			m.audited(a)
			if next.StateAudited != nil {
				next.StateAudited(ctx, a)
			}
		},
		AgentCalled: func(ctx context.Context, id, agent string, d time.Duration, u engine.Usage, err error) {
			s := m.agent(agent)
			s.duration.Observe(d.Seconds())
			if err != nil {
				s.errors.Inc()
			}
			if next.AgentCalled != nil {
				next.AgentCalled(ctx, id, agent, d, u, err)
			}
		},
	}
}

// audited exports what a state with an Audit block measured.
func (m *Metrics) audited(a engine.AuditRecord) {
	key := capped(m, m.states, [2]string{a.Workflow, a.State}, maxEventLabels,
		func() bool { return true }, func() bool { return false })
	w, st := a.Workflow, a.State
	if !key {
		w, st = otherAgent, otherAgent
	}
	if a.Latency && a.Status != "waiting" {
		m.stateTime.WithLabelValues(w, st, a.Status).Observe(a.Duration.Seconds())
	}
	if a.Tokens && a.Usage.Tokens > 0 {
		m.stateTokens.WithLabelValues(w, st).Add(float64(a.Usage.Tokens))
	}
	if a.Cost && a.Usage.Cost > 0 {
		m.stateCost.WithLabelValues(w, st).Add(a.Usage.Cost)
	}
}

// capped returns what set holds under key, made by mk and kept when set
// holds fewer than max entries, else other (not kept): the label values
// of a series stay bounded however many names come. m.mu guards set.
func capped[K comparable, V any](m *Metrics, set map[K]V, key K, max int, mk func() V, other func() V) V {
	m.mu.RLock()
	v, ok := set[key]
	m.mu.RUnlock()
	if ok {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := set[key]; ok {
		return v
	}
	if len(set) >= max {
		return other()
	}
	v = mk()
	set[key] = v
	return v
}

// workflow returns the workflow label value of name: its own for the
// first maxWorkflowLabels names seen, "other" after that.
func (m *Metrics) workflow(name string) string {
	return capped(m, m.workflows, name, maxWorkflowLabels, func() string { return name }, func() string { return otherAgent })
}

// event returns the counter of events of a workflow's channel and type,
// or the "other" one past maxEventLabels label sets.
func (m *Metrics) event(workflow, channel, typ string) prometheus.Counter {
	return capped(m, m.events, [3]string{workflow, channel, typ}, maxEventLabels,
		func() prometheus.Counter { return m.emitted.WithLabelValues(workflow, channel, typ) },
		func() prometheus.Counter { return m.emitted.WithLabelValues(otherAgent, otherAgent, otherAgent) })
}

// agent returns the series of an agent: its own for the first
// maxAgentLabels names seen, the "other" ones after that.
func (m *Metrics) agent(name string) agentSeries {
	return capped(m, m.agents, name, maxAgentLabels, func() agentSeries { return m.series(name) }, func() agentSeries { return m.other })
}

func (m *Metrics) series(agent string) agentSeries {
	return agentSeries{duration: m.agentCalls.WithLabelValues(agent), errors: m.agentErrors.WithLabelValues(agent)}
}
