package jsonpath

import (
	"encoding/json"
	"strings"
	"testing"
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
	}
	for _, tt := range templates {
		tmpl, err := CompileTemplate(decode(t, tt.src))
		if err != nil {
			t.Fatalf("CompileTemplate(%s): %v", tt.src, err)
		}
		for _, doc := range docs {
			in := decode(t, doc)
			bound, ok := tmpl.SizeBound(Size(in))
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
			if got := Size(out); got > bound {
				t.Errorf("template %s on %s: size %d exceeds bound %d", tt.src, doc, got, bound)
			}
		}
	}
}

func TestSizeCache(t *testing.T) {
	shared := decode(t, `{"text":"`+strings.Repeat("lorem ipsum ", 60)+`","list":[`+strings.Repeat(`{"k":"v","n":1},`, 40)+`{}]}`)
	var c SizeCache
	for i := range 5 {
		// Each round builds a new document around the same shared part.
		doc := map[string]any{"round": IntNumber(int64(i)), "shared": shared, "again": []any{shared, "x"}}
		for _, limit := range []int{10, Size(doc) - 1, Size(doc), 1 << 20} {
			got, within := c.Within(doc, limit)
			want, wantWithin := SizeWithin(doc, limit)
			if within != wantWithin || within && got != want {
				t.Errorf("round %d limit %d: Within = %d, %v; SizeWithin = %d, %v", i, limit, got, within, want, wantWithin)
			}
		}
	}
	if len(c.sizes) == 0 {
		t.Error("the cache remembered nothing")
	}
	for _, v := range []any{nil, "s", []any{}, map[string]any{}, json.Number("1"), []any{1, "a"}} {
		if got, _ := c.Within(v, 100); got != Size(v) {
			t.Errorf("Within(%v) = %d, want %d", v, got, Size(v))
		}
	}
}
