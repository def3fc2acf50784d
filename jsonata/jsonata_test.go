package jsonata

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

func TestFormatNumber(t *testing.T) {
	tenth := 0.1
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {7, "7"}, {-7, "-7"}, {0.1, "0.1"}, {tenth + 0.2, "0.30000000000000004"},
		{1.0 / 3, "0.3333333333333333"}, {123.456, "123.456"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"},
		{1.5e21, "1.5e+21"}, {1e-6, "0.000001"}, {1e-7, "1e-7"}, {-2.5e-8, "-2.5e-8"}, {12345678901234567890, "12345678901234567000"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {5e-324, "5e-324"},
	} {
		if got := FormatNumber(tc.in); got != tc.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestConversion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":null,"b":[1,true,"s",{"c":null}]}`, `{"a":null,"b":[1,true,"s",{"c":null}]}`},
		{`0.1`, `0.1`},
		{`1.0`, `1`},
		{`12345678901234567890`, `12345678901234567000`},
		{`1e400`, ``}, // past the double range: not a JSON result
	} {
		got, err := fromJSONata(toJSONata(decode(t, tc.in)))
		if tc.want == "" {
			if !errors.Is(err, errUnsupported) {
				t.Errorf("round trip of %s = %v, %v; want errUnsupported", tc.in, got, err)
			}
			continue
		}
		if err != nil || !jsonvalue.Equal(got, decode(t, tc.want)) {
			t.Errorf("round trip of %s = %v, %v; want %s", tc.in, got, err, tc.want)
		}
		if n, ok := got.(json.Number); ok && string(n) != tc.want {
			t.Errorf("round trip of %s spells %q, want %q", tc.in, n, tc.want)
		}
	}
	// Shapes the library's functions return.
	for _, tc := range []struct {
		in   any
		want string
	}{
		{[]string{"a", "b"}, `["a","b"]`}, {3, `3`}, {map[string]string{"k": "v"}, `{"k":"v"}`}, {(*any)(nil), `null`},
	} {
		got, err := fromJSONata(tc.in)
		if err != nil || !jsonvalue.Equal(got, decode(t, tc.want)) {
			t.Errorf("fromJSONata(%#v) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := fromJSONata(math.NaN()); !errors.Is(err, errUnsupported) {
		t.Errorf("fromJSONata(NaN) error = %v, want errUnsupported", err)
	}
}

func TestIsExpression(t *testing.T) {
	for s, want := range map[string]bool{
		"{% 1 %}": true, "{%1%}": true, "{%%}": true, " {% 1 %}": false, "{% 1 %} ": false, "{% 1": false, "$.a": false, "{%": false, "%}": false,
	} {
		if got := IsExpression(s); got != want {
			t.Errorf("IsExpression(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCompileTemplateProblems(t *testing.T) {
	_, err := CompileTemplate(decode(t, `{"b":{"x":"{% ( %}"},"a":["ok","{% %}","{% $x %}"],"c":" {% ( %} "}`), "Output")
	var problems Problems
	if !errors.As(err, &problems) {
		t.Fatalf("CompileTemplate error = %v, want Problems", err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Pointer+" "+p.Msg)
	}
	want := []string{
		"/a/1 The value for the field 'Output/a/1' must be a valid JSONata expression: the expression is empty",
		"/b/x The value for the field 'Output/b/x' must be a valid JSONata expression: unexpected end of expression",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCompileRefuses(t *testing.T) {
	// A quote inside a name is part of it, to the lexer: what follows is
	// not a string ('function()<a"!é' looped for ever in the lexer).
	for _, src := range []string{"", "  ", "$a ~ $b", "~é", "!é", "1 ! 2", "(", "'open", "$f(", "~a", `function()<a"!é`, `x'y"~é`} {
		if e, err := Compile(src); err == nil {
			t.Errorf("Compile(%q) = %v, nil; want an error", src, e)
		}
	}
	for _, src := range []string{"$a ~> $b", "1 != 2", `"~é" & '!é'`, "/* ~é */ 1", "`a~b`", "1 /* a */ + /* b */ 2", `"/* kept */"`} {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%q): %v", src, err)
		}
	}
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		src             string
		refs            string
		context, chance bool
	}{
		{"$states.input.a + $x", "states,x", false, false},
		{"$states.result", "states", false, false},
		{"$states.context.Execution.Id", "states", true, true},
		{"$string($states)", "string,states", true, true},
		{"$states.inputs", "states", true, true},
		{`"$notvar" & '$no' & $yes`, "yes", false, false},
		{"/* $no */ $now()", "now", false, true},
		{"$uuid()", "uuid", false, true},
		{"$random(1)", "random", false, true},
	} {
		e, err := Compile(tc.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		if got := strings.Join(e.refs, ","); got != tc.refs || e.context != tc.context || e.chance != tc.chance {
			t.Errorf("scan(%q) = refs %q context %v chance %v, want %q %v %v", tc.src, got, e.context, e.chance, tc.refs, tc.context, tc.chance)
		}
	}
}

// scope is a scope on input with variables vars.
func scope(t *testing.T, input string, vars map[string]any) *Scope {
	return &Scope{
		Input:    decode(t, input),
		Variable: func(name string) (any, bool) { v, ok := vars[name]; return v, ok },
		Context:  func() any { return map[string]any{"State": map[string]any{"Name": "S"}} },
	}
}

func TestEval(t *testing.T) {
	vars := map[string]any{"n": json.Number("2"), "nothing": nil, "list": []any{}}
	for _, tc := range []struct {
		tmpl, want string
	}{
		{`"{% $states.input.a + $n %}"`, `3`},
		{`{"keep":"$.x","list":[1,"{% $n * 2 %}"],"lit":0.10}`, `{"keep":"$.x","list":[1,4],"lit":0.10}`},
		{`"{% $nothing = null %}"`, `true`},
		{`"{% $states.input.z = null %}"`, `true`},
		{`"{% $states.input.e %}"`, `[]`},
		{`"{% $list %}"`, `[]`},
		{`"{% $states.context.State.Name %}"`, `"S"`},
		{`"{% $partition([1,2,3], 2) %}"`, `[[1,2],[3]]`},
		{`"{% $range(1, 9, 9) %}"`, `1`},
		{`"{% $range(0, 9, 3) %}"`, `[0,3,6,9]`},
		{`"{% $range(5, 1, 1) %}"`, `[]`},
		{`"{% $hash('', 'SHA-1') %}"`, `"da39a3ee5e6b4b0d3255bfef95601890afd80709"`},
		{`"{% $parse('{\"a\": [1, null]}') %}"`, `{"a":[1,null]}`},
		{`"{% $random('s') = $random('s') %}"`, `true`},
		{`"{% $contains('a$b', /a\\$/) %}"`, `true`},
		{`"{% 1 /* one */ + 2 & '/* kept */' %}"`, `"3/* kept */"`},
		{`"{% $base64encode('héllo') %}"`, `"aMOpbGxv"`},
		{`"{% $base64decode('aMOpbGxv') %}"`, `"héllo"`},
		{`"{% $exists($base64encode($states.input.none)) %}"`, `false`},
	} {
		tm, err := CompileTemplate(decode(t, tc.tmpl), "Output")
		if err != nil {
			t.Fatalf("CompileTemplate(%s): %v", tc.tmpl, err)
		}
		got, err := tm.Eval(t.Context(), scope(t, `{"a":1,"z":null,"e":[]}`, vars), "Output")
		if err != nil || !jsonvalue.Equal(got, decode(t, tc.want)) {
			t.Errorf("Eval(%s) = %v, %v; want %s", tc.tmpl, got, err, tc.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for _, tc := range []struct{ tmpl, want string }{
		{`{"r":"{% $missing %}"}`, "The JSONata expression '$missing' specified for the field 'Output/r' returned nothing (undefined)."},
		{`["{% function($x){$x} %}"]`, "The JSONata expression 'function($x){$x}' specified for the field 'Output/0' returned an unsupported result type."},
		{`"{% $nope(1) %}"`, "The JSONata expression '$nope(1)' specified for the field 'Output' threw an error during evaluation. T1006: Attempted to invoke a non-function"},
		{`"{% 1 + 'a' %}"`, "The JSONata expression '1 + 'a'' specified for the field 'Output' threw an error during evaluation. T2002: The right side of the + operator must evaluate to a number"},
		{`"{% $partition([1], 0) %}"`, "The JSONata expression '$partition([1], 0)' specified for the field 'Output' threw an error during evaluation. the chunk size of $partition must be a positive integer, not 0"},
		{`"{% $range(0, 5000, 1) %}"`, "The JSONata expression '$range(0, 5000, 1)' specified for the field 'Output' threw an error during evaluation. $range would make 5001 items, more than 1000"},
		{`"{% $hash('a', 'SHA-3') %}"`, `The JSONata expression '$hash('a', 'SHA-3')' specified for the field 'Output' threw an error during evaluation. the algorithm of $hash must be one of MD5, SHA-1, SHA-256, SHA-384 or SHA-512, not "SHA-3"`},
		{`"{% $parse('{') %}"`, "The JSONata expression '$parse('{')' specified for the field 'Output' threw an error during evaluation. the text given to $parse is not JSON"},
		{`"{% 1e308 * 10 %}"`, "The JSONata expression '1e308 * 10' specified for the field 'Output' threw an error during evaluation. D1001: Number out of range"},
	} {
		tm, err := CompileTemplate(decode(t, tc.tmpl), "Output")
		if err != nil {
			t.Fatalf("CompileTemplate(%s): %v", tc.tmpl, err)
		}
		_, err = tm.Eval(t.Context(), scope(t, `{}`, nil), "Output")
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, tc.want) {
			t.Errorf("Eval(%s) error = %v, want %q", tc.tmpl, err, tc.want)
		}
	}
}

func TestTypeError(t *testing.T) {
	tm, err := CompileTemplate("{% {'foo': 'bar'} %}", "Items")
	if err != nil {
		t.Fatal(err)
	}
	v, err := tm.Eval(t.Context(), &Scope{}, "Items")
	if err != nil {
		t.Fatal(err)
	}
	got := tm.TypeError("Items", "array", v).Msg
	want := `The JSONata expression '{'foo': 'bar'}' specified for the field 'Items' returned an unexpected result type. Expected 'array', but was 'object' for value: {"foo":"bar"}`
	if got != want {
		t.Errorf("TypeError = %q, want %q", got, want)
	}
}

func TestResultAfterArguments(t *testing.T) {
	args, _ := CompileTemplate("{% $states.input.q %}", "Arguments")
	out, _ := CompileTemplate("{% $states.result.a & $states.input.q %}", "Output")
	s := scope(t, `{"q":"?"}`, nil)
	if _, err := args.Eval(t.Context(), s, "Arguments"); err != nil {
		t.Fatal(err)
	}
	s.Result, s.HasResult = map[string]any{"a": "!"}, true
	got, err := out.Eval(t.Context(), s, "Output")
	if err != nil || got != "!?" {
		t.Errorf("Output = %v, %v; want \"!?\"", got, err)
	}
}

// TestConcurrentEval runs expressions that call built-in functions,
// functions they define, regular expressions and transformations from
// many goroutines at once; under -race it checks that evaluations share
// nothing they modify.
func TestConcurrentEval(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"$string($sum($map($states.input.xs, function($v){$v * 2}))) & $uppercase('x')", `"12X"`},
		{"$replace($join($sort($states.input.xs, function($a, $b){ $a < $b }).$string(), ','), /(\\d)/, '<$1>')", `"<3>,<2>,<1>"`},
		{"($states.input ~> |$|{'n': $count(xs)}|).n + $states.input.xs[$ > 1]{ $string($): $ }.`2`", `5`},
		{"$substring($now(), 0, 2) & $pad($formatNumber(1234.5, '#,##0.0'), 9, '*') & $match('aXbX', /X/)[1].index", `"201,234.5**3"`},
	} {
		tm, err := CompileTemplate("{% "+tc.src+" %}", "Output")
		if err != nil {
			t.Fatal(err)
		}
		want := decode(t, tc.want)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 50 {
					got, err := tm.Eval(t.Context(), scope(t, `{"xs":[1,2,3]}`, nil), "Output")
					if err != nil || !jsonvalue.Equal(got, want) {
						t.Errorf("Eval(%s) = %v, %v; want %s", tc.src, got, err, tc.want)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

// FuzzCompile checks that compiling any text never panics or hangs, and
// that a compiled expression keeps its trimmed text.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"$states.input.a", "~é", "$a ~> $b", "[1..3]", "{'a': 1}", "$x := function($y){$y}; $x(1)", "`a`.b", "/* c */ 1", "/ab+/i", "1 ? 2 : 3", "$$", "**", "a[0][1]", "$.a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Compile(src)
		if err != nil {
			return
		}
		if e.String() != strings.TrimSpace(src) {
			t.Errorf("String() = %q, want %q", e.String(), strings.TrimSpace(src))
		}
	})
}
