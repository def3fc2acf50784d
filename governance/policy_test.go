package governance

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func mustPolicy(t testing.TB, block string) *Policy {
	t.Helper()
	p, err := CompilePolicy(decode(t, block))
	if err != nil {
		t.Fatalf("CompilePolicy(%s): %v", block, err)
	}
	return p
}

type policyCase struct {
	name           string
	policy         string
	prev, proposed string
	state          string
	cause          string // "" when allowed
	detail         *Detail
}

func runPolicy(t *testing.T, tests []policyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.policy)
			prev, proposed := decode(t, tt.prev), decode(t, tt.proposed)
			state := tt.state
			if state == "" {
				state = "Agent"
			}
			v := p.Check(prev, proposed, state)
			// The same policy as the workflow's gives the same answer.
			r := mustCompile(t, `{"WritePolicy": `+tt.policy+`}`)
			rv := r.Check(prev, proposed, state)
			if (v == nil) != (rv == nil) || (v != nil && v.Cause != rv.Cause) {
				t.Errorf("Policy.Check = %v but Rules.Check = %v", v, rv)
			}
			if tt.cause == "" {
				if v != nil {
					t.Errorf("Check(%s, %s) = %v, want nil", tt.prev, tt.proposed, v)
				}
				return
			}
			if v == nil {
				t.Fatalf("Check(%s, %s) = nil, want %s", tt.prev, tt.proposed, tt.cause)
			}
			if v.Name != ErrWriteDenied || v.Cause != tt.cause {
				t.Errorf("Check(%s, %s) =\n%s: %s\nwant\n%s: %s", tt.prev, tt.proposed, v.Name, v.Cause, ErrWriteDenied, tt.cause)
			}
			if tt.detail != nil && !detailEqual(v.Detail, *tt.detail) {
				t.Errorf("Detail = %#v, want %#v", v.Detail, *tt.detail)
			}
		})
	}
}

func TestPolicyPatterns(t *testing.T) {
	const allow = `{"Allow": ["$.draft", "$.ticket.category", "$.tasks[*].done", "$.meta.*.note"]}`
	runPolicy(t, []policyCase{
		{name: "allowed path", policy: allow, prev: `{"draft": "a"}`, proposed: `{"draft": "b"}`},
		{name: "allowed by an ancestor", policy: allow, prev: `{"draft": {"text": "a"}}`, proposed: `{"draft": {"text": "b", "tone": "x"}}`},
		{name: "not allowed", policy: allow, prev: `{"draft": "a", "ticket": {"category": "x", "priority": 1}}`,
			proposed: `{"draft": "a", "ticket": {"category": "x", "priority": 2}}`,
			cause:    "write to $.ticket.priority denied: WritePolicy.Allow does not match it",
			detail: &Detail{Rule: "WritePolicy.Allow", Path: "$.ticket.priority", Old: json.Number("1"), New: json.Number("2"),
				Reason: "write to $.ticket.priority denied: WritePolicy.Allow does not match it"}},
		{name: "a parent is not covered by a child pattern", policy: allow, prev: `{"ticket": {"category": "x"}}`, proposed: `{"ticket": "closed"}`,
			cause: "write to $.ticket denied: WritePolicy.Allow does not match it"},
		{name: "removal is a write", policy: allow, prev: `{"other": 1}`, proposed: `{}`,
			cause: "write to $.other denied: WritePolicy.Allow does not match it"},
		{name: "[*] matches an index", policy: allow, prev: `{"tasks": [{"done": false}, {"done": false}]}`, proposed: `{"tasks": [{"done": false}, {"done": true}]}`},
		{name: "[*] does not match a key", policy: allow, prev: `{"tasks": {"a": {"done": false}}}`, proposed: `{"tasks": {"a": {"done": true}}}`,
			cause: "write to $.tasks.a.done denied: WritePolicy.Allow does not match it"},
		{name: "[*] matches one segment only", policy: allow, prev: `{"tasks": [{"label": "x"}]}`, proposed: `{"tasks": [{"label": "y"}]}`,
			cause: "write to $.tasks[0].label denied: WritePolicy.Allow does not match it"},
		{name: "* matches a key", policy: allow, prev: `{"meta": {"a": {"note": 1}}}`, proposed: `{"meta": {"a": {"note": 2}}}`},
		{name: "* does not match an index", policy: allow, prev: `{"meta": [{"note": 1}]}`, proposed: `{"meta": [{"note": 2}]}`,
			cause: "write to $.meta[0].note denied: WritePolicy.Allow does not match it"},
		{name: "an added task is written field by field", policy: allow, prev: `{"tasks": [{"done": false}]}`, proposed: `{"tasks": [{"done": false}, {"done": true}]}`},
		{name: "an added task with another field", policy: allow, prev: `{"tasks": []}`, proposed: `{"tasks": [{"done": true, "label": "x"}]}`,
			cause: "write to $.tasks[0].label denied: WritePolicy.Allow does not match it"},
		{name: "an added empty object is written at its own path", policy: `{"Allow": ["$.draft.text"]}`, prev: `{}`, proposed: `{"draft": {}}`,
			cause: "write to $.draft denied: WritePolicy.Allow does not match it"},
		{name: "an added object with only allowed values", policy: `{"Allow": ["$.draft.text"]}`, prev: `{}`, proposed: `{"draft": {"text": "x"}}`},
		{name: "a scalar replaced by an object", policy: `{"Allow": ["$.draft.text"]}`, prev: `{"draft": "none"}`, proposed: `{"draft": {"text": "x"}}`,
			cause: "write to $.draft denied: WritePolicy.Allow does not match it"},
		{name: "empty Allow allows nothing", policy: `{"Allow": []}`, prev: `{"a": 1}`, proposed: `{"a": 2}`,
			cause: "write to $.a denied: WritePolicy.Allow is empty, so nothing may be written"},
		{name: "empty Allow and no writes", policy: `{"Allow": []}`, prev: `{"a": 1}`, proposed: `{"a": 1.0}`},
		{name: "no Allow allows everything", policy: `{"Deny": ["$.x"]}`, prev: `{"a": 1}`, proposed: `{"a": 2, "b": [1]}`},
		{name: "an empty policy", policy: `{}`, prev: `{"a": 1}`, proposed: `[]`},
		{name: "the root", policy: `{"Allow": ["$.a"]}`, prev: `{"a": 1}`, proposed: `"text"`,
			cause: "write to $ denied: WritePolicy.Allow does not match it"},
		{name: "an array replaced by an object removes its items", policy: `{"Allow": ["$.a"]}`, prev: `[1]`, proposed: `{"a": 1}`,
			cause: "write to $[0] denied: WritePolicy.Allow does not match it"},
	})
}

func TestPolicyDeny(t *testing.T) {
	const policy = `{"Allow": ["$.payment"], "Deny": ["$.payment.confirmed", "$.payment.cards[*].number"]}`
	runPolicy(t, []policyCase{
		{name: "allowed next to a denied path", policy: policy, prev: `{"payment": {"amount": 1, "confirmed": false}}`, proposed: `{"payment": {"amount": 2, "confirmed": false}}`},
		{name: "Deny wins over Allow", policy: policy, prev: `{"payment": {"confirmed": false}}`, proposed: `{"payment": {"confirmed": true}}`,
			cause: `write to $.payment.confirmed denied by WritePolicy.Deny "$.payment.confirmed"`,
			detail: &Detail{Rule: "WritePolicy.Deny[0]", Path: "$.payment.confirmed", Old: false, New: true,
				Reason: `write to $.payment.confirmed denied by WritePolicy.Deny "$.payment.confirmed"`}},
		{name: "denied inside an added object", policy: policy, prev: `{}`, proposed: `{"payment": {"amount": 5, "confirmed": true}}`,
			cause: `write to $.payment.confirmed denied by WritePolicy.Deny "$.payment.confirmed"`,
			detail: &Detail{Rule: "WritePolicy.Deny[0]", Path: "$.payment.confirmed", New: true,
				Reason: `write to $.payment.confirmed denied by WritePolicy.Deny "$.payment.confirmed"`}},
		{name: "denied inside a removed object", policy: policy, prev: `{"payment": {"confirmed": false}}`, proposed: `{}`,
			cause: `write to $.payment.confirmed denied by WritePolicy.Deny "$.payment.confirmed"`},
		{name: "denied below a written path", policy: policy, prev: `{"payment": {"confirmed": {"by": "a"}}}`, proposed: `{"payment": {"confirmed": {"by": "b"}}}`,
			cause: `write to $.payment.confirmed.by denied by WritePolicy.Deny "$.payment.confirmed"`},
		{name: "deny with [*]", policy: policy, prev: `{"payment": {"cards": [{"number": "1"}]}}`, proposed: `{"payment": {"cards": [{"number": "1"}, {"number": "2"}]}}`,
			cause: `write to $.payment.cards[1].number denied by WritePolicy.Deny "$.payment.cards[*].number"`,
			detail: &Detail{Rule: "WritePolicy.Deny[1]", Path: "$.payment.cards[1].number", New: "2",
				Reason: `write to $.payment.cards[1].number denied by WritePolicy.Deny "$.payment.cards[*].number"`}},
		{name: "deny of a whole subtree", policy: `{"Deny": ["$.secret"]}`, prev: `{"secret": {"a": [1]}}`, proposed: `{"secret": {"a": [1, 2]}}`,
			cause: `write to $.secret.a[1] denied by WritePolicy.Deny "$.secret"`},
		{name: "first write by path", policy: `{"Deny": ["$.b", "$.a"]}`, prev: `{}`, proposed: `{"b": 1, "a": 1}`,
			cause: `write to $.a denied by WritePolicy.Deny "$.a"`},
		{name: "deny checked before allow on one path", policy: `{"Allow": [], "Deny": ["$.a"]}`, prev: `{}`, proposed: `{"a": 1}`,
			cause: `write to $.a denied by WritePolicy.Deny "$.a"`},
		{name: "a pattern written with brackets", policy: `{"Deny": ["$['odd key']"]}`, prev: `{}`, proposed: `{"odd key": 1}`,
			cause: `write to $['odd key'] denied by WritePolicy.Deny "$['odd key']"`},
	})
}

func TestPolicyRules(t *testing.T) {
	const amount = `{"Rules": [{"Deny": "path == '$.payment.amount' && value > 1000", "Reason": "payment.amount above 1000 requires approval"}]}`
	runPolicy(t, []policyCase{
		{name: "value under the limit", policy: amount, prev: `{"payment": {"amount": 10}}`, proposed: `{"payment": {"amount": 1000}}`},
		{name: "value over the limit", policy: amount, prev: `{"payment": {"amount": 10}}`, proposed: `{"payment": {"amount": 1000.5}}`,
			cause: "write to $.payment.amount denied: payment.amount above 1000 requires approval",
			detail: &Detail{Rule: "WritePolicy.Rules[0]", Path: "$.payment.amount", Old: json.Number("10"), New: json.Number("1000.5"),
				Reason: "write to $.payment.amount denied: payment.amount above 1000 requires approval"}},
		{name: "value inside an added object", policy: amount, prev: `{}`, proposed: `{"payment": {"amount": 5000, "currency": "EUR"}}`,
			cause: "write to $.payment.amount denied: payment.amount above 1000 requires approval"},
		{name: "value beyond float64", policy: amount, prev: `{}`, proposed: `{"payment": {"amount": 1e400}}`,
			cause: "write to $.payment.amount denied: payment.amount above 1000 requires approval"},
		{name: "big integer", policy: amount, prev: `{}`, proposed: `{"payment": {"amount": 123456789012345678901234567890}}`,
			cause: "write to $.payment.amount denied: payment.amount above 1000 requires approval"},
		{name: "numbers are plain Go numbers", policy: `{"Rules": [{"Deny": "value == 2 || value == 0.1"}]}`, prev: `{}`, proposed: `{"a": 2.0}`,
			cause: `write to $.a denied by WritePolicy.Rules[0] "value == 2 || value == 0.1"`},
		{name: "decimal fractions", policy: `{"Rules": [{"Deny": "value == 0.1"}]}`, prev: `{}`, proposed: `{"a": 1e-1}`,
			cause: `write to $.a denied by WritePolicy.Rules[0] "value == 0.1"`},
		{name: "op remove and null value", policy: `{"Rules": [{"Deny": "op == 'remove' && value == nil && path startsWith '$.notes'", "Reason": "notes are append-only"}]}`,
			prev: `{"notes": ["a", "b"]}`, proposed: `{"notes": ["a"]}`,
			cause: "write to $.notes[1] denied: notes are append-only"},
		{name: "op add", policy: `{"Rules": [{"Deny": "op == 'add' && old == nil"}]}`, prev: `{"a": 1}`, proposed: `{"a": 1, "b": 2}`,
			cause: `write to $.b denied by WritePolicy.Rules[0] "op == 'add' && old == nil"`},
		{name: "op replace and old", policy: `{"Rules": [{"Deny": "op == 'replace' && old == 'approved'", "Reason": "an approval stands"}]}`,
			prev: `{"a": "approved"}`, proposed: `{"a": "rejected"}`,
			cause: "write to $.a denied: an approval stands"},
		{name: "state, other state", policy: `{"Rules": [{"Deny": "state != 'Approver' && path startsWith '$.approval'"}]}`,
			prev: `{}`, proposed: `{"approval": "yes"}`, state: "Approver"},
		{name: "state", policy: `{"Rules": [{"Deny": "state != 'Approver' && path startsWith '$.approval'", "Reason": "only Approver approves"}]}`,
			prev: `{}`, proposed: `{"approval": "yes"}`, state: "Drafter",
			cause: "write to $.approval denied: only Approver approves"},
		{name: "doc", policy: `{"Rules": [{"Deny": "doc.status == 'locked' && path != '$.status'", "Reason": "the document is locked"}]}`,
			prev: `{"status": "open", "a": 1}`, proposed: `{"status": "locked", "a": 2}`,
			cause: "write to $.a denied: the document is locked"},
		{name: "prev", policy: `{"Rules": [{"Deny": "prev.frozen == true", "Reason": "frozen"}]}`,
			prev: `{"frozen": true, "n": [1]}`, proposed: `{"frozen": true, "n": [1, 2]}`,
			cause: "write to $.n[1] denied: frozen"},
		{name: "doc numbers are plain", policy: `{"Rules": [{"Deny": "doc.total > 10 && prev.total < 10"}]}`,
			prev: `{"total": 9.5}`, proposed: `{"total": 10.5}`,
			cause: `write to $.total denied by WritePolicy.Rules[0] "doc.total > 10 && prev.total < 10"`},
		{name: "containers are plain", policy: `{"Rules": [{"Deny": "path == '$.items' && len(value) > 2 || path == '$.obj' && value.n > 1"}]}`,
			prev: `{}`, proposed: `{"obj": {"n": 2}}`,
			cause: `write to $.obj denied by WritePolicy.Rules[0] "path == '$.items' && len(value) > 2 || path == '$.obj' && value.n > 1"`},
		{name: "a rule on a value inside a removed object", policy: `{"Rules": [{"Deny": "op == 'remove' && path == '$.a.b.c'"}]}`,
			prev: `{"a": {"b": {"c": 1}}}`, proposed: `{}`,
			cause: `write to $.a.b.c denied by WritePolicy.Rules[0] "op == 'remove' && path == '$.a.b.c'"`},
		{name: "a rule on a nested object being added", policy: `{"Rules": [{"Deny": "path == '$.a.b' && op == 'add' && value.c == 1"}]}`,
			prev: `{}`, proposed: `{"a": {"b": {"c": 1}}}`,
			cause: `write to $.a.b denied by WritePolicy.Rules[0] "path == '$.a.b' && op == 'add' && value.c == 1"`},
		{name: "the first rule that denies", policy: `{"Rules": [{"Deny": "false"}, {"Deny": "value > 1", "Reason": "second"}, {"Deny": "true", "Reason": "third"}]}`,
			prev: `{}`, proposed: `{"a": 2}`, cause: "write to $.a denied: second"},
		{name: "patterns before rules", policy: `{"Deny": ["$.a"], "Rules": [{"Deny": "true", "Reason": "rule"}]}`,
			prev: `{}`, proposed: `{"a": 2}`, cause: `write to $.a denied by WritePolicy.Deny "$.a"`},
		{name: "writes in path order", policy: `{"Rules": [{"Deny": "true", "Reason": "no"}]}`,
			prev: `{}`, proposed: `{"b": 1, "a": {"z": 1}}`, cause: "write to $.a denied: no"},
		{name: "builtins inside the document", policy: `{"Rules": [{"Deny": "path == '$.tags' && any(value, # == 'secret') || upper(string(value)) == 'X'"}]}`,
			prev: `{}`, proposed: `{"tags": ["a", "secret"]}`,
			cause: `write to $.tags denied by WritePolicy.Rules[0] "path == '$.tags' && any(value, # == 'secret') || upper(string(value)) == 'X'"`},
		{name: "no writes, no rules run", policy: `{"Rules": [{"Deny": "true"}]}`, prev: `{"a": [1, {"b": 2}]}`, proposed: `{"a": [1, {"b": 2.0}]}`},
	})
}

func TestPolicyRuleFailures(t *testing.T) {
	runPolicy(t, []policyCase{
		{name: "member of a string", policy: `{"Rules": [{"Deny": "value.x > 1"}]}`, prev: `{}`, proposed: `{"a": "text"}`,
			cause: "write to $.a denied: WritePolicy.Rules[0] failed, and a rule that fails denies: invalid operation: int(string) (at line 1, column 7)"},
		{name: "member of null", policy: `{"Rules": [{"Deny": "value.x.y > 1"}]}`, prev: `{}`, proposed: `{"a": {}}`,
			cause: "write to $.a denied: WritePolicy.Rules[0] failed, and a rule that fails denies: cannot fetch y from <nil> (at line 1, column 9)"},
		{name: "compare with null", policy: `{"Rules": [{"Deny": "path == '$.n' && value > 1"}]}`, prev: `{"n": 5}`, proposed: `{}`,
			cause: "write to $.n denied: WritePolicy.Rules[0] failed, and a rule that fails denies: invalid operation: <nil> > int (at line 1, column 24)"},
		{name: "conversion", policy: `{"Rules": [{"Deny": "int(value) > 1"}]}`, prev: `{}`, proposed: `{"a": "abc"}`,
			cause: `write to $.a denied: WritePolicy.Rules[0] failed, and a rule that fails denies: invalid operation: int(abc)`},
		{name: "not a boolean", policy: `{"Rules": [{"Deny": "value"}]}`, prev: `{}`, proposed: `{"a": "text"}`,
			cause: "write to $.a denied: WritePolicy.Rules[0] failed, and a rule that fails denies: invalid operation: bool(string)"},
		// expr's AsBool reads nil as false.
		{name: "null is false", policy: `{"Rules": [{"Deny": "value"}]}`, prev: `{"a": true}`, proposed: `{}`},
		{name: "a boolean value is fine", policy: `{"Rules": [{"Deny": "value"}]}`, prev: `{}`, proposed: `{"a": false}`},
	})
}

func TestPolicyInvalidJSON(t *testing.T) {
	p := mustPolicy(t, `{"Deny": ["$.x"]}`)
	prev := decode(t, `{"a": 1}`)
	v := p.Check(prev, map[string]any{"a": json.Number("1"), "b": math.NaN()}, "S")
	if v == nil || v.Name != ErrInvalidJSON || v.Cause != "$.b is NaN, which is not a JSON value" {
		t.Errorf("Check with a NaN = %v, want Governance.InvalidJSON at $.b", v)
	}
}

func TestNilPolicy(t *testing.T) {
	var p *Policy
	if v := p.Check(decode(t, `{"a": 1}`), decode(t, `{"a": 2}`), "S"); v != nil {
		t.Errorf("(*Policy)(nil).Check = %v, want nil", v)
	}
	if got := mustCompile(t, `{"Guard": {}}`).Policy(); got != nil {
		t.Errorf("Policy() without WritePolicy = %v, want nil", got)
	}
	var r *Rules
	if r.Policy() != nil || r.HasGuard() || r.OnViolation() != FailFast || r.Check(1, 2, "S") != nil {
		t.Errorf("a nil *Rules does not check nothing")
	}
}

// TestStatePolicyNarrows shows the engine's use: a state's own policy is
// checked with its Check after the workflow's, and both must allow.
func TestStatePolicyNarrows(t *testing.T) {
	r := mustCompile(t, `{"WritePolicy": {"Allow": ["$.draft", "$.ticket"]}}`)
	own := mustPolicy(t, `{"Allow": ["$.draft"]}`)
	prev := decode(t, `{"draft": "a", "ticket": "t"}`)
	for _, tt := range []struct {
		proposed string
		want     string
	}{
		{`{"draft": "b", "ticket": "t"}`, ""},
		{`{"draft": "a", "ticket": "u"}`, "write to $.ticket denied: WritePolicy.Allow does not match it"},
		{`{"draft": "a", "ticket": "t", "x": 1}`, "write to $.x denied: WritePolicy.Allow does not match it"},
	} {
		proposed := decode(t, tt.proposed)
		v := r.Check(prev, proposed, "S")
		if v == nil {
			v = own.Check(prev, proposed, "S")
		}
		got := ""
		if v != nil {
			got = v.Cause
		}
		if got != tt.want {
			t.Errorf("workflow then state policy on %s = %q, want %q", tt.proposed, got, tt.want)
		}
	}
}

func TestDetailJSON(t *testing.T) {
	d := Detail{Rule: "WritePolicy.Rules[0]", Path: "$.a", Old: json.Number("1"), New: nil, Reason: "r"}
	got := show(d.JSON())
	if want := `{"new":null,"old":1,"path":"$.a","reason":"r","rule":"WritePolicy.Rules[0]"}`; got != want {
		t.Errorf("Detail.JSON() = %s, want %s", got, want)
	}
	if !strings.HasPrefix(show(Detail{Reason: strings.Repeat("x", 200)}.JSON()), `{"new":null,"old":null,"path":"","reason":"xxx`) {
		t.Errorf("Detail.JSON() of an empty detail does not marshal")
	}
}
