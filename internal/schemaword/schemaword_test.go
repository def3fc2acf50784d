package schemaword

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShow(t *testing.T) {
	long := strings.Repeat("é", 60) // 2 bytes each
	got := Show(long)
	if !utf8.ValidString(got) || len(strings.TrimSuffix(got, "…")) > maxShown || !strings.HasSuffix(got, "…") {
		t.Errorf("Show(%d bytes) = %q, want valid UTF-8 of at most %d bytes ending in …", len(long), got, maxShown)
	}
	if got := Show(json.Number("1.50")); got != "1.50" {
		t.Errorf("Show(1.50) = %s, want 1.50", got)
	}
	if got := Show(make(chan int)); got != "a Go chan int" {
		t.Errorf("Show(a channel) = %s", got)
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{TypeList([]string{"string", "null", "integer", "string"}), "a string or null or an integer"},
		{OneOf([]any{"a"}), `"a"`},
		{OneOf([]any{"a", json.Number("2")}), `one of "a", 2`},
		{Ratio(big.NewRat(3, 1)), "3"},
		{Ratio(big.NewRat(1, 4)), "0.25"},
		{Ratio(nil), "?"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
