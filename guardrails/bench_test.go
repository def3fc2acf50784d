package guardrails

import (
	"context"
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// benchDocument builds an agent-like document of about size bytes of
// JSON: records with text, numbers, tags and, in one record out of
// four, an email address and a phone number.
func benchDocument(size int) any {
	var records []any
	doc := map[string]any{"customer": "ACME", "records": records}
	for i := 0; jsonvalue.Size(doc) < size; i++ {
		note := "The order was shipped on time and the customer was satisfied with the result."
		if i%4 == 0 {
			note = fmt.Sprintf("Customer %d asked to be called at +44 20 7946 %04d or mailed at user%d@example.com.", i, i, i)
		}
		records = append(records, map[string]any{
			"id":     jsonvalue.IntNumber(int64(100000 + i)),
			"note":   note,
			"amount": "1 234.50",
			"tags":   []any{"retail", "priority", "2024-01-15"},
			"ok":     true,
		})
		doc["records"] = records
	}
	return doc
}

// BenchmarkCheck runs a set with one rule of each type (length, pattern,
// regex, pii redacting, custom with a validator that answers at once) on
// documents of 1 KiB and 50 KiB.
func BenchmarkCheck(b *testing.B) {
	set := parseSet(b, Output, `{"Rules": [
		{"Type": "length", "Max": 100000},
		{"Type": "pattern", "Block": ["DROP TABLE", "rm -rf"]},
		{"Type": "regex", "Pattern": "(?i)api[_-]?key\\s*[:=]", "Action": "warn"},
		{"Type": "pii", "Action": "redact"},
		{"Type": "custom", "Validator": "Checker"}
	]}`)
	valid := func(ctx context.Context, agent string, content any) (Verdict, error) {
		return Verdict{Valid: true}, nil
	}
	for _, size := range []int{1 << 10, 50 << 10} {
		doc := benchDocument(size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(jsonvalue.Size(doc)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := Check(context.Background(), set, Output, doc, valid)
				if err != nil || res.Violation != nil || len(res.Findings) == 0 {
					b.Fatalf("Check = %+v, %v; want findings and no violation", res, err)
				}
			}
		})
	}
}

// BenchmarkRule runs each type of rule alone on the 50 KiB document.
func BenchmarkRule(b *testing.B) {
	rules := map[string]string{
		"length":  `{"Type": "length", "Max": 100000}`,
		"pattern": `{"Type": "pattern", "Block": ["DROP TABLE", "rm -rf"]}`,
		"regex":   `{"Type": "regex", "Pattern": "(?i)api[_-]?key\\s*[:=]"}`,
		"pii":     `{"Type": "pii", "Action": "redact"}`,
		"custom":  `{"Type": "custom", "Validator": "Checker"}`,
	}
	valid := func(ctx context.Context, agent string, content any) (Verdict, error) {
		return Verdict{Valid: true}, nil
	}
	doc := benchDocument(50 << 10)
	for _, typ := range []string{"length", "pattern", "regex", "pii", "custom"} {
		set := parseSet(b, Output, `{"Rules": [`+rules[typ]+`]}`)
		b.Run(typ, func(b *testing.B) {
			b.SetBytes(int64(jsonvalue.Size(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Check(context.Background(), set, Output, doc, valid); err != nil {
					b.Fatalf("Check error = %v", err)
				}
			}
		})
	}
}
