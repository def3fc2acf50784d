package vector

import (
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/internal/vectordata"
)

// BenchmarkDot measures one 384-dimension dot product.
func BenchmarkDot(b *testing.B) {
	vs := vectordata.Clustered(2, 384, 1, 1, 1)
	var s float32
	for b.Loop() {
		s += dot(vs[0], vs[1])
	}
	_ = s
}

// BenchmarkSearch measures a top-10 query over 10,000 vectors of 384
// dimensions, exact and through the graph at the default ef.
func BenchmarkSearch(b *testing.B) {
	const n = 10000
	vs := vectordata.Clustered(n+100, 384, 50, 1, 7)
	h, e, _ := buildPair(b, vs[:n], HNSWConfig{})
	qs := vs[n:]
	b.Run("exact", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := e.Search(qs[i%len(qs)], 10, -1, nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("hnsw", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := h.Search(qs[i%len(qs)], 10, -1, 0, nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkHNSWAdd measures adding one vector of 384 dimensions to a graph
// of a few thousand.
func BenchmarkHNSWAdd(b *testing.B) {
	vs := vectordata.Clustered(4096, 384, 20, 1, 3)
	h := NewHNSW(384, HNSWConfig{})
	i := 0
	for b.Loop() {
		if err := h.Add(fmt.Sprint(i), vs[i%len(vs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
