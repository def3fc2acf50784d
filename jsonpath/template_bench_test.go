package jsonpath

import "testing"

func BenchmarkTemplateEval(b *testing.B) {
	doc := benchDoc(b)
	tmpl, err := CompileTemplate(decode(b, `{
		"orderId.$": "$.order.id",
		"customer.$": "$.order.customer.name",
		"tier.$": "$.order.customer.tier",
		"first.$": "$.order.items[0].sku",
		"target.$": "$.a.b[2].c",
		"source": "benchmark",
		"static": {"version": 2, "flags": ["a", "b"]}
	}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Eval(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}
