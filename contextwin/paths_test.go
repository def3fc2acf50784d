package contextwin

import (
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

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
			doc := map[string]any{}
			cur := any(doc)
			for i, st := range tt.l {
				var v any = "leaf"
				if i < len(tt.l)-1 {
					if tt.l[i+1].isIndex {
						v = make([]any, tt.l[i+1].index+1)
					} else {
						v = map[string]any{}
					}
				}
				if st.isIndex {
					cur.([]any)[st.index] = v
				} else {
					cur.(map[string]any)[st.key] = v
				}
				cur = v
			}
			if len(tt.l) > 0 && !tt.l[0].isIndex {
				locs, err := locate(p, doc)
				if err != nil || len(locs) != 1 || locs[0].String() != got {
					t.Errorf("locate(%s) = %v, %v; want the location itself", got, locs, err)
				}
			}
		})
	}
}

func mustDecode(tb testing.TB, text string) any {
	tb.Helper()
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		tb.Fatalf("Decode(%s): %v", text, err)
	}
	return v
}
