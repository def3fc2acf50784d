package jsonvalue

import "testing"

func TestWrittenPaths(t *testing.T) {
	cases := []struct {
		key, want string
	}{
		{"name", ".name"},
		{"_x9", "._x9"},
		{"9lives", "['9lives']"},
		{"it's", `['it\'s']`},
		{`back\slash`, `['back\\slash']`},
		{"tab\there", `['tab\u0009here']`},
		{"é", "['é']"},
		{"bad\xffutf8", "['bad\uFFFDutf8']"},
		{"", "['']"},
	}
	for _, c := range cases {
		if got := string(AppendMember([]byte("$"), c.key)); got != "$"+c.want {
			t.Errorf("AppendMember(%q) = %s, want $%s", c.key, got, c.want)
		}
	}
	if got := string(AppendIndex([]byte("$.a"), 12)); got != "$.a[12]" {
		t.Errorf("AppendIndex = %s", got)
	}
}

func TestEscapePointer(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a/b": "a~1b", "~": "~0", "~1": "~01", "/~": "~1~0", "": ""} {
		if got := EscapePointer(in); got != want {
			t.Errorf("EscapePointer(%q) = %q, want %q", in, got, want)
		}
	}
}
