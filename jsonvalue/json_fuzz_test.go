package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// fuzzSeeds are inputs at the edges of the grammar and of each rule.
var fuzzSeeds = []string{
	``, ` `, `null`, `true`, `false`, `0`, `-0`, `1`, `-1.5e-10`, `1e400`, `1E+2`,
	`12345678901234567890123`, `123.4567890123456789`, `0.1`, `1.0`, `2e0`, `20e-1`,
	`01`, `1.`, `.5`, `+1`, `-`, `1e`, `NaN`, `Infinity`, `-Infinity`, `nul`, `truex`,
	`""`, `"\""`, `"\\\/\b\f\n\r\t"`, `"\u0000\u001f"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`,
	`"\uD83D\u0041"`, "\"\xff\"", "\"\xed\xa0\x80\"", "\"a\tb\"", `"é"`, `"A\u030a"`, `"\u212b"`,
	`[]`, `{}`, `[1,2,]`, `{"a":1,}`, `{"a":1,"a":2}`, `{"\u00c5":1,"A\u030a":2}`, `{"K":1,"\u212a":2}`,
	`{"a":{"b":[1,{"c":null}]}}`, `[[[[[[[[[[]]]]]]]]]]`, strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65), `{"a" 1}`, `[1 2]`, `{"a":1} x`, `1 2`,
	"\ufeff{}", `{"it's":"x"}`, sampleDocument,
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("Decode(%q) error %v is not a *JSONError", data, err)
			}
			if je.Offset < 0 || je.Offset > len(data) || !strings.HasPrefix(je.Path, "$") {
				t.Fatalf("Decode(%q) error has offset %d, path %q; want 0..%d and a $ path", data, je.Offset, je.Path, len(data))
			}
			return
		}
		// Strict JSON is JSON: encoding/json must accept all we accept.
		if !json.Valid(data) {
			t.Fatalf("Decode(%q) accepted text that encoding/json rejects", data)
		}
		out, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(Decode(%q)) error: %v", data, err)
		}
		if n := Size(v); n != len(out) {
			t.Fatalf("Size(Decode(%q)) = %d, want len(Marshal) = %d", data, n, len(out))
		}
		if SizeExceeds(v, len(out)) || !SizeExceeds(v, len(out)-1) {
			t.Fatalf("SizeExceeds(Decode(%q)) disagrees with len(Marshal) = %d", data, len(out))
		}
		back, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode(Marshal(Decode(%q))) = Decode(%s) error: %v", data, out, err)
		}
		if !Equal(back, v) || !sameValue(back, v) {
			t.Fatalf("Decode(Marshal(Decode(%q))) = %#v, want %#v", data, back, v)
		}
		again, err := Marshal(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Marshal is not stable for %q: %s then %s (%v)", data, out, again, err)
		}
		pretty, err := MarshalIndent(v, "  ")
		if err != nil {
			t.Fatalf("MarshalIndent(Decode(%q)) error: %v", data, err)
		}
		if pv, err := Decode(pretty); err != nil || !sameValue(pv, v) {
			t.Fatalf("Decode(MarshalIndent(Decode(%q))) = %#v, %v; want %#v", data, pv, err, v)
		}
		if c := Clone(v); !sameValue(c, v) {
			t.Fatalf("Clone(Decode(%q)) = %#v, want %#v", data, c, v)
		}
		if nv, err := Normalize(v); err != nil || !sameValue(nv, v) {
			t.Fatalf("Normalize(Decode(%q)) = %#v, %v; want the same value", data, nv, err)
		}
		checkCanonicalStable(t, data, v, back)
	})
}

// checkCanonicalStable checks that equal values share one canonical form and
// that the canonical form is a fixed point.
func checkCanonicalStable(t *testing.T, data []byte, v, back any) {
	t.Helper()
	c1, err := Canonical(v)
	if err != nil {
		t.Fatalf("Canonical(Decode(%q)) error: %v", data, err)
	}
	c2, err := Canonical(back)
	if err != nil || !bytes.Equal(c1, c2) {
		t.Fatalf("Canonical differs after a round trip of %q: %s and %s (%v)", data, c1, c2, err)
	}
	cv, err := Decode(c1)
	if err != nil {
		t.Fatalf("Decode(Canonical(Decode(%q))) = Decode(%s) error: %v", data, c1, err)
	}
	c3, err := Canonical(cv)
	if err != nil || !bytes.Equal(c1, c3) {
		t.Fatalf("Canonical is not a fixed point for %q: %s then %s (%v)", data, c1, c3, err)
	}
	if m, _ := Marshal(cv); !bytes.Equal(m, c1) {
		t.Fatalf("Marshal(Decode(Canonical(%q))) = %s, want the canonical text %s", data, m, c1)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, style uint8) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		want, err := Canonical(v)
		if err != nil {
			t.Fatalf("Canonical(Decode(%q)) error: %v", data, err)
		}
		// Respell every number (and, in odd styles, decompose every string)
		// into a value-equal document: the canonical form must not change.
		alt := respell(v, style)
		got, err := Canonical(alt)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Canonical(respelled %q, style %d) = %s, %v; want %s", data, style, got, err, want)
		}
		if style%2 == 0 && !Equal(alt, v) {
			t.Fatalf("Equal(respelled %q, style %d) = false, want true", data, style)
		}
		h1, _ := CanonicalHash(v)
		h2, _ := CanonicalHash(alt)
		if h1 != h2 {
			t.Fatalf("CanonicalHash differs for respelled %q: %s and %s", data, h1, h2)
		}
	})
}

// respell returns v with each number written another way with the same
// value, chosen by style; odd styles also turn strings and keys into NFD.
func respell(v any, style uint8) any {
	switch v := v.(type) {
	case json.Number:
		return respellNumber(v, style)
	case string:
		if style%2 == 1 {
			return norm.NFD.String(v)
		}
		return v
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = respell(x, style+uint8(i))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if style%2 == 1 {
				k = norm.NFD.String(k)
			}
			out[k] = respell(x, style)
		}
		return out
	}
	return v
}

func respellNumber(n json.Number, style uint8) any {
	d, ok := parseDecimal(string(n))
	if !ok {
		return n
	}
	sign := ""
	if d.neg {
		sign = "-"
	}
	if d.isZero() {
		return json.Number([]string{"0", "-0", "0.000", "-0e7", "0E-3"}[style%5])
	}
	var digits strings.Builder
	for i := range d.numDigits() {
		digits.WriteByte(d.sigDigit(i))
	}
	var pos string
	if d.bigPos != nil {
		pos = d.bigPos.String()
	} else {
		pos = strconv.FormatInt(d.pos, 10)
	}
	switch style % 4 {
	case 0: // 0.ddd e pos
		return json.Number(sign + "0." + digits.String() + "e" + pos)
	case 1: // 0.ddd000 E+pos
		return json.Number(sign + "0." + digits.String() + "000E" + pos)
	case 2: // as a Go float, when that is exact
		if f, ok := Float64(n); ok && CompareNumbers(FloatNumber(f), n) == 0 {
			return f
		}
		return n
	}
	return n
}
