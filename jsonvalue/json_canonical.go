package jsonvalue

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Canonical writes v in canonical form, the identity of a document: two
// values that are the same JSON document give the same bytes. It accepts
// what Marshal accepts and differs from it in three ways:
//
//   - Strings and object keys are written in Unicode NFC (after invalid
//     UTF-8 bytes are replaced by U+FFFD); keys are sorted by the byte order
//     of their NFC form, and two keys with the same NFC form are an error.
//   - Numbers are written in one spelling per value, computed on the
//     decimal text (never through float64), so value-equal numbers give the
//     same text: with the value written ±d₁.d₂…dₙ × 10^x (d₁ ≠ 0, dₙ ≠ 0),
//     the number is written without exponent when -7 <= x < 21 (plain
//     digits for an integer, else the shortest decimal fraction with a
//     leading "0." when below 1), and otherwise as d₁[.d₂…dₙ]e<x> with x in
//     plain decimal, '-' when negative, no '+' and no leading zeros. Zero
//     (including -0) is 0. So 2, 2.0, 2e0 and 20e-1 are 2; 0.10 is 0.1; 1e21
//     is 1e21; 1e-7 is 0.0000001; 1.50e-8 is 1.5e-8; 1e400 stays 1e400. Go
//     floats are written as FloatNumber writes them, which is this form.
//   - It is always compact.
//
// Equal values have equal canonical forms. The converse holds too, except
// that Canonical also equates strings that differ only in Unicode
// normalization or in invalid UTF-8 bytes, which Equal tells apart.
func Canonical(v any) ([]byte, error) {
	e := encoder{canonical: true}
	// The Marshal size is a close guess (only numbers change length).
	out, err := e.value(make([]byte, 0, max(Size(v), 0)+16), v, 0)
	if err != nil {
		err.Path = e.path.String()
		return nil, err
	}
	return out, nil
}

// CanonicalHash returns the lower-case hex SHA-256 of Canonical(v).
func CanonicalHash(v any) (string, error) {
	b, err := Canonical(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalString returns s in NFC, with each invalid UTF-8 byte replaced
// by U+FFFD first. ASCII strings are returned as they are.
func canonicalString(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return norm.NFC.String(validUTF8(s))
		}
	}
	return s
}

// validUTF8 returns s with each byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD, as Marshal writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}
