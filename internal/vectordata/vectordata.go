// Package vectordata makes the seeded vectors the vector index's tests and
// benchmarks search: clustered, the shape embeddings of related texts
// take.
package vectordata

import "math/rand/v2"

// Clustered returns n seeded vectors of dim dimensions around a number of
// cluster centres: centres are standard normal, points are a centre plus
// normal noise of the given spread. The same arguments give the same
// vectors.
func Clustered(n, dim, clusters int, spread float64, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	centres := make([][]float64, clusters)
	for i := range centres {
		centres[i] = make([]float64, dim)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(clusters)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(c[j] + spread*r.NormFloat64())
		}
		out[i] = v
	}
	return out
}
