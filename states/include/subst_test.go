package include

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func testLookup(name string) (any, bool, bool) {
	switch name {
	case "name":
		return "ada", true, true
	case "n":
		return json.Number("3"), true, true
	case "obj":
		return map[string]any{"a": []any{true, nil}}, true, true
	case "unset":
		return nil, true, false
	}
	return nil, false, false
}

// TestSubstitute covers the three filters, whole-string values and the
// runtime's {{$…}} left alone.
func TestSubstitute(t *testing.T) {
	cases := []struct {
		in   string
		want string // the result as JSON
	}{
		{"hello {{name}}", `"hello ada"`},
		{"{{ name | upper }}!", `"ADA!"`},
		{"{{name}}", `"ada"`},
		{"{{name | json}}", `"ada"`},
		{"say {{name | json}}", `"say \"ada\""`},
		{"{{n}}", `3`},
		{"n={{n}}", `"n=3"`},
		{"{{obj}}", `{"a":[true,null]}`},
		{"{{obj | json}}", `{"a":[true,null]}`},
		{"o={{obj}}", `"o={\"a\":[true,null]}"`},
		{"{{unset | default: 'none'}}", `"none"`},
		{"{{unset | default: 'x y' | upper}}", `"X Y"`},
		{"{{name | default: 'none'}}", `"ada"`},
		{"{{$.path}} and {{ $.x }}", `"{{$.path}} and {{ $.x }}"`},
		{"{{$.a}}{{name}}", `"{{$.a}}ada"`},
		{"no placeholders {", `"no placeholders {"`},
		{"{% $states.input %}", `"{% $states.input %}"`},
	}
	for _, c := range cases {
		got, err := substitute(c.in, testLookup)
		if err != nil {
			t.Errorf("substitute(%q): %v", c.in, err)
			continue
		}
		b, _ := jsonvalue.Marshal(got)
		if string(b) != c.want {
			t.Errorf("substitute(%q) = %s, want %s", c.in, b, c.want)
		}
	}
}

// TestSubstituteRefusals: syntax errors are *SyntaxError at the
// placeholder's offset; value errors name the parameter.
func TestSubstituteRefusals(t *testing.T) {
	cases := []struct {
		in     string
		offset int // -1: not a syntax error
	}{
		{"x {{name", 2},
		{"{{}}", 0},
		{"{{name | exec}}", 0},
		{"ab{{name | default 'x'}}", 2},
		{"{{name | default: x}}", 0},
		{"{{name | default: 'x}}", 0},
		{"{{name upper}}", 0},
		{"{{name |}}", 0},
		{"{{nope}}", -1},
		{"{{unset}}", -1},
		{"{{n | upper}}", -1},
	}
	for _, c := range cases {
		_, err := substitute(c.in, testLookup)
		var se *SyntaxError
		switch {
		case err == nil:
			t.Errorf("substitute(%q) = nil error, want one", c.in)
		case c.offset >= 0 && (!errors.As(err, &se) || se.Offset != c.offset):
			t.Errorf("substitute(%q) = %v, want a syntax error at offset %d", c.in, err, c.offset)
		case c.offset < 0 && errors.As(err, &se):
			t.Errorf("substitute(%q) = syntax error %v, want a value error", c.in, err)
		}
	}
}

// FuzzSubstitute never panics, and text without "{{" comes back as is.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"{{name}}", "a {{ n | json }} b", "{{$.x}}", "{{unset | default: 'q' | upper}}", "{{", "}}{{", "{{name | default: '"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := substitute(s, testLookup)
		if err != nil {
			return
		}
		if str, ok := got.(string); ok && !containsOpen(s) && str != s {
			t.Errorf("substitute(%q) = %q, want it unchanged", s, str)
		}
	})
}

func containsOpen(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && s[i+1] == '{' {
			return true
		}
	}
	return false
}
