package guardrails

import (
	"fmt"
	"strings"
	"testing"
)

var allKinds = []string{"email", "phone", "card", "iban"}

// found lists the matches of findPII as "kind:text".
func found(str string, detect []string) []string {
	var got []string
	for _, sp := range newPIISet(detect).find(str, nil) {
		got = append(got, sp.kind+":"+str[sp.start:sp.end])
	}
	return got
}

func TestFindPII(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		detect []string
		want   []string
	}{
		// Email addresses.
		{"email", "contact john.doe@example.com today", nil, []string{"email:john.doe@example.com"}},
		{"email subdomains and tag", "Mail: J.Smith+tag@mail.example.co.uk.", nil, []string{"email:J.Smith+tag@mail.example.co.uk"}},
		{"email in brackets", "<jane_doe-1@ex-ample.org>", nil, []string{"email:jane_doe-1@ex-ample.org"}},
		{"two emails", "a@example.com,b@example.net", nil, []string{"email:a@example.com", "email:b@example.net"}},
		{"email no dot in domain", "user@localhost", nil, nil},
		{"email one-letter tld", "a@b.c", nil, nil},
		{"email digit tld", "user@example.c0m", nil, nil},
		{"email empty local", "@example.com", nil, nil},
		{"email double dot", "john..doe@example.com", nil, nil},
		{"email label dash", "john@-example.com", nil, nil},
		{"email touches letters", "éjohn@example.com", nil, nil},
		{"email handle", "@john and me@x", nil, nil},

		// Phone numbers.
		{"phone intl paren", "call +1 (555) 123-4567 now", nil, []string{"phone:+1 (555) 123-4567"}},
		{"phone intl uk", "+44 20 7946 0958", nil, []string{"phone:+44 20 7946 0958"}},
		{"phone intl compact", "+14155552671", nil, []string{"phone:+14155552671"}},
		{"phone intl no space paren", "+1(555)123-4567", nil, []string{"phone:+1(555)123-4567"}},
		{"phone intl fr", "+33 6 12 34 56 78.", nil, []string{"phone:+33 6 12 34 56 78"}},
		{"phone 00 prefix", "0044 20 7946 0958", nil, []string{"phone:0044 20 7946 0958"}},
		{"phone area code paren", "(555) 123-4567", nil, []string{"phone:(555) 123-4567"}},
		{"phone nanp dashes", "Call 555-123-4567.", nil, []string{"phone:555-123-4567"}},
		{"phone nanp dots", "555.123.4567", nil, []string{"phone:555.123.4567"}},
		{"phone nanp spaces", "555 123 4567", nil, []string{"phone:555 123 4567"}},
		{"phone nanp with 1", "1-800-555-0199", nil, []string{"phone:1-800-555-0199"}},
		{"phone uk trunk", "020 7946 0958", nil, []string{"phone:020 7946 0958"}},
		{"phone fr trunk", "06 12 34 56 78", nil, []string{"phone:06 12 34 56 78"}},
		{"phone nl trunk", "06-12345678", nil, []string{"phone:06-12345678"}},
		{"phone es mobile", "612 34 56 78", nil, []string{"phone:612 34 56 78"}},
		{"phone after order number", "order 12345 555-123-4567", nil, []string{"phone:555-123-4567"}},
		{"phone before year", "555-123-4567 2024", nil, []string{"phone:555-123-4567"}},
		{"phone intl short", "+1 555 12", nil, nil},
		{"phone intl too long", "+1234567890123456", nil, nil},
		{"phone bare digits", "order 1234567890", nil, nil},
		{"phone bare digits 12", "ref 123456789012", nil, nil},
		{"phone thousands", "1 234 567 890", nil, nil},
		{"phone thousands dots", "1.234.567.890", nil, nil},
		{"phone amount", "$555 123 4567", nil, nil},
		{"phone amount space", "€ 555 123 4567", nil, nil},
		{"phone order hash", "order #555-123-4567", nil, nil},
		{"phone years", "2019 2020 2021", nil, nil},
		{"phone small numbers", "scores: 10 20 30 40 50", nil, nil},
		{"phone date", "2024-01-15", nil, nil},
		{"phone date time", "2024-01-15 10:30", nil, nil},
		{"phone date time seconds", "on 2024-01-15 10 30 00", nil, nil},
		{"phone decimal", "3.14159265358979", nil, nil},
		{"phone decimal after", "555-123-4567.5", nil, nil},
		{"phone time", "10:30:45", nil, nil},
		{"phone letters", "ID5551234567", nil, nil},
		{"phone letters after", "555-123-4567x", nil, nil},
		{"phone version", "v1.2.3.4", nil, nil},
		{"phone isbn", "ISBN 978-3-16-148410-0", nil, nil},
		{"phone mixed separators", "555-123 4567", nil, nil},
		{"phone two groups", "5551 234567", nil, nil},
		{"phone too short", "555-1234", nil, nil},

		// Card numbers.
		{"card spaces", "card 4111 1111 1111 1111 ok", nil, []string{"card:4111 1111 1111 1111"}},
		{"card dashes", "4111-1111-1111-1111", nil, []string{"card:4111-1111-1111-1111"}},
		{"card compact", "4111111111111111", nil, []string{"card:4111111111111111"}},
		{"card amex", "3782 822463 10005", nil, []string{"card:3782 822463 10005"}},
		{"card mastercard", "5555555555554444", nil, []string{"card:5555555555554444"}},
		{"card discover", "6011111111111117", nil, []string{"card:6011111111111117"}},
		{"card 13 digits", "4222222222222", nil, []string{"card:4222222222222"}},
		{"card with expiry", "4111 1111 1111 1111 12/25", nil, []string{"card:4111 1111 1111 1111"}},
		{"card bad luhn", "4111 1111 1111 1112", nil, nil},
		{"card starts with 1", "1111111111111117", nil, nil},
		{"card starts with 9", "9111111111111111", nil, nil},
		{"card mixed separators", "4111-1111 1111-1111", nil, nil},
		{"card dots", "4111.1111.1111.1111", nil, nil},
		{"card too long", "41111111111111111111", nil, nil},
		{"card two-digit groups", "41 11 11 11 11 11 11 11", nil, nil},
		{"card in word", "x4111111111111111", nil, nil},
		{"card decimal", "0.4111111111111111", nil, nil},

		// IBANs.
		{"iban grouped", "IBAN DE89 3704 0044 0532 0130 00.", nil, []string{"iban:DE89 3704 0044 0532 0130 00"}},
		{"iban compact", "GB29NWBK60161331926819", nil, []string{"iban:GB29NWBK60161331926819"}},
		{"iban letters in bban", "FR14 2004 1010 0505 0001 3M02 606", nil, []string{"iban:FR14 2004 1010 0505 0001 3M02 606"}},
		{"iban nl", "NL91ABNA0417164300", nil, []string{"iban:NL91ABNA0417164300"}},
		{"iban norway shortest", "NO93 8601 1117 947", nil, []string{"iban:NO93 8601 1117 947"}},
		{"iban bad check", "DE89 3704 0044 0532 0130 01", nil, nil},
		{"iban wrong length", "DE89 3704 0044 0532 0130 0", nil, nil},
		{"iban unknown country", "XX89 3704 0044 0532 0130 00", nil, nil},
		{"iban lower case", "de89 3704 0044 0532 0130 00", nil, nil},
		{"iban in word", "ADE89370400440532013000", nil, nil},
		{"iban runs on", "DE89370400440532013000A", nil, nil},
		{"iban odd grouping", "DE89 37040044 0532 0130 00", nil, nil},

		// Several kinds, and which one claims the text.
		{"all kinds in order", "j@example.com, +44 20 7946 0958, 4111 1111 1111 1111, DE89 3704 0044 0532 0130 00",
			nil, []string{"email:j@example.com", "phone:+44 20 7946 0958", "card:4111 1111 1111 1111", "iban:DE89 3704 0044 0532 0130 00"}},
		{"only cards", "j@example.com 4111111111111111 555-123-4567", []string{"card"}, []string{"card:4111111111111111"}},
		{"email claims a phone", "+14155552671@sms.example.com", nil, []string{"email:+14155552671@sms.example.com"}},
		{"email claims a phone not detected", "+14155552671@sms.example.com", []string{"phone"}, nil},
		{"iban claims a card", "DE89 3704 0044 0532 0130 00", []string{"card", "phone"}, nil},
		{"email claims an iban", "DE89370400440532013000@bank.example", []string{"iban"}, nil},
		{"nothing", "no personal data here, just 42 and 2024", nil, nil},
		{"empty", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detect := tt.detect
			if detect == nil {
				detect = allKinds
			}
			got := found(tt.in, detect)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("piiSet.find(%q, %q) = %q, want %q", tt.in, detect, got, tt.want)
			}
		})
	}
}

// TestIBANRegistryExamples finds the example IBANs of the SWIFT IBAN
// registry, as printed there, for a sample of countries.
func TestIBANRegistryExamples(t *testing.T) {
	examples := []string{
		"AD12 0001 2030 2003 5910 0100",
		"AE07 0331 2345 6789 0123 456",
		"AL47 2121 1009 0000 0002 3569 8741",
		"AT61 1904 3002 3457 3201",
		"AZ21 NABZ 0000 0000 1370 1000 1944",
		"BA39 1290 0794 0102 8494",
		"BE68 5390 0754 7034",
		"BG80 BNBG 9661 1020 3456 78",
		"BH67 BMAG 0000 1299 1234 56",
		"BR18 0036 0305 0000 1000 9795 493C 1",
		"CH93 0076 2011 6238 5295 7",
		"CR05 0152 0200 1026 2840 66",
		"CY17 0020 0128 0000 0012 0052 7600",
		"CZ65 0800 0000 1920 0014 5399",
		"DK50 0040 0440 1162 43",
		"DO28 BAGR 0000 0001 2124 5361 1324",
		"EE38 2200 2210 2014 5685",
		"ES91 2100 0418 4502 0005 1332",
		"FI21 1234 5600 0007 85",
		"FO62 6460 0001 6316 34",
		"GE29 NB00 0000 0101 9049 17",
		"GI75 NWBK 0000 0000 7099 453",
		"GL89 6471 0001 0002 06",
		"GR16 0110 1250 0000 0001 2300 695",
		"GT82 TRAJ 0102 0000 0012 1002 9690",
		"HR12 1001 0051 8630 0016 0",
		"HU42 1177 3016 1111 1018 0000 0000",
		"IE29 AIBK 9311 5212 3456 78",
		"IL62 0108 0000 0009 9999 999",
		"IS14 0159 2600 7654 5510 7303 39",
	}
	for _, iban := range examples {
		t.Run(iban, func(t *testing.T) {
			for _, text := range []string{iban, strings.ReplaceAll(iban, " ", "")} {
				in := "pay to " + text + "."
				got := found(in, []string{"iban"})
				if len(got) != 1 || got[0] != "iban:"+text {
					t.Errorf("piiSet.find(%q) = %q, want [iban:%s]", in, got, text)
				}
			}
		})
	}
}

// TestIBANLengths builds a valid IBAN for every country ibanLength
// knows, and checks that it is found at that length only.
func TestIBANLengths(t *testing.T) {
	countries := 0
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			cc := string([]rune{a, b})
			n := ibanLength(cc)
			if n == 0 {
				continue
			}
			countries++
			if n < 15 || n > 34 {
				t.Errorf("ibanLength(%s) = %d, want 15 to 34", cc, n)
				continue
			}
			for _, length := range []int{n - 1, n, n + 1} {
				iban := withCheckDigits(cc, strings.Repeat("7", length-4))
				got := found(iban, []string{"iban"})
				if want := length == n; (len(got) == 1) != want {
					t.Errorf("piiSet.find(%q) = %q, want found %v (length %d for %s)", iban, got, want, n, cc)
				}
			}
		}
	}
	if countries != 89 {
		t.Errorf("ibanLength knows %d countries, want 89", countries)
	}
}

// withCheckDigits returns the IBAN of country cc with BBAN bban and the
// check digits that make it valid.
func withCheckDigits(cc, bban string) string {
	for check := 2; check <= 98; check++ {
		iban := fmt.Sprintf("%s%02d%s", cc, check, bban)
		if referenceMod97(iban) {
			return iban
		}
	}
	return cc + "00" + bban
}
