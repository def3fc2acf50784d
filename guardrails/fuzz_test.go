package guardrails

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aslrun/aslrun/states"
)

var piiSeeds = []string{
	"contact john.doe@example.com or +1 (555) 123-4567",
	"4111 1111 1111 1111 12/25 and 3782 822463 10005",
	"DE89 3704 0044 0532 0130 00, GB29NWBK60161331926819",
	"0044 20 7946 0958; 06 12 34 56 78; 1-800-555-0199",
	"$1 234 567 890 on 2024-01-15 10:30, order #555-123-4567",
	"+14155552671@sms.example.com DE89370400440532013000@bank.example",
	"a@b@c.example.com ((555)) ++44 1.234.567.890 x4111111111111111",
	"\xff\xfe 4111\u00a01111\u00a01111\u00a01111 ＋４４",
	"",
}

// referenceLuhn is the Luhn check written out plainly, on the digits of s.
func referenceLuhn(s string) bool {
	var digits []int
	for _, r := range s {
		if '0' <= r && r <= '9' {
			digits = append(digits, int(r-'0'))
		}
	}
	sum := 0
	for i := range digits {
		d := digits[len(digits)-1-i]
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return len(digits) > 0 && sum%10 == 0
}

// referenceMod97 is the IBAN check with big integers: the first four
// characters moved to the end, letters as 10 to 35, the number mod 97.
func referenceMod97(s string) bool {
	compact := strings.ReplaceAll(s, " ", "")
	if len(compact) < 5 {
		return false
	}
	var b strings.Builder
	for _, r := range compact[4:] + compact[:4] {
		switch {
		case '0' <= r && r <= '9':
			b.WriteRune(r)
		case 'A' <= r && r <= 'Z':
			b.WriteString(big.NewInt(int64(r-'A') + 10).String())
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(b.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// FuzzFindPII checks that the detectors never panic, report spans in
// order, without overlaps and on character boundaries, that every card
// passes the Luhn check and every IBAN the mod-97 check, and that a
// masked match keeps no more than 4 of its letters and digits.
func FuzzFindPII(f *testing.F) {
	for _, s := range piiSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spans := newPIISet(allKinds).find(s, nil)
		last := 0
		for _, sp := range spans {
			if sp.start < last || sp.end <= sp.start || sp.end > len(s) {
				t.Fatalf("piiSet.find(%q): span [%d, %d) out of order or bounds (previous end %d)", s, sp.start, sp.end, last)
			}
			last = sp.end
			text := s[sp.start:sp.end]
			if !utf8.ValidString(text) {
				t.Errorf("piiSet.find(%q): match %q is not valid UTF-8", s, text)
			}
			switch sp.kind {
			case kindCard:
				if !referenceLuhn(text) {
					t.Errorf("piiSet.find(%q): card %q fails the Luhn check", s, text)
				}
			case kindIBAN:
				if !referenceMod97(text) {
					t.Errorf("piiSet.find(%q): IBAN %q fails the mod-97 check", s, text)
				}
			case kindEmail, kindPhone:
			default:
				t.Errorf("piiSet.find(%q): unknown kind %q", s, sp.kind)
			}
			if sp.kind != kindEmail {
				kept := 0
				for _, r := range strings.TrimLeft(mask(sp.kind, text), "*") {
					if r < utf8.RuneSelf && isAlnum(byte(r)) {
						kept++
					}
				}
				if kept > 4 {
					t.Errorf("mask(%q, %q) keeps %d letters or digits, want at most 4", sp.kind, text, kept)
				}
			}
		}
		for _, kind := range allKinds {
			for _, sp := range newPIISet([]string{kind}).find(s, nil) {
				if sp.kind != kind {
					t.Errorf("piiSet.find(%q, [%s]) found a %s", s, kind, sp.kind)
				}
			}
		}
	})
}

// FuzzCheck runs a set with one rule of each kind that changes content
// on a fuzzed string, and checks that it never panics, never returns an
// error, and that redacted content holds no match any more.
func FuzzCheck(f *testing.F) {
	for _, s := range piiSeeds {
		f.Add(s, "secret")
	}
	f.Add("a SECRET and ſecret", "ſ")
	f.Fuzz(func(t *testing.T, s, block string) {
		set := &states.GuardrailSet{OnFail: "continue", Rules: []states.GuardrailRule{
			{Type: "pattern", Action: "mask", Block: []string{block}},
			{Type: "pii", Action: "redact", Detect: allKinds},
			{Type: "length", Action: "warn", Max: 100},
		}}
		content := map[string]any{"s": s, "list": []any{s, 1}}
		res, err := Check(context.Background(), set, Output, content, nil)
		if err != nil {
			t.Fatalf("Check error = %v", err)
		}
		if content["s"] != s {
			t.Fatalf("Check modified its input")
		}
		out := res.Content.(map[string]any)["s"].(string)
		if spans := newPIISet(allKinds).find(out, nil); len(spans) > 0 {
			t.Errorf("Check(%q) redacted content %q still holds %s %q", s, out, spans[0].kind, out[spans[0].start:spans[0].end])
		}
	})
}
