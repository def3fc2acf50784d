package jsonvalue

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestCanonicalNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"0", "0"},
		{"-0", "0"},
		{"0.000", "0"},
		{"-0e5", "0"},
		{"2", "2"},
		{"2.0", "2"},
		{"2e0", "2"},
		{"20e-1", "2"},
		{"0.2e1", "2"},
		{"-2.00", "-2"},
		{"0.10", "0.1"},
		{"1.5", "1.5"},
		{"100", "100"},
		{"1e2", "100"},
		{"1E+2", "100"},
		{"12345678901234567890123", "1.2345678901234567890123e22"},
		{"123456789012345678901", "123456789012345678901"},
		{"100000000000000000000", "100000000000000000000"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e21"},
		{"10e20", "1e21"},
		{"1.5e21", "1.5e21"},
		{"1e400", "1e400"},
		{"10e399", "1e400"},
		{"-1e400", "-1e400"},
		{"1e-7", "0.0000001"},
		{"0.0000001", "0.0000001"},
		{"0.00000012", "0.00000012"},
		{"1e-8", "1e-8"},
		{"0.00000001", "1e-8"},
		{"1.50e-8", "1.5e-8"},
		{"-0.000000015", "-1.5e-8"},
		{"1e-400", "1e-400"},
		{"123.4567890123456789", "123.4567890123456789"},
		{"123.45678901234567890000", "123.4567890123456789"},
		{"0.1e-6", "0.0000001"},
		{"1e99999999999999999999", "1e99999999999999999999"},
		{"12.5e99999999999999999999", "1.25e100000000000000000000"},
		{"1e-99999999999999999999", "1e-99999999999999999999"},
		{"0e99999999999999999999", "0"},
	}
	for _, tt := range tests {
		got, err := Canonical(json.Number(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			continue
		}
		if !ValidNumber(string(got)) {
			t.Errorf("Canonical(%s) = %s, not a valid JSON number", tt.in, got)
		}
		if CompareNumbers(json.Number(got), json.Number(tt.in)) != 0 {
			t.Errorf("CompareNumbers(Canonical(%s), %s) != 0", tt.in, tt.in)
		}
	}
}

func TestCanonicalEqualNumbersSameText(t *testing.T) {
	groups := [][]any{
		{json.Number("2"), json.Number("2.0"), json.Number("2e0"), json.Number("20e-1"), 2, int8(2), uint64(2), 2.0, float32(2)},
		{json.Number("0"), json.Number("-0"), json.Number("0.0e10"), 0, 0.0, math.Copysign(0, -1)},
		{json.Number("0.1"), json.Number("0.10"), json.Number("1e-1"), 0.1, float32(0.1)},
		{json.Number("1e21"), json.Number("1000000000000000000000"), 1e21},
		{json.Number("-1.5e-8"), json.Number("-0.000000015"), -1.5e-8},
	}
	for _, g := range groups {
		want, err := Canonical(g[0])
		if err != nil {
			t.Fatalf("Canonical(%v) error: %v", g[0], err)
		}
		for _, v := range g[1:] {
			if got, err := Canonical(v); err != nil || string(got) != string(want) {
				t.Errorf("Canonical(%#v) = %s, %v; want %s", v, got, err, want)
			}
		}
	}
}

func TestCanonicalDocuments(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"compact and sorted", `{ "b" : [ 1.0 , {"y":true, "x": null} ], "a": "s" }`, `{"a":"s","b":[1,{"x":null,"y":true}]}`},
		{"strings in NFC", `["A\u030a", "\u212b", "\u00c5"]`, `["Å","Å","Å"]`},
		{"keys in NFC, sorted by NFC form", `{"\u00c5b":1, "A\u030aa":2, "B":3}`, `{"B":3,"Åa":2,"Åb":1}`},
		{"escapes", `"\u0001\n\/"`, `"\u0001\n/"`},
		{"numbers deep inside", `{"a":[[0.50, -0], {"n": 1E3}]}`, `{"a":[[0.5,0],{"n":1000}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustDecode(t, tt.in)
			got, err := Canonical(v)
			if err != nil || string(got) != tt.want {
				t.Errorf("Canonical(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCanonicalKeyCollision(t *testing.T) {
	// Go code can build a map whose keys are equal after NFC.
	v := map[string]any{"x": map[string]any{"\u00c5": 1, "A\u030a": 2}}
	_, err := Canonical(v)
	var je *JSONError
	if !errors.As(err, &je) || je.Path != "$.x" || je.Offset != -1 {
		t.Errorf("Canonical(NFC-equal keys) error = %v, want a *JSONError at $.x", err)
	}
}

func TestCanonicalErrorUnderNonASCIIKey(t *testing.T) {
	v := map[string]any{"é": map[string]any{"ü": []any{math.NaN()}}}
	_, err := Canonical(v)
	var je *JSONError
	if !errors.As(err, &je) || je.Path != "$['é']['ü'][0]" {
		t.Errorf("Canonical(NaN under non-ASCII keys) error = %v, want a *JSONError at $['é']['ü'][0]", err)
	}
	if got, err := Canonical(map[string]any{"é": map[string]any{}}); err != nil || string(got) != `{"é":{}}` {
		t.Errorf("Canonical({é:{}}) = %s, %v; want {\"é\":{}}", got, err)
	}
}

func TestCanonicalInvalidUTF8(t *testing.T) {
	got, err := Canonical([]any{"a\xffb", map[string]any{"k\xfe": 1}})
	want := "[\"a\uFFFDb\",{\"k\uFFFD\":1}]"
	if err != nil || string(got) != want {
		t.Errorf("Canonical(invalid UTF-8) = %q, %v; want %q", got, err, want)
	}
}

func TestCanonicalHash(t *testing.T) {
	a := mustDecode(t, `{"n": 1.0, "s": "A\u030a", "l": [true, null]}`)
	b := mustDecode(t, `{"l":[true,null],"s":"Å","n":1}`)
	c := mustDecode(t, `{"l":[true,null],"s":"Å","n":2}`)
	ha, err := CanonicalHash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := CanonicalHash(b)
	hc, _ := CanonicalHash(c)
	if ha != hb {
		t.Errorf("CanonicalHash of equal documents differ: %s and %s", ha, hb)
	}
	if ha == hc {
		t.Errorf("CanonicalHash of different documents are both %s", ha)
	}
	// sha256("{}"), lower-case hex.
	if got, _ := CanonicalHash(map[string]any{}); got != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("CanonicalHash({}) = %s, want 44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", got)
	}
	if _, err := CanonicalHash(math.NaN()); err == nil {
		t.Errorf("CanonicalHash(NaN) error = nil, want an error")
	}
}
