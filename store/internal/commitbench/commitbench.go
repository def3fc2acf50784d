// Package commitbench holds what the stores' commit benchmarks share: an
// agent-like document and a loop of commits shaped as the engine makes
// them, so that the bbolt, log and Pebble figures are of the same commits.
package commitbench

import (
	"maps"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Doc is an agent-like document of about 1 KiB.
const Doc = `{"ticket":{"id":"T-20250314-0042","channel":"email","priority":2,` +
	`"customer":{"id":"C-99812","name":"Ada Lovelace","tier":"gold","since":"2019-04-01","balance":1234.56},` +
	`"subject":"Refund for a duplicate charge on my March invoice",` +
	`"body":"Hello, I was charged twice for invoice INV-7781 on March 3rd. Could you refund the duplicate charge? Thanks, Ada."},` +
	`"classification":{"intent":"refund","confidence":0.9371,"labels":["billing","duplicate-charge","refund"]},` +
	`"retrieved":[{"doc":"kb/refunds.md","score":0.88,"snippet":"Duplicate charges are refunded within 5 business days."},` +
	`{"doc":"kb/invoices.md","score":0.71,"snippet":"Invoices are issued on the 1st of each month."}],` +
	`"draft":"Dear Ada, we are sorry for the duplicate charge on invoice INV-7781. We have issued a refund of 49.90 EUR, which should reach your account within 5 business days.",` +
	`"notes":["customer verified by email","duplicate confirmed in ledger","refund within policy limit"],` +
	`"usage":{"tokens":1843,"cost":0.01106},"step_count":4,"status":"running"}`

// StatesPerCommit is how many states each commit of a Loop carries, as the
// engine commits pure states with the next step that has an effect.
const StatesPerCommit = 4

// Loop makes commits of StatesPerCommit states each: every state has an
// Entered event (its input) and an Exited event (its output), its output
// is its input with one field changed, and the commit carries the one
// scope with the last document.
type Loop struct {
	id    string
	doc   map[string]any
	seq   int64
	event int64
	c     engine.Commit
}

// NewLoop returns the Loop of execution id, starting from Doc.
func NewLoop(tb testing.TB, id string) *Loop {
	d, err := jsonvalue.Decode([]byte(Doc))
	if err != nil {
		tb.Fatal(err)
	}
	return &Loop{id: id, doc: d.(map[string]any)}
}

// Next returns the loop's next commit; the engine's way, it reuses one
// Commit and copies a document only along the path it changes.
func (l *Loop) Next() *engine.Commit {
	l.seq++
	now := time.Now()
	events := l.c.Events[:0]
	for range StatesPerCommit {
		in := l.doc
		out := maps.Clone(in)
		out["step_count"] = jsonvalue.IntNumber(int64(l.event))
		l.doc = out
		l.event++
		events = append(events, engine.Event{ID: 2*l.event - 1, Type: "PassStateEntered", State: "Step", Timestamp: now, Input: in, Document: in})
		events = append(events, engine.Event{ID: 2 * l.event, Type: "PassStateExited", State: "Step", Timestamp: now, Output: out, Document: out})
	}
	l.c = engine.Commit{
		Execution: l.id, Seq: l.seq, Status: engine.StatusRunning, LastEvent: 2 * l.event, Events: events,
		Scopes: map[string]*engine.Scope{"": {Next: "Step", Doc: l.doc, Visits: map[string]int{"Step": int(l.event)}}},
	}
	return &l.c
}
