package governance

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/expr-lang/expr/builtin"
)

// TestRuleRefused checks that a rule whose cost the budget could not bound
// is refused at compile time, with the JSON Pointer of its Deny.
func TestRuleRefused(t *testing.T) {
	tests := []struct {
		name string
		rule string
	}{
		{"repeat", `len(repeat('x', 10000000)) > 0`},
		{"repeat in a closure", `any(value, len(repeat(#, 1000)) > 5)`},
		{"large range", `len(1..100000000) > 0`},
		{"range just too large", `len(0..1000) > 0`},
		{"negative range too large", `len(-1001..-1) > 0`},
		{"overflowing range", `len(-9223372036854775807..9223372036854775807) > 0`},
		{"range to a variable", `any(1..len(value), # > 3)`},
		{"range from a value", `len(value..10) > 0`},
		{"range of floats", `len(1.0..3) > 0`},
		{"closures four deep", `any(value, any(#, any(#, any(#, # == 1))))`},
		{"closures four deep in reduce", `reduce(1..2, map(1..2, filter(1..2, all(1..2, # > 0))), 0) == 1`},
		{"a pattern that is not constant", `value matches old`},
		{"the meter by name", `MeterAdd('a', 'b') == 'ab'`},
		{"the meter through $env", `$env.MeterIter(value, 0) == nil`},
		{"too many nodes", `value == 1` + strings.Repeat(` || value == 1`, 400)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := map[string]any{"Rules": []any{map[string]any{"Deny": "false"}, map[string]any{"Deny": tt.rule}}}
			p, err := CompilePolicy(block)
			var problems Problems
			if !errors.As(err, &problems) {
				t.Fatalf("CompilePolicy(%s) = %v, %v; want Problems", tt.rule, p, err)
			}
			if len(problems) != 1 || problems[0].Pointer != "/Rules/1/Deny" {
				t.Errorf("CompilePolicy(%s) problems = %v, want one at /Rules/1/Deny", tt.rule, problems)
			}
		})
	}
}

// TestRuleBudget checks that rules that compile but would run long or
// build large values stop with a BudgetError.
func TestRuleBudget(t *testing.T) {
	tests := []struct {
		name     string
		rule     string
		proposed string
	}{
		{"string doubling in reduce", `len(reduce(1..60, #acc + #acc, "x")) < 0`, `{"a": 1}`},
		{"quadratic string reduce", `len(reduce(1..1000, #acc + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "")) < 0`, `{"a": 1}`},
		{"string doubling with let", "let a = value + value; let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; let h = g + g; let i = h + h; let j = i + i; let k = j + j; len(k + k) < 0",
			`{"a": "` + strings.Repeat("x", 1000) + `"}`},
		{"array doubling in reduce", `len(toJSON(reduce(1..60, [#acc, #acc], 1))) < 0`, `{"a": 1}`},
		{"concat doubling", `len(reduce(1..60, concat(#acc, #acc), [1])) < 0`, `{"a": 1}`},
		{"JSON escaping", `len(reduce(1..60, toJSON(#acc), "\"")) < 0`, `{"a": 1}`},
		{"base64 growth", `len(reduce(1..100, toBase64(#acc), "xyz")) < 0`, `{"a": 1}`},
		{"replace growth", `len(reduce(1..60, replace(#acc, "x", "xx"), "x")) < 0`, `{"a": 1}`},
		{"replace with the empty string", `len(replace(value, "", value)) < 0`, `{"a": "` + strings.Repeat("x", 2000) + `"}`},
		{"join with a long glue", `len(join(map(1..999, "x"), value)) < 0`, `{"a": "` + strings.Repeat("x", 2000) + `"}`},
		{"nested ranges", `any(1..999, any(1..999, any(1..999, # < 0)))`, `{"a": 1}`},
		{"map over map", `len(map(1..999, map(1..999, #))) < 0`, `{"a": 1}`},
		{"filter over ranges", `count(filter(1..999, any(1..999, filter(1..999, # > 0) == nil))) < 0`, `{"a": 1}`},
		{"a large document string scanned in a loop", `any(1..999, any(1..999, value contains "zz"))`, `{"a": "` + strings.Repeat("x", 10000) + `"}`},
		{"a large document array scanned in a loop", `any(1..999, any(1..999, 5 in value))`, `{"a": [` + strings.Repeat("1,", 5000) + `1]}`},
		{"regex on a large input", `any(1..999, value matches "(a|b|c|d|e|f|g)*z$")`, `{"a": "` + strings.Repeat("a", 20000) + `"}`},
		{"upper of a large value in a loop", `any(1..999, upper(value) == "")`, `{"a": "` + strings.Repeat("a", 20000) + `"}`},
		{"deep nesting of arrays", `len(toJSON(reduce(1..999, [[[[[[[[[[#acc]]]]]]]]]], 1))) < 0`, `{"a": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, `{"Rules": [{"Deny": `+quote(tt.rule)+`}]}`)
			v := p.Check(decode(t, `{}`), decode(t, tt.proposed), "S")
			if v == nil {
				t.Fatalf("Check = nil, want a budget violation")
			}
			var be *BudgetError
			if !errors.As(v, &be) {
				t.Fatalf("Check = %v, want a BudgetError", v)
			}
			if v.Name != ErrWriteDenied || be.Rule != "WritePolicy.Rules[0]" || be.Path != "$.a" || be.Budget != RuleBudget {
				t.Errorf("Check = %s %+v, want %s and a BudgetError for WritePolicy.Rules[0] on $.a over RuleBudget", v.Name, be, ErrWriteDenied)
			}
			if v.Detail.Rule != be.Rule || v.Detail.Path != "$.a" {
				t.Errorf("Detail = %+v, want rule %s at $.a", v.Detail, be.Rule)
			}
		})
	}
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestBuiltinsKnown checks that the budget knows the cost of every expr
// builtin that rules may call, so that a newer expr's builtins are not let
// through unmetered by mistake.
func TestBuiltinsKnown(t *testing.T) {
	for _, f := range builtin.Builtins {
		refused := f.Name == "repeat" || slices.Contains(outsideBuiltins[:], f.Name)
		if knownBuiltin(f.Name) == refused {
			t.Errorf("builtin %s: known %v, refused %v; want exactly one", f.Name, knownBuiltin(f.Name), refused)
		}
	}
}

// TestRuleMetered checks that metered rules still mean what they say: the
// operations the meter wraps return what expr's own do.
func TestRuleMetered(t *testing.T) {
	tests := []struct {
		rule     string
		proposed string
		denied   bool
	}{
		{`any(value, # == 'secret')`, `{"a": ["x", "secret"]}`, true},
		{`any(value, # == 'secret')`, `{"a": ["x", "y"]}`, false},
		{`all(value, #.done) && len(filter(value, #.owner == 'me')) == 1`, `{"a": [{"done": true, "owner": "me"}, {"done": true}]}`, true},
		{`sum(map(value, #.n)) > 10`, `{"a": [{"n": 4}, {"n": 7}]}`, true},
		{`reduce(value, #acc + #, 0) == 6`, `{"a": [1, 2, 3]}`, true},
		{`reduce(value, #acc + #, '') == 'xyz'`, `{"a": ["x", "y", "z"]}`, true},
		{`value + 1 == 3 && value + 0.5 == 2.5`, `{"a": 2}`, true},
		{`value + '!' == 'hi!'`, `{"a": "hi"}`, true},
		{`join(value, '-') == 'a-b' && join(value) == 'ab'`, `{"a": ["a", "b"]}`, true},
		{`replace(value, 'a', 'bb') == 'bbcbb' && replace(value, 'a', '', 1) == 'ca'`, `{"a": "aca"}`, true},
		{`any(value, # in 1..3) && any(value, # in [7, 8])`, `{"a": [9, 2, 8]}`, true},
		{`path == '$.a' && any(value, # in ['x'])`, `{"a": ["y", "z"]}`, false},
		{`count(value, # matches '^[a-z]+$') == 2`, `{"a": ["ab", "c", "D"]}`, true},
		{`fromJSON(toJSON([value, {k: value}]))[1].k == 'v'`, `{"a": "v"}`, true},
		{`any(1..3, any(1..3, any(1..3, # == 3)))`, `{"a": 1}`, true},
		{`groupBy(value, # % 2)[1][0] == 3 && sortBy(value, -#)[0] == 4`, `{"a": [3, 4]}`, true},
		{`let big = value + value; len(big) == 4 && upper(big) == 'ABAB'`, `{"a": "ab"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			p := mustPolicy(t, `{"Rules": [{"Deny": `+quote(tt.rule)+`}]}`)
			v := p.Check(decode(t, `{}`), decode(t, tt.proposed), "S")
			if v != nil && v.Detail.Reason != `write to $.a denied by WritePolicy.Rules[0] `+strconv.Quote(tt.rule) {
				t.Fatalf("Check(%s) = %v, want the rule's own answer", tt.proposed, v)
			}
			if got := v != nil; got != tt.denied {
				t.Errorf("Check(%s) denied = %v, want %v", tt.proposed, got, tt.denied)
			}
		})
	}
}

// TestCheckBudget checks that the evaluations of one Check share
// CheckBudget: a rule well within RuleBudget on each of many writes
// stops when they have spent it together.
func TestCheckBudget(t *testing.T) {
	p := mustPolicy(t, `{"Rules": [{"Deny": "len(toJSON(doc)) < 0"}]}`)
	doc := map[string]any{}
	for i := range 400 {
		doc[strconv.Itoa(i)] = strings.Repeat("x", 200)
	}
	v := p.Check(map[string]any{}, doc, "S")
	var be *BudgetError
	if !errors.As(v, &be) || be.Budget != CheckBudget || be.Rule != "WritePolicy.Rules[0]" {
		t.Fatalf("Check = %v (%+v), want a BudgetError over CheckBudget", v, be)
	}
	// One write alone is within the budgets.
	if v := p.Check(map[string]any{}, map[string]any{"0": doc["0"]}, "S"); v != nil {
		t.Errorf("Check of one write = %v, want nil", v)
	}
}
