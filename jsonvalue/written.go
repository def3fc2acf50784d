package jsonvalue

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Written paths: how the packages that report locations (the strict
// decoder, governance, guardrails, context windows) write them. A path is
// $, then .key for a key that is an identifier, ['key'] for any other key
// (' and \ escaped with a backslash, control characters as \u00xx,
// invalid UTF-8 as U+FFFD), and [i] for an index.

// AppendMember appends the step to the member key to a written path.
func AppendMember(b []byte, key string) []byte {
	if IsIdentifier(key) {
		b = append(b, '.')
		return append(b, key...)
	}
	b = append(b, '[', '\'')
	for i := 0; i < len(key); {
		r, size := utf8.DecodeRuneInString(key[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = utf8.AppendRune(b, utf8.RuneError)
		case r == '\'' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == 0x7f:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[r>>4], hexDigits[r&0xf])
		default:
			b = append(b, key[i:i+size]...)
		}
		i += size
	}
	return append(b, '\'', ']')
}

// EscapePointer escapes one reference token of a JSON Pointer (RFC 6901):
// ~ as ~0, / as ~1.
func EscapePointer(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// AppendIndex appends the step to the array index i to a written path.
func AppendIndex(b []byte, i int) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, ']')
}

// IsIdentifier reports whether k can follow a '.' in a written path: an
// ASCII letter or '_', then letters, digits or '_'.
func IsIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || !isDigit(c)) {
			return false
		}
	}
	return true
}
