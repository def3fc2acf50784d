package jsonvalue

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeRejects(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"k":`, n) + "1" + strings.Repeat("}", n) }
	tests := []struct {
		name   string
		in     string
		offset int
		path   string
	}{
		{"empty input", ``, 0, "$"},
		{"only whitespace", " \n\t\r ", 5, "$"},
		{"duplicate key", `{"a":[1,2,{"b":1,"b":2}]}`, 17, "$.a[2]"},
		{"duplicate key at root", `{"x":1, "x":1}`, 8, "$"},
		{"duplicate key written with escapes", `{"ab":1,"a\u0062":2}`, 8, "$"},
		{"duplicate key after NFC, composed first", `{"o":{"\u00c5":1,"A\u030a":2}}`, 17, "$.o"},
		{"duplicate key after NFC, decomposed first", `{"A\u030a":1,"Å":2}`, 13, "$"},
		{"duplicate key after NFC, Kelvin sign", `{"K":1,"\u212a":2}`, 7, "$"},
		{"duplicate key after NFC, Kelvin sign first", `{"\u212a":1,"K":2}`, 12, "$"},
		{"duplicate key in a large object", bigObject(40) + `,"k7":0}`, len(bigObject(40)) + 1, "$"},
		{"duplicate NFC key in a large object", bigObject(30) + `,"Å":1,"A\u030a":2}`, len(bigObject(30)) + 8, "$"},
		{"NaN", `NaN`, 0, "$"},
		{"Infinity", `{"a":Infinity}`, 5, "$.a"},
		{"-Infinity", `[1,-Infinity]`, 3, "$[1]"},
		{"+Infinity", `[+Infinity]`, 1, "$[0]"},
		{"undefined", `{"a":undefined}`, 5, "$.a"},
		{"single quotes", `{'a':1}`, 1, "$"},
		{"truncated literal", `[tru]`, 1, "$[0]"},
		{"literal with suffix", `[nullx]`, 1, "$[0]"},
		{"capitalized literal", `True`, 0, "$"},
		{"trailing garbage", `{"a":1} x`, 8, "$"},
		{"second value", `1 2`, 2, "$"},
		{"trailing comma in array", `[1,2,]`, 5, "$[2]"},
		{"trailing comma in object", `{"a":1,}`, 7, "$"},
		{"missing colon", `{"a" 1}`, 5, "$"},
		{"missing comma", `[1 2]`, 3, "$"},
		{"unquoted key", `{a:1}`, 1, "$"},
		{"unclosed array", `[1,2`, 4, "$"},
		{"unclosed object", `{"a":1`, 6, "$"},
		{"unclosed string", `["abc`, 1, "$[0]"},
		{"comment", `[1 /* c */]`, 3, "$"},
		{"depth 65 arrays", deep(65), 64, "$" + strings.Repeat("[0]", 64)},
		{"depth 65 objects", deepObj(65), 64 * 5, "$" + strings.Repeat(".k", 64)},
		{"invalid UTF-8 in string", "[\"a\xffb\"]", 3, "$[0]"},
		{"invalid UTF-8 in key", "{\"\xc3\":1}", 2, "$"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", 1, "$"},
		{"overlong UTF-8", "\"\xc0\xaf\"", 1, "$"},
		{"invalid UTF-8 outside strings", "[1,\xff]", 3, "$[1]"},
		{"byte order mark", "\ufeff{}", 0, "$"},
		{"lone high surrogate", `{"s":"\ud83d"}`, 6, "$.s"},
		{"high surrogate then text", `{"s":"\ud83dx"}`, 6, "$.s"},
		{"high surrogate then high surrogate", `["\ud83d\ud83d"]`, 2, "$[0]"},
		{"lone low surrogate", `["a\ude00"]`, 3, "$[0]"},
		{"bad unicode escape", `["\u12g4"]`, 2, "$[0]"},
		{"short unicode escape", `["\u12"]`, 2, "$[0]"},
		{"bad escape", `["\x41"]`, 2, "$[0]"},
		{"raw tab in string", "[\"a\tb\"]", 3, "$[0]"},
		{"raw newline in key", "{\"a\nb\":1}", 3, "$"},
		{"raw NUL in string", "\"\x00\"", 1, "$"},
		{"leading zero", `[01]`, 1, "$[0]"},
		{"negative leading zero", `{"n":-012}`, 5, "$.n"},
		{"leading zero before fraction", `00.5`, 0, "$"},
		{"no digit after point", `1.`, 2, "$"},
		{"no digit after point, exponent", `[1.e5]`, 3, "$[0]"},
		{"no digit before point", `.5`, 0, "$"},
		{"plus sign", `+1`, 0, "$"},
		{"lone minus", `[-]`, 1, "$[0]"},
		{"no exponent digits", `1e`, 2, "$"},
		{"no exponent digits after sign", `1e+`, 3, "$"},
		{"hex number", `0x10`, 1, "$"},
		{"key path with quote", `{"it's":[x]}`, 9, `$['it\'s'][0]`},
		{"key path with control character", `{"a\u0001b":[x]}`, 13, `$['a\u0001b'][0]`},
		{"key path not identifier", `{"a-b":{"1":{"":[1,}}}`, 19, `$['a-b']['1'][''][1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode([]byte(tt.in))
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("Decode(%q) = %v, %v; want a *JSONError", tt.in, v, err)
			}
			if je.Offset != tt.offset || je.Path != tt.path {
				t.Errorf("Decode(%q) error at byte %d, path %s (%v); want byte %d, path %s", tt.in, je.Offset, je.Path, err, tt.offset, tt.path)
			}
			if v != nil {
				t.Errorf("Decode(%q) value = %v, want nil with the error", tt.in, v)
			}
		})
	}
}

// bigObject returns an unclosed object with n members "k0".."k{n-1}".
func bigObject(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(IntNumber(int64(i))) + `":` + string(IntNumber(int64(i))))
	}
	return b.String()
}

func TestDecodeDepth(t *testing.T) {
	for _, n := range []int{1, 63, MaxDepth} {
		in := strings.Repeat(`[{"a":`, n/2) + strings.Repeat("[", n%2) + "0" + strings.Repeat("]", n%2) + strings.Repeat("}]", n/2)
		v, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(depth %d) error: %v", n, err)
		}
		if got := depthOf(v); got != n {
			t.Errorf("Decode(depth %d) value depth = %d, want %d", n, got, n)
		}
	}
}

func depthOf(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			d = max(d, depthOf(x))
		}
		return d + 1
	case map[string]any:
		for _, x := range v {
			d = max(d, depthOf(x))
		}
		return d + 1
	}
	return 0
}

func TestDecodeValues(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{` true `, true},
		{"\t\r\nfalse\n", false},
		{`0`, json.Number("0")},
		{`-0`, json.Number("-0")},
		{`7`, json.Number("7")},
		{`-7`, json.Number("-7")},
		{`12345678901234567890123`, json.Number("12345678901234567890123")},
		{`0.1`, json.Number("0.1")},
		{`1.0`, json.Number("1.0")},
		{`1e400`, json.Number("1e400")},
		{`-1.5E-07`, json.Number("-1.5E-07")},
		{`1E+2`, json.Number("1E+2")},
		{`123.4567890123456789`, json.Number("123.4567890123456789")},
		{`""`, ""},
		{`"plain"`, "plain"},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{`"\u0041\u00e9\u4e2d"`, "Aé中"},
		{`"\ud83d\ude00 \uD83D\uDE00"`, "😀 😀"},
		{`"\u0000"`, "\x00"},
		{`"é中😀"`, "é中😀"},
		{`"A\u030a"`, "A\u030a"},
		{`"a\u0000b\u001f"`, "a\x00b\x1f"},
		{`"\u2028"`, "\u2028"},
		{"\"\x7f\"", "\x7f"},
		{`[]`, []any{}},
		{`[ ]`, []any{}},
		{`{}`, map[string]any{}},
		{` { } `, map[string]any{}},
		{`[1,"a",[],{}]`, []any{json.Number("1"), "a", []any{}, map[string]any{}}},
		{`{"a":{"b":[null]},"c":true}`, map[string]any{"a": map[string]any{"b": []any{nil}}, "c": true}},
		{`{"A\u030a":1,"\u00c5x":2}`, map[string]any{"A\u030a": json.Number("1"), "Åx": json.Number("2")}},
		{`{"k\"ey":1}`, map[string]any{"k\"ey": json.Number("1")}},
		{`{"":0}`, map[string]any{"": json.Number("0")}},
		{`{"A":1,"a":2}`, map[string]any{"A": json.Number("1"), "a": json.Number("2")}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode(%q) error: %v", tt.in, err)
			}
			if !sameValue(got, tt.want) {
				t.Errorf("Decode(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

// sameValue compares exactly: same types, same number text, same keys.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) || (a == nil) != (b == nil) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			y, ok := b[k]
			if !ok || !sameValue(x, y) {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestDecodeLargeObject(t *testing.T) {
	in := bigObject(100) + "}"
	v, err := Decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode(100 members) error: %v", err)
	}
	m, _ := v.(map[string]any)
	if len(m) != 100 || m["k99"] != json.Number("99") {
		t.Errorf("Decode(100 members) = %d members, k99 = %v; want 100 members, k99 = 99", len(m), m["k99"])
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	// Compact input with sorted keys comes back byte for byte.
	tests := []string{
		`null`, `true`, `0`, `-0`, `0.1`, `1.0`, `1e400`, `-1.25E-8`, `12345678901234567890123`,
		`123.4567890123456789`, `""`, `"a\"b\\c\nd\re\tf\bg\fh\u0001\u001f"`, `"</script>&"`,
		`"é中😀"`, `"a/b"`, `[]`, `{}`, `[[],[{}],[[1]]]`,
		`{"":1,"A":2,"B":[3,{"x":null}],"a":"s","b":true,"é":false}`,
		`{"Arg1":1,"Arg2":[]}`, `[1,2,"HelloWorld"]`,
	}
	for _, in := range tests {
		t.Run(in, func(t *testing.T) {
			v, err := Decode([]byte(in))
			if err != nil {
				t.Fatalf("Decode(%q) error: %v", in, err)
			}
			out, err := Marshal(v)
			if err != nil {
				t.Fatalf("Marshal(Decode(%q)) error: %v", in, err)
			}
			if string(out) != in {
				t.Errorf("Marshal(Decode(%q)) = %s, want the input", in, out)
			}
		})
	}
}

func TestDecodeDoesNotShareInput(t *testing.T) {
	in := []byte(`{"key":["value",12.5]}`)
	v, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'x'
	}
	want := map[string]any{"key": []any{"value", json.Number("12.5")}}
	if !sameValue(v, want) {
		t.Errorf("Decode value after the input changed = %#v, want %#v", v, want)
	}
}

func TestJSONErrorMessage(t *testing.T) {
	tests := []struct {
		err  *JSONError
		want string
	}{
		{&JSONError{Offset: 17, Path: "$.a[2]", Msg: `duplicate key "b"`}, `invalid JSON at byte 17 ($.a[2]): duplicate key "b"`},
		{&JSONError{Offset: -1, Path: "$.a", Msg: "non-finite number NaN"}, `invalid JSON value at $.a: non-finite number NaN`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	_, err := Decode([]byte(`{"a":[1,2,{"b":1,"b":2}]}`))
	if got, want := err.Error(), `invalid JSON at byte 17 ($.a[2]): duplicate key "b"`; got != want {
		t.Errorf("Decode(duplicate) error = %q, want %q", got, want)
	}
}
