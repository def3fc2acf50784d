package api

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxName bounds the names a caller gives what it creates (an execution,
// a fork) in bytes.
const MaxName = 1024

// CheckName reports why s cannot name what a caller creates and others
// are shown later (an execution's name, a fork's, the person a decision
// is made on behalf of), or nil when it can. A name is valid UTF-8 of 1
// to MaxName bytes with no '/' and no character a terminal or a page
// could take for something else: no control character (C0, DEL, C1), no
// bidirectional formatting character (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069) and no line or paragraph separator
// (U+2028, U+2029). The error says which character, where.
func CheckName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("the name is empty")
	case len(s) > MaxName:
		return fmt.Errorf("the name is %d bytes long, more than %d", len(s), MaxName)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !isRuneErrorAt(s, i):
			return fmt.Errorf("the name is not valid UTF-8 (byte %d)", i)
		case r == '/':
			return fmt.Errorf("the name %q holds a '/' (byte %d)", s, i)
		case unicode.IsControl(r):
			return fmt.Errorf("the name %q holds the control character U+%04X at byte %d", s, r, i)
		case IsBidiControl(r) || r == '\u2028' || r == '\u2029':
			return fmt.Errorf("the name %q holds the formatting character U+%04X at byte %d", s, r, i)
		}
	}
	return nil
}

// isRuneErrorAt reports whether s holds the character U+FFFD itself
// (encoded) at byte i, not an invalid byte.
func isRuneErrorAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 3
}

// IsBidiControl reports whether r is a bidirectional formatting
// character, which reorders the text around it when shown: U+061C,
// U+200E, U+200F, U+202A–U+202E or U+2066–U+2069.
func IsBidiControl(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}
