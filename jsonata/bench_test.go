package jsonata

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// BenchmarkEval measures one Output evaluated on a state input of about
// 1 KiB: the input's conversion to doubles, the binding of $states and the
// evaluation.
func BenchmarkEval(b *testing.B) {
	var items []string
	for i := range 20 {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item-%d","price":%d.25}`, i, i, i))
	}
	input, err := jsonvalue.Decode([]byte(`{"order":"A-1","items":[` + strings.Join(items, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, tmpl string }{
		{"field", `{"order":"{% $states.input.order %}"}`},
		{"sum", `"{% $sum($states.input.items.price) %}"`},
		{"literal", `{"a":1,"b":[true,"x"]}`},
		{"map", `"{% $sum($map($states.input.items[price > 5], function($i){ $i.price * 2 })) %}"`},
		{"object", `"{% $states.input.items{ name: id } %}"`},
	} {
		v, err := jsonvalue.Decode([]byte(tc.tmpl))
		if err != nil {
			b.Fatal(err)
		}
		t, err := CompileTemplate(v, "Output")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.Eval(b.Context(), &Scope{Input: input}, "Output"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvalParallel evaluates one expression from as many goroutines
// as GOMAXPROCS: with no process-wide lock, evaluations run side by side.
func BenchmarkEvalParallel(b *testing.B) {
	t, err := CompileTemplate("{% $sum([1..200].($ * 2)) %}", "Output")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := t.Eval(b.Context(), &Scope{}, "Output"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
