package jsonvalue

import "testing"

func TestCombine(t *testing.T) {
	cases := []struct{ old, add, want string }{
		{`{"a":1,"b":{"x":1,"l":[1]}}`, `{"b":{"y":2,"l":[2]},"c":3}`, `{"a":1,"b":{"l":[1,2],"x":1,"y":2},"c":3}`},
		{`[1,2]`, `[3]`, `[1,2,3]`},
		{`[1,2]`, `{"a":1}`, `{"a":1}`},
		{`{"a":1}`, `[1]`, `[1]`},
		{`"s"`, `2`, `2`},
		{`null`, `{"a":1}`, `{"a":1}`},
		{`{"a":{"b":1}}`, `{"a":null}`, `{"a":null}`},
	}
	for _, c := range cases {
		old, add := mustDecode(t, c.old), mustDecode(t, c.add)
		got := Combine(old, add)
		if !Equal(got, mustDecode(t, c.want)) {
			b, _ := Marshal(got)
			t.Errorf("Combine(%s, %s) = %s, want %s", c.old, c.add, b, c.want)
		}
		if b, _ := Marshal(old); !Equal(old, mustDecode(t, c.old)) {
			t.Errorf("Combine changed old to %s", b)
		}
	}
}
