package governance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
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
	prev := map[string]any{"a": "x", "n": jsonpath.IntNumber(1), "tasks": []any{map[string]any{"id": "t", "done": false}}}
	proposed := map[string]any{"a": "y", "n": jsonpath.IntNumber(0), "tasks": []any{map[string]any{"id": "u"}}, "b": map[string]any{"c": []any{true}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonpath.Decode(data)
		if err != nil {
			return
		}
		r, err := Compile(v)
		if err != nil {
			if _, ok := err.(Problems); !ok || r != nil {
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
		prev, err := jsonpath.Decode(a)
		if err != nil {
			return
		}
		proposed, err := jsonpath.Decode(b)
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
