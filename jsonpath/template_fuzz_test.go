package jsonpath

import (
	"errors"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// FuzzTemplate checks that CompileTemplate of any decoded JSON never panics,
// and that Eval of a compiled template never panics.
func FuzzTemplate(f *testing.F) {
	for _, seed := range []string{
		`{"a.$":"$.detail.orderId","b":"$.lit","c":[{"d.$":"$.detail.items[*].sku"}]}`,
		`{"ctx.$":"$$.Execution.Id","v.$":"$v.rows[0]","n.$":"$nope"}`,
		`{"x.$":"$.a[","y.$":5}`,
		`{"a":1,"a.$":"$.x"}`,
		`{"f.$":"States.Format('{}', $.a)"}`,
		`[{"k.$":"$..qty"},null,true,1.5,"s"]`,
		`{"deep":{"deeper":{"deepest.$":"$.detail.items[?(@.price > 10)]"}}}`,
		`"plain"`,
		`{"s.$":"$.detail.items.[0].sku","l.$":"States.ArrayLength($.detail.items.[*])"}`,
	} {
		f.Add([]byte(seed))
	}
	input := decode(f, orderDoc)
	env := testEnv{ctx: input, vars: map[string]any{"v": decode(f, filterDoc)}}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonvalue.Decode(data)
		if err != nil {
			return
		}
		tmpl, err := CompileTemplate(v)
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("CompileTemplate(%s) error %v is not a *TemplateError", data, err)
			}
			_ = err.Error()
			return
		}
		_, _ = tmpl.UsesContext(), tmpl.UsesVariables()
		for _, in := range []any{input, nil, []any{"x"}} {
			if _, err := tmpl.Eval(in, env); err != nil {
				_ = err.Error()
			}
		}
	})
}
