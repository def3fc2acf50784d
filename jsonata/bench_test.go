package jsonata

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// BenchmarkEval measures one Output evaluated on a state input of about
// 1 KiB: the input's conversion to doubles, the binding of $states and the
// library's evaluation.
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
