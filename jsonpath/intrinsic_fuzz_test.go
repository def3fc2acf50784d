package jsonpath

import (
	"errors"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

const fuzzDocument = `{
	"name": "Ada", "count": 3, "price": 19.99, "flag": true, "none": null,
	"text": "a,b;c d", "json": "{\"k\": [1, 2]}", "b64": "aGVsbG8=",
	"items": [1, 2, 2, "x", {"k": 1}, [3]], "empty": [],
	"obj": {"a": {"b": 1}, "c": [1, 2]}, "other": {"a": {"d": 2}}
}`

// FuzzIntrinsic checks that compiling any text never panics and reports
// only *SyntaxError, and that evaluating what compiles never panics, returns
// a JSON value or fails with an *IntrinsicError or a *PathError.
func FuzzIntrinsic(f *testing.F) {
	for _, seed := range []string{
		`States.Format('Hello {}', $.name)`,
		`States.Format($.text, 1)`,
		`States.Format('\{\} \'{}\' \\', States.UUID())`,
		`States.StringToJson($.json)`,
		`States.JsonToString($.obj)`,
		`States.Array(1, -2.5e3, true, false, null, 'x', $.items, $$.Execution.Cost, $v)`,
		`States.ArrayPartition($.items, 4)`,
		`States.ArrayContains($.items, $.obj)`,
		`States.ArrayRange(1, 9, 2)`,
		`States.ArrayGetItem($.items, 1.5)`,
		`States.ArrayLength($.items)`,
		`States.ArrayGetItem($.obj.['c'], 0)`,
		`States.Format('{}', $.items.[4].k)`,
		`States.ArrayUnique($.items)`,
		`States.Base64Encode($.name)`,
		`States.Base64Decode($.b64)`,
		`States.Hash($.obj, 'SHA-256')`,
		`States.JsonMerge($.obj, $.other, false)`,
		`States.MathRandom(1, 10, 7)`,
		`States.MathAdd($.count, -1.5)`,
		`States.StringSplit($.text, ',; ')`,
		`States.ArrayConcat($.items, $.empty)`,
		`States.MathSubtract($.price, 0.01)`,
		`States.MathMultiply($.price, 1e3)`,
		`States.Merge($.obj, $.other)`,
		`States.Pick($.obj, 'a')`,
		`States.Omit($.obj, 'a')`,
		`States.Coalesce($.none, $.name)`,
		`States.TokenCount($.obj)`,
		`States.Truncate($.text, 1)`,
		`States.CurrentCost()`,
		`States.CurrentTokens()`,
		`States.Array(States.Array(States.Array(States.Array(1))))`,
		`States.Array($['a,b'], $.x[?(@.y > 1)])`,
		`States.Array('unterminated`,
	} {
		f.Add(seed)
	}
	doc := decodeJSON(f, fuzzDocument)
	env := fakeEnv{
		ctx:  decodeJSON(f, `{"Execution": {"Cost": 0.5, "TokensUsed": 10, "Input": {"k": 1}}}`),
		vars: map[string]any{"v": decodeJSON(f, `{"w": [1]}`)},
	}
	f.Fuzz(func(t *testing.T, src string) {
		fn, err := compileIntrinsic(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("compileIntrinsic(%q) error %T %v, want a *SyntaxError", src, err, err)
			}
			return
		}
		v, err := fn.eval(doc, env)
		if err != nil {
			var ie *IntrinsicError
			var pe *PathError
			if !errors.As(err, &ie) && !errors.As(err, &pe) {
				t.Fatalf("eval(%q) error %T %v, want an *IntrinsicError or a *PathError", src, err, err)
			}
			return
		}
		if _, err := jsonvalue.Marshal(v); err != nil {
			t.Fatalf("eval(%q) = %#v, not a JSON value: %v", src, v, err)
		}
	})
}
