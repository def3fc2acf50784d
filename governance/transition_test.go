package governance

import (
	"encoding/json"
	"testing"
)

// guardTransitions are the transition rules of the reference guard's
// examples.
const guardTransitions = `{
  "ImmutablePaths": ["$.agent_id"],
  "MonotonicIntegerPaths": ["$.step_count"],
  "OrderedEnumPaths": {"$.status": ["pending", "running", "completed"]},
  "KeyedObjectArrayPaths": {"$.tasks": {"Key": "id", "MonotonicBooleanFields": ["done"], "AllowNewItems": true}}
}`

const guardCurrent = `{"agent_id": "a1", "status": "pending", "step_count": 1, "tasks": [{"id": "task-1", "done": false}]}`

type transitionCase struct {
	name           string
	prev, proposed string
	cause          string // "" when the transition passes
	detail         *Detail
}

func runTransitions(t *testing.T, block string, tests []transitionCase) {
	t.Helper()
	r := mustCompile(t, block)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := r.Check(decode(t, tt.prev), decode(t, tt.proposed), "Agent")
			if tt.cause == "" {
				if v != nil {
					t.Errorf("Check(%s, %s) = %v, want nil", tt.prev, tt.proposed, v)
				}
				return
			}
			if v == nil {
				t.Fatalf("Check(%s, %s) = nil, want %s", tt.prev, tt.proposed, tt.cause)
			}
			if v.Name != ErrTransitionViolation || v.Cause != tt.cause {
				t.Errorf("Check(%s, %s) =\n%s: %s\nwant\n%s: %s", tt.prev, tt.proposed, v.Name, v.Cause, ErrTransitionViolation, tt.cause)
			}
			if v.Detail.Reason != v.Cause {
				t.Errorf("Detail.Reason = %s, want the cause %s", v.Detail.Reason, v.Cause)
			}
			if tt.detail != nil && !detailEqual(v.Detail, *tt.detail) {
				t.Errorf("Detail = %#v, want %#v", v.Detail, *tt.detail)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	runTransitions(t, `{"Guard": {"Schema": `+guardSchema+`, "Transitions": `+guardTransitions+`}}`, []transitionCase{
		{name: "the reference example", prev: guardCurrent,
			proposed: `{"agent_id": "a1", "status": "running", "step_count": 2, "tasks": [{"id": "task-1", "done": true}, {"id": "task-2", "done": false}]}`},
		{name: "unchanged", prev: guardCurrent, proposed: guardCurrent},
		{name: "immutable changed", prev: guardCurrent,
			proposed: `{"agent_id": "a2", "status": "pending", "step_count": 1, "tasks": [{"id": "task-1", "done": false}]}`,
			cause:    `$.agent_id changed from "a1" to "a2"`,
			detail:   &Detail{Rule: "Guard.Transitions.ImmutablePaths", Path: "$.agent_id", Old: "a1", New: "a2", Reason: `$.agent_id changed from "a1" to "a2"`}},
		{name: "monotonic decreased", prev: guardCurrent,
			proposed: `{"agent_id": "a1", "status": "pending", "step_count": 0, "tasks": [{"id": "task-1", "done": false}]}`,
			cause:    "$.step_count decreased from 1 to 0"},
		{name: "ordered enum backward", prev: `{"agent_id": "a1", "status": "running", "step_count": 1, "tasks": []}`,
			proposed: `{"agent_id": "a1", "status": "pending", "step_count": 1, "tasks": []}`,
			cause:    `$.status moved backward from "running" to "pending"`},
		{name: "rules run in order: immutable first", prev: guardCurrent,
			proposed: `{"agent_id": "zz", "status": "pending", "step_count": 0, "tasks": []}`,
			cause:    `$.agent_id changed from "a1" to "zz"`},
		{name: "monotonic before enum", prev: `{"agent_id": "a1", "status": "running", "step_count": 3, "tasks": []}`,
			proposed: `{"agent_id": "a1", "status": "pending", "step_count": 2, "tasks": []}`,
			cause:    "$.step_count decreased from 3 to 2"},
		{name: "enum before keyed arrays", prev: `{"agent_id": "a1", "status": "running", "step_count": 3, "tasks": [{"id": "x", "done": true}]}`,
			proposed: `{"agent_id": "a1", "status": "pending", "step_count": 3, "tasks": []}`,
			cause:    `$.status moved backward from "running" to "pending"`},
	})
}

func TestTransitionsSchemaFirst(t *testing.T) {
	r := mustCompile(t, `{"Guard": {"Schema": `+guardSchema+`, "Transitions": `+guardTransitions+`}}`)
	v := r.Check(decode(t, guardCurrent), decode(t, `{"agent_id": 5, "status": "pending", "step_count": 1, "tasks": []}`), "S")
	if v == nil || v.Name != ErrSchemaViolation || v.Cause != "$.agent_id must be a string" {
		t.Errorf("Check = %v, want the schema violation first", v)
	}
}

func TestImmutablePaths(t *testing.T) {
	runTransitions(t, `{"Guard": {"Transitions": {"ImmutablePaths": ["$.id", "$.meta.created[0]"]}}}`, []transitionCase{
		{name: "same", prev: `{"id": "a", "meta": {"created": [1, 2]}}`, proposed: `{"id": "a", "meta": {"created": [1, 3]}, "x": 1}`},
		{name: "numbers by value", prev: `{"id": 2, "meta": {"created": [1.0]}}`, proposed: `{"id": 2.0, "meta": {"created": [1]}}`},
		{name: "objects by value", prev: `{"id": {"a": [1, {"b": null}]}, "meta": {"created": [0]}}`, proposed: `{"id": {"a": [1, {"b": null}]}, "meta": {"created": [0]}}`},
		{name: "changed", prev: `{"id": "a", "meta": {"created": [1]}}`, proposed: `{"id": "b", "meta": {"created": [1]}}`,
			cause: `$.id changed from "a" to "b"`},
		{name: "changed type", prev: `{"id": "1", "meta": {"created": [1]}}`, proposed: `{"id": 1, "meta": {"created": [1]}}`,
			cause: `$.id changed from "1" to 1`},
		{name: "nested changed", prev: `{"id": "a", "meta": {"created": [1]}}`, proposed: `{"id": "a", "meta": {"created": [2]}}`,
			cause: "$.meta.created[0] changed from 1 to 2"},
		{name: "disappears", prev: `{"id": "a", "meta": {"created": [1]}}`, proposed: `{"meta": {"created": [1]}}`,
			cause:  "$.id is missing from the proposed document",
			detail: &Detail{Rule: "Guard.Transitions.ImmutablePaths", Path: "$.id", Old: "a", Reason: "$.id is missing from the proposed document"}},
		{name: "appears", prev: `{"meta": {"created": [1]}}`, proposed: `{"id": "a", "meta": {"created": [1]}}`,
			cause: "$.id is missing from the previous document"},
		{name: "missing from both", prev: `{"meta": {"created": [1]}}`, proposed: `{"meta": {"created": [1]}}`,
			cause: "$.id is missing from the previous document"},
		{name: "index out of range", prev: `{"id": "a", "meta": {"created": [1]}}`, proposed: `{"id": "a", "meta": {"created": []}}`,
			cause: "$.meta.created[0] is missing from the proposed document"},
		{name: "through a scalar", prev: `{"id": "a", "meta": {"created": [1]}}`, proposed: `{"id": "a", "meta": "none"}`,
			cause: "$.meta.created[0] is missing from the proposed document"},
		{name: "null is a value", prev: `{"id": null, "meta": {"created": [null]}}`, proposed: `{"id": null, "meta": {"created": [null]}}`},
		{name: "null to a value", prev: `{"id": null, "meta": {"created": [1]}}`, proposed: `{"id": "x", "meta": {"created": [1]}}`,
			cause: `$.id changed from null to "x"`},
	})
}

func TestMonotonicIntegerPaths(t *testing.T) {
	runTransitions(t, `{"Guard": {"Transitions": {"MonotonicIntegerPaths": ["$.n"]}}}`, []transitionCase{
		{name: "increase", prev: `{"n": 1}`, proposed: `{"n": 2}`},
		{name: "equal", prev: `{"n": 3}`, proposed: `{"n": 3}`},
		{name: "equal by value", prev: `{"n": 3}`, proposed: `{"n": 3.0}`},
		{name: "jump", prev: `{"n": -5}`, proposed: `{"n": 1e3}`},
		{name: "big integers", prev: `{"n": 12345678901234567890}`, proposed: `{"n": 12345678901234567891}`},
		{name: "decrease", prev: `{"n": 3}`, proposed: `{"n": 2}`, cause: "$.n decreased from 3 to 2",
			detail: &Detail{Rule: "Guard.Transitions.MonotonicIntegerPaths", Path: "$.n", Old: json.Number("3"), New: json.Number("2"), Reason: "$.n decreased from 3 to 2"}},
		{name: "decrease of big integers", prev: `{"n": 12345678901234567891}`, proposed: `{"n": 12345678901234567890}`,
			cause: "$.n decreased from 12345678901234567891 to 12345678901234567890"},
		{name: "negative", prev: `{"n": -1}`, proposed: `{"n": -2}`, cause: "$.n decreased from -1 to -2"},
		{name: "fraction proposed", prev: `{"n": 1}`, proposed: `{"n": 2.5}`, cause: "$.n in the proposed document must be an integer, not 2.5"},
		{name: "fraction before", prev: `{"n": 1.5}`, proposed: `{"n": 2}`, cause: "$.n in the previous document must be an integer, not 1.5"},
		{name: "string", prev: `{"n": 1}`, proposed: `{"n": "2"}`, cause: `$.n in the proposed document must be an integer, not "2"`},
		{name: "boolean", prev: `{"n": 1}`, proposed: `{"n": true}`, cause: "$.n in the proposed document must be an integer, not true"},
		{name: "null", prev: `{"n": null}`, proposed: `{"n": 1}`, cause: "$.n in the previous document must be an integer, not null"},
		{name: "missing", prev: `{"n": 1}`, proposed: `{}`, cause: "$.n is missing from the proposed document"},
	})
}

func TestOrderedEnumPaths(t *testing.T) {
	runTransitions(t, `{"Guard": {"Transitions": {"OrderedEnumPaths": {"$.s": ["pending", "running", "completed"], "$.level": [1, 2, 3]}}}}`, []transitionCase{
		{name: "stay", prev: `{"s": "running", "level": 1}`, proposed: `{"s": "running", "level": 1}`},
		{name: "forward", prev: `{"s": "pending", "level": 1}`, proposed: `{"s": "running", "level": 2}`},
		{name: "skip forward", prev: `{"s": "pending", "level": 1}`, proposed: `{"s": "completed", "level": 3}`},
		{name: "numbers by value", prev: `{"s": "pending", "level": 2}`, proposed: `{"s": "pending", "level": 2.0}`},
		{name: "backward", prev: `{"s": "completed", "level": 1}`, proposed: `{"s": "running", "level": 1}`,
			cause: `$.s moved backward from "completed" to "running"`,
			detail: &Detail{Rule: "Guard.Transitions.OrderedEnumPaths", Path: "$.s", Old: "completed", New: "running",
				Reason: `$.s moved backward from "completed" to "running"`}},
		{name: "paths in order: $.level before $.s", prev: `{"s": "completed", "level": 3}`, proposed: `{"s": "pending", "level": 1}`,
			cause: "$.level moved backward from 3 to 1"},
		{name: "not in the list", prev: `{"s": "pending", "level": 1}`, proposed: `{"s": "done", "level": 1}`,
			cause: `$.s in the proposed document is "done", not one of "pending", "running", "completed"`},
		{name: "previous not in the list", prev: `{"s": "draft", "level": 1}`, proposed: `{"s": "pending", "level": 1}`,
			cause: `$.s in the previous document is "draft", not one of "pending", "running", "completed"`},
		{name: "case matters", prev: `{"s": "pending", "level": 1}`, proposed: `{"s": "Running", "level": 1}`,
			cause: `$.s in the proposed document is "Running", not one of "pending", "running", "completed"`},
		{name: "missing", prev: `{"level": 1}`, proposed: `{"s": "pending", "level": 1}`,
			cause: "$.s is missing from the previous document"},
	})
}

func TestKeyedObjectArrayPaths(t *testing.T) {
	block := `{"Guard": {"Transitions": {"KeyedObjectArrayPaths": {"$.tasks": {"Key": "id", "MonotonicBooleanFields": ["done"]}}}}}`
	two := `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true}]}`
	runTransitions(t, block, []transitionCase{
		{name: "unchanged", prev: two, proposed: two},
		{name: "append (AllowNewItems defaults to true)", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true}, {"id": "task-3", "label": "new"}]}`},
		{name: "monotonic boolean false to true", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": true, "urgent": false}, {"id": "task-2", "done": true}]}`},
		{name: "boolean not listed changes both ways", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": true}, {"id": "task-2", "done": true, "urgent": false}]}`},
		{name: "boolean not listed disappears", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false}, {"id": "task-2", "done": true}]}`},
		{name: "monotonic boolean appears as false", prev: `{"tasks": [{"id": "a"}]}`, proposed: `{"tasks": [{"id": "a", "done": false}]}`},
		{name: "monotonic boolean false disappears", prev: `{"tasks": [{"id": "a", "done": false}]}`, proposed: `{"tasks": [{"id": "a"}]}`},
		{name: "from an empty array", prev: `{"tasks": []}`, proposed: `{"tasks": [{"id": "a"}]}`},
		{name: "number keys by value", prev: `{"tasks": [{"id": 1}]}`, proposed: `{"tasks": [{"id": 1.0}, {"id": 2}]}`},
		{name: "reorder", prev: two,
			proposed: `{"tasks": [{"id": "task-2", "done": true}, {"id": "task-1", "label": "old", "done": false, "urgent": false}]}`,
			cause:    `$.tasks[id="task-1"] moved from index 0 to 1 (existing items keep their order)`},
		{name: "delete", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}]}`,
			cause:    `$.tasks[id="task-2"] was removed (existing items stay)`},
		{name: "delete the first", prev: two, proposed: `{"tasks": [{"id": "task-2", "done": true}]}`,
			cause: `$.tasks[id="task-1"] was removed (existing items stay)`},
		{name: "insert before existing items", prev: two,
			proposed: `{"tasks": [{"id": "task-0"}, {"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true}]}`,
			cause:    `$.tasks[id="task-1"] moved from index 0 to 1 (existing items keep their order)`},
		{name: "duplicate key", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true}, {"id": "task-1"}]}`,
			cause:    `$.tasks[2] in the proposed document repeats the key id="task-1" of $.tasks[0]`},
		{name: "duplicate number key by value", prev: `{"tasks": []}`, proposed: `{"tasks": [{"id": 1}, {"id": 1.0}]}`,
			cause: `$.tasks[1] in the proposed document repeats the key id=1.0 of $.tasks[0]`},
		{name: "duplicate in the previous document", prev: `{"tasks": [{"id": "a"}, {"id": "a"}]}`, proposed: `{"tasks": [{"id": "a"}, {"id": "a"}, {"id": "b"}]}`,
			cause: `$.tasks[1] in the previous document repeats the key id="a" of $.tasks[0]`},
		{name: "item not an object", prev: two, proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true}, "task-3"]}`,
			cause: `$.tasks[2] in the proposed document must be an object, not string`},
		{name: "missing key", prev: two, proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true}, {"label": "x"}]}`,
			cause: `$.tasks[2] in the proposed document has no key "id"`},
		{name: "key not a string or number", prev: `{"tasks": []}`, proposed: `{"tasks": [{"id": ["a"]}]}`,
			cause: `$.tasks[0] in the proposed document has the key id=["a"], which must be a string or a number`},
		{name: "not an array", prev: two, proposed: `{"tasks": {"task-1": {}}}`,
			cause: `$.tasks in the proposed document must be an array, not object`},
		{name: "missing", prev: two, proposed: `{}`, cause: `$.tasks is missing from the proposed document`},
		{name: "non-boolean field changed", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "new", "done": false, "urgent": false}, {"id": "task-2", "done": true}]}`,
			cause:    `$.tasks[id="task-1"].label changed from "old" to "new"`,
			detail: &Detail{Rule: "Guard.Transitions.KeyedObjectArrayPaths", Path: `$.tasks[id="task-1"].label`, Old: "old", New: "new",
				Reason: `$.tasks[id="task-1"].label changed from "old" to "new"`}},
		{name: "non-boolean field added", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": true, "note": "x"}]}`,
			cause:    `$.tasks[id="task-2"].note was added with "x" (fields of existing items do not change)`},
		{name: "non-boolean field removed", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "done": false, "urgent": false}, {"id": "task-2", "done": true}]}`,
			cause:    `$.tasks[id="task-1"].label was removed (it was "old"; fields of existing items do not change)`},
		{name: "boolean field becomes a string", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": "yes"}, {"id": "task-2", "done": true}]}`,
			cause:    `$.tasks[id="task-1"].urgent changed from false to "yes"`},
		{name: "monotonic boolean true to false", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2", "done": false}]}`,
			cause:    `$.tasks[id="task-2"].done went back from true to false`},
		{name: "monotonic boolean true to absent", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": false, "urgent": false}, {"id": "task-2"}]}`,
			cause:    `$.tasks[id="task-2"].done went back from true to absent`},
		{name: "monotonic boolean not a boolean", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "old", "done": "yes", "urgent": false}, {"id": "task-2", "done": true}]}`,
			cause:    `$.tasks[id="task-1"].done in the proposed document must be a boolean, not "yes"`},
		{name: "first failing field by name", prev: two,
			proposed: `{"tasks": [{"id": "task-1", "label": "x", "done": false, "urgent": false, "a": 1}, {"id": "task-2", "done": true}]}`,
			cause:    `$.tasks[id="task-1"].a was added with 1 (fields of existing items do not change)`},
	})
	runTransitions(t, `{"Guard": {"Transitions": {"KeyedObjectArrayPaths": {"$.items": {"Key": "sku", "AllowNewItems": false}}}}}`, []transitionCase{
		{name: "no new items: same items", prev: `{"items": [{"sku": "a", "n": 1}]}`, proposed: `{"items": [{"sku": "a", "n": 1}]}`},
		{name: "no new items: append", prev: `{"items": [{"sku": "a", "n": 1}]}`, proposed: `{"items": [{"sku": "a", "n": 1}, {"sku": "b"}]}`,
			cause: `$.items[sku="b"] was added, but $.items allows no new items (AllowNewItems is false)`},
		{name: "booleans not listed may change", prev: `{"items": [{"sku": "a", "ok": true}]}`, proposed: `{"items": [{"sku": "a", "ok": false}]}`},
	})
	runTransitions(t, `{"Guard": {"Transitions": {"KeyedObjectArrayPaths": {"$.list": {"Key": "item id"}}}}}`, []transitionCase{
		{name: "odd key and field names", prev: `{"list": [{"item id": 7, "a b": 1}]}`, proposed: `{"list": [{"item id": 7, "a b": 2}]}`,
			cause: `$.list["item id"=7]['a b'] changed from 1 to 2`},
	})
}

// TestKeyedManyItems exercises the map used for long arrays.
func TestKeyedManyItems(t *testing.T) {
	block := `{"Guard": {"Transitions": {"KeyedObjectArrayPaths": {"$.t": {"Key": "id"}}}}}`
	items := func(ids ...string) string {
		s := `{"t": [`
		for i, id := range ids {
			if i > 0 {
				s += ","
			}
			s += `{"id": ` + id + `}`
		}
		return s + `]}`
	}
	var many []string
	for i := range 40 {
		many = append(many, `"k`+string(rune('a'+i%26))+string(rune('a'+i/26))+`"`)
	}
	withDup := append(append([]string(nil), many...), many[7])
	numbers := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "2.0"}
	runTransitions(t, block, []transitionCase{
		{name: "append to a long array", prev: items(many...), proposed: items(append(append([]string(nil), many...), `"new"`)...)},
		{name: "duplicate in a long array", prev: items(many...), proposed: items(withDup...),
			cause: `$.t[40] in the proposed document repeats the key id="kha" of $.t[7]`},
		{name: "duplicate number in a long array", prev: `{"t": []}`, proposed: items(numbers...),
			cause: `$.t[17] in the proposed document repeats the key id=2.0 of $.t[1]`},
		{name: "strings and numbers are different keys", prev: `{"t": []}`, proposed: items(append(append([]string(nil), numbers[:17]...), `"1"`)...)},
	})
}

func TestNoTransitionRules(t *testing.T) {
	for _, block := range []string{`{}`, `{"Guard": {}}`, `{"Guard": {"Transitions": {}}}`,
		`{"Guard": {"Transitions": {"ImmutablePaths": [], "MonotonicIntegerPaths": [], "OrderedEnumPaths": {}, "KeyedObjectArrayPaths": {}}}}`} {
		r := mustCompile(t, block)
		if r.HasGuard() {
			t.Errorf("Compile(%s).HasGuard() = true, want false", block)
		}
		if v := r.Check(decode(t, `{"a": 1}`), decode(t, `{"b": [2]}`), "S"); v != nil {
			t.Errorf("Compile(%s).Check = %v, want nil", block, v)
		}
	}
}
