package vector

// cand is a graph node with its similarity to the query being served.
type cand struct {
	sim  float32
	node uint32
}

// nearFirst and farFirst are the same binary heap with the comparison
// turned around, written out twice on purpose: they run in the inner loop
// of every graph search, where container/heap's interface calls, or a
// comparison passed as a function or a type parameter's method, cost a
// call per comparison.

// nearFirst is a max-heap of candidates by similarity: the nearest (most
// similar) candidate is popped first.
type nearFirst []cand

// push adds c.
func (h *nearFirst) push(c cand) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].sim >= s[i].sim {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// pop removes and returns the most similar candidate; h must not be empty.
func (h *nearFirst) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < n && s[l].sim > s[w].sim {
			w = l
		}
		if r < n && s[r].sim > s[w].sim {
			w = r
		}
		if w == i {
			break
		}
		s[w], s[i] = s[i], s[w]
		i = w
	}
	*h = s
	return top
}

// farFirst is a min-heap of candidates by similarity: its root is the least
// similar, the one to drop when the set is over its size.
type farFirst []cand

// push adds c.
func (h *farFirst) push(c cand) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].sim <= s[i].sim {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// pop removes and returns the least similar candidate; h must not be empty.
func (h *farFirst) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < n && s[l].sim < s[w].sim {
			w = l
		}
		if r < n && s[r].sim < s[w].sim {
			w = r
		}
		if w == i {
			break
		}
		s[w], s[i] = s[i], s[w]
		i = w
	}
	*h = s
	return top
}
