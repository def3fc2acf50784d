package contextwin

import (
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
)

// valueAt returns the value at l in doc.
func valueAt(doc any, l loc) (any, bool) {
	cur := doc
	for _, s := range l {
		switch c := cur.(type) {
		case map[string]any:
			if s.isIndex {
				return nil, false
			}
			v, ok := c[s.key]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if !s.isIndex || s.index < 0 || s.index >= len(c) {
				return nil, false
			}
			cur = c[s.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// checkLocate checks that locate finds, in order, the values path.Get
// returns.
func checkLocate(t *testing.T, path *jsonpath.Path, doc any) []loc {
	t.Helper()
	locs, err := locate(path, doc)
	if err != nil {
		t.Fatalf("locate(%s) error: %v", path, err)
	}
	got, err := path.Get(doc, nil)
	if err != nil {
		// A definite path that selects nothing.
		if len(locs) != 0 {
			t.Fatalf("locate(%s) = %v, but Get fails: %v", path, locs, err)
		}
		return locs
	}
	want := []any{got}
	if !path.Definite() {
		want, _ = got.([]any)
	}
	if len(locs) != len(want) {
		t.Fatalf("locate(%s) found %d locations %v, Get %d values", path, len(locs), locs, len(want))
	}
	for i, l := range locs {
		v, ok := valueAt(doc, l)
		if !ok {
			t.Fatalf("locate(%s)[%d] = %s, which is not in the document", path, i, l)
		}
		if !same(v, want[i]) {
			t.Fatalf("locate(%s)[%d] = %s holding %v, Get gives %v", path, i, l, v, want[i])
		}
	}
	return locs
}

func TestLocate(t *testing.T) {
	doc := mustDecode(t, `{
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
			p, err := jsonpath.Compile(tt.path)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.path, err)
			}
			locs := checkLocate(t, p, doc)
			var got []string
			for _, l := range locs {
				got = append(got, l.String())
			}
			if !equalStrings(got, tt.want) {
				t.Errorf("locate(%s) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestLocateRejectsOtherRoots(t *testing.T) {
	for _, src := range []string{"$$.Execution.Id", "$var.x"} {
		t.Run(src, func(t *testing.T) {
			p, err := jsonpath.Compile(src)
			if err != nil {
				t.Fatalf("Compile(%q): %v", src, err)
			}
			if locs, err := locate(p, map[string]any{}); err == nil {
				t.Errorf("locate(%s) = %v, nil; want an error", src, locs)
			}
		})
	}
}

func TestLocString(t *testing.T) {
	tests := []struct {
		l    loc
		want string
	}{
		{nil, "$"},
		{loc{{key: "a"}, {index: 3, isIndex: true}, {key: "b_1"}}, "$.a[3].b_1"},
		{loc{{key: "1a"}}, "$['1a']"},
		{loc{{key: ""}}, "$['']"},
		{loc{{key: "a-b"}}, "$['a-b']"},
		{loc{{key: "it's\n\\\x01"}}, `$['it\'s\u000a\\\u0001']`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := tt.l.String()
			if got != tt.want {
				t.Errorf("String() = %s, want %s", got, tt.want)
			}
			// The text is a path that selects the location again.
			p, err := jsonpath.Compile(got)
			if err != nil {
				t.Fatalf("Compile(%s): %v", got, err)
			}
			segs, err := parseSegments(p)
			if err != nil {
				t.Fatalf("parseSegments(%s): %v", got, err)
			}
			if len(segs) != len(tt.l) {
				t.Fatalf("parseSegments(%s) gives %d segments, want %d", got, len(segs), len(tt.l))
			}
			for i, s := range segs {
				st := tt.l[i]
				if st.isIndex && (s.kind != segIndex || s.indexes[0] != st.index) ||
					!st.isIndex && (s.kind != segName || s.names[0] != st.key) {
					t.Errorf("segment %d of %s = %+v, want %+v", i, got, s, st)
				}
			}
		})
	}
}

func mustDecode(tb testing.TB, text string) any {
	tb.Helper()
	v, err := jsonpath.Decode([]byte(text))
	if err != nil {
		tb.Fatalf("Decode(%s): %v", text, err)
	}
	return v
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
