package jsonpath

import (
	"strings"
	"testing"
)

// benchDoc is a document of about 1 KiB with the shapes the benchmarks use.
func benchDoc(b *testing.B) any {
	b.Helper()
	var items []string
	for i := range 8 {
		items = append(items, `{"sku":"SKU-000`+string(rune('0'+i))+`","name":"item","price":`+string(rune('1'+i))+`.5,"qty":`+string(rune('0'+i))+`}`)
	}
	text := `{"a":{"b":[{"c":0},{"c":1},{"c":"target","d":true}],"e":"padding padding padding"},` +
		`"order":{"id":"o-123456","customer":{"id":"c-42","name":"Ana Lopez","tier":"gold"},` +
		`"items":[` + strings.Join(items, ",") + `]},` +
		`"meta":{"source":"benchmark","tags":["x","y","z"],"notes":"` + strings.Repeat("n", 350) + `"}}`
	doc := decode(b, text)
	if n := len(compact(b, doc)); n < 900 || n > 1200 {
		b.Fatalf("benchmark document is %d bytes, want about 1 KiB", n)
	}
	return doc
}

func BenchmarkPathGetPlain1KiB(b *testing.B) {
	doc := benchDoc(b)
	p := mustCompile(b, "$.a.b[2].c")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Get(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathGetFilter1KiB(b *testing.B) {
	doc := benchDoc(b)
	p := mustCompile(b, "$.order.items[?(@.price < 5 && @.qty > 0)].sku")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Get(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathSet(b *testing.B) {
	doc := benchDoc(b)
	p, err := CompileReference("$.order.result.status")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Set(doc, "done"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPathGetFilterStrings1KiB is the filter benchmark without number
// comparisons, to separate the walk from the cost of CompareNumbers.
func BenchmarkPathGetFilterStrings1KiB(b *testing.B) {
	doc := benchDoc(b)
	p := mustCompile(b, "$.order.items[?(@.name == 'item' && @.sku != 'SKU-0003')].sku")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Get(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathGetWildcard1KiB(b *testing.B) {
	doc := benchDoc(b)
	p := mustCompile(b, "$.order.items[*].sku")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Get(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathGetDeepScan1KiB(b *testing.B) {
	doc := benchDoc(b)
	p := mustCompile(b, "$..sku")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Get(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathCompileFilter(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("$.order.items[?(@.price < 5 && @.qty > 0)].sku"); err != nil {
			b.Fatal(err)
		}
	}
}
