package jsonpath

import "testing"

func benchmarkIntrinsic(b *testing.B, src, input string) {
	f, err := compileIntrinsic(src)
	if err != nil {
		b.Fatal(err)
	}
	doc := decodeJSON(b, input)
	if _, err := f.eval(doc, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.eval(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntrinsicFormat is a typical template with two path arguments.
func BenchmarkIntrinsicFormat(b *testing.B) {
	benchmarkIntrinsic(b, `States.Format('Hello {}, you have {} new messages', $.user.name, $.user.unread)`,
		`{"user": {"name": "Ada Lovelace", "unread": 42, "id": "u-123"}, "other": [1, 2, 3]}`)
}

// BenchmarkIntrinsicNested is AWS's nine-call example: Format over
// ArrayGetItem over StringSplit, twice.
func BenchmarkIntrinsicNested(b *testing.B) {
	benchmarkIntrinsic(b, `States.Format('{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 1))`,
		`{"ImageRecipe": {"Arn": "arn:aws:imagebuilder:us-east-1:123456789012:image-recipe/my-recipe/1.0.3"}}`)
}

// BenchmarkCompileIntrinsic measures compiling the nested example.
func BenchmarkCompileIntrinsic(b *testing.B) {
	const src = `States.Format('{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 1))`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compileIntrinsic(src); err != nil {
			b.Fatal(err)
		}
	}
}
