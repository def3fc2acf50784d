package api

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"order-42", true},
		{"Bestellung für Müller", true},
		{"注文 #7", true},
		{"emoji 👍🏽 and \u200d joiners", true},
		{"a\ufffdb", true}, // the replacement character itself
		{strings.Repeat("x", MaxName), true},
		{"", false},
		{strings.Repeat("x", MaxName+1), false},
		{"a/b", false},
		{"a\x00b", false},
		{"a\nb\u001b[31m", false},
		{"a\rb", false},
		{"a\tb", false},
		{"a\x7fb", false},
		{"a\u0085b", false},
		{"a\u009bb", false},
		{"a\u202eb", false},
		{"a\u202ab", false},
		{"a\u2066b", false},
		{"a\u2069b", false},
		{"a\u200eb", false},
		{"a\u200fb", false},
		{"a\u061cb", false},
		{"a\u2028b", false},
		{"a\u2029b", false},
		{"a\xffb", false},
		{"a\xe2\x80b", false},
	} {
		err := CheckName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	// The error says which character, where.
	if err := CheckName("ab\u202ec"); err == nil || !strings.Contains(err.Error(), "U+202E at byte 2") {
		t.Errorf("CheckName(ab\\u202ec) = %v, want U+202E at byte 2", err)
	}
}

// FuzzCheckName: a name CheckName accepts holds nothing a terminal
// interprets, and CheckName never panics.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"order-42", "a\nb\u001b[31m", "a\u202eb", "\xff", "", "a/b", "x\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckName(s) != nil {
			return
		}
		if !utf8.ValidString(s) || s == "" || len(s) > MaxName || strings.Contains(s, "/") {
			t.Fatalf("CheckName accepted %q", s)
		}
		for _, r := range s {
			if unicode.IsControl(r) || IsBidiControl(r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("CheckName accepted %q, which holds U+%04X", s, r)
			}
		}
	})
}
