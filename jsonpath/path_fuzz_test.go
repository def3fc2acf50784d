package jsonpath

import (
	"errors"
	"testing"
)

// FuzzCompile checks that Compile never panics, and that a compiled path's
// Get (and Set, for reference paths) never panics on a fixed document and
// keeps its contract.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"$", "$$", "$.a.b[2].c", "$.detail-type", "$$.Execution.Input.input-values",
		"$v.lines[0]", "$['a','b']", "$[0,-1]", "$[*]", "$.*", "$[1:5]", "$[::-2]",
		"$..sku", "$..*", "$..[0]", "$.detail.items[?(@.qty > 1 && @.sku =~ /a.*/i)].sku",
		"$.rows[?(@.v in [1,'x',null] || !@.w)]", "$.rows[?(@.v <= $.limit)]",
		`$['it\'s']["q\"d"]['\u00fc']`, "$.a[", "$[?(", "$[?(@.a == 'x)]", "$x-y",
		"$.rows[?(@.v[?(@ == 'a')])]", "$..[?(@.price < 10)]", "$[-1:-5:-1]",
		"$.Snapshots.[0].State", "$.[0]", "$.a.['b'].[*]", "$.a.[", "$.a.", "$.rows[?(@.v.[0] == 1)]",
	} {
		f.Add(seed)
	}
	doc := decode(f, orderDoc)
	rows := decode(f, filterDoc)
	env := testEnv{ctx: doc, vars: map[string]any{"v": rows, "lines": doc}}
	f.Fuzz(func(t *testing.T, expr string) {
		p, err := Compile(expr)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Compile(%q) error %v is not a *SyntaxError", expr, err)
			}
			if se.Offset < 0 || se.Offset > len(expr) {
				t.Fatalf("Compile(%q) error offset %d is outside the expression", expr, se.Offset)
			}
			return
		}
		if p.String() != expr {
			t.Fatalf("String() = %q, want %q", p.String(), expr)
		}
		for _, input := range []any{doc, rows, nil, "text", []any{}} {
			got, err := p.Get(input, env)
			if err != nil {
				var pe *PathError
				if !errors.As(err, &pe) || !p.Definite() && p.Variable() == "" {
					t.Fatalf("Get(%q) = %v; only a definite path may fail, with a *PathError", expr, err)
				}
				_ = err.Error()
				continue
			}
			if !p.Definite() {
				if list, ok := got.([]any); !ok || list == nil {
					t.Fatalf("Get(%q) = %#v, want a non-nil []any for an indefinite path", expr, got)
				}
			}
		}
		ref, err := CompileReference(expr)
		if err != nil {
			return
		}
		before := compact(t, doc)
		if _, err := ref.Set(doc, "value"); err != nil {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Set(%q) = %v, want a *PathError", expr, err)
			}
			_ = err.Error()
		}
		if after := compact(t, doc); after != before {
			t.Fatalf("Set(%q) modified the document", expr)
		}
	})
}
