package governance

import "testing"

// BenchmarkPolicyRules evaluates ordinary rules on a small write: a
// comparison, a prefix test, and a closure over a short array. It shows
// what the evaluation budget costs a rule that is nowhere near it.
func BenchmarkPolicyRules(b *testing.B) {
	p := mustPolicy(b, `{"Rules": [
		{"Deny": "path == '$.payment.amount' && value > 1000"},
		{"Deny": "op == 'remove' && path startsWith '$.notes'"},
		{"Deny": "path == '$.tags' && any(value, # == 'secret')"},
		{"Deny": "path == '$.note' && len(value + '!') > 200"}]}`)
	prev := decode(b, `{"payment": {"amount": 10}, "tags": ["a"], "note": "x"}`)
	proposed := decode(b, `{"payment": {"amount": 20}, "tags": ["a", "b", "c", "d"], "note": "y"}`)
	if v := p.Check(prev, proposed, "S"); v != nil {
		b.Fatalf("Check = %v, want nil", v)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := p.Check(prev, proposed, "S"); v != nil {
			b.Fatal(v)
		}
	}
}
