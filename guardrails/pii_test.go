package guardrails

import (
	"fmt"
	"testing"
)

var allKinds = []string{"email", "phone", "card", "iban"}

// found lists the matches of findPII as "kind:text".
func found(str string, detect []string) []string {
	var got []string
	for _, sp := range findPII(str, detect, nil) {
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
				t.Errorf("findPII(%q, %q) = %q, want %q", tt.in, detect, got, tt.want)
			}
		})
	}
}
