package jsonpath

import (
	"errors"
	"strings"
	"testing"
)

// boundedEnv is an Env that sets the bounds of the evaluations it is
// given to.
type boundedEnv struct {
	noEnv
	b Bounds
}

func (e boundedEnv) Bounds() Bounds { return e.b }

// chain returns an array nested depth levels deep, each level holding the
// next level and two numbers: deep scans that follow deep scans visit it
// a number of times that grows as a power of depth.
func chain(depth int) any {
	var v any = "leaf"
	for range depth {
		v = []any{v, 1, 2}
	}
	return map[string]any{"a": v}
}

// repeated returns "[0,0,…,0]" with n zeros.
func repeated(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
}

// TestPathBudgetRefusesBombs: paths whose work grows as a power of the
// input's depth or of the expression's length fail with a *PathError
// naming the limit, instead of running for hours. (The bound is lowered to
// keep the test short; the default's figure is tested with Bounds.)
func TestPathBudgetRefusesBombs(t *testing.T) {
	nested := any("x")
	for range 10 {
		nested = []any{nested}
	}
	tests := []struct {
		name string
		path string
		doc  any
	}{
		// 60 levels: each ".." multiplies the visits by up to 60*3.
		{"deep scans after deep scans", "$..*..*..*..*..*..*", chain(60)},
		// Ten unions of ten: 10^10 matches of one value.
		{"unions repeating an index", "$" + strings.Repeat(repeated(10), 10), nested},
		// A filter whose own path scans the whole document for each element.
		{"filter scanning from the root", "$..[?($..*..*..*..*)]", chain(60)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(tc.path)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.path, err)
			}
			env := boundedEnv{b: Bounds{PathSteps: 100_000}}
			v, err := p.Get(tc.doc, env)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("Get(%q) = %d matches, %v; want a *LimitError", tc.path, lenOf(v), err)
			}
			if le.Steps != 100_000 || !strings.Contains(le.Error(), "100000 values") {
				t.Errorf("Get(%q) error %q does not name the limit", tc.path, le.Error())
			}
		})
	}
}

func lenOf(v any) int {
	l, _ := v.([]any)
	return len(l)
}

// TestPathBudgetIsExact: a path that visits n values passes with a budget
// of n and fails with n-1, its filters' own walks counted in.
func TestPathBudgetIsExact(t *testing.T) {
	doc := decode(t, `{"items": [{"a": {"x": 1}}, {"a": {"y": 2}}, {"a": {"x": 3}}]}`)
	tests := []struct {
		path  string
		steps int // the visits the path takes
		want  string
	}{
		// One step through the name, one through the wildcard, three
		// matches.
		{"$.items[*]", 5, `[{"a":{"x":1}},{"a":{"y":2}},{"a":{"x":3}}]`},
		// The filter: a step through the name and one through the filter,
		// three elements tested, each filter's path "@..x" scanning its
		// element (7 steps for an element with an x: itself, two
		// descendants, a step through the name from each, a match; 6 for
		// the other), two matches.
		{"$.items[?(@..x)]", 27, `[{"a":{"x":1}},{"a":{"x":3}}]`},
	}
	for _, tc := range tests {
		p, err := Compile(tc.path)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.path, err)
		}
		got, err := p.Get(doc, boundedEnv{b: Bounds{PathSteps: tc.steps}})
		if err != nil {
			t.Errorf("Get(%q) with %d steps: %v", tc.path, tc.steps, err)
		} else if compact(t, got) != tc.want {
			t.Errorf("Get(%q) = %s, want %s", tc.path, compact(t, got), tc.want)
		}
		_, err = p.Get(doc, boundedEnv{b: Bounds{PathSteps: tc.steps - 1}})
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("Get(%q) with %d steps: %v, want a *LimitError", tc.path, tc.steps-1, err)
		}
	}
}

// TestIntrinsicBudgetRefusesBombs: intrinsic calls nested ten deep, or
// with many arguments, that would build gigabytes from a 1 MiB input fail
// with an *IntrinsicError naming the limit before they build it.
func TestIntrinsicBudgetRefusesBombs(t *testing.T) {
	doc := map[string]any{"s": strings.Repeat("x", 1<<20), "a": make([]any, 1<<16)}
	doubling := "$.s"
	for range 10 {
		doubling = "States.Format('{}{}', " + doubling + ", " + doubling + ")"
	}
	many := func(fn, arg string) string {
		return fn + "(" + strings.TrimSuffix(strings.Repeat(arg+", ", 200), ", ") + ")"
	}
	tests := []struct {
		name, src string
	}{
		{"Format doubling ten deep", doubling},
		{"Format of many copies", "States.Format('" + strings.Repeat("{}", 200) + "', " + strings.TrimPrefix(many("", "$.s"), "(")},
		{"JsonToString of an array of copies", "States.JsonToString(" + many("States.Array", "$.s") + ")"},
		{"ArrayConcat of many copies", many("States.ArrayConcat", "$.a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := CompileExpr(tc.src)
			if err != nil {
				t.Fatalf("CompileExpr: %v", err)
			}
			v, err := e.Eval(doc, nil)
			var ie *IntrinsicError
			if !errors.As(err, &ie) {
				t.Fatalf("Eval = a %T, %v; want an *IntrinsicError", v, err)
			}
			if !strings.Contains(ie.Msg, "67108864") {
				t.Errorf("Eval error %q does not name the limit", ie.Msg)
			}
		})
	}
}

// TestIntrinsicBudgetIsSet: an Env's bounds replace the default; what
// fits passes unchanged.
func TestIntrinsicBudgetIsSet(t *testing.T) {
	doc := map[string]any{"s": "abcd"}
	e, err := CompileExpr("States.Format('{}-{}', $.s, States.Format('{}', $.s))")
	if err != nil {
		t.Fatal(err)
	}
	// The inner call builds 4 bytes, the outer 1 + 4 + 4.
	got, err := e.Eval(doc, boundedEnv{b: Bounds{IntrinsicBytes: 13}})
	if err != nil || got != "abcd-abcd" {
		t.Fatalf("Eval with 13 bytes = %v, %v; want abcd-abcd", got, err)
	}
	var ie *IntrinsicError
	if _, err := e.Eval(doc, boundedEnv{b: Bounds{IntrinsicBytes: 12}}); !errors.As(err, &ie) || !strings.Contains(ie.Msg, "12 bytes") {
		t.Fatalf("Eval with 12 bytes: %v; want an *IntrinsicError naming 12 bytes", err)
	}
}

// TestDefaultBounds: an Env that sets no bounds, or sets a zero, gets the
// documented defaults.
func TestDefaultBounds(t *testing.T) {
	want := Bounds{PathSteps: 10_000_000, IntrinsicBytes: 64 << 20}
	for _, env := range []Env{nil, noEnv{}, boundedEnv{}, boundedEnv{b: Bounds{PathSteps: 0, IntrinsicBytes: -1}}} {
		if got := boundsOf(env); got != want {
			t.Errorf("boundsOf(%#v) = %+v, want %+v", env, got, want)
		}
	}
	if got := boundsOf(boundedEnv{b: Bounds{PathSteps: 5}}); got.PathSteps != 5 || got.IntrinsicBytes != want.IntrinsicBytes {
		t.Errorf("boundsOf(PathSteps 5) = %+v", got)
	}
}
