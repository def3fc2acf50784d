package jsonvalue

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, `null`},
		{"true", true, `true`},
		{"false", false, `false`},
		{"number text kept", json.Number("1.50e+3"), `1.50e+3`},
		{"big number", json.Number("12345678901234567890123"), `12345678901234567890123`},
		{"empty string", "", `""`},
		{"minimal escapes", "\"\\\n\r\t\b\f", `"\"\\\n\r\t\b\f"`},
		{"other control characters", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"DEL kept", "\x7f", "\"\x7f\""},
		{"no HTML escaping", "<a href='x'>&</a>", `"<a href='x'>&</a>"`},
		{"slash kept", "a/b", `"a/b"`},
		{"non-ASCII kept", "é中😀\u2028\u2029", "\"é中😀\u2028\u2029\""},
		{"invalid UTF-8 replaced per byte", "a\xffb\xc3", "\"a\uFFFDb\uFFFD\""},
		{"empty array", []any{}, `[]`},
		{"nil array", []any(nil), `[]`},
		{"empty object", map[string]any{}, `{}`},
		{"nil object", map[string]any(nil), `{}`},
		{"keys sorted by bytes", map[string]any{"b": 1, "a": 2, "B": 3, "é": 4, "": 5, "aa": 6}, `{"":5,"B":3,"a":2,"aa":6,"b":1,"é":4}`},
		{"escaped key", map[string]any{"a\"b\n": nil}, `{"a\"b\n":null}`},
		{"nested", map[string]any{"a": []any{1, "x", map[string]any{"c": []any{}}}}, `{"a":[1,"x",{"c":[]}]}`},
		{"int", int(-5), `-5`},
		{"int8", int8(-128), `-128`},
		{"int16", int16(300), `300`},
		{"int32", int32(-70000), `-70000`},
		{"int64", int64(math.MinInt64), `-9223372036854775808`},
		{"uint", uint(7), `7`},
		{"uint8", uint8(255), `255`},
		{"uint16", uint16(65535), `65535`},
		{"uint32", uint32(math.MaxUint32), `4294967295`},
		{"uint64", uint64(math.MaxUint64), `18446744073709551615`},
		{"float64 integral", 3.0, `3`},
		{"float64", 0.1, `0.1`},
		{"float64 large", 1e21, `1e21`},
		{"float64 small", 1e-8, `1e-8`},
		{"float64 negative zero", math.Copysign(0, -1), `0`},
		{"float32", float32(0.1), `0.1`},
		{"float32 integral", float32(16777216), `16777216`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatalf("Marshal(%#v) error: %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal(%#v) = %s, want %s", tt.in, got, tt.want)
			}
			if n := Size(tt.in); n != len(got) {
				t.Errorf("Size(%#v) = %d, want %d", tt.in, n, len(got))
			}
			if _, err := Decode(got); err != nil {
				t.Errorf("Decode(Marshal(%#v)) error: %v", tt.in, err)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	deep := any(nil)
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		in   any
		path string
	}{
		{"NaN", map[string]any{"a": math.NaN()}, "$.a"},
		{"+Inf", []any{1, math.Inf(1)}, "$[1]"},
		{"-Inf float32", map[string]any{"x y": []any{float32(math.Inf(-1))}}, "$['x y'][0]"},
		{"invalid number text", map[string]any{"n": json.Number("NaN")}, "$.n"},
		{"empty number text", []any{json.Number("")}, "$[0]"},
		{"unsupported type", map[string]any{"a": map[string]any{"b": []string{"x"}}}, "$.a.b"},
		{"struct", struct{ A int }{1}, "$"},
		{"channel", []any{make(chan int)}, "$[0]"},
		{"too deep", deep, "$" + strings.Repeat("[0]", MaxDepth)},
		{"cyclic", cyclic, "$" + strings.Repeat(".self", MaxDepth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("Marshal(%s) = %s, %v; want a *JSONError", tt.name, got, err)
			}
			if je.Offset != -1 || je.Path != tt.path {
				t.Errorf("Marshal(%s) error offset %d, path %s (%v); want -1, %s", tt.name, je.Offset, je.Path, err, tt.path)
			}
			if n := Size(tt.in); n != -1 {
				t.Errorf("Size(%s) = %d, want -1", tt.name, n)
			}
			if _, err := Canonical(tt.in); !errors.As(err, &je) || je.Path != tt.path {
				t.Errorf("Canonical(%s) error = %v, want a *JSONError at %s", tt.name, err, tt.path)
			}
		})
	}
}

func TestMarshalDepth(t *testing.T) {
	v := any("leaf")
	for range MaxDepth {
		v = map[string]any{"k": v}
	}
	out, err := Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(depth %d) error: %v", MaxDepth, err)
	}
	if _, err := Decode(out); err != nil {
		t.Errorf("Decode(Marshal(depth %d)) error: %v", MaxDepth, err)
	}
}

func TestAppendJSON(t *testing.T) {
	dst := []byte("prefix:")
	got, err := AppendJSON(dst, map[string]any{"a": []any{true}})
	if err != nil || string(got) != `prefix:{"a":[true]}` {
		t.Errorf("AppendJSON = %s, %v; want prefix:{\"a\":[true]}, nil", got, err)
	}
	got, err = AppendJSON(dst, []any{1, math.NaN()})
	if err == nil || string(got) != "prefix:" {
		t.Errorf("AppendJSON(NaN) = %s, %v; want prefix:, an error", got, err)
	}
}

func TestMarshalIndent(t *testing.T) {
	tests := []struct {
		name   string
		in     any
		indent string
		want   string
	}{
		{"scalar", json.Number("1.0"), "  ", `1.0`},
		{"empty containers", map[string]any{"a": []any{}, "b": map[string]any{}}, "  ", "{\n  \"a\": [],\n  \"b\": {}\n}"},
		{"nested", map[string]any{"b": []any{1, map[string]any{"c": nil}}, "a": "x"}, "\t",
			"{\n\t\"a\": \"x\",\n\t\"b\": [\n\t\t1,\n\t\t{\n\t\t\t\"c\": null\n\t\t}\n\t]\n}"},
		{"no indent", []any{1, 2}, "", "[\n1,\n2\n]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MarshalIndent(tt.in, tt.indent)
			if err != nil {
				t.Fatalf("MarshalIndent error: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("MarshalIndent(%#v, %q) = %q, want %q", tt.in, tt.indent, got, tt.want)
			}
			back, err := Decode(got)
			if err != nil || !Equal(back, tt.in) {
				t.Errorf("Decode(MarshalIndent(%#v)) = %v, %v; want the value back", tt.in, back, err)
			}
		})
	}
	if _, err := MarshalIndent(map[string]any{"a": math.Inf(1)}, " "); err == nil {
		t.Errorf("MarshalIndent(+Inf) error = nil, want an error")
	}
}

func TestSize(t *testing.T) {
	doc := mustDecode(t, sampleDocument)
	values := []any{
		nil, true, false, "", "x", "\x00\n\"\\é😀\xff", json.Number("-1.5e10"),
		[]any{}, []any{nil}, []any{1, 2, 3}, map[string]any{}, map[string]any{"a": 1},
		map[string]any{"a\n": []any{"b", map[string]any{"\x01": false}}},
		int8(-1), uint64(math.MaxUint64), int64(math.MinInt64), 0.1, float32(1.5), 1e300, 1e-300,
		doc,
	}
	for _, v := range values {
		out, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%#v) error: %v", v, err)
		}
		if got := Size(v); got != len(out) {
			t.Errorf("Size(%#v) = %d, want %d", v, got, len(out))
		}
		for _, limit := range []int{0, len(out) - 1, len(out), len(out) + 1} {
			if got, want := SizeExceeds(v, limit), len(out) > limit; got != want {
				t.Errorf("SizeExceeds(%#v, %d) = %v, want %v", v, limit, got, want)
			}
			n, within := SizeWithin(v, limit)
			if within != (len(out) <= limit) || within && n != len(out) || !within && n <= limit {
				t.Errorf("SizeWithin(%#v, %d) = %d, %v; size is %d", v, limit, n, within, len(out))
			}
		}
	}
}

func TestSizeExceedsStopsEarly(t *testing.T) {
	// A value that cannot be marshalled after the limit is passed still
	// exceeds it: the walk stopped before reaching the problem.
	v := []any{strings.Repeat("x", 100), make(chan int)}
	if !SizeExceeds(v, 50) {
		t.Errorf("SizeExceeds(long prefix then bad value, 50) = false, want true")
	}
	if SizeExceeds(v, 1000) {
		t.Errorf("SizeExceeds(long prefix then bad value, 1000) = true, want false")
	}
}

func TestSizeDoesNotAllocate(t *testing.T) {
	doc := mustDecode(t, sampleDocument)
	allocs := testing.AllocsPerRun(100, func() {
		Size(doc)
		SizeExceeds(doc, 262144)
		Size([]any{1, 2.5, float32(3), uint64(4)})
	})
	if allocs != 0 {
		t.Errorf("Size and SizeExceeds allocate %v times per run, want 0", allocs)
	}
}

func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%q) error: %v", s, err)
	}
	return v
}
