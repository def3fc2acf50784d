package vector

import "slices"

// better reports whether a ranks before b: a higher score, or the same score
// and a smaller id.
func better(a, b Result) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// topK keeps the best k results offered to it (by [better]) in a min-heap
// whose root is the worst kept result, so a candidate that does not beat the
// root is rejected in O(1).
type topK struct {
	k int
	h []Result
}

// newTopK returns an empty topK for k results.
func newTopK(k int) *topK {
	return &topK{k: k, h: make([]Result, 0, min(k, 1024))}
}

// full reports whether k results are held.
func (t *topK) full() bool { return len(t.h) == t.k }

// worst returns the worst result held; only meaningful when full.
func (t *topK) worst() Result { return t.h[0] }

// offer considers r for the top k.
func (t *topK) offer(r Result) {
	if len(t.h) < t.k {
		t.h = append(t.h, r)
		t.up(len(t.h) - 1)
		return
	}
	if !better(r, t.h[0]) {
		return
	}
	t.h[0] = r
	t.down(0)
}

// up restores the heap property from i towards the root.
func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(t.h[p], t.h[i]) {
			return
		}
		t.h[p], t.h[i] = t.h[i], t.h[p]
		i = p
	}
}

// down restores the heap property from i towards the leaves.
func (t *topK) down(i int) {
	n := len(t.h)
	for {
		w := i
		l, r := 2*i+1, 2*i+2
		if l < n && better(t.h[w], t.h[l]) {
			w = l
		}
		if r < n && better(t.h[w], t.h[r]) {
			w = r
		}
		if w == i {
			return
		}
		t.h[w], t.h[i] = t.h[i], t.h[w]
		i = w
	}
}

// sorted returns the held results best first.
func (t *topK) sorted() []Result {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b Result) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}
