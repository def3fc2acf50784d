package jsonpath

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// fakeEnv is an Env with a fixed context object and variables.
type fakeEnv struct {
	ctx  any
	vars map[string]any
}

func (e fakeEnv) Context() any { return e.ctx }

func (e fakeEnv) Variable(name string) (any, bool) {
	v, ok := e.vars[name]
	return v, ok
}

// decodeJSON decodes test JSON text, failing the test on error.
func decodeJSON(t testing.TB, text string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		t.Fatalf("jsonvalue.Decode(%s): %v", text, err)
	}
	return v
}

// show writes v as compact JSON for failure messages.
func show(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// evalIntrinsic compiles src and evaluates it against the JSON text input.
func evalIntrinsic(t testing.TB, src, input string, env Env) (any, error) {
	t.Helper()
	f, err := compileIntrinsic(src)
	if err != nil {
		t.Fatalf("compileIntrinsic(%q): %v", src, err)
	}
	var in any
	if input != "" {
		in = decodeJSON(t, input)
	}
	return f.eval(in, env)
}

// intrinsicCase is one evaluation: a call, its input, and either the JSON
// result or the function whose IntrinsicError is expected.
type intrinsicCase struct {
	name    string
	src     string
	input   string
	want    string // JSON text of the result
	failsIn string // the Func of the expected *IntrinsicError
}

// runIntrinsicCases runs cases as subtests.
func runIntrinsicCases(t *testing.T, env Env, cases []intrinsicCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalIntrinsic(t, tc.src, tc.input, env)
			if tc.failsIn != "" {
				var ie *IntrinsicError
				if !errors.As(err, &ie) {
					t.Fatalf("eval(%q) = %s, %v; want an *IntrinsicError from %s", tc.src, show(got), err, tc.failsIn)
				}
				if ie.Func != tc.failsIn || ie.Msg != "Invalid arguments in "+tc.failsIn {
					t.Errorf("eval(%q) error = {Func: %q, Msg: %q}, want {Func: %q, Msg: %q}",
						tc.src, ie.Func, ie.Msg, tc.failsIn, "Invalid arguments in "+tc.failsIn)
				}
				return
			}
			if err != nil {
				t.Fatalf("eval(%q) error: %v", tc.src, err)
			}
			if want := decodeJSON(t, tc.want); !jsonvalue.Equal(got, want) {
				t.Errorf("eval(%q) = %s, want %s", tc.src, show(got), tc.want)
			}
		})
	}
}

func TestCompileIntrinsicErrors(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		offset int
		msg    string // a part of the message
	}{
		{"empty", ``, 0, "expected an intrinsic function call"},
		{"not a call", `$.a`, 0, "expected an intrinsic function call"},
		{"unknown function", `States.Nope()`, 0, `unknown intrinsic function "States.Nope"`},
		{"names are case-sensitive", `States.format('x')`, 0, `unknown intrinsic function "States.format"`},
		{"unknown nested function", `States.Array(States.Foo(1))`, 13, `unknown intrinsic function "States.Foo"`},
		{"missing parenthesis", `States.UUID`, 11, "expected ( after States.UUID"},
		{"space before parenthesis", `States.UUID ()`, 11, "expected ( after States.UUID"},
		{"unclosed call", `States.Array(1, 2`, 17, "missing ) to close States.Array"},
		{"unclosed empty call", `States.Array(`, 13, "expected an argument"},
		{"trailing comma", `States.Array(1, )`, 16, "expected an argument"},
		{"leading comma", `States.Array(, 1)`, 13, "expected an argument"},
		{"missing comma", `States.Array(1 2)`, 15, "expected , or ) after argument 1"},
		{"text after the call", `States.Array(1) x`, 16, `unexpected "x" after the call`},
		{"second call", `States.UUID()States.UUID()`, 13, "after the call"},
		{"bare word", `States.Array(hello)`, 13, `unexpected "hello"`},
		{"array literal", `States.Array([1,2])`, 13, `unexpected '['`},
		{"double-quoted string", `States.Array("a")`, 13, `unexpected '"'`},
		{"unterminated string", `States.Array('abc)`, 13, "unterminated string literal"},
		{"illegal escape of a double quote", `States.StringToJson('{"a":"x \"y\""}')`, 29, `illegal escape sequence "\""`},
		{"illegal escape n", `States.Format('a\nb')`, 16, `illegal escape sequence "\n"`},
		{"escape at the end", `States.Format('a\`, 16, "unterminated escape"},
		{"number with trailing point", `States.Array(1.)`, 13, "after the decimal point"},
		{"number with leading point", `States.Array(.5)`, 13, `unexpected ".5"`},
		{"number with leading zero", `States.Array(01)`, 13, "leading zero"},
		{"number with plus sign", `States.Array(+1)`, 13, `unexpected '+'`},
		{"number glued to a word", `States.Array(1a)`, 13, `invalid number "1a"`},
		{"bad exponent", `States.Array(1e)`, 13, "exponent"},
		{"invalid path", `States.Array($$x)`, -1, `invalid path argument "$$x"`},
		{"too few arguments", `States.ArrayGetItem($.a)`, 0, "States.ArrayGetItem takes 2 arguments, got 1"},
		{"too many arguments", `States.ArrayLength($.a, 1)`, 0, "States.ArrayLength takes 1 argument, got 2"},
		{"arguments to UUID", `States.UUID(1)`, 0, "States.UUID takes 0 arguments, got 1"},
		{"too few variadic", `States.Format()`, 0, "States.Format takes at least 1 argument, got 0"},
		{"MathRandom with four", `States.MathRandom(1, 2, 3, 4)`, 0, "takes at most 3 arguments, got 4"},
		{"nested arity", `States.Array(States.MathAdd(1))`, 13, "States.MathAdd takes 2 arguments, got 1"},
		{"string literal for a number", `States.MathAdd('1', 2)`, 15, "argument 1 of States.MathAdd must be a number, got a string literal"},
		{"null literal for a number", `States.MathAdd(null, 2)`, 15, "must be a number, got null"},
		{"boolean literal for a number", `States.MathAdd(1, true)`, 18, "argument 2 of States.MathAdd must be a number, got a boolean literal"},
		{"literal for an array", `States.ArrayLength('abc')`, 19, "must be an array, got a string literal"},
		{"literal for an object", `States.JsonMerge(1, $.b, false)`, 17, "must be an object, got a number literal"},
		{"number literal for a string", `States.StringSplit(1, ',')`, 19, "must be a string, got a number literal"},
		{"number template", `States.Format(1)`, 14, "must be a string"},
		{"deep merge", `States.JsonMerge($.a, $.b, true)`, 27, "only shallow merging"},
		{"merge flag as string", `States.JsonMerge($.a, $.b, 'false')`, 27, "must be a boolean"},
		{"unknown hash algorithm", `States.Hash('x', 'SHA256')`, 17, `unknown States.Hash algorithm "SHA256"`},
		{"lower-case hash algorithm", `States.Hash('x', 'sha-256')`, 17, "unknown States.Hash algorithm"},
		{"too few format arguments", `States.Format('{} {}', 1)`, 0, "template has 2 placeholders but the call passes 1 argument"},
		{"too many format arguments", `States.Format('{}', 1, 2)`, 0, "template has 1 placeholder but the call passes 2 arguments"},
		{"unmatched open brace", `States.Format('Hello {', 1)`, 21, `unmatched "{"`},
		{"lone close brace", `States.Format('}')`, 15, `unmatched "}"`},
		{"doubled braces", `States.Format('{{}}', 1)`, 15, `unmatched "{"`},
		{"extension arity", `States.ArrayConcat($.a)`, 0, "States.ArrayConcat takes at least 2 arguments, got 1"},
		{"extension literal type", `States.Truncate($.a, 'x')`, 21, "argument 2 of States.Truncate must be a number"},
		{"pick key type", `States.Pick($.a, 1)`, 17, "argument 2 of States.Pick must be a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := compileIntrinsic(tc.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("compileIntrinsic(%q) = %v, %v; want a *SyntaxError", tc.src, f, err)
			}
			if se.Expr != tc.src {
				t.Errorf("compileIntrinsic(%q) error Expr = %q, want the whole call", tc.src, se.Expr)
			}
			if tc.offset >= 0 && se.Offset != tc.offset {
				t.Errorf("compileIntrinsic(%q) error Offset = %d, want %d (%s)", tc.src, se.Offset, tc.offset, se.Msg)
			}
			if !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("compileIntrinsic(%q) error Msg = %q, want it to contain %q", tc.src, se.Msg, tc.msg)
			}
		})
	}
}

func TestIntrinsicNestingLimit(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat("States.Array(", n) + "1" + strings.Repeat(")", n)
	}
	if _, err := compileIntrinsic(nest(maxIntrinsicDepth)); err != nil {
		t.Errorf("compileIntrinsic(%d nested calls): %v", maxIntrinsicDepth, err)
	}
	_, err := compileIntrinsic(nest(maxIntrinsicDepth + 1))
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "deeper than 10") {
		t.Errorf("compileIntrinsic(%d nested calls) = %v, want a *SyntaxError about the nesting limit", maxIntrinsicDepth+1, err)
	}
}

func TestIntrinsicLiterals(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "no arguments", src: `States.Array()`, want: `[]`},
		{name: "scalars", src: `States.Array(42, true, null, 'hello', false)`, want: `[42, true, null, "hello", false]`},
		{name: "falsy values", src: `States.Array(false, '', 0, null)`, want: `[false, "", 0, null]`},
		{name: "numbers keep their text", src: `States.Array(-1, 0.5, 1.50, 1e3, -2.5E-3, 12345678901234567890123)`, want: `[-1, 0.5, 1.50, 1e3, -2.5E-3, 12345678901234567890123]`},
		{name: "whitespace around arguments", src: "States.Array(  1 ,\t'a'\n,\r\ntrue  )", want: `[1, "a", true]`},
		{name: "whitespace around the call", src: "  States.Array(1)  ", want: `[1]`},
		{name: "escaped quote", src: `States.Array('it\'s')`, want: `["it's"]`},
		{name: "escaped braces", src: `States.Array('\{\}')`, want: `["{}"]`},
		{name: "escaped backslash", src: `States.Array('a\\b')`, want: `["a\\b"]`},
		{name: "unescaped braces outside Format", src: `States.Array('{"a": 1}')`, want: `["{\"a\": 1}"]`},
		{name: "double quotes need no escape", src: `States.Array('say "hi"')`, want: `["say \"hi\""]`},
		{name: "commas and parentheses inside a string", src: `States.Array('a, b)', 'c(')`, want: `["a, b)", "c("]`},
		{name: "control characters are kept", src: "States.Array('a\nb\tc')", want: `["a\nb\tc"]`},
		{name: "unicode", src: `States.Array('héllo 🆗')`, want: `["héllo 🆗"]`},
	})
}

func TestIntrinsicPaths(t *testing.T) {
	env := fakeEnv{
		ctx:  decodeJSON(t, `{"Execution": {"Input": {"k": "from context"}}}`),
		vars: map[string]any{"v": decodeJSON(t, `{"x": [1, 2]}`)},
	}
	runIntrinsicCases(t, env, []intrinsicCase{
		{name: "input path", src: `States.Array($.a.b)`, input: `{"a": {"b": "deep"}}`, want: `["deep"]`},
		{name: "root", src: `States.Array($)`, input: `{"a": 1}`, want: `[{"a": 1}]`},
		{name: "context path", src: `States.Array($$.Execution.Input.k)`, want: `["from context"]`},
		{name: "variable", src: `States.Array($v.x)`, want: `[[1, 2]]`},
		{name: "dot before brackets", src: `States.Array($.a.[1], $.o.['b'])`, input: `{"a": [5, 6], "o": {"b": 7}}`, want: `[6, 7]`},
		{name: "path then whitespace", src: `States.Array( $.a , $.a )`, input: `{"a": 1}`, want: `[1, 1]`},
		{name: "values are shared, not copied", src: `States.Array($.a, $.a, $.a)`, input: `{"a": {"x": 1}}`, want: `[{"x": 1}, {"x": 1}, {"x": 1}]`},
	})
	t.Run("missing path returns the path error", func(t *testing.T) {
		_, err := evalIntrinsic(t, `States.Format('{}', $.missing)`, `{}`, nil)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Fatalf("eval = %v, want a *PathError", err)
		}
		var ie *IntrinsicError
		if errors.As(err, &ie) {
			t.Errorf("eval = %v, want the path error, not an *IntrinsicError", err)
		}
	})
	t.Run("missing variable returns the path error", func(t *testing.T) {
		_, err := evalIntrinsic(t, `States.Array($nope)`, `{}`, env)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Fatalf("eval = %v, want a *PathError", err)
		}
	})
	t.Run("nil env has no variables", func(t *testing.T) {
		_, err := evalIntrinsic(t, `States.Array($v)`, `{}`, nil)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Fatalf("eval = %v, want a *PathError", err)
		}
	})
	t.Run("nil env has no context", func(t *testing.T) {
		got, err := evalIntrinsic(t, `States.CurrentTokens()`, `{}`, nil)
		if err != nil || !jsonvalue.Equal(got, json.Number("0")) {
			t.Errorf("eval = %s, %v, want 0", show(got), err)
		}
	})
}

func TestScanPath(t *testing.T) {
	tests := []struct {
		name string
		src  string // the path starts at the first $
		want string // the text scanPath covers
		bad  bool
	}{
		{"dotted", `$.a.b, 1)`, `$.a.b`, false},
		{"ends at parenthesis", `$.a)`, `$.a`, false},
		{"to the end", `$.a`, `$.a`, false},
		{"index", `$.a[0], 2)`, `$.a[0]`, false},
		{"union in brackets", `$.a[0,1], 2)`, `$.a[0,1]`, false},
		{"quoted name with comma", `$['a,b'], 2)`, `$['a,b']`, false},
		{"quoted name with parenthesis", `$['a)b'])`, `$['a)b']`, false},
		{"double-quoted name", `$["x,)y"], 1)`, `$["x,)y"]`, false},
		{"escaped quote in name", `$['it\'s, ok'], 1)`, `$['it\'s, ok']`, false},
		{"filter", `$.a[?(@.b > 1, 2)].c, 3)`, `$.a[?(@.b > 1, 2)].c`, false},
		{"filter with string", `$[?(@.n == ')')], 1)`, `$[?(@.n == ')')]`, false},
		{"trailing spaces are included", `$.a  , 1)`, `$.a  `, false},
		{"unterminated quote", `$['a, 1)`, ``, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end, bad := scanPath(tc.src, 0)
			if tc.bad {
				if bad < 0 {
					t.Errorf("scanPath(%q) = %q, want an unterminated quote", tc.src, tc.src[:end])
				}
				return
			}
			if bad >= 0 || tc.src[:end] != tc.want {
				t.Errorf("scanPath(%q) = %q (bad %d), want %q", tc.src, tc.src[:end], bad, tc.want)
			}
		})
	}
}

func TestIntrinsicNestedCalls(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{
			// AWS's documentation shows this call with a third {} that it never fills.
			name:  "AWS documentation example with nine calls",
			src:   `States.Format('{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 1))`,
			input: `{"ImageRecipe": {"Arn": "arn:aws:imagebuilder:us-east-1:123:image-recipe/my-recipe/1.0.3"}}`,
			want:  `"1.0"`,
		},
		{name: "array of arrays", src: `States.Array(1, States.Array(2, States.Array(3)))`, want: `[1, [2, [3]]]`},
		{name: "math in range", src: `States.ArrayRange(States.MathAdd($.b, 1), States.MathAdd($.b, 5), 2)`, input: `{"b": 0}`, want: `[1, 3, 5]`},
		{name: "format of a JSON string", src: `States.Format('arn:{}:{}', $.svc, States.JsonToString($.obj))`, input: `{"svc": "lambda", "obj": {"k": 1}}`, want: `"arn:lambda:{\"k\":1}"`},
		{name: "hash of a format", src: `States.Hash(States.Format('{}:{}', $.a, $.b), 'SHA-256')`, input: `{"a": "x", "b": "y"}`, want: `"1274e286686b54fe765ec40735665b4bf789cee2a5b22124c5e0491a88e15271"`},
		{name: "base64 round trip", src: `States.Base64Decode(States.Base64Encode($.s))`, input: `{"s": "hello"}`, want: `"hello"`},
		{name: "json round trip", src: `States.StringToJson(States.JsonToString($.o))`, input: `{"o": {"a": [1, {"b": null}]}}`, want: `{"a": [1, {"b": null}]}`},
		{name: "template from a call", src: `States.Format(States.Format('\{\} {}', 'x'), 'y')`, want: `"y x"`},
		{name: "length of a split", src: `States.ArrayLength(States.StringSplit('a b c', ' '))`, want: `3`},
		{name: "nested error surfaces", src: `States.Array(States.ArrayLength($.s))`, input: `{"s": "x"}`, failsIn: "States.ArrayLength"},
	})
}

func TestIntrinsicString(t *testing.T) {
	const src = `States.Format('{}', $.a)`
	f, err := compileIntrinsic(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != src {
		t.Errorf("String() = %q, want %q", got, src)
	}
}

func TestIntrinsicErrorText(t *testing.T) {
	tests := []struct {
		err  *IntrinsicError
		want string
	}{
		{&IntrinsicError{Func: "States.MathAdd", Msg: "Invalid arguments in States.MathAdd"}, "Invalid arguments in States.MathAdd"},
		{&IntrinsicError{Func: "States.MathAdd", Msg: "Invalid arguments in States.MathAdd", Detail: "argument 1 must be a number, got a string"},
			"Invalid arguments in States.MathAdd: argument 1 must be a number, got a string"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestIntrinsicConcurrentEval(t *testing.T) {
	f, err := compileIntrinsic(`States.Format('{} has {} items', $.name, States.ArrayLength($.items))`)
	if err != nil {
		t.Fatal(err)
	}
	input := decodeJSON(t, `{"name": "cart", "items": [1, 2, 3]}`)
	done := make(chan string)
	for range 8 {
		go func() {
			got, err := f.eval(input, nil)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- got.(string)
		}()
	}
	for range 8 {
		if got := <-done; got != "cart has 3 items" {
			t.Errorf("concurrent eval = %q, want %q", got, "cart has 3 items")
		}
	}
}
