package governance

import (
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// benchBlock is a realistic Governance block: a schema with objects, enums,
// required fields and an array of objects; transition rules of every kind;
// a write policy with Allow, Deny and two rules.
const benchBlock = `{
  "Guard": {
    "Schema": {
      "type": "object",
      "required": ["agent_id", "status", "step_count", "ticket", "tasks"],
      "properties": {
        "agent_id": {"type": "string", "minLength": 1},
        "status": {"enum": ["pending", "running", "review", "completed"]},
        "step_count": {"type": "integer", "minimum": 0},
        "ticket": {
          "type": "object",
          "required": ["id", "category"],
          "properties": {
            "id": {"type": "string"},
            "category": {"enum": ["billing", "technical", "account", "other"]},
            "priority": {"enum": ["low", "normal", "high"]},
            "customer": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}}}
          }
        },
        "draft": {
          "type": "object",
          "properties": {
            "text": {"type": "string", "maxLength": 4000},
            "tone": {"enum": ["neutral", "friendly", "formal"]},
            "revision": {"type": "integer"}
          }
        },
        "payment": {
          "type": "object",
          "required": ["amount", "currency"],
          "properties": {
            "amount": {"type": "number", "minimum": 0},
            "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "confirmed": {"type": "boolean"}
          }
        },
        "tasks": {
          "type": "array",
          "items": {
            "type": "object",
            "required": ["id", "label", "done"],
            "additionalProperties": false,
            "properties": {
              "id": {"type": "string"},
              "label": {"type": "string"},
              "done": {"type": "boolean"},
              "owner": {"type": "string"}
            }
          }
        },
        "notes": {"type": "array", "items": {"type": "string"}}
      }
    },
    "Transitions": {
      "ImmutablePaths": ["$.agent_id", "$.ticket.id"],
      "MonotonicIntegerPaths": ["$.step_count", "$.draft.revision"],
      "OrderedEnumPaths": {"$.status": ["pending", "running", "review", "completed"]},
      "KeyedObjectArrayPaths": {"$.tasks": {"Key": "id", "MonotonicBooleanFields": ["done"]}}
    }
  },
  "WritePolicy": {
    "Allow": ["$.draft", "$.status", "$.step_count", "$.tasks", "$.notes", "$.ticket.category", "$.ticket.priority", "$.payment.amount"],
    "Deny": ["$.payment.confirmed", "$.ticket.customer.*"],
    "Rules": [
      {"Deny": "path == '$.payment.amount' && value > 1000", "Reason": "payment.amount above 1000 requires approval"},
      {"Deny": "op == 'remove' && path startsWith '$.notes'", "Reason": "notes are append-only"}
    ]
  },
  "OnViolation": "FAIL_FAST"
}`

// benchDocs builds a previous document with the given numbers of tasks and
// notes, and a proposed one the way the engine builds it: status and
// step_count set, the draft replaced by a freshly decoded object, the task
// list copied with one item done and one item appended; everything else
// is shared with the previous document.
func benchDocs(tb testing.TB, tasks, notes int) (prev, proposed any) {
	tb.Helper()
	taskList := make([]any, tasks)
	for i := range taskList {
		taskList[i] = map[string]any{
			"id":    fmt.Sprintf("task-%d", i+1),
			"label": fmt.Sprintf("Check the customer's order history, step %d", i+1),
			"done":  i == 0,
			"owner": "triage",
		}
	}
	noteList := make([]any, notes)
	for i := range noteList {
		noteList[i] = fmt.Sprintf("note %d: the customer called about the invoice", i+1)
	}
	p := map[string]any{
		"agent_id":   "agent-7f3a",
		"status":     "pending",
		"step_count": jsonvalue.IntNumber(4),
		"ticket": map[string]any{
			"id": "T-1042", "category": "billing", "priority": "high",
			"customer": map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"},
		},
		"draft":   map[string]any{"text": "Dear Ada, thank you for", "tone": "friendly", "revision": jsonvalue.IntNumber(1)},
		"payment": map[string]any{"amount": jsonvalue.IntNumber(250), "currency": "EUR", "confirmed": false},
		"tasks":   taskList,
		"notes":   noteList,
	}
	prev = mustNormalize(tb, p)

	newTasks := append([]any(nil), prev.(map[string]any)["tasks"].([]any)...)
	newTasks[1] = decode(tb, fmt.Sprintf(`{"id": "task-2", "label": %q, "done": true, "owner": "triage"}`,
		"Check the customer's order history, step 2"))
	newTasks = append(newTasks, decode(tb, `{"id": "task-new", "label": "Send the reply", "done": false}`))
	steps := []struct {
		path  string
		value any
	}{
		{"$.status", "running"},
		{"$.step_count", jsonvalue.IntNumber(5)},
		{"$.draft", decode(tb, `{"text": "Dear Ada, thank you for your patience. The refund is on its way.", "tone": "friendly", "revision": 2}`)},
		{"$.tasks", newTasks},
	}
	proposed = prev
	for _, s := range steps {
		path, err := jsonpath.CompileReference(s.path)
		if err != nil {
			tb.Fatal(err)
		}
		if proposed, err = path.Set(proposed, s.value); err != nil {
			tb.Fatal(err)
		}
	}
	return prev, proposed
}

func mustNormalize(tb testing.TB, v any) any {
	tb.Helper()
	n, err := jsonvalue.Normalize(v)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func decode(tb testing.TB, s string) any {
	tb.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		tb.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

func mustCompile(tb testing.TB, block string) *Rules {
	tb.Helper()
	r, err := Compile(decode(tb, block))
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	return r
}

func benchCheck(b *testing.B, tasks, notes int) {
	benchRules(b, mustCompile(b, benchBlock), tasks, notes)
}

func benchRules(b *testing.B, r *Rules, tasks, notes int) {
	prev, proposed := benchDocs(b, tasks, notes)
	if v := r.Check(prev, proposed, "Draft"); v != nil {
		b.Fatalf("Check = %v, want nil", v)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := r.Check(prev, proposed, "Draft"); v != nil {
			b.Fatal(v)
		}
	}
	b.ReportMetric(float64(jsonvalue.Size(proposed)), "doc-bytes")
}

// BenchmarkCheck1KiB checks a transition of a document of about 1 KiB.
func BenchmarkCheck1KiB(b *testing.B) { benchCheck(b, 4, 3) }

// BenchmarkCheck50KiB checks a transition of a document of about 50 KiB.
func BenchmarkCheck50KiB(b *testing.B) { benchCheck(b, 400, 180) }

// BenchmarkCheck1KiBNoSchema and BenchmarkCheck50KiBNoSchema are the same
// without the schema, to show the validator's share.
func BenchmarkCheck1KiBNoSchema(b *testing.B) { benchRules(b, noSchema(b), 4, 3) }

// BenchmarkCheck50KiBNoSchema: see BenchmarkCheck1KiBNoSchema.
func BenchmarkCheck50KiBNoSchema(b *testing.B) { benchRules(b, noSchema(b), 400, 180) }

func noSchema(b *testing.B) *Rules {
	block := decode(b, benchBlock).(map[string]any)
	delete(block["Guard"].(map[string]any), "Schema")
	r, err := Compile(block)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkCheckNoGovernance is the cost of Check for a definition without
// governance (nil rules) and with an empty block.
func BenchmarkCheckNoGovernance(b *testing.B) {
	prev, proposed := benchDocs(b, 4, 2)
	var none *Rules
	empty := mustCompile(b, `{}`)
	b.ReportAllocs()
	for b.Loop() {
		if none.Check(prev, proposed, "S") != nil || empty.Check(prev, proposed, "S") != nil {
			b.Fatal("denied")
		}
	}
}

// TestConcurrentCheck runs Check from several goroutines on shared rules
// (run it with -race).
func TestConcurrentCheck(t *testing.T) {
	r := mustCompile(t, benchBlock)
	prev, proposed := benchDocs(t, 20, 5)
	bad := decode(t, `{"agent_id": "x"}`)
	confirm, err := jsonpath.CompileReference("$.payment.confirmed")
	if err != nil {
		t.Fatal(err)
	}
	confirmed, err := confirm.Set(proposed, true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for range 50 {
				if v := r.Check(prev, proposed, "S"); v != nil {
					err = v
				}
				if v := r.Check(prev, bad, "S"); v == nil {
					err = fmt.Errorf("goroutine %d: Check of a bad document passed", g)
				}
				if v := r.Policy().Check(prev, confirmed, "S"); v == nil {
					err = fmt.Errorf("goroutine %d: the policy allowed confirming the payment", g)
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
