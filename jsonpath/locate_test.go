package jsonpath

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// valueAt returns the value at l in doc.
func valueAt(doc any, l Location) (any, bool) {
	cur := doc
	for _, s := range l {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[s.Key]
			if s.IsIndex || !ok {
				return nil, false
			}
			cur = v
		case []any:
			if !s.IsIndex || s.Index < 0 || s.Index >= len(c) {
				return nil, false
			}
			cur = c[s.Index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// checkLocate checks that Locate finds, in order, the values Get returns,
// and that each location's text selects its value again.
func checkLocate(t *testing.T, path *Path, doc any) []Location {
	t.Helper()
	locs, err := path.Locate(doc)
	if err != nil {
		t.Fatalf("Locate(%s): %v", path, err)
	}
	got, err := path.Get(doc, nil)
	if err != nil {
		// A definite path that selects nothing.
		if len(locs) != 0 {
			t.Fatalf("Locate(%s) = %v, but Get fails: %v", path, locs, err)
		}
		return locs
	}
	want := []any{got}
	if !path.Definite() {
		want, _ = got.([]any)
	}
	if len(locs) != len(want) {
		t.Fatalf("Locate(%s) found %d locations %v, Get %d values", path, len(locs), locs, len(want))
	}
	for i, l := range locs {
		v, ok := valueAt(doc, l)
		if !ok {
			t.Fatalf("Locate(%s)[%d] = %s, which is not in the document", path, i, l)
		}
		if !jsonvalue.Equal(v, want[i]) {
			t.Fatalf("Locate(%s)[%d] = %s holding %v, Get gives %v", path, i, l, v, want[i])
		}
		again, err := Compile(l.String())
		if err != nil {
			t.Fatalf("Compile(%s): %v", l, err)
		}
		if v2, err := again.Get(doc, nil); err != nil || !jsonvalue.Equal(v2, v) {
			t.Fatalf("%s selects %v (%v), want %v", l, v2, err, v)
		}
	}
	return locs
}

func TestLocate(t *testing.T) {
	doc := decode(t, `{
		"a": {"b": [1, 2, {"c": 3}], "d e": "x", "it's": true},
		"é": 1, "😀": 2, "q's": 3, "t\"/\\\b\f\n\r\t": 4,
		"msgs": [
			{"role": "system", "text": "s"},
			{"role": "user", "text": "u1"},
			{"role": "assistant", "text": "a1"},
			{"role": "user", "text": "u1"}
		],
		"n": [[1, 2], [3, 4]],
		"obj": {"k": 5}
	}`)
	tests := []struct {
		path string
		want []string
	}{
		{"$", []string{"$"}},
		{"$.a", []string{"$.a"}},
		{"$.a.b[2].c", []string{"$.a.b[2].c"}},
		{"$.a['d e']", []string{"$.a['d e']"}},
		{`$.a["it's"]`, []string{`$.a['it\'s']`}},
		{"$.a.b[-1]", []string{"$.a.b[2]"}},
		{"$.a.b[5]", nil},
		{"$.missing.x", nil},
		{"$.a.b[0,2,0]", []string{"$.a.b[0]", "$.a.b[2]", "$.a.b[0]"}},
		{"$['a','obj']", []string{"$.a", "$.obj"}},
		{"$.msgs[*].role", []string{"$.msgs[0].role", "$.msgs[1].role", "$.msgs[2].role", "$.msgs[3].role"}},
		{"$.msgs[1:3]", []string{"$.msgs[1]", "$.msgs[2]"}},
		{"$.msgs[::-2]", []string{"$.msgs[3]", "$.msgs[1]"}},
		{"$.msgs[-2:]", []string{"$.msgs[2]", "$.msgs[3]"}},
		{"$.obj.*", []string{"$.obj.k"}},
		{"$..c", []string{"$.a.b[2].c"}},
		{"$..k", []string{"$.obj.k"}},
		{"$.n..[0]", []string{"$.n[0]", "$.n[0][0]", "$.n[1][0]"}},
		{"$.msgs[?(@.role == 'user')]", []string{"$.msgs[1]", "$.msgs[3]"}},
		{"$.msgs[?(@.role == 'user')].text", []string{"$.msgs[1].text", "$.msgs[3].text"}},
		{"$.msgs[?(@.text == ']')]", nil},
		{"$.obj[?(@.k > 1)]", []string{"$.obj"}},
		{"$..[?(@.role == 'assistant')]", []string{"$.msgs[2]"}},
		{"$.n[*][?(@ > 2)]", []string{"$.n[1][0]", "$.n[1][1]"}},
		{"$.msgs[?(@.t[0] == 1)]", nil},
		// A filter's own paths select values without adding locations.
		{"$.msgs[?(@.role in $.msgs[1:3].role)].text", []string{"$.msgs[1].text", "$.msgs[2].text", "$.msgs[3].text"}},
		{"$.msgs[?(@.role == 'user' && $..role)]", []string{"$.msgs[1]", "$.msgs[3]"}},
		{`$['\u00e9', "\ud83d\ude00", 'q\'s', "t\"\/\\\b\f\n\r\t"]`, []string{"$['é']", "$['😀']", `$['q\'s']`, `$['t"/\\\u0008\u000c\u000a\u000d\u0009']`}},
		{"$[ 'a' , 'obj' ][ * ]", []string{"$.a.b", "$.a['d e']", `$.a['it\'s']`, "$.obj.k"}},
		{"$.a.b[ -1 , 0 ]", []string{"$.a.b[2]", "$.a.b[0]"}},
		{"$.msgs[ 1 : : 2 ]", []string{"$.msgs[1]", "$.msgs[3]"}},
		{"$.msgs[:-3:-1]", []string{"$.msgs[3]", "$.msgs[2]"}},
		{"$.msgs[10:]", nil},
		{"$.a.b.c", nil},
		{"$.a[0]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := Compile(tt.path)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.path, err)
			}
			var got []string
			for _, l := range checkLocate(t, p, doc) {
				got = append(got, l.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Locate(%s) = %q, want %q", tt.path, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("Locate(%s) = %q, want %q", tt.path, got, tt.want)
					break
				}
			}
		})
	}
}

func TestLocateRejectsOtherRoots(t *testing.T) {
	for _, src := range []string{"$$.Execution.Id", "$var.x"} {
		p, err := Compile(src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", src, err)
		}
		if locs, err := p.Locate(map[string]any{}); err == nil {
			t.Errorf("Locate(%s) = %v, nil; want an error", src, locs)
		}
	}
}

// FuzzLocate checks that Locate finds, in order, the values Get selects.
func FuzzLocate(f *testing.F) {
	doc := `{"a":{"b":[1,2,{"c":3}],"d e":"x"},"msgs":[{"role":"u","t":"1"},{"role":"a","t":"2"},{"role":"u","t":"1"}],"n":[[1,2],[3,4]]}`
	for _, p := range []string{
		"$", "$.a.b[2].c", "$..c", "$.msgs[?(@.role == 'u')].t", "$.n[*][-1]", "$.msgs[::-1]",
		"$..[?(@ > 1)]", "$['a','msgs'][0]", "$.a..*", "$.msgs[?(@.t == ']')]", "$.n..[0,0]",
	} {
		f.Add(doc, p)
	}
	f.Add(`[[[]],{"":[{}]}]`, "$..*")
	f.Fuzz(func(t *testing.T, text, src string) {
		doc, err := jsonvalue.Decode([]byte(text))
		if err != nil {
			return
		}
		path, err := Compile(src)
		if err != nil || path.IsContext() || path.Variable() != "" {
			return
		}
		checkLocate(t, path, doc)
	})
}
