package server

import (
	"strings"
	"testing"
)

// TestUsageTemplate: the page shows only what the agents reported: a total
// alone is "4000 tokens", not "4000 tokens (0 in, 0 out)".
func TestUsageTemplate(t *testing.T) {
	type usage struct {
		Tokens, InputTokens, OutputTokens int64
		Cost                              float64
		Currency                          string
	}
	tests := []struct {
		u    usage
		want string
	}{
		{usage{Tokens: 4000}, "4000 tokens"},
		{usage{Tokens: 1025, InputTokens: 1000, OutputTokens: 25, Cost: 0.002, Currency: "EUR"}, "1025 tokens (1000 in, 25 out), cost 0.002 EUR"},
		{usage{Tokens: 10, Cost: 0.5}, "10 tokens, cost 0.5"},
	}
	for _, tc := range tests {
		var b strings.Builder
		if err := pageTemplates["execution"].ExecuteTemplate(&b, "usage", tc.u); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != tc.want {
			t.Errorf("usage %+v = %q, want %q", tc.u, got, tc.want)
		}
	}
}
