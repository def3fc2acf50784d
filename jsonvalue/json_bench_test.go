package jsonvalue

import (
	"encoding/json"
	"testing"
)

// sampleDocument is a typical execution document of about 1 KiB: nested
// objects, an array of records, strings, integers, decimals, booleans and
// nulls.
const sampleDocument = `{
  "order": {
    "id": "ord-20240611-0042",
    "customer": {"id": 90210, "name": "Ada Lovelace", "email": "ada@example.com", "vip": true},
    "items": [
      {"sku": "BK-101", "title": "Notes on the Analytical Engine", "qty": 1, "price": 24.99},
      {"sku": "PN-007", "title": "Fountain pen", "qty": 2, "price": 12.5},
      {"sku": "IN-003", "title": "Ink, blue-black", "qty": 3, "price": 4.75}
    ],
    "total": 64.24,
    "currency": "EUR",
    "coupon": null,
    "shipping": {"method": "express", "address": {"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH", "country": "GB"}}
  },
  "ticket": {"category": "refund", "priority": 2, "tags": ["billing", "urgent", "follow-up"], "open": false},
  "agent": {"model": "classifier-v3", "confidence": 0.9731, "tokens": 1284, "latency_ms": 412,
    "reasoning": "The customer asks for a refund of one item; the order is within the return window and the item is unopened."},
  "step_count": 7,
  "status": "running",
  "history": [{"state": "Classify", "ok": true}, {"state": "Lookup", "ok": true}, {"state": "Decide", "ok": null}]
}`

func BenchmarkDecode1KiB(b *testing.B) {
	data := []byte(sampleDocument)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal1KiB(b *testing.B) {
	v := mustDecode(b, sampleDocument)
	b.SetBytes(int64(Size(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSizeExceeds1KiB(b *testing.B) {
	v := mustDecode(b, sampleDocument)
	b.ReportAllocs()
	for b.Loop() {
		if SizeExceeds(v, 262144) {
			b.Fatal("1 KiB document exceeds 256 KiB")
		}
	}
}

func BenchmarkEqual1KiB(b *testing.B) {
	x := mustDecode(b, sampleDocument)
	y := mustDecode(b, sampleDocument)
	b.ReportAllocs()
	for b.Loop() {
		if !Equal(x, y) {
			b.Fatal("documents differ")
		}
	}
}

func BenchmarkCanonical1KiB(b *testing.B) {
	v := mustDecode(b, sampleDocument)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareNumbers(b *testing.B) {
	pairs := [][2]json.Number{
		{"42", "7"},         // int64 fast path
		{"64.24", "64.240"}, // short decimals
		{"1e2", "100"},      // exponent
		{"123.4567890123456789", "123.45678901234567891"}, // long decimals
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pairs {
			CompareNumbers(p[0], p[1])
		}
	}
}
