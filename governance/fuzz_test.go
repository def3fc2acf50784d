package governance

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// FuzzCompile compiles fuzzed Governance blocks: Compile must never panic,
// and the rules it returns must check documents without panicking.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob("testdata/compile/*/*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(benchBlock))
	prev := map[string]any{"a": "x", "n": jsonvalue.IntNumber(1), "tasks": []any{map[string]any{"id": "t", "done": false}}}
	proposed := map[string]any{"a": "y", "n": jsonvalue.IntNumber(0), "tasks": []any{map[string]any{"id": "u"}}, "b": map[string]any{"c": []any{true}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonvalue.Decode(data)
		if err != nil {
			return
		}
		r, err := Compile(v)
		if err != nil {
			var problems Problems
			if !errors.As(err, &problems) || r != nil {
				t.Fatalf("Compile = %v, %T; want nil and Problems", r, err)
			}
			return
		}
		r.CheckDocument(proposed)
		r.Check(prev, proposed, "S")
		r.Check(proposed, prev, "S")
		if wp, ok := v.(map[string]any)["WritePolicy"]; ok {
			p, err := CompilePolicy(wp)
			if err != nil {
				t.Fatalf("CompilePolicy of a WritePolicy that Compile accepted: %v", err)
			}
			p.Check(prev, proposed, "S")
		}
	})
}

// FuzzCheck checks two fuzzed documents against a fixed rule set with
// every kind of rule: Check must never panic, and the written set must be
// empty between a document and itself and name paths that parse back.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"agent_id": "a", "status": "pending", "step_count": 1, "tasks": [{"id": "t", "label": "x", "done": false}]}`),
		[]byte(`{"agent_id": "a", "status": "running", "step_count": 2, "tasks": [{"id": "t", "label": "x", "done": true}, {"id": "u", "label": "y", "done": false}]}`))
	f.Add([]byte(`{"payment": {"amount": 5}}`), []byte(`{"payment": {"amount": 5000, "confirmed": true}}`))
	f.Add([]byte(`[1, {"a": null}]`), []byte(`{"notes": ["a"], "draft": {"revision": 1.5}}`))
	f.Add([]byte(`{"tasks": [{"id": 1}, {"id": 1.0}]}`), []byte(`{"tasks": "none", "step_count": 1e1001}`))
	r := mustCompile(f, benchBlock)
	rules := mustCompile(f, `{"WritePolicy": {"Rules": [
		{"Deny": "op == 'remove' && value != nil"},
		{"Deny": "len(toJSON(value)) > 1000 || value?.x?.y == 1"},
		{"Deny": "path == '$.n' && value / (value - value) > 0"},
		{"Deny": "doc?.locked == true && prev?.locked != true"}]}}`)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		prev, err := jsonvalue.Decode(a)
		if err != nil {
			return
		}
		proposed, err := jsonvalue.Decode(b)
		if err != nil {
			return
		}
		if v := InvalidJSON(proposed); v != nil {
			t.Fatalf("InvalidJSON of a decoded document = %v", v)
		}
		r.CheckDocument(proposed)
		r.Check(prev, proposed, "S")
		rules.Check(prev, proposed, "S")
		if ws := Written(proposed, proposed); len(ws) != 0 {
			t.Fatalf("Written(doc, doc) = %v, want nothing", ws)
		}
		if v := r.Check(proposed, proposed, "S"); v != nil && v.Name == ErrWriteDenied {
			t.Fatalf("Check(doc, doc) denied a write: %v", v)
		}
		for _, w := range Written(prev, proposed) {
			if w.Path == "$" {
				continue
			}
			if _, msg := parsePath(w.Path, false); msg != "" {
				t.Fatalf("written path %s does not parse: %s", w.Path, msg)
			}
		}
	})
}

// FuzzRule compiles a fuzzed write-policy rule and evaluates it on a few
// writes: compiling must never panic, a rule that compiles must give an
// answer (nil or Governance.WriteDenied) without panicking, and an
// evaluation that overruns its budget must say so with a BudgetError.
// Evaluation is bounded by the budget, so the fuzzer's own time limit
// catches a rule the meter misses.
func FuzzRule(f *testing.F) {
	for _, rule := range []string{
		"path == '$.payment.amount' && value > 1000",
		"op == 'remove' && path startsWith '$.notes'",
		"any(value, # == 'secret') || upper(string(value)) == 'X'",
		"len(reduce(1..60, #acc + #acc, 'x')) < 0",
		"len(reduce(1..1000, #acc + 'xxxxxxxx', '')) < 0",
		"any(1..999, any(1..999, any(1..999, # < 0)))",
		"len(toJSON(reduce(1..60, [#acc, #acc], 1))) < 0",
		"len(replace(string(doc), '', toJSON(doc))) > 0",
		"len(join(map(1..999, toJSON(prev)), toJSON(doc))) > 0",
		"count(doc.tasks, #.label matches '^(a|b)*c$') > 0",
		"let s = value + value; s + s == old",
		"sortBy(groupBy(doc.tasks, #.done)[true] ?? [], #.id)[0]?.id == 't'",
	} {
		f.Add(rule)
	}
	prev := decode(f, `{"a": "x", "n": 1, "tasks": [{"id": "t", "done": false, "label": "abc"}]}`)
	proposed := decode(f, `{"a": "y", "n": 0, "tasks": [{"id": "u", "label": "aac"}], "b": {"c": [true, "s"]}}`)
	f.Fuzz(func(t *testing.T, rule string) {
		p, err := CompilePolicy(map[string]any{"Rules": []any{map[string]any{"Deny": rule}}})
		if err != nil {
			var problems Problems
			if !errors.As(err, &problems) || p != nil {
				t.Fatalf("CompilePolicy = %v, %T; want nil and Problems", p, err)
			}
			return
		}
		for _, docs := range [][2]any{{prev, proposed}, {proposed, prev}} {
			v := p.Check(docs[0], docs[1], "S")
			if v == nil {
				continue
			}
			if v.Name != ErrWriteDenied || v.Detail.Rule != "WritePolicy.Rules[0]" {
				t.Fatalf("Check = %v (%s, %s), want nil or a denial by the rule", v, v.Name, v.Detail.Rule)
			}
			var be *BudgetError
			if errors.As(v, &be) && be.Budget != RuleBudget && be.Budget != CheckBudget {
				t.Fatalf("BudgetError %+v names no budget", be)
			}
		}
	})
}
