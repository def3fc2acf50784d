package vector

import "testing"

// BenchmarkDot measures one 384-dimension dot product.
func BenchmarkDot(b *testing.B) {
	vs := clustered(2, 384, 1, 1, 1)
	var s float32
	for b.Loop() {
		s += dot(vs[0], vs[1])
	}
	_ = s
}
