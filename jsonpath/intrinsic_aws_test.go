package jsonpath

import (
	"errors"
	"fmt"
	"testing"
)

// These tests reproduce, one by one, the results AWS Step Functions recorded
// for intrinsic functions (the cases under conformance/aws/intrinsicfunctions
// and the intrinsic escape scenarios): the same calls and values, laid out
// as our own inputs.

// awsPair evaluates src with $.x and $.y set to the JSON texts x and y.
func awsPair(name, src, x, y, want string) intrinsicCase {
	return intrinsicCase{name: name, src: src, input: fmt.Sprintf(`{"x": %s, "y": %s}`, x, y), want: want}
}

func TestAWSRecordedArray(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "no arguments", src: `States.Array()`, input: `{"x": "HelloWorld"}`, want: `[]`},
		awsPair("empty strings", `States.Array($.x, $.y)`, `""`, `""`, `["", ""]`),
		awsPair("blank strings", `States.Array($.x, $.y)`, `" "`, `" "`, `[" ", " "]`),
		awsPair("strings", `States.Array($.x, $.y)`, `"HelloWorld"`, `"HelloWorld"`, `["HelloWorld", "HelloWorld"]`),
		awsPair("nulls", `States.Array($.x, $.y)`, `null`, `null`, `[null, null]`),
		awsPair("integers", `States.Array($.x, $.y)`, `1`, `1`, `[1, 1]`),
		awsPair("decimals", `States.Array($.x, $.y)`, `1.1`, `1.1`, `[1.1, 1.1]`),
		awsPair("objects", `States.Array($.x, $.y)`, `{"Arg1": 1, "Arg2": []}`, `{"Arg1": 1, "Arg2": []}`, `[{"Arg1": 1, "Arg2": []}, {"Arg1": 1, "Arg2": []}]`),
	})
}

func TestAWSRecordedArrayContains(t *testing.T) {
	const src = `States.ArrayContains($.x, $.y)`
	runIntrinsicCases(t, nil, []intrinsicCase{
		awsPair("null in empty", src, `[]`, `null`, `false`),
		awsPair("empty array in empty", src, `[]`, `[]`, `false`),
		awsPair("null in nested", src, `[[1, 2, 3], 2]`, `null`, `false`),
		awsPair("empty array among objects", src, `[{"1": 2, "2": []}]`, `[]`, `false`),
		awsPair("equal object", src, `[{"1": 2, "2": []}]`, `{"1": 2, "2": []}`, `true`),
		awsPair("true", src, `[true, false]`, `true`, `true`),
		awsPair("false", src, `[true, false]`, `false`, `true`),
	})
}

func TestAWSRecordedArrayItems(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		awsPair("get item 5", `States.ArrayGetItem($.x, $.y)`, `[1, 2, 3, 4, 5, 6, 7, 8, 9]`, `5`, `6`),
		{name: "length 9", src: `States.ArrayLength($.x)`, input: `{"x": [1, 2, 3, 4, 5, 6, 7, 8, 9]}`, want: `9`},
	})
}

func TestAWSRecordedArrayPartition(t *testing.T) {
	const src = `States.ArrayPartition($.x, $.y)`
	var cases []intrinsicCase
	for size := 1; size <= 5; size++ {
		cases = append(cases, awsPair(fmt.Sprintf("empty by %d", size), src, `[]`, fmt.Sprint(size), `[]`))
	}
	for _, c := range []struct{ arr, size, want string }{
		{`[0]`, `1`, `[[0]]`},
		{`[0]`, `2`, `[[0]]`},
		{`[0]`, `5`, `[[0]]`},
		{`[0, 1]`, `1`, `[[0], [1]]`},
		{`[0, 1]`, `2`, `[[0, 1]]`},
		{`[0, 1]`, `4`, `[[0, 1]]`},
		{`[0, 1]`, `5`, `[[0, 1]]`},
		{`[0, 1, 2]`, `1`, `[[0], [1], [2]]`},
		{`[0, 1, 2]`, `2`, `[[0, 1], [2]]`},
		{`[0, 1, 2]`, `3`, `[[0, 1, 2]]`},
		{`[0, 1, 2]`, `4`, `[[0, 1, 2]]`},
		{`[0, 1, 2]`, `5`, `[[0, 1, 2]]`},
		{`[0, 1, 2, 3]`, `1`, `[[0], [1], [2], [3]]`},
		{`[0, 1, 2, 3]`, `4`, `[[0, 1, 2, 3]]`},
		{`[0, 1, 2, 3]`, `5`, `[[0, 1, 2, 3]]`},
	} {
		cases = append(cases, awsPair(c.arr+" by "+c.size, src, c.arr, c.size, c.want))
	}
	runIntrinsicCases(t, nil, cases)
}

func TestAWSRecordedArrayRange(t *testing.T) {
	const src = `States.ArrayRange($.a, $.b, $.c)`
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "0 to 9 by 3", src: src, input: `{"a": 0, "b": 9, "c": 3}`, want: `[0, 3, 6, 9]`},
		{name: "1 to 9 by 9", src: src, input: `{"a": 1, "b": 9, "c": 9}`, want: `[1]`},
		{name: "1 to 9 by 2", src: src, input: `{"a": 1, "b": 9, "c": 2}`, want: `[1, 3, 5, 7, 9]`},
	})
}

func TestAWSRecordedBase64(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "decode", src: `States.Base64Decode($.x)`, input: `{"x": "RGF0YSB0byBlbmNvZGU="}`, want: `"Data to encode"`},
		{name: "encode empty", src: `States.Base64Encode($.x)`, input: `{"x": ""}`, want: `""`},
		{name: "encode", src: `States.Base64Encode($.x)`, input: `{"x": "Data to encode"}`, want: `"RGF0YSB0byBlbmNvZGU="`},
	})
}

func TestAWSRecordedFormat(t *testing.T) {
	const one = `States.Format('Formatting argument {}.', $.x)`
	const two = `States.Format('Formatting arguments fst={} and snd={}.', $.x, $.y)`
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "empty string", src: one, input: `{"x": ""}`, want: `"Formatting argument ."`},
		{name: "blank string", src: one, input: `{"x": " "}`, want: `"Formatting argument  ."`},
		{name: "null", src: one, input: `{"x": null}`, want: `"Formatting argument null."`},
		{name: "integer", src: one, input: `{"x": 1}`, want: `"Formatting argument 1."`},
		{name: "decimal", src: one, input: `{"x": 1.1}`, want: `"Formatting argument 1.1."`},
		awsPair("two strings", two, `"HelloWorld"`, `"HelloWorld"`, `"Formatting arguments fst=HelloWorld and snd=HelloWorld."`),
		awsPair("two integers", two, `1`, `1`, `"Formatting arguments fst=1 and snd=1."`),
		awsPair("JSON text stays raw", two, `"{\"Arg1\": 1, \"Arg2\": []}"`, `"{\"Arg1\": 1, \"Arg2\": []}"`,
			`"Formatting arguments fst={\"Arg1\": 1, \"Arg2\": []} and snd={\"Arg1\": 1, \"Arg2\": []}."`),
		awsPair("objects Java-style", two, `{"Arg1": 1, "Arg2": []}`, `{"Arg1": 1, "Arg2": []}`,
			`"Formatting arguments fst={Arg1=1, Arg2=[]} and snd={Arg1=1, Arg2=[]}."`),
	})
}

func TestAWSRecordedHash(t *testing.T) {
	const src = `States.Hash($.x, $.y)`
	runIntrinsicCases(t, nil, []intrinsicCase{
		awsPair("MD5", src, `"input data"`, `"MD5"`, `"812f45842bc6d66ee14572ce20db8e86"`),
		awsPair("SHA-1", src, `"input data"`, `"SHA-1"`, `"aaff4a450a104cd177d28d18d74485e8cae074b7"`),
		awsPair("SHA-256", src, `"input data"`, `"SHA-256"`, `"b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3"`),
		awsPair("SHA-512", src, `"input data"`, `"SHA-512"`, `"6ce4adb348546d4f449c4d25aad9a7c9cb711d9e91982d3f0b29ca2f3f47d4ce2deba23bf2954f0f1d593fc50283731a533d30d425402d4f91316d871303aac4"`),
	})
}

func TestAWSRecordedJSONMerge(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		awsPair("shallow", `States.JsonMerge($.x, $.y, false)`,
			`{"a": {"a1": 1, "a2": 2}, "b": 2, "d": 3}`, `{"a": {"a3": 1, "a4": 2}, "c": 3, "d": 4}`,
			`{"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3, "d": 4}`),
	})
	// A literal JSON text with unescaped braces, parsed, merged with a value
	// from the context object.
	env := fakeEnv{ctx: decodeJSON(t, `{"Execution": {"Input": {"input_field": {"constant_input_field": "constant_value"}}}}`)}
	runIntrinsicCases(t, env, []intrinsicCase{
		{
			name:  "literal merged with context",
			src:   `States.JsonMerge(States.StringToJson('{"constant_in_literal": "false"}'), $$.Execution.Input.input_field, false)`,
			input: `{"input_field": {"constant_input_field": "constant_value"}}`,
			want:  `{"constant_input_field": "constant_value", "constant_in_literal": "false"}`,
		},
	})
}

func TestAWSRecordedJSONToString(t *testing.T) {
	const src = `States.JsonToString($.x)`
	for _, c := range []struct{ x, want string }{
		{`null`, `"null"`},
		{`0`, `"0"`},
		{`1.1`, `"1.1"`},
		{`true`, `"true"`},
		{`[1, 2, "HelloWorld"]`, `"[1,2,\"HelloWorld\"]"`},
		{`{"Arg1": 1, "Arg2": []}`, `"{\"Arg1\":1,\"Arg2\":[]}"`},
	} {
		runIntrinsicCases(t, nil, []intrinsicCase{{name: c.x, src: src, input: `{"x": ` + c.x + `}`, want: c.want}})
	}
}

func TestAWSRecordedMathAdd(t *testing.T) {
	const src = `States.MathAdd($.x, $.y)`
	var cases []intrinsicCase
	for _, c := range []struct{ x, y, want string }{
		{"-9", "3", "-6"},
		{"1.49", "1.5", "3"},
		{"1.5", "1.51", "4"},
		{"-1.5", "-1.51", "-3"},
		{"1.49", "0", "1"},
		{"1.49", "-1.49", "0"},
		{"-1.49", "0", "-1"},
		{"-1.51", "0", "-2"},
		{"1.5", "0", "2"},
		{"2.5", "0", "3"},
		{"3.5", "0", "4"},
		{"-0.5", "0", "0"},
		{"-3.5", "0", "-3"},
	} {
		cases = append(cases, awsPair(c.x+" + "+c.y, src, c.x, c.y, c.want))
	}
	runIntrinsicCases(t, nil, cases)
}

func TestAWSRecordedStringSplit(t *testing.T) {
	const src = `States.StringSplit($.x, $.y)`
	runIntrinsicCases(t, nil, []intrinsicCase{
		awsPair("blank", src, `" "`, `","`, `[" "]`),
		awsPair("blanks around a comma", src, `" , "`, `","`, `[" ", " "]`),
		awsPair("empty tokens dropped", src, `", , ,"`, `","`, `[" ", " "]`),
		awsPair("only commas", src, `",,,,"`, `","`, `[]`),
		awsPair("digits", src, `"1,2,3,4,5"`, `","`, `["1", "2", "3", "4", "5"]`),
		awsPair("several delimiters", src, `"This.is+a,test=string"`, `".+,="`, `["This", "is", "a", "test", "string"]`),
		awsPair("letter and newline", src, `"split on T and \nnew line"`, `"T\n"`, `["split on ", " and ", "new line"]`),
		// The literals hold real newline characters (JSON "\n" in the definition).
		{name: "newline literals", src: "States.StringSplit('Hello\nWorld', '\n')", input: `{"x": null}`, want: `["Hello", "World"]`},
	})
}

func TestAWSRecordedStringToJSON(t *testing.T) {
	const src = `States.StringToJson($.x)`
	for _, c := range []struct{ x, want string }{
		{`" "`, `null`},
		{`"-0"`, `0`},
		{`"1"`, `1`},
		{`"1.1"`, `1.1`},
		{`"\"HelloWorld\""`, `"HelloWorld"`},
		{`"[1, 2, \"HelloWorld\"]"`, `[1, 2, "HelloWorld"]`},
		{`"{\"Arg1\": 1, \"Arg2\": []}"`, `{"Arg1": 1, "Arg2": []}`},
	} {
		runIntrinsicCases(t, nil, []intrinsicCase{{name: c.x, src: src, input: `{"x": ` + c.x + `}`, want: c.want}})
	}
	t.Run("negative zero is written 0", func(t *testing.T) {
		got, err := evalIntrinsic(t, src, `{"x": "-0"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s := show(got); s != "0" {
			t.Errorf("StringToJson(\"-0\") = %s, want 0", s)
		}
	})
}

// TestAWSRecordedEscapes covers AWS's escape rules: a backslash before a
// double quote is not an intrinsic escape, so AWS refused the definition.
func TestAWSRecordedEscapes(t *testing.T) {
	_, err := compileIntrinsic(`States.StringToJson('{"text":"An \"escaped double quote\" here"}')`)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("compileIntrinsic with \\\" in a literal = %v, want a *SyntaxError", err)
	}
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "all four escapes", src: `States.Format('\'\{\}\\ {}', 'x')`, want: `"'{}\\ x"`},
	})
}
