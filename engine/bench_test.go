package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// payload1KiB is a realistic ~1 KiB agent document.
const payload1KiB = `{"id":"doc-20931","owner":{"name":"Maria Lopez","email":"maria@example.com","team":"payments"},
"tags":["refund","priority","eu","card","duplicate-charge"],"metrics":{"score":0.93,"tokens":1834,"latencyMs":412},
"ticket":{"subject":"Charged twice for my order","body":"Hi, I was charged twice for order 8812 (42.50 EUR). Please refund the duplicate charge as soon as possible. I have attached the bank statement showing both transactions from the 14th of March.","channel":"email","language":"en"},
"history":[{"at":"2026-03-14T10:02:11Z","by":"classifier","note":"intent refund, confidence 0.93"},{"at":"2026-03-14T10:02:12Z","by":"router","note":"auto refund under 100 EUR"},{"at":"2026-03-14T10:02:15Z","by":"refund-agent","note":"refund RF-20931 issued"}],
"customer":{"since":"2019-06-01","orders":48,"lifetimeValue":3120.5,"segment":"loyal"}}`

// chain builds a machine of n states S0 … Sn-1 in a row: state(i, next)
// writes state i's body, next being its "Next" or "End" member.
func chain(n int, state func(i int, next string) string) string {
	var b strings.Builder
	b.WriteString(`{"StartAt":"S0","States":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		next := fmt.Sprintf(`"Next":"S%d"`, i+1)
		if i == n-1 {
			next = `"End":true`
		}
		fmt.Fprintf(&b, `"S%d":%s`, i, state(i, next))
	}
	b.WriteString(`}}`)
	return b.String()
}

// passChain builds n Pass states that each use InputPath, Parameters,
// ResultPath and OutputPath, and keep the document's shape.
func passChain(n int) string {
	return chain(n, func(_ int, next string) string {
		return `{"Type":"Pass","InputPath":"$.payload","Parameters":{"payload.$":"$","summary":{"id.$":"$.id","owner.$":"$.owner.name","tags.$":"$.tags","score.$":"$.metrics.score"}},"ResultPath":"$.next","OutputPath":"$.next",` + next + `}`
	})
}

// BenchmarkPassChain100 runs a 100-state Pass chain on a 1 KiB document on
// the in-memory path and reports the time per state.
func BenchmarkPassChain100(b *testing.B) { benchPassChain(b, passChain(100)) }

// benchMachine parses def and returns it with the input {"payload": the
// 1 KiB document}.
func benchMachine(b *testing.B, def string) (*states.Machine, map[string]any) {
	b.Helper()
	m, err := states.Parse([]byte(def))
	if err != nil {
		b.Fatal(err)
	}
	payload, err := jsonvalue.Decode([]byte(payload1KiB))
	if err != nil {
		b.Fatal(err)
	}
	return m, map[string]any{"payload": payload}
}

// benchPassChain runs def, a 100-state chain, on the 1 KiB payload.
func benchPassChain(b *testing.B, def string) {
	m, input := benchMachine(b, def)
	x := engine.New(engine.Config{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := x.Run(ctx, m, input, engine.StartOptions{ID: "bench"})
		if err != nil || res.Status != engine.StatusSucceeded {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/state")
}

// BenchmarkPassChain100Governed is BenchmarkPassChain100 under a
// Governance block (a schema, an immutable path, a write policy with a
// rule) that every state's write passes: the difference is the commit
// point's governance cost per state on a 1 KiB document.
func BenchmarkPassChain100Governed(b *testing.B) {
	def := strings.Replace(passChain(100), `{"StartAt":"S0",`, `{"StartAt":"S0","Governance":{
		"Guard":{"Schema":{"type":"object","required":["payload"],"properties":{
			"payload":{"type":"object","required":["id","owner"],"properties":{"id":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},
				"metrics":{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":1}}}}},
			"next":{"type":"object","required":["payload","summary"]}}},
			"Transitions":{"ImmutablePaths":["$.payload.id"]}},
		"WritePolicy":{"Allow":["$.next"],"Deny":["$.payload"],"Rules":[{"Deny":"path startsWith '$.next.summary' && op == 'remove'","Reason":"summaries stay"}]}},`, 1)
	benchPassChain(b, def)
}

// BenchmarkMap100k runs a Map over 100,000 items with MaxConcurrency 64 and
// an echo agent, and reports the process's peak resident memory.
func BenchmarkMap100k(b *testing.B) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":64,"ItemProcessor":{"StartAt":"Echo","States":{"Echo":{"Type":"Task","Agent":"Echo","End":true}}},"End":true}}}`
	m, err := states.Parse([]byte(def))
	if err != nil {
		b.Fatal(err)
	}
	items := make([]any, 100000)
	for i := range items {
		items[i] = map[string]any{"id": jsonvalue.IntNumber(int64(i)), "title": "document"}
	}
	reg := agents.NewRegistry()
	_ = reg.Register("Echo", agents.Func(func(_ context.Context, req *agents.Request) (any, error) { return req.Input, nil }))
	// 100,000 items are far beyond AWS's 256 KiB payload limit.
	x := engine.New(engine.Config{Agents: reg, MaxPayloadSize: -1})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := x.Run(ctx, m, items, engine.StartOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			b.Fatalf("run: %v %+v", err, res)
		}
		if out := res.Output.([]any); len(out) != len(items) {
			b.Fatalf("%d results, want %d", len(out), len(items))
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxRSS-MiB")
	}
}

// BenchmarkPassChain100MemoryStore runs the same chain durably on the
// memory store: every state is committed, encoded and hashed.
func BenchmarkPassChain100MemoryStore(b *testing.B) {
	m, input := benchMachine(b, passChain(100))
	x := engine.New(engine.Config{Store: store.NewMemory()})
	runBench(b, x, m, input, 100, "ns/state")
}

// benchStores are the stores the agentic benchmarks run on: none
// (volatile), the memory store, and bbolt on a temporary file.
func benchStores(b *testing.B) []struct {
	name string
	open func(b *testing.B) engine.Store
} {
	return []struct {
		name string
		open func(b *testing.B) engine.Store
	}{
		{"volatile", func(*testing.B) engine.Store { return nil }},
		{"memory-store", func(*testing.B) engine.Store { return store.NewMemory() }},
		{"bolt", func(b *testing.B) engine.Store {
			st, err := store.OpenBolt(b.TempDir()+"/bench.db", store.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
}

// BenchmarkDebate5Rounds3Agents runs a 5-round debate of 3 turn-based
// agents that see the whole history, with consensus by an arbiter: 16
// agent calls; durable runs commit each round.
func BenchmarkDebate5Rounds3Agents(b *testing.B) {
	def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B","C"],"Topic":"REST or gRPC?","Rounds":5,
		"Communication":{"Style":"turn_based","VisibleHistory":"all"},"Consensus":{"Threshold":1,"Arbiter":"Judge"},
		"Parameters":{"constraints.$":"$.constraints"},"ResultPath":"$.debate","End":true}}}`
	m, err := states.Parse([]byte(def))
	if err != nil {
		b.Fatal(err)
	}
	debater := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		pos := "grpc"
		if req.Agent == "B" {
			pos = "rest"
		}
		return map[string]any{"position": pos, "argument": req.Agent + " argues for " + pos + " with a paragraph of reasons, as a model would"}, nil
	})
	reg := agents.NewRegistry()
	for _, n := range []string{"A", "B", "C", "Judge"} {
		_ = reg.Register(n, debater)
	}
	input := map[string]any{"constraints": []any{"public API stays REST", "no downtime"}}
	for _, sc := range benchStores(b) {
		b.Run(sc.name, func(b *testing.B) {
			x := engine.New(engine.Config{Agents: reg, Store: sc.open(b)})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Run(ctx, m, input, engine.StartOptions{})
				if err != nil || res.Status != engine.StatusSucceeded {
					b.Fatalf("run: %v %+v", err, res)
				}
			}
		})
	}
}

// BenchmarkApprovalRoundTrip runs an execution to an Approval (committed
// as WAITING with its pending approval), then decides it and runs it to
// its end: the round trip a human approval costs the engine.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	def := `{"StartAt":"Review","States":{"Review":{"Type":"Approval","Prompt":{"Title":"Refund {{$.payload.id}}?","Description.$":"$.payload.ticket.subject"},
		"Options":["approve","reject"],"Timeout":"24h","Escalation":{"After":"4h","Notify":["lead"]},"ResultPath":"$.review",
		"Choices":[{"Variable":"$.review.approval","StringEquals":"approve","Next":"Done"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	m, input := benchMachine(b, def)
	for _, sc := range benchStores(b)[1:] {
		b.Run(sc.name, func(b *testing.B) {
			x := engine.New(engine.Config{Store: sc.open(b)})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Run(ctx, m, input, engine.StartOptions{})
				if err != nil || res.Status != engine.StatusWaiting {
					b.Fatalf("run: %v %+v", err, res)
				}
				res, err = x.Decide(ctx, res.ID, engine.Decision{Approval: "approve", Approver: "bench"}, engine.ResumeOptions{})
				if err != nil || res.Status != engine.StatusSucceeded {
					b.Fatalf("decide: %v %+v", err, res)
				}
			}
		})
	}
}

// BenchmarkEffectLoop runs 500 turns of Pass, Task (an instant agent),
// Pass, Pass, Choice on a 1 KiB document — 2,500 states — in each store
// and durability mode, and reports the time per state: what commits sized
// to effects cost against running with no store.
func BenchmarkEffectLoop(b *testing.B) {
	def := `{"StartAt":"Start","States":{
		"Start":{"Type":"Pass","Parameters":{"n.$":"States.MathAdd($.n, 1)","doc.$":"$.doc"},"Next":"Call"},
		"Call":{"Type":"Task","Agent":"Worker","ResultPath":"$.r","Next":"P1"},
		"P1":{"Type":"Pass","Result":"x","ResultPath":"$.p1","Next":"P2"},
		"P2":{"Type":"Pass","Next":"Loop"},
		"Loop":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericLessThan":500,"Next":"Start"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	m, in := benchMachine(b, def)
	input := map[string]any{"n": jsonvalue.IntNumber(0), "doc": in["payload"]}
	reg := agents.NewRegistry()
	_ = reg.Register("Worker", agents.Func(func(context.Context, *agents.Request) (any, error) {
		return map[string]any{"ok": true}, nil
	}))
	const statesPerRun = 500*5 + 1
	for _, s := range benchStores(b) {
		for _, mode := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched} {
			if s.name == "volatile" && mode == engine.DurabilityBatched {
				continue
			}
			name := s.name
			if s.name != "volatile" {
				name += "/" + string(mode)
			}
			b.Run(name, func(b *testing.B) {
				x := engine.New(engine.Config{Agents: reg, Store: s.open(b), Durability: mode})
				runBench(b, x, m, input, statesPerRun, "ns/state")
			})
		}
	}
}

// BenchmarkMockLoop runs bench/workflows/loop.json as bench/compare runs
// it without a store: 500 turns of Pass (Parameters), Task (a mocked agent,
// called on the state's goroutine), Pass (Result), Pass (Parameters with
// States.MathAdd) and Choice on a 1 KiB document, no payload limit — what
// the comparison with aws-local-stepfunctions measures, per state.
func BenchmarkMockLoop(b *testing.B) {
	def := `{"StartAt":"Prepare","States":{
		"Prepare":{"Type":"Pass","Parameters":{"subject.$":"$.doc.ticket.subject","owner.$":"$.doc.owner.name","turn.$":"$.i"},"ResultPath":"$.request","Next":"Work"},
		"Work":{"Type":"Task","Agent":"Work","InputPath":"$.request","ResultPath":"$.work","Next":"Review"},
		"Review":{"Type":"Pass","Result":{"approved":true,"by":"reviewer"},"ResultPath":"$.review","Next":"Tally"},
		"Tally":{"Type":"Pass","Parameters":{"doc.$":"$.doc","work.$":"$.work","review.$":"$.review","n.$":"$.n","i.$":"States.MathAdd($.i, 1)"},"Next":"Check"},
		"Check":{"Type":"Choice","Choices":[{"Variable":"$.i","NumericLessThanPath":"$.n","Next":"Prepare"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	m, in := benchMachine(b, def)
	mocks, err := agents.ParseMocks([]byte(`{"Work":{"0-999999999":{"Return":{"verdict":"refund","confidence":0.93,"reference":"RF-20931"}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := mocks.Register(reg); err != nil {
		b.Fatal(err)
	}
	input := map[string]any{"doc": in["payload"], "i": jsonvalue.IntNumber(0), "n": jsonvalue.IntNumber(500)}
	x := engine.New(engine.Config{Agents: reg, MaxPayloadSize: -1})
	runBench(b, x, m, input, 500*5+1, "ns/state")
}

// BenchmarkRedactLoop is a loop of 100 agent calls on a document holding
// a customer's SSN, on the memory store, without and with Audit.Redact
// naming it: what sealing and scrubbing every commit costs.
func BenchmarkRedactLoop(b *testing.B) {
	const def = `{"StartAt":"Call","States":{
		"Call":{"Type":"Task","Agent":"Worker","Parameters":{"ssn.$":"$.customer.ssn","n.$":"$.n"},"ResultPath":"$.r",%s"Next":"Count"},
		"Count":{"Type":"Pass","Parameters":{"n.$":"States.MathAdd($.n, 1)","customer.$":"$.customer","r.$":"$.r"},"Next":"Loop"},
		"Loop":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericLessThan":100,"Next":"Call"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	reg := agents.NewRegistry()
	_ = reg.Register("Worker", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		return map[string]any{"checked": req.Input.(map[string]any)["ssn"], "ok": true}, nil
	}))
	input := map[string]any{"n": jsonvalue.IntNumber(0), "customer": map[string]any{"name": "Ann", "ssn": "123-45-6789", "notes": strings.Repeat("x", 600)}}
	for _, tc := range []struct{ name, audit string }{{"plain", ""}, {"redacted", `"Audit":{"Redact":["$.customer.ssn"]},`}} {
		b.Run(tc.name, func(b *testing.B) {
			m, _ := benchMachine(b, fmt.Sprintf(def, tc.audit))
			x := engine.New(engine.Config{Agents: reg, Store: store.NewMemory(), RedactKey: bytes.Repeat([]byte{1}, engine.MinRedactKey), Logger: slog.New(slog.DiscardHandler)})
			runBench(b, x, m, input, 300, "ns/state")
		})
	}
}

// BenchmarkChildExecution runs a Workflow state whose child is one Pass,
// against the same Pass in an inline Parallel of one branch, on the memory
// store and on bbolt: what a child execution costs, start to end (its
// record, its start committed, its history, the parent's events).
func BenchmarkChildExecution(b *testing.B) {
	child := `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"done","ResultPath":"$.r","End":true}}}`
	src := benchWorkflows{"child": child}
	for _, tc := range []struct{ name, def string }{
		{"inline-parallel", `{"StartAt":"Both","States":{"Both":{"Type":"Parallel","ResultPath":"$.w","End":true,"Branches":[` + child + `]}}}`},
		{"child", `{"StartAt":"W","States":{"W":{"Type":"Workflow","WorkflowId":"child","ResultPath":"$.w","End":true}}}`},
	} {
		for _, s := range benchStores(b) {
			if s.name == "volatile" {
				continue
			}
			b.Run(tc.name+"/"+s.name, func(b *testing.B) {
				m, input := benchMachine(b, tc.def)
				x := engine.New(engine.Config{Store: s.open(b), Workflows: src})
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					res, err := x.Run(ctx, m, input, engine.StartOptions{})
					if err != nil || res.Status != engine.StatusSucceeded {
						b.Fatalf("run: %v %+v", err, res)
					}
				}
			})
		}
	}
}

// benchWorkflows is a registry of definitions by name.
type benchWorkflows map[string]string

func (w benchWorkflows) ResolveWorkflow(_ context.Context, name, _ string) ([]byte, string, error) {
	return []byte(w[name]), name + "@1", nil
}

// BenchmarkInvoke runs the agent loop of BenchmarkEffectLoop without a
// store, its agent a Func (called on a goroutine of its own, which the
// engine can walk away from) and a DirectFunc (it honours its context, so
// it is called on the state's goroutine): what the goroutine, channel and
// context per call cost.
func BenchmarkInvoke(b *testing.B) {
	def := `{"StartAt":"Start","States":{
		"Start":{"Type":"Pass","Parameters":{"n.$":"States.MathAdd($.n, 1)"},"Next":"Call"},
		"Call":{"Type":"Task","Agent":"Worker","ResultPath":"$.r","TimeoutSeconds":60,"Next":"Loop"},
		"Loop":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericLessThan":500,"Next":"Start"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	work := func(context.Context, *agents.Request) (any, error) { return map[string]any{"ok": true}, nil }
	for _, tc := range []struct {
		name  string
		agent agents.Agent
	}{{"goroutine", agents.Func(work)}, {"direct", agents.DirectFunc(work)}} {
		b.Run(tc.name, func(b *testing.B) {
			m, _ := benchMachine(b, def)
			reg := agents.NewRegistry()
			_ = reg.Register("Worker", tc.agent)
			x := engine.New(engine.Config{Agents: reg})
			runBench(b, x, m, map[string]any{"n": jsonvalue.IntNumber(0)}, 500, "ns/call")
		})
	}
}

// runBench runs m on input with x for the benchmark's iterations, each
// to success, reporting allocations and the time per unit (each run
// counting perRun of them, "ns/state", "ns/call").
func runBench(b *testing.B, x *engine.Executor, m *states.Machine, input any, perRun int, unit string) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := x.Run(ctx, m, input, engine.StartOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(perRun), unit)
}
