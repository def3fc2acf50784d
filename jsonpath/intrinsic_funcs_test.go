package jsonpath

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func TestIntrinsicFormat(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "one placeholder", src: `States.Format('Hello {}', $.name)`, input: `{"name": "Ada"}`, want: `"Hello Ada"`},
		{name: "no placeholder", src: `States.Format('no placeholders')`, want: `"no placeholders"`},
		{name: "mixed scalars", src: `States.Format('{} {} {}', $.a, $.b, $.c)`, input: `{"a": "x", "b": 2, "c": true}`, want: `"x 2 true"`},
		{name: "null", src: `States.Format('[{}]', null)`, want: `"[null]"`},
		{name: "numbers keep their text", src: `States.Format('{}|{}|{}', $.a, $.b, $.c)`, input: `{"a": 1.50, "b": -1e3, "c": 9007199254740993}`, want: `"1.50|-1e3|9007199254740993"`},
		{name: "adjacent placeholders", src: `States.Format('{}{}', 'a', 'b')`, want: `"ab"`},
		{name: "whitespace kept", src: `States.Format('  {}  ', 'x')`, want: `"  x  "`},
		{name: "escaped quotes around placeholders", src: `States.Format('Name: \'{}\', Surname: "{}"', $.n, $.s)`, input: `{"n": "Gabriel", "s": "Moreira"}`, want: `"Name: 'Gabriel', Surname: \"Moreira\""`},
		{name: "escaped braces are text", src: `States.Format('\{{}\}', 'x')`, want: `"{x}"`},
		{name: "escaped braces make no placeholder", src: `States.Format('\{\}')`, want: `"{}"`},
		{name: "escaped backslash before a placeholder", src: `States.Format('\\{}', 'x')`, want: `"\\x"`},
		{name: "placeholder values are not templates", src: `States.Format('{}', '{}')`, want: `"{}"`},
		{name: "object Java-style", src: `States.Format('{}', $.o)`, input: `{"o": {"b": [], "a": 1}}`, want: `"{a=1, b=[]}"`},
		{name: "nested values Java-style", src: `States.Format('{}', $.v)`, input: `{"v": [1, "two", null, true, {"k": ["x", {}]}]}`, want: `"[1, two, null, true, {k=[x, {}]}]"`},
		{name: "template from a path", src: `States.Format($.t, $.n)`, input: `{"t": "Hello, my name is {}.", "n": "Arnav"}`, want: `"Hello, my name is Arnav."`},
		{name: "template from a path with two", src: `States.Format($.t, 1, 2)`, input: `{"t": "{}-{}"}`, want: `"1-2"`},
		{name: "template path not a string", src: `States.Format($.t, $.n)`, input: `{"t": 123, "n": "x"}`, failsIn: "States.Format"},
		{name: "template path with too few arguments", src: `States.Format($.t, 1)`, input: `{"t": "{} {}"}`, failsIn: "States.Format"},
		{name: "template path with too many arguments", src: `States.Format($.t, 1, 2)`, input: `{"t": "{}"}`, failsIn: "States.Format"},
		{name: "template path with a lone brace", src: `States.Format($.t, 1)`, input: `{"t": "{} {"}`, failsIn: "States.Format"},
		{name: "template path with a closing brace", src: `States.Format($.t)`, input: `{"t": "}"}`, failsIn: "States.Format"},
	})
}

func TestIntrinsicStringToJSON(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "object", src: `States.StringToJson($.s)`, input: `{"s": "{\"a\": 1}"}`, want: `{"a": 1}`},
		{name: "array", src: `States.StringToJson('[1, 2]')`, want: `[1, 2]`},
		{name: "string", src: `States.StringToJson('"hello"')`, want: `"hello"`},
		{name: "boolean", src: `States.StringToJson('true')`, want: `true`},
		{name: "null", src: `States.StringToJson('null')`, want: `null`},
		{name: "number", src: `States.StringToJson('12.5')`, want: `12.5`},
		{name: "surrounding whitespace", src: `States.StringToJson(' {"a":1} ')`, want: `{"a": 1}`},
		{name: "empty string is null", src: `States.StringToJson('')`, want: `null`},
		{name: "blank string is null", src: `States.StringToJson($.s)`, input: `{"s": " \t\n"}`, want: `null`},
		{name: "negative zero becomes zero", src: `States.StringToJson('{"a": [-0, -0.5]}')`, want: `{"a": [0, -0.5]}`},
		{name: "apostrophe inside", src: `States.StringToJson($.s)`, input: `{"s": "{\"a\": \"it's\"}"}`, want: `{"a": "it's"}`},
		{name: "malformed", src: `States.StringToJson('{bad json}')`, failsIn: "States.StringToJson"},
		{name: "truncated", src: `States.StringToJson('{"a":1')`, failsIn: "States.StringToJson"},
		{name: "not JSON", src: `States.StringToJson('undefined')`, failsIn: "States.StringToJson"},
		{name: "number argument", src: `States.StringToJson($.n)`, input: `{"n": 123}`, failsIn: "States.StringToJson"},
		{name: "object argument", src: `States.StringToJson($.o)`, input: `{"o": {}}`, failsIn: "States.StringToJson"},
	})
}

func TestIntrinsicJSONToString(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "object compact", src: `States.JsonToString($.o)`, input: `{"o": { "a" : [ 1 , 2 ] }}`, want: `"{\"a\":[1,2]}"`},
		{name: "string is quoted", src: `States.JsonToString('x')`, want: `"\"x\""`},
		{name: "number keeps its text", src: `States.JsonToString($.n)`, input: `{"n": 1.50}`, want: `"1.50"`},
		{name: "null", src: `States.JsonToString(null)`, want: `"null"`},
		{name: "mixed array", src: `States.JsonToString($.p)`, input: `{"p": [null, "", " ", 0, 1, true, false, [0, 1, false]]}`, want: `"[null,\"\",\" \",0,1,true,false,[0,1,false]]"`},
	})
}

func TestIntrinsicArrayFunctions(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		// States.ArrayPartition
		{name: "partition remainder", src: `States.ArrayPartition($.a, 4)`, input: `{"a": [1,2,3,4,5,6,7,8,9]}`, want: `[[1,2,3,4],[5,6,7,8],[9]]`},
		{name: "partition oversized chunk", src: `States.ArrayPartition($.a, 2147483647)`, input: `{"a": [1,2,3]}`, want: `[[1,2,3]]`},
		{name: "partition empty", src: `States.ArrayPartition($.a, 3)`, input: `{"a": []}`, want: `[]`},
		{name: "partition keeps nested arrays", src: `States.ArrayPartition($.a, 2)`, input: `{"a": [[1],[2],[3]]}`, want: `[[[1],[2]],[[3]]]`},
		{name: "partition truncates the size", src: `States.ArrayPartition($.a, 2.6)`, input: `{"a": [1,2,3,4,5]}`, want: `[[1,2],[3,4],[5]]`},
		{name: "partition size truncated to zero", src: `States.ArrayPartition($.a, 0.6)`, input: `{"a": [1]}`, failsIn: "States.ArrayPartition"},
		{name: "partition zero", src: `States.ArrayPartition($.a, 0)`, input: `{"a": [1]}`, failsIn: "States.ArrayPartition"},
		{name: "partition negative", src: `States.ArrayPartition($.a, -1)`, input: `{"a": [1]}`, failsIn: "States.ArrayPartition"},
		{name: "partition not an array", src: `States.ArrayPartition($.a, 2)`, input: `{"a": "abc"}`, failsIn: "States.ArrayPartition"},
		{name: "partition size from path not a number", src: `States.ArrayPartition($.a, $.n)`, input: `{"a": [1], "n": "2"}`, failsIn: "States.ArrayPartition"},
		{name: "partition size too large", src: `States.ArrayPartition($.a, 1e30)`, input: `{"a": [1]}`, failsIn: "States.ArrayPartition"},

		// States.ArrayContains
		{name: "contains number", src: `States.ArrayContains($.a, 2)`, input: `{"a": [1,2,3]}`, want: `true`},
		{name: "contains absent", src: `States.ArrayContains($.a, 5)`, input: `{"a": [1,2,3]}`, want: `false`},
		{name: "contains null", src: `States.ArrayContains($.a, null)`, input: `{"a": [1,null]}`, want: `true`},
		{name: "contains object", src: `States.ArrayContains($.a, $.t)`, input: `{"a": [{"a":1},{"b":2}], "t": {"b":2}}`, want: `true`},
		{name: "contains near-match object", src: `States.ArrayContains($.a, $.t)`, input: `{"a": [{"a":1}], "t": {"a":1,"x":null}}`, want: `false`},
		{name: "contains nested array", src: `States.ArrayContains($.a, $.t)`, input: `{"a": [[1,2],[3]], "t": [1,2]}`, want: `true`},
		{name: "contains no bool-number coercion", src: `States.ArrayContains($.a, false)`, input: `{"a": [0, 1]}`, want: `false`},
		{name: "contains not an array", src: `States.ArrayContains($.s, 'a')`, input: `{"s": "abc"}`, failsIn: "States.ArrayContains"},

		// States.ArrayRange
		{name: "range", src: `States.ArrayRange(1, 9, 2)`, want: `[1,3,5,7,9]`},
		{name: "range across zero", src: `States.ArrayRange(-2, 2, 2)`, want: `[-2,0,2]`},
		{name: "range single", src: `States.ArrayRange(3, 3, -1)`, want: `[3]`},
		{name: "range descending", src: `States.ArrayRange(5, 1, -2)`, want: `[5,3,1]`},
		{name: "range wrong direction", src: `States.ArrayRange(5, 1, 1)`, want: `[]`},
		{name: "range wrong direction negative", src: `States.ArrayRange(1, 5, -1)`, want: `[]`},
		{name: "range truncates", src: `States.ArrayRange(1.6, 1.4, 1)`, want: `[1]`},
		{name: "range truncates negatives", src: `States.ArrayRange(5.4, -0.6, -2.4)`, want: `[5,3,1]`},
		{name: "range step truncated to zero", src: `States.ArrayRange(1, 10, 0.49)`, failsIn: "States.ArrayRange"},
		{name: "range zero step", src: `States.ArrayRange(1, 10, 0)`, failsIn: "States.ArrayRange"},
		{name: "range 1001 items", src: `States.ArrayRange(1, 1001, 1)`, failsIn: "States.ArrayRange"},
		{name: "range 1001 items descending", src: `States.ArrayRange(1001, 1, -1)`, failsIn: "States.ArrayRange"},
		{name: "range from path not a number", src: `States.ArrayRange($.s, 5, 1)`, input: `{"s": "a"}`, failsIn: "States.ArrayRange"},
		{name: "range huge bounds", src: `States.ArrayRange(-900000000000000000, 900000000000000000, 1)`, failsIn: "States.ArrayRange"},

		// States.ArrayGetItem
		{name: "get first", src: `States.ArrayGetItem($.a, 0)`, input: `{"a": ["a","b","c"]}`, want: `"a"`},
		{name: "get index from path", src: `States.ArrayGetItem($.a, $.i)`, input: `{"a": [10,20,30,40], "i": 2}`, want: `30`},
		{name: "get null item", src: `States.ArrayGetItem($.a, 0)`, input: `{"a": [null]}`, want: `null`},
		{name: "get object item", src: `States.ArrayGetItem($.a, 1)`, input: `{"a": [{"a":1},{"b":2}]}`, want: `{"b":2}`},
		{name: "get truncates the index", src: `States.ArrayGetItem($.a, 1.2)`, input: `{"a": [10,20,30]}`, want: `20`},
		{name: "get from empty array is null", src: `States.ArrayGetItem($.a, 999)`, input: `{"a": []}`, want: `null`},
		{name: "get index equal to length", src: `States.ArrayGetItem($.a, 3)`, input: `{"a": [10,20,30]}`, failsIn: "States.ArrayGetItem"},
		{name: "get negative index", src: `States.ArrayGetItem($.a, -1)`, input: `{"a": [10,20,30]}`, failsIn: "States.ArrayGetItem"},
		{name: "get not an array", src: `States.ArrayGetItem($.a, 0)`, input: `{"a": "abc"}`, failsIn: "States.ArrayGetItem"},
		{name: "get string index", src: `States.ArrayGetItem($.a, $.i)`, input: `{"a": [1], "i": "0"}`, failsIn: "States.ArrayGetItem"},

		// States.ArrayLength
		{name: "length empty", src: `States.ArrayLength($.a)`, input: `{"a": []}`, want: `0`},
		{name: "length top level only", src: `States.ArrayLength($.a)`, input: `{"a": [[1],[2,3],{"a":1}]}`, want: `3`},
		{name: "length of a call", src: `States.ArrayLength(States.Array(1, 2, 3))`, want: `3`},
		{name: "length of an object", src: `States.ArrayLength($.o)`, input: `{"o": {"k": 1}}`, failsIn: "States.ArrayLength"},

		// States.ArrayUnique
		{name: "unique numbers", src: `States.ArrayUnique($.a)`, input: `{"a": [1,2,3,3,3,3,3,3,4]}`, want: `[1,2,3,4]`},
		{name: "unique keeps first occurrences in order", src: `States.ArrayUnique($.a)`, input: `{"a": ["b","a","b","c","a"]}`, want: `["b","a","c"]`},
		{name: "unique mixed", src: `States.ArrayUnique($.a)`,
			input: `{"a": [null, null, true, true, false, false, 1, 1, 1.1, 0, "HelloWorld", "HelloWorld", [], [], [null], [null], {"a":1,"b":2}, {"b":2,"a":1}, {"a":1,"b":1}]}`,
			want:  `[null, true, false, 1, 1.1, 0, "HelloWorld", [], [null], {"a":1,"b":2}, {"a":1,"b":1}]`},
		{name: "unique string is not a number", src: `States.ArrayUnique($.a)`, input: `{"a": [1, "1", true, "true"]}`, want: `[1, "1", true, "true"]`},
		{name: "unique not an array", src: `States.ArrayUnique($.a)`, input: `{"a": 1}`, failsIn: "States.ArrayUnique"},
	})
}

func TestIntrinsicEncodingFunctions(t *testing.T) {
	a10000 := strings.Repeat("a", 10000)
	runIntrinsicCases(t, nil, []intrinsicCase{
		// States.Base64Encode
		{name: "encode", src: `States.Base64Encode('hello')`, want: `"aGVsbG8="`},
		{name: "encode empty", src: `States.Base64Encode('')`, want: `""`},
		{name: "encode UTF-8", src: `States.Base64Encode($.s)`, input: `{"s": "こんにちは"}`, want: `"44GT44KT44Gr44Gh44Gv"`},
		{name: "encode astral", src: `States.Base64Encode('🚀')`, want: `"8J+agA=="`},
		{name: "encode NUL", src: `States.Base64Encode($.s)`, input: `{"s": "abc\u0000def"}`, want: `"YWJjAGRlZg=="`},
		{name: "encode 10000 characters", src: `States.Base64Encode($.s)`, input: `{"s": "` + a10000 + `"}`,
			want: `"` + strings.Repeat("YWFh", 3333) + `YQ=="`},
		{name: "encode 10001 characters", src: `States.Base64Encode($.s)`, input: `{"s": "` + a10000 + `a"}`, failsIn: "States.Base64Encode"},
		{name: "encode 5001 astral characters count twice", src: `States.Base64Encode($.s)`, input: `{"s": "` + strings.Repeat("🚀", 5001) + `"}`, failsIn: "States.Base64Encode"},
		{name: "encode a number", src: `States.Base64Encode($.n)`, input: `{"n": 123}`, failsIn: "States.Base64Encode"},
		{name: "encode an array", src: `States.Base64Encode($.a)`, input: `{"a": ["x"]}`, failsIn: "States.Base64Encode"},

		// States.Base64Decode
		{name: "decode", src: `States.Base64Decode('aGVsbG8=')`, want: `"hello"`},
		{name: "decode empty", src: `States.Base64Decode('')`, want: `""`},
		{name: "decode UTF-8", src: `States.Base64Decode('4pyT')`, want: `"✓"`},
		{name: "decode NUL", src: `States.Base64Decode('YWJjAGRlZg==')`, want: `"abc\u0000def"`},
		{name: "decode without padding", src: `States.Base64Decode('aGVsbG8')`, want: `"hello"`},
		{name: "decode short group", src: `States.Base64Decode('YWJj')`, want: `"abc"`},
		{name: "decode skips other characters", src: `States.Base64Decode(' YWJj ZA== ')`, want: `"abcd"`},
		{name: "decode URL-safe alphabet", src: `States.Base64Decode('-_-_')`, want: `"\ufffd\ufffd\ufffd"`},
		{name: "decode URL-safe alphabet to text", src: `States.Base64Decode('aGk_')`, want: `"hi?"`},
		{name: "decode stops at padding", src: `States.Base64Decode('YQ==YWJj')`, want: `"a"`},
		{name: "decode invalid UTF-8 is replaced", src: `States.Base64Decode('/w==')`, want: `"\ufffd"`},
		{name: "decode 10001 characters", src: `States.Base64Decode($.s)`, input: `{"s": "` + a10000 + `a"}`, failsIn: "States.Base64Decode"},
		{name: "decode an object", src: `States.Base64Decode($.o)`, input: `{"o": {}}`, failsIn: "States.Base64Decode"},

		// States.Hash
		{name: "hash MD5", src: `States.Hash('hello', 'MD5')`, want: `"5d41402abc4b2a76b9719d911017c592"`},
		{name: "hash SHA-1", src: `States.Hash('hello', 'SHA-1')`, want: `"aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"`},
		{name: "hash SHA-256", src: `States.Hash('hello', 'SHA-256')`, want: `"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"`},
		{name: "hash SHA-384", src: `States.Hash('hello', 'SHA-384')`, want: `"59e1748777448c69de6b800d7a33bbfb9ff1b463e44354c3553bcdb9c666fa90125a3c79f90397bdf5f6a13de828684f"`},
		{name: "hash SHA-512", src: `States.Hash('hello', 'SHA-512')`, want: `"9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca72323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043"`},
		{name: "hash empty", src: `States.Hash('', 'SHA-256')`, want: `"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`},
		{name: "hash UTF-8", src: `States.Hash('🚀', 'SHA-256')`, want: `"ebbc0b2870eb323f2b6cffa5c493ceef81ae7eb36afc73d4e0367301631daec5"`},
		{name: "hash a number hashes its text", src: `States.Hash(123, 'MD5')`, want: `"202cb962ac59075b964b07152d234b70"`},
		{name: "hash algorithm from a path", src: `States.Hash($.s, $.a)`, input: `{"s": "Data to encode", "a": "MD5"}`, want: `"ca405671828a177e26947171bbe1e352"`},
		{name: "hash 10000 characters", src: `States.Hash($.s, 'MD5')`, input: `{"s": "` + a10000 + `"}`, want: `"0d0c9c4db6953fee9e03f528cafd7d3e"`},
		{name: "hash 10001 characters", src: `States.Hash($.s, 'MD5')`, input: `{"s": "` + a10000 + `a"}`, failsIn: "States.Hash"},
		{name: "hash unknown algorithm from a path", src: `States.Hash('x', $.a)`, input: `{"a": "MD-5"}`, failsIn: "States.Hash"},
		{name: "hash algorithm not a string", src: `States.Hash('x', $.a)`, input: `{"a": 256}`, failsIn: "States.Hash"},
	})
}

func TestIntrinsicJSONMerge(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "disjoint", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": {"x": 1}, "b": {"y": 2}}`, want: `{"x": 1, "y": 2}`},
		{name: "later wins", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": {"x": 1, "y": 2}, "b": {"y": 3, "z": 4}}`, want: `{"x": 1, "y": 3, "z": 4}`},
		{name: "shallow replaces nested objects", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": {"n": {"a1": 1}}, "b": {"n": {"a3": 3}}}`, want: `{"n": {"a3": 3}}`},
		{name: "null overrides", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": {"n": {"l": true}, "k": 1}, "b": {"n": null}}`, want: `{"n": null, "k": 1}`},
		{name: "empty left", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": {}, "b": {"x": 1}}`, want: `{"x": 1}`},
		{name: "non-boolean flag from a path merges shallowly", src: `States.JsonMerge($.a, $.b, $.d)`, input: `{"a": {"x": 1}, "b": {}, "d": "false"}`, want: `{"x": 1}`},
		{name: "deep flag from a path", src: `States.JsonMerge($.a, $.b, $.d)`, input: `{"a": {}, "b": {}, "d": true}`, failsIn: "States.JsonMerge"},
		{name: "null first", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": null, "b": {}}`, failsIn: "States.JsonMerge"},
		{name: "array second", src: `States.JsonMerge($.a, $.b, false)`, input: `{"a": {}, "b": []}`, failsIn: "States.JsonMerge"},
	})
	t.Run("inputs are not modified", func(t *testing.T) {
		in := decodeJSON(t, `{"a": {"x": 1}, "b": {"y": 2}}`)
		f, err := compileIntrinsic(`States.JsonMerge($.a, $.b, false)`)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.eval(in, nil); err != nil {
			t.Fatal(err)
		}
		if want := decodeJSON(t, `{"a": {"x": 1}, "b": {"y": 2}}`); !jsonvalue.Equal(in, want) {
			t.Errorf("input after JsonMerge = %s, want %s", show(in), show(want))
		}
	})
}

func TestIntrinsicMathAdd(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "integers", src: `States.MathAdd(5, 3)`, want: `8`},
		{name: "decrement", src: `States.MathAdd($.v, -1)`, input: `{"v": 111}`, want: `110`},
		{name: "rounds each operand", src: `States.MathAdd(1.6, 2.7)`, want: `5`},
		{name: "tiny decimals", src: `States.MathAdd(0.1, 0.2)`, want: `0`},
		{name: "half rounds up", src: `States.MathAdd(0.5, 0)`, want: `1`},
		{name: "negative half rounds up", src: `States.MathAdd(-1.5, 0)`, want: `-1`},
		{name: "negative halves", src: `States.MathAdd(-0.5, 0.5)`, want: `1`},
		{name: "negative beyond half", src: `States.MathAdd(-2.51, 0)`, want: `-3`},
		{name: "long decimal just under a half", src: `States.MathAdd(2.49999999999999999999, 0)`, want: `2`},
		{name: "exponent", src: `States.MathAdd(1.5e1, 25e-1)`, want: `18`},
		{name: "max int32", src: `States.MathAdd(2147483647, 0)`, want: `2147483647`},
		{name: "min int32", src: `States.MathAdd(-2147483648, 0)`, want: `-2147483648`},
		{name: "sum at the top", src: `States.MathAdd(2147483646, 1)`, want: `2147483647`},
		{name: "sum overflows", src: `States.MathAdd(2147483647, 1)`, failsIn: "States.MathAdd"},
		{name: "sum underflows", src: `States.MathAdd(-2147483648, -1)`, failsIn: "States.MathAdd"},
		{name: "operand too large", src: `States.MathAdd(3000000000, 1)`, failsIn: "States.MathAdd"},
		{name: "operand rounds out of range", src: `States.MathAdd(2147483647.5, 0)`, failsIn: "States.MathAdd"},
		{name: "huge exponent", src: `States.MathAdd(1e309, 1)`, failsIn: "States.MathAdd"},
		{name: "string from a path", src: `States.MathAdd($.s, 2)`, input: `{"s": "1"}`, failsIn: "States.MathAdd"},
		{name: "boolean from a path", src: `States.MathAdd(1, $.b)`, input: `{"b": true}`, failsIn: "States.MathAdd"},
		{name: "array from a path", src: `States.MathAdd(1, $.a)`, input: `{"a": [1]}`, failsIn: "States.MathAdd"},
	})
}

func TestIntrinsicMathRandom(t *testing.T) {
	t.Run("unseeded stays in [start, end)", func(t *testing.T) {
		f, err := compileIntrinsic(`States.MathRandom($.s, $.e)`)
		if err != nil {
			t.Fatal(err)
		}
		in := decodeJSON(t, `{"s": 1, "e": 4}`)
		seen := map[int64]bool{}
		for range 300 {
			v, err := f.eval(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, ok := jsonvalue.Int64(v.(json.Number))
			if !ok || n < 1 || n >= 4 {
				t.Fatalf("MathRandom(1, 4) = %v, want an integer in [1, 4)", v)
			}
			seen[n] = true
		}
		if len(seen) != 3 {
			t.Errorf("300 draws of MathRandom(1, 4) gave %v, want each of 1, 2 and 3", seen)
		}
	})
	t.Run("truncated bounds", func(t *testing.T) {
		for range 50 {
			v, err := evalIntrinsic(t, `States.MathRandom(1.6, 2.4)`, ``, nil)
			if err != nil || !jsonvalue.Equal(v, json.Number("1")) {
				t.Fatalf("MathRandom(1.6, 2.4) = %v, %v, want 1 (bounds truncate to [1, 2))", v, err)
			}
		}
	})
	t.Run("seeded is deterministic", func(t *testing.T) {
		a, err := evalIntrinsic(t, `States.Array(States.MathRandom(1, 1000, 42), States.MathRandom(1, 1000, 42))`, ``, nil)
		if err != nil {
			t.Fatal(err)
		}
		pair := a.([]any)
		if !jsonvalue.Equal(pair[0], pair[1]) {
			t.Errorf("two draws with seed 42 = %v, want equal values", pair)
		}
	})
	// The seeded values follow java.util.Random: new Random(seed).nextInt(bound).
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "seed 42", src: `States.MathRandom(0, 10, 42)`, want: `0`},
		{name: "seed 1 bound 1000", src: `States.MathRandom(0, 1000, 1)`, want: `985`},
		{name: "seed 0 power of two", src: `States.MathRandom(0, 16, 0)`, want: `11`},
		{name: "negative seed", src: `States.MathRandom(100, 200, -10)`, want: `183`},
		{name: "seed with start offset", src: `States.MathRandom(-50, 50, 7)`, want: `-14`},
		{name: "equal bounds", src: `States.MathRandom(1, 1)`, failsIn: "States.MathRandom"},
		{name: "bounds truncated equal", src: `States.MathRandom(1.4, 1.6)`, failsIn: "States.MathRandom"},
		{name: "reversed bounds", src: `States.MathRandom(10, 5)`, failsIn: "States.MathRandom"},
		{name: "range wider than an int", src: `States.MathRandom(-2147483648, 2147483647)`, failsIn: "States.MathRandom"},
		{name: "null seed from a path", src: `States.MathRandom(1, 10, $.s)`, input: `{"s": null}`, failsIn: "States.MathRandom"},
		{name: "string start from a path", src: `States.MathRandom($.s, 10)`, input: `{"s": "a"}`, failsIn: "States.MathRandom"},
	})
}

func TestJavaRandom(t *testing.T) {
	// Values printed by OpenJDK 17 for new Random(seed).nextInt(bound).
	tests := []struct {
		seed  int64
		bound int32
		want  int32
	}{
		{42, 10, 0},
		{1, 1000, 985},
		{0, 16, 11},
		{-10, 100, 83},
		{7, 100, 36},
		{123456789, 1 << 30, 713005482},
		{5, 2147483647, 1568779487},
	}
	for _, tc := range tests {
		if got := newJavaRandom(tc.seed).nextInt(tc.bound); got != tc.want {
			t.Errorf("new Random(%d).nextInt(%d) = %d, want %d", tc.seed, tc.bound, got, tc.want)
		}
	}
}

func TestIntrinsicStringSplit(t *testing.T) {
	runIntrinsicCases(t, nil, []intrinsicCase{
		{name: "comma", src: `States.StringSplit('a,b,c', ',')`, want: `["a","b","c"]`},
		{name: "any delimiter character", src: `States.StringSplit('1+2,3.4', '.+,')`, want: `["1","2","3","4"]`},
		{name: "characters, not a substring", src: `States.StringSplit('1a2b3ab4', 'ab')`, want: `["1","2","3","4"]`},
		{name: "drops empty tokens", src: `States.StringSplit(',a,,b,', ',')`, want: `["a","b"]`},
		{name: "only delimiters", src: `States.StringSplit(',', ',')`, want: `[]`},
		{name: "empty string", src: `States.StringSplit('', ',')`, want: `[]`},
		{name: "empty delimiter", src: `States.StringSplit('abc', '')`, want: `["abc"]`},
		{name: "regex characters are literal", src: `States.StringSplit('a|b.c*d', '|.*')`, want: `["a","b","c","d"]`},
		{name: "unicode delimiter", src: `States.StringSplit('a→b→c', '→')`, want: `["a","b","c"]`},
		{name: "escaped brace delimiter", src: `States.StringSplit('a{b}c', '\{\}')`, want: `["a","b","c"]`},
		{name: "not a string", src: `States.StringSplit($.v, ',')`, input: `{"v": 123}`, failsIn: "States.StringSplit"},
		{name: "null delimiter", src: `States.StringSplit('a,b', $.d)`, input: `{"d": null}`, failsIn: "States.StringSplit"},
		{name: "array delimiter", src: `States.StringSplit('a,b', $.d)`, input: `{"d": [","]}`, failsIn: "States.StringSplit"},
	})
}

func TestIntrinsicUUID(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	f, err := compileIntrinsic(`States.UUID()`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 100 {
		v, err := f.eval(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := v.(string)
		if !v4.MatchString(s) {
			t.Fatalf("UUID() = %v, want a version 4 UUID", v)
		}
		if seen[s] {
			t.Fatalf("UUID() returned %s twice", s)
		}
		seen[s] = true
	}
}

func TestIntrinsicExtensions(t *testing.T) {
	env := fakeEnv{ctx: decodeJSON(t, `{"Execution": {"Cost": 0.0125, "TokensUsed": 1500}}`)}
	runIntrinsicCases(t, env, []intrinsicCase{
		// States.ArrayConcat
		{name: "concat", src: `States.ArrayConcat($.a, $.b, States.Array(5))`, input: `{"a": [1, 2], "b": [[3], 4]}`, want: `[1, 2, [3], 4, 5]`},
		{name: "concat empty", src: `States.ArrayConcat($.a, $.a)`, input: `{"a": []}`, want: `[]`},
		{name: "concat not an array", src: `States.ArrayConcat($.a, $.b)`, input: `{"a": [], "b": {}}`, failsIn: "States.ArrayConcat"},

		// States.MathSubtract and States.MathMultiply
		{name: "subtract", src: `States.MathSubtract(10, 3)`, want: `7`},
		{name: "subtract exact decimals", src: `States.MathSubtract(0.3, 0.1)`, want: `0.2`},
		{name: "subtract to negative", src: `States.MathSubtract(1.5, 2.25)`, want: `-0.75`},
		{name: "subtract to zero", src: `States.MathSubtract(-1.50, -1.5)`, want: `0`},
		{name: "subtract big integers", src: `States.MathSubtract(100000000000000000000001, 1)`, want: `100000000000000000000000`},
		{name: "subtract exponents", src: `States.MathSubtract(1e3, 1e-3)`, want: `999.999`},
		{name: "multiply", src: `States.MathMultiply(6, 7)`, want: `42`},
		{name: "multiply exact decimals", src: `States.MathMultiply(0.1, 3)`, want: `0.3`},
		{name: "multiply drops trailing zeros", src: `States.MathMultiply(1.50, 2)`, want: `3`},
		{name: "multiply negative", src: `States.MathMultiply(-0.5, 0.25)`, want: `-0.125`},
		{name: "multiply by zero", src: `States.MathMultiply(-7, 0)`, want: `0`},
		{name: "multiply exponent", src: `States.MathMultiply(2.5e2, 4e-5)`, want: `0.01`},
		{name: "multiply from paths", src: `States.MathMultiply($.p, $.q)`, input: `{"p": 19.99, "q": 3}`, want: `59.97`},
		{name: "multiply exponent out of range", src: `States.MathMultiply(1e20000, 2)`, failsIn: "States.MathMultiply"},
		{name: "subtract not a number", src: `States.MathSubtract($.s, 1)`, input: `{"s": "5"}`, failsIn: "States.MathSubtract"},

		// States.Merge
		{name: "deep merge", src: `States.Merge($.a, $.b)`, input: `{"a": {"x": {"p": 1, "q": 2}, "k": 1}, "b": {"x": {"q": 3, "r": 4}, "m": 2}}`, want: `{"x": {"p": 1, "q": 3, "r": 4}, "k": 1, "m": 2}`},
		{name: "deep merge three", src: `States.Merge($.a, $.b, $.c)`, input: `{"a": {"x": 1}, "b": {"x": 2, "y": 1}, "c": {"y": {"z": 1}}}`, want: `{"x": 2, "y": {"z": 1}}`},
		{name: "deep merge replaces non-objects", src: `States.Merge($.a, $.b)`, input: `{"a": {"x": {"p": 1}, "l": [1]}, "b": {"x": 5, "l": [2]}}`, want: `{"x": 5, "l": [2]}`},
		{name: "merge not an object", src: `States.Merge($.a, $.b)`, input: `{"a": {}, "b": null}`, failsIn: "States.Merge"},

		// States.Pick and States.Omit
		{name: "pick", src: `States.Pick($.o, 'a', 'c', 'missing')`, input: `{"o": {"a": 1, "b": 2, "c": {"d": 3}}}`, want: `{"a": 1, "c": {"d": 3}}`},
		{name: "pick key from a path", src: `States.Pick($.o, $.k)`, input: `{"o": {"a": 1, "b": 2}, "k": "b"}`, want: `{"b": 2}`},
		{name: "pick key not a string", src: `States.Pick($.o, $.k)`, input: `{"o": {"a": 1}, "k": 1}`, failsIn: "States.Pick"},
		{name: "omit", src: `States.Omit($.o, 'a', 'missing')`, input: `{"o": {"a": 1, "b": 2}}`, want: `{"b": 2}`},
		{name: "omit not an object", src: `States.Omit($.o, 'a')`, input: `{"o": [1]}`, failsIn: "States.Omit"},

		// States.Coalesce
		{name: "coalesce", src: `States.Coalesce($.a, $.b, 'default')`, input: `{"a": null, "b": 0}`, want: `0`},
		{name: "coalesce falsy values count", src: `States.Coalesce(null, false)`, want: `false`},
		{name: "coalesce all null", src: `States.Coalesce(null, $.a)`, input: `{"a": null}`, want: `null`},

		// States.TokenCount
		{name: "tokens of a string", src: `States.TokenCount('abcdefghi')`, want: `3`},
		{name: "tokens of an empty string", src: `States.TokenCount('')`, want: `0`},
		{name: "tokens count runes", src: `States.TokenCount('éééé')`, want: `1`},
		{name: "tokens of an object", src: `States.TokenCount($.o)`, input: `{"o": {"a": [1, 2]}}`, want: `3`},

		// States.Truncate
		{name: "truncate", src: `States.Truncate('abcdefghij', 2)`, want: `"abcdefgh..."`},
		{name: "truncate not needed", src: `States.Truncate('abcdefgh', 2)`, want: `"abcdefgh"`},
		{name: "truncate runes", src: `States.Truncate('ééééé', 1)`, want: `"éééé..."`},
		{name: "truncate to nothing", src: `States.Truncate('abc', 0)`, want: `"..."`},
		{name: "truncate empty", src: `States.Truncate('', 0)`, want: `""`},
		{name: "truncate huge limit", src: `States.Truncate('abc', 999999999999999999)`, want: `"abc"`},
		{name: "truncate negative", src: `States.Truncate('abc', -1)`, failsIn: "States.Truncate"},
		{name: "truncate not a string", src: `States.Truncate($.n, 1)`, input: `{"n": 5}`, failsIn: "States.Truncate"},

		// States.CurrentCost and States.CurrentTokens
		{name: "current cost", src: `States.CurrentCost()`, want: `0.0125`},
		{name: "current tokens", src: `States.CurrentTokens()`, want: `1500`},
		{name: "current tokens in a format", src: `States.Format('{} tokens', States.CurrentTokens())`, want: `"1500 tokens"`},
	})
	t.Run("totals absent", func(t *testing.T) {
		for _, ctx := range []string{`null`, `{}`, `{"Execution": {}}`, `{"Execution": {"Cost": "high"}}`} {
			env := fakeEnv{ctx: decodeJSON(t, ctx)}
			for _, src := range []string{`States.CurrentCost()`, `States.CurrentTokens()`} {
				got, err := evalIntrinsic(t, src, ``, env)
				if err != nil || !jsonvalue.Equal(got, json.Number("0")) {
					t.Errorf("%s with context %s = %s, %v, want 0", src, ctx, show(got), err)
				}
			}
		}
	})
}

func TestJavaUTF8(t *testing.T) {
	// Code points printed by OpenJDK 17 for new String(bytes, UTF_8).
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte{0xe2, 0x82}, "\ufffd"},
		{[]byte{0xfb, 0xff, 0xff}, "\ufffd\ufffd\ufffd"},
		{[]byte{0xe0, 0x80, 0x80}, "\ufffd\ufffd\ufffd"},
		{[]byte{0xed, 0xa0, 0x80}, "\ufffd"},
		{[]byte{0xf0, 0x9f, 0x98}, "\ufffd"},
		{[]byte{0xc0, 0xaf}, "\ufffd\ufffd"},
		{[]byte{0xf4, 0x90, 0x80, 0x80}, "\ufffd\ufffd\ufffd\ufffd"},
		{[]byte{0xe2, 0x28, 0xa1}, "\ufffd(\ufffd"},
		{[]byte{0x61, 0xf0, 0x9f, 0x98, 0x80, 0x62}, "a\U0001F600b"},
		{[]byte{0xff, 0x61}, "\ufffda"},
	}
	for _, tc := range tests {
		if got := javaUTF8(tc.in); got != tc.want {
			t.Errorf("javaUTF8(% x) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

func TestToInt(t *testing.T) {
	tests := []struct {
		n           string
		trunc, java int64
		ok          bool
	}{
		{"0", 0, 0, true},
		{"-0", 0, 0, true},
		{"7", 7, 7, true},
		{"2.5", 2, 3, true},
		{"-2.5", -2, -2, true},
		{"-2.51", -2, -3, true},
		{"0.5", 0, 1, true},
		{"-0.5", 0, 0, true},
		{"0.49", 0, 0, true},
		{"0.05", 0, 0, true},
		{"1.5e1", 15, 15, true},
		{"15e-1", 1, 2, true},
		{"1e2", 100, 100, true},
		{"0.0000001e7", 1, 1, true},
		{"123e-5", 0, 0, true},
		{"999999999999999999", 999999999999999999, 999999999999999999, true},
		{"999999999999999999.5", 999999999999999999, 1000000000000000000, true},
		{"1000000000000000000", 0, 0, false},
		{"1e400", 0, 0, false},
		{"1e-400", 0, 0, true},
		{"0e999999999999", 0, 0, true},
		{"abc", 0, 0, false},
	}
	for _, tc := range tests {
		gotT, okT := toInt(json.Number(tc.n), false)
		gotJ, okJ := toInt(json.Number(tc.n), true)
		if okT != tc.ok || okJ != tc.ok || tc.ok && (gotT != tc.trunc || gotJ != tc.java) {
			t.Errorf("toInt(%s) = truncated %d %v, rounded %d %v; want %d, %d, %v", tc.n, gotT, okT, gotJ, okJ, tc.trunc, tc.java, tc.ok)
		}
	}
}

func TestDecimalString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"}, {"-0.000", "0"}, {"1.2300", "1.23"}, {"12e2", "1200"}, {"-5e-3", "-0.005"},
		{"0.1", "0.1"}, {"123.456e1", "1234.56"}, {"100", "100"},
	}
	for _, tc := range tests {
		d, ok := parseExactDecimal(tc.in)
		if !ok {
			t.Errorf("parseExactDecimal(%q) failed", tc.in)
			continue
		}
		if got := d.String(); got != tc.want {
			t.Errorf("parseExactDecimal(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1e", "1e+", "1x", "--1", "1.2.3"} {
		if _, ok := parseExactDecimal(bad); ok {
			t.Errorf("parseExactDecimal(%q) succeeded, want failure", bad)
		}
	}
}

// TestIntrinsicResultsAreIndependent checks that an object built from the
// input can be changed without changing the input.
func TestIntrinsicResultsAreIndependent(t *testing.T) {
	for _, src := range []string{`States.Merge($.a, $.b)`, `States.Pick($.a, 'x')`, `States.Omit($.a, 'y')`, `States.JsonMerge($.a, $.b, false)`} {
		t.Run(src, func(t *testing.T) {
			in := decodeJSON(t, `{"a": {"x": {"n": 1}, "y": 2}, "b": {"x": {"m": 2}}}`)
			f, err := compileIntrinsic(src)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.eval(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			res.(map[string]any)["added"] = true
			if want := decodeJSON(t, `{"a": {"x": {"n": 1}, "y": 2}, "b": {"x": {"m": 2}}}`); !jsonvalue.Equal(in, want) {
				t.Errorf("input after changing the result of %s = %s, want %s", src, show(in), show(want))
			}
		})
	}
}
