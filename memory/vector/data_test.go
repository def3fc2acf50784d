package vector

import (
	"math"
	"slices"
)

// bruteForce is the test's own reference: cosine similarity in float64
// against every vector, sorted best first with ties by id, cut to k and
// minScore, skipping ids that keep rejects.
func bruteForce(ids []string, vs [][]float32, q []float32, k int, minScore float32, keep func(string) bool) []Result {
	var all []Result
	for i, v := range vs {
		if keep != nil && !keep(ids[i]) {
			continue
		}
		var d, na, nb float64
		for j := range v {
			d += float64(v[j]) * float64(q[j])
			na += float64(v[j]) * float64(v[j])
			nb += float64(q[j]) * float64(q[j])
		}
		s := float32(d / math.Sqrt(na*nb))
		if s >= minScore {
			all = append(all, Result{ID: ids[i], Score: s})
		}
	}
	slices.SortFunc(all, func(a, b Result) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	if len(all) > k {
		all = all[:k]
	}
	return all
}

// recall returns the fraction of want's ids that got holds.
func recall(got, want []Result) float64 {
	if len(want) == 0 {
		return 1
	}
	in := make(map[string]bool, len(got))
	for _, r := range got {
		in[r.ID] = true
	}
	n := 0
	for _, r := range want {
		if in[r.ID] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}
