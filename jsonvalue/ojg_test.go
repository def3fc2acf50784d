package jsonvalue

import (
	"fmt"
	"math"
	"testing"

	"github.com/ohler55/ojg/oj"
)

// The tests in this file record what ojg's tokenizer and writer do where
// this package keeps its own decoder and writers (docs/jsonpath.md, "Where
// we do not use ojg"). Each fails when ojg stops doing it: then the reason
// written there no longer holds, and the place is worth another look.

// tokenLog is an oj.TokenHandler that writes down what it is given.
type tokenLog struct{ got []string }

func (l *tokenLog) add(format string, a ...any) { l.got = append(l.got, fmt.Sprintf(format, a...)) }
func (l *tokenLog) Null()                       { l.add("null") }
func (l *tokenLog) Bool(b bool)                 { l.add("%t", b) }
func (l *tokenLog) Int(i int64)                 { l.add("Int(%d)", i) }
func (l *tokenLog) Float(f float64)             { l.add("Float(%v)", f) }
func (l *tokenLog) Number(s string)             { l.add("Number(%s)", s) }
func (l *tokenLog) String(s string)             { l.add("String(%q)", s) }
func (l *tokenLog) ObjectStart()                { l.add("{") }
func (l *tokenLog) ObjectEnd()                  { l.add("}") }
func (l *tokenLog) Key(s string)                { l.add("Key(%q)", s) }
func (l *tokenLog) ArrayStart()                 { l.add("[") }
func (l *tokenLog) ArrayEnd()                   { l.add("]") }

// TestOjgTokenizerLosesNumberText: the tokenizer hands a handler numbers as
// int64 or float64, never their text, so the strict decoder cannot sit on
// it and keep exact decimals.
func TestOjgTokenizerLosesNumberText(t *testing.T) {
	tests := []struct{ text, got string }{
		{"1.0", "Float(1)"},
		{"1.00", "Float(1)"},
		{"123.4567890123456789", "Float(123.45678901234568)"},
		{"1e400", "Float(+Inf)"},
		{"-0", "Int(0)"},
	}
	for _, tt := range tests {
		l := &tokenLog{}
		if err := oj.TokenizeString(tt.text, l); err != nil {
			t.Fatalf("Tokenize(%s): %v", tt.text, err)
		}
		if len(l.got) != 1 || l.got[0] != tt.got {
			t.Errorf("Tokenize(%s) gave %q, want [%s]: see docs/jsonpath.md", tt.text, l.got, tt.got)
		}
	}
}

// TestOjgTokenizerAccepts: what the tokenizer lets through that Decode
// refuses.
func TestOjgTokenizerAccepts(t *testing.T) {
	for _, text := range []string{`{"a":1,"a":2}`, `[1.]`, `["\ud800"]`} {
		if err := oj.TokenizeString(text, &tokenLog{}); err != nil {
			t.Errorf("Tokenize(%s): %v, want it accepted: see docs/jsonpath.md", text, err)
		}
		if _, err := Decode([]byte(text)); err == nil {
			t.Errorf("Decode(%s) accepted it", text)
		}
	}
}

// TestOjgWriter: ojg's writer spells floats its own way and writes NaN.
func TestOjgWriter(t *testing.T) {
	if got := oj.JSON([]any{1.23456789123e8, math.NaN()}); got != "[1.23456789123e+08,NaN]" {
		t.Errorf("oj.JSON = %s, want [1.23456789123e+08,NaN]: see docs/jsonpath.md", got)
	}
}

// BenchmarkOjgTokenize1KiB tokenizes the document of BenchmarkDecode1KiB
// with a handler that keeps nothing: the least a decoder on ojg's tokenizer
// would cost.
func BenchmarkOjgTokenize1KiB(b *testing.B) {
	data := []byte(sampleDocument)
	var h discard
	var tok oj.Tokenizer
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := tok.Parse(data, h); err != nil {
			b.Fatal(err)
		}
	}
}

// discard is an oj.TokenHandler that keeps nothing.
type discard struct{}

func (discard) Null()         {}
func (discard) Bool(bool)     {}
func (discard) Int(int64)     {}
func (discard) Float(float64) {}
func (discard) Number(string) {}
func (discard) String(string) {}
func (discard) ObjectStart()  {}
func (discard) ObjectEnd()    {}
func (discard) Key(string)    {}
func (discard) ArrayStart()   {}
func (discard) ArrayEnd()     {}
