package jsonpath

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func TestTemplateSizeBound(t *testing.T) {
	docs := []string{
		`{"a":"xxxxxxxxxx","n":[1,2,3,{"k":"v"}],"o":{"p":{"q":[true,null,"s"]}},"s":"é\n\"q\""}`,
		`{"a":[],"n":[],"o":{},"s":""}`,
		`{"a":{"b":{"c":["deep","er"]}},"n":[0,1,2,3,4,5,6,7,8,9],"o":{"p":1},"s":"\u0001"}`,
	}
	templates := []struct {
		src     string
		bounded bool
	}{
		{`{"lit":"x","n":1}`, true},
		{`{"a.$":"$.a","b.$":"$.a","whole.$":"$"}`, true},
		{`{"list":[{"x.$":"$.n"},"lit",{"y.$":"$.o.p"}]}`, true},
		{`{"all.$":"$.n[*]","some.$":"$.n[0,0,1]","f.$":"$.n[?(@ > 1)]"}`, true},
		{`{"s.$":"$.n[1:3]","keys.$":"$['a','s','a']"}`, true},
		{`{"deep.$":"$..q"}`, false},
		{`{"c.$":"$$.Execution.Id"}`, false},
		{`{"v.$":"$x"}`, false},
		{`{"f.$":"States.Array($.a)"}`, false},
		{`{"sum.$":"States.MathAdd(-2147483647, -1)","len.$":"States.ArrayLength($.n)","has.$":"States.ArrayContains($.n, 1)","id.$":"States.UUID()"}`, true},
		{`{"sum.$":"States.MathAdd($.o.p, 2147483646)","ctx.$":"States.MathAdd($$.Map.Item.Index, 1)"}`, true},
		{`{"f.$":"States.Format('{}', States.MathAdd(1, 2))"}`, false},
	}
	for _, tt := range templates {
		tmpl, err := CompileTemplate(decode(t, tt.src))
		if err != nil {
			t.Fatalf("CompileTemplate(%s): %v", tt.src, err)
		}
		for _, doc := range docs {
			in := decode(t, doc)
			bound, ok := tmpl.SizeBound(jsonvalue.Size(in))
			if ok != tt.bounded {
				t.Fatalf("SizeBound of %s: ok = %v, want %v", tt.src, ok, tt.bounded)
			}
			if !ok {
				continue
			}
			out, err := tmpl.Eval(in, nil)
			if err != nil {
				continue // a definite path missing in this document
			}
			if got := jsonvalue.Size(out); got > bound {
				t.Errorf("template %s on %s: size %d exceeds bound %d", tt.src, doc, got, bound)
			}
		}
	}
}
