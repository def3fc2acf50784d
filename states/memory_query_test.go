package states

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// showRead renders the fields of a MemoryRead a test compares, paths and
// expressions as their source.
func showRead(r *MemoryRead) string {
	if r == nil {
		return "<nil>"
	}
	var filter []string
	for _, f := range r.Filter {
		if f.Expr != nil {
			filter = append(filter, f.Field+"="+f.Expr.String())
		} else {
			filter = append(filter, fmt.Sprintf("%s:%v", f.Field, f.Value))
		}
	}
	return fmt.Sprintf("keys=%q inject=%s default=%v/%v query=%q expr=%s coll=%q topk=%d min=%v/%v filter=%v limit=%d order=%q",
		r.Keys, r.InjectAt, r.Default, r.HasDefault, r.Query.Source, exprText(r.QueryExpr), r.Collection, r.TopK,
		r.MinScore, r.HasMinScore, filter, r.Limit, r.Order)
}

// showWrite renders one MemoryWrite as showRead does a read.
func showWrite(w MemoryWrite) string {
	return fmt.Sprintf("key=%q value=%v/%v expr=%s ttl=%v merge=%v coll=%q text=%q textexpr=%s",
		w.Key, w.Value, w.HasValue, exprText(w.ValueExpr), w.TTL, w.Merge, w.Collection, w.Text.Source, exprText(w.TextExpr))
}

func exprText(e *jsonpath.Expr) string {
	if e == nil {
		return "<nil>"
	}
	return e.String()
}

// memoryTask is a definition whose only state is a Task with block as its
// Memory block.
func memoryTask(block string) []byte {
	return fmt.Appendf(nil, `{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "Memory": %s, "End": true}}}`, block)
}

func TestMemoryTypesAccepted(t *testing.T) {
	tests := []struct {
		name, block string
		typ         string
		read        string
		writes      []string
	}{
		{"key-value by default", `{"Read": ["a"]}`, "key_value",
			`keys=["a"] inject=$._memory default=<nil>/false query="" expr=<nil> coll="" topk=0 min=0/false filter=[] limit=0 order=""`, nil},
		{"key-value named", `{"Type": "key_value", "Read": {"Keys": ["a"], "Default": 1}, "Write": {"Key": "a", "Merge": true}}`, "key_value",
			`keys=["a"] inject=$._memory default=1/true query="" expr=<nil> coll="" topk=0 min=0/false filter=[] limit=0 order=""`,
			[]string{`key="a" value=<nil>/false expr=<nil> ttl= merge=true coll="" text="" textexpr=<nil>`}},
		{"semantic defaults", `{"Type": "semantic", "Read": {"Query.$": "$.q", "Collection": "docs"}}`, "semantic",
			`keys=[] inject=$._memory default=<nil>/false query="" expr=$.q coll="docs" topk=5 min=0/false filter=[] limit=0 order=""`, nil},
		{"semantic all", `{"Type": "semantic", "Read": {"Query": "about {{$.topic}}", "Collection": "docs", "TopK": 100, "MinScore": -1, "InjectAt": "$.hits"}}`, "semantic",
			`keys=[] inject=$.hits default=<nil>/false query="about {{$.topic}}" expr=<nil> coll="docs" topk=100 min=-1/true filter=[] limit=0 order=""`, nil},
		{"semantic intrinsic query", `{"Type": "semantic", "Read": {"Query.$": "States.Format('q {}', $.x)", "Collection": "c", "TopK": 1, "MinScore": 0}}`, "semantic",
			`keys=[] inject=$._memory default=<nil>/false query="" expr=States.Format('q {}', $.x) coll="c" topk=1 min=0/true filter=[] limit=0 order=""`, nil},
		{"semantic writes", `{"Type": "semantic", "Write": [{"Collection": "c"}, {"Key": "id1", "Collection": "c", "Text": "{{$.title}}", "Value.$": "$.doc", "TTL": "7d"}, {"Collection": "c", "Text.$": "$.body", "Value": {"x": 1}}]}`, "semantic",
			"", []string{
				`key="" value=<nil>/false expr=<nil> ttl= merge=false coll="c" text="" textexpr=<nil>`,
				`key="id1" value=<nil>/false expr=$.doc ttl=168h0m0s merge=false coll="c" text="{{$.title}}" textexpr=<nil>`,
				`key="" value=map[x:1]/true expr=<nil> ttl= merge=false coll="c" text="" textexpr=$.body`,
			}},
		{"episodic defaults", `{"Type": "episodic", "Read": {}, "Write": {}}`, "episodic",
			`keys=[] inject=$._memory default=<nil>/false query="" expr=<nil> coll="events" topk=0 min=0/false filter=[] limit=10 order="desc"`,
			[]string{`key="" value=<nil>/false expr=<nil> ttl= merge=false coll="events" text="" textexpr=<nil>`}},
		{"episodic all", `{"Type": "episodic", "Read": {"Collection": "log", "Filter": {"z": [1], "a.$": "$.a", "a-b": null, "m": "x"}, "Limit": 1000, "Order": "asc"}, "Write": {"Collection": "log", "TTL": "never"}}`, "episodic",
			`keys=[] inject=$._memory default=<nil>/false query="" expr=<nil> coll="log" topk=0 min=0/false filter=[a=$.a a-b:<nil> m:x z:[1]] limit=1000 order="asc"`,
			[]string{`key="" value=<nil>/false expr=<nil> ttl=never merge=false coll="log" text="" textexpr=<nil>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(memoryTask(tt.block))
			if err != nil {
				t.Fatalf("Parse(%s) = %v", tt.block, err)
			}
			mem := state[*Task](t, m, "T").Memory
			if mem.Type != tt.typ {
				t.Errorf("Memory.Type = %q, want %q", mem.Type, tt.typ)
			}
			got := ""
			if mem.Read != nil {
				got = showRead(mem.Read)
			}
			if got != tt.read {
				t.Errorf("Memory.Read =\n%s\nwant\n%s", got, tt.read)
			}
			var writes []string
			for _, w := range mem.Write {
				writes = append(writes, showWrite(w))
			}
			if !reflect.DeepEqual(writes, tt.writes) {
				t.Errorf("Memory.Write =\n%s\nwant\n%s", strings.Join(writes, "\n"), strings.Join(tt.writes, "\n"))
			}
		})
	}
}

func TestMemoryFilterKinds(t *testing.T) {
	m, err := Parse(memoryTask(`{"Type": "episodic", "Read": {"Filter": {"n": 0, "p.$": "$.p", "o": {"k": true}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	f := state[*Task](t, m, "T").Memory.Read.Filter
	if len(f) != 3 {
		t.Fatalf("Filter = %+v, want 3 fields", f)
	}
	if f[0].Field != "n" || !f[0].HasValue || f[0].Expr != nil || fmt.Sprint(f[0].Value) != "0" {
		t.Errorf("Filter[0] = %+v, want n: 0 (a fixed value)", f[0])
	}
	if f[1].Field != "o" || !f[1].HasValue || !reflect.DeepEqual(f[1].Value, map[string]any{"k": true}) {
		t.Errorf("Filter[1] = %+v, want o: {k: true}", f[1])
	}
	if f[2].Field != "p" || f[2].HasValue || f[2].Expr == nil || f[2].Expr.String() != "$.p" {
		t.Errorf("Filter[2] = %+v, want p from $.p", f[2])
	}
}

func TestContextStrategiesAccepted(t *testing.T) {
	m := parseFile(t, "agent-memory-query.json")
	focus := state[*Task](t, m, "Focus").Context
	if focus.Strategy != "semantic" || focus.TopK != 2 || focus.MaxTokens != 4000 || focus.QueryExpr != nil || focus.Summarize != nil {
		t.Errorf("Focus.Context = %+v, want semantic, TopK 2, 4000 tokens, a fixed query", focus)
	}
	if q := focus.Query; len(q.Paths) != 1 || q.Paths[0].String() != "$.question" || q.Literals[0] != "what matters for " {
		t.Errorf("Focus.Context.Query = %+v, want one placeholder $.question", q)
	}
	var cands []string
	for _, c := range focus.Candidates {
		cands = append(cands, c.String())
	}
	if strings.Join(cands, " ") != "$.related $.history $.profile" {
		t.Errorf("Focus.Context.Candidates = %q", cands)
	}
	digest := state[*Task](t, m, "Digest").Context
	if s := digest.Summarize; digest.Strategy != "summarize" || s == nil || s.When != "Always" || s.Using != "Summarizer" || s.Ratio != 0.5 {
		t.Errorf("Digest.Context = %+v / %+v, want summarize, Always with Summarizer", digest, s)
	}
	if digest.TopK != 0 || digest.Candidates != nil || !digest.Query.IsZero() {
		t.Errorf("Digest.Context = %+v, want no semantic fields", digest)
	}

	m, err := Parse([]byte(`{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "End": true,
		"Context": {"Strategy": "semantic", "Query.$": "$.q", "Candidates": ["$.a"], "TopK": 100}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := state[*Task](t, m, "T").Context; c.QueryExpr == nil || c.QueryExpr.String() != "$.q" || c.TopK != 100 || !c.Query.IsZero() {
		t.Errorf("Context = %+v, want Query.$ $.q and TopK 100", c)
	}
}

func TestSemanticGuardrailsAccepted(t *testing.T) {
	m := parseFile(t, "agent-memory-query.json")
	g := state[*Task](t, m, "Focus").Guardrails
	if r := g.Input.Rules[0]; r.Type != "semantic" || r.Check != "is a question about the product" || r.Validator != "" || r.Action != "block" {
		t.Errorf("Guardrails.Input.Rules[0] = %+v, want semantic, the set's Validator, block", r)
	}
	if r := g.Output.Rules[0]; r.Check != "does not give medical advice" || r.Validator != "Doctor" || r.Action != "retry" {
		t.Errorf("Guardrails.Output.Rules[0] = %+v, want Doctor checking, retry", r)
	}
	if r := g.Output.Rules[1]; r.Validator != "Moderator" || r.Action != "flag" {
		t.Errorf("Guardrails.Output.Rules[1] = %+v, want Moderator, flag", r)
	}
	refs := m.AgentRefs()
	found := false
	for _, r := range refs {
		if r.Agent == "Doctor" {
			found = true
		}
	}
	if !found {
		t.Errorf("AgentRefs() = %+v, want the semantic rule's Validator Doctor", refs)
	}
}

func TestMemoryTypesRefused(t *testing.T) {
	const at = "/States/T/Memory"
	tests := []struct {
		name, block string
		want        []string
	}{
		{"semantic without query", `{"Type": "semantic", "Read": {"Collection": "c"}}`,
			[]string{at + `/Read: missing required field Query or Query.$`}},
		{"semantic array read", `{"Type": "semantic", "Read": ["k"]}`,
			[]string{at + `/Read: Read must be an object with Memory.Type "semantic" (the array of keys is for key-value memory only)`}},
		{"semantic merge", `{"Type": "semantic", "Write": {"Collection": "c", "Merge": true}}`,
			[]string{at + `/Write/Merge: Merge is only used with Memory.Type "key_value"`}},
		{"episodic key", `{"Type": "episodic", "Write": {"Key": "k"}}`,
			[]string{at + `/Write/Key: Key is only used with Memory.Type "key_value" or "semantic"`}},
		{"episodic query", `{"Type": "episodic", "Read": {"Query": "x"}}`,
			[]string{at + `/Read/Query: Query is only used with Memory.Type "semantic"`}},
		{"key-value filter", `{"Read": {"Keys": ["k"], "Filter": {"a": 1}, "Limit": 3}}`, []string{
			at + `/Read/Filter: Filter is only used with Memory.Type "episodic"`,
			at + `/Read/Limit: Limit is only used with Memory.Type "episodic"`}},
		{"key-value computed key", `{"Write": {"Key.$": "$.k", "Value": 1}}`,
			[]string{at + `/Write/Key.$: Key.$ is only used with Memory.Type "semantic"`, at + `/Write: missing required field Key`}},
		{"semantic key and key.$", `{"Type": "semantic", "Write": {"Collection": "c", "Key": "a", "Key.$": "$.k"}}`,
			[]string{at + `/Write/Key.$: Key and Key.$ cannot both be set`}},
		{"key-value text", `{"Write": {"Key": "k", "Text.$": "$.t"}}`,
			[]string{at + `/Write/Text.$: Text.$ is only used with Memory.Type "semantic"`}},
		{"misplaced", `{"Type": "semantic", "TopK": 3, "Read": {"Query": "q", "Collection": "c"}}`,
			[]string{at + `/TopK: TopK is not a field of Memory; it belongs in Memory.Read`}},
		{"filter both forms", `{"Type": "episodic", "Read": {"Filter": {"a": 1, "a.$": "$.a"}}}`,
			[]string{at + `/Read/Filter/a.$: Filter has both a and a.$; keep one`}},
		{"unknown type", `{"Type": "vector", "Read": {"Whatever": 1}}`,
			[]string{at + `/Type: Type must be "key_value", "semantic" or "episodic", not "vector"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(memoryTask(tt.block))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse(%s) = %v, want an ErrorList", tt.block, err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Pointer+": "+e.Msg)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Parse(%s) errors:\n%s\nwant:\n%s", tt.block, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// FuzzMemoryBlock checks that any text as a Task's Memory block either
// parses or is refused with problems under the Task, never panics, and
// that what parses keeps to the documented shapes and ranges.
func FuzzMemoryBlock(f *testing.F) {
	for _, seed := range []string{
		`{"Read": ["a"]}`, `{"Type": "semantic", "Read": {"Query.$": "$.q", "Collection": "c", "TopK": 3, "MinScore": 0.5}}`,
		`{"Type": "semantic", "Write": {"Collection": "c", "Text": "{{$.t}}"}}`, `{"Type": "episodic", "Read": {}, "Write": {}}`,
		`{"Type": "episodic", "Read": {"Filter": {"a": 1, "b.$": "$.b"}, "Limit": 5, "Order": "asc"}}`,
		`{"Type": "episodic", "Read": {"Filter": {"a": 1, "a.$": "$.b", ".$": 1}}}`, `{"Type": "semantic", "Read": []}`,
		`{"Type": "semantic", "Read": {"TopK": 1e400, "MinScore": -1e-400}}`, `{"Type": 3}`, `[]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, block string) {
		v, err := jsonvalue.Decode([]byte(block))
		if err != nil {
			return
		}
		m, err := ParseValue(map[string]any{"StartAt": "T", "States": map[string]any{
			"T": map[string]any{"Type": "Task", "Agent": "A", "Memory": v, "End": true}}})
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Parse(%q) error = %T %v, want a non-empty ErrorList", block, err, err)
			}
			for _, e := range list {
				if e.Msg == "" || !strings.HasPrefix(e.Pointer, "/States/T") {
					t.Fatalf("Parse(%q) problem %q at %q, want a message under /States/T", block, e.Msg, e.Pointer)
				}
			}
			return
		}
		mem := state[*Task](t, m, "T").Memory
		if r := mem.Read; r != nil {
			if r.InjectAt == nil {
				t.Fatalf("Parse(%q) Read.InjectAt = nil", block)
			}
			switch mem.Type {
			case "key_value":
				if len(r.Keys) == 0 {
					t.Errorf("Parse(%q) key-value Read without Keys", block)
				}
			case "semantic":
				if (r.QueryExpr == nil) == r.Query.IsZero() || r.Collection == "" || r.TopK < 1 || r.TopK > MaxTopK || r.MinScore < -1 || r.MinScore > 1 {
					t.Errorf("Parse(%q) semantic Read %s", block, showRead(r))
				}
			case "episodic":
				if r.Collection == "" || r.Limit < 1 || r.Limit > MaxMemoryLimit || (r.Order != "asc" && r.Order != "desc") {
					t.Errorf("Parse(%q) episodic Read %s", block, showRead(r))
				}
				for _, f := range r.Filter {
					if f.Field == "" || (f.Expr != nil) == f.HasValue {
						t.Errorf("Parse(%q) Filter entry %+v", block, f)
					}
				}
			default:
				t.Errorf("Parse(%q) Memory.Type = %q", block, mem.Type)
			}
		}
		for _, w := range mem.Write {
			if (mem.Type == "key_value") != (w.Collection == "") || (mem.Type == "key_value" && w.Key == "") || (mem.Type == "episodic" && w.Key != "") {
				t.Errorf("Parse(%q) %s write %s", block, mem.Type, showWrite(w))
			}
		}
	})
}

func ExampleMemoryRead() {
	m, err := Parse([]byte(`{
	  "StartAt": "Answer",
	  "States": {
	    "Answer": {
	      "Type": "Task",
	      "Agent": "Writer",
	      "Memory": {
	        "Type": "semantic",
	        "Read": {"Query.$": "$.question", "Collection": "notes", "MinScore": 0.7},
	        "Write": {"Collection": "notes", "Text.$": "$.answer"}
	      },
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	mem := m.States["Answer"].(*Task).Memory
	r := mem.Read
	fmt.Println(mem.Type, r.QueryExpr, r.Collection, r.TopK, r.MinScore, r.InjectAt)
	fmt.Println(mem.Write[0].Collection, mem.Write[0].TextExpr)
	// Output:
	// semantic $.question notes 5 0.7 $._memory
	// notes $.answer
}
