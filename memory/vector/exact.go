package vector

import "fmt"

// Exact is a brute-force index: every search compares the query with every
// vector, so its answers are the reference the approximate index is measured
// against. Vectors are stored normalised, back to back in blocks of
// contiguous []float32.
//
// An Exact is not safe for concurrent use: callers serialise writes and may
// run searches in parallel only while no write is in progress ([Index] does
// this).
type Exact struct {
	dim  int
	data slab // the i-th vector is ids[i]'s
	ids  []string
	pos  map[string]int // id to position in ids
}

// NewExact returns an empty Exact for vectors of dim dimensions, or, when dim
// is 0, of the dimension of the first vector added.
func NewExact(dim int) *Exact {
	return &Exact{dim: max(dim, 0), pos: make(map[string]int)}
}

// Dim returns the dimension of the index's vectors (0 while it is unset).
func (e *Exact) Dim() int { return e.dim }

// Len returns the number of vectors held.
func (e *Exact) Len() int { return len(e.ids) }

// Add stores a normalised copy of v under id, replacing any vector id had.
// It refuses a vector of the wrong dimension, a zero vector and one with a
// NaN or infinite component.
func (e *Exact) Add(id string, v []float32) error {
	n, err := normalized(v)
	if err != nil {
		return fmt.Errorf("add %q: %w", id, err)
	}
	if e.dim != 0 {
		if err := checkDim(len(v), e.dim); err != nil {
			return fmt.Errorf("add %q: %w", id, err)
		}
	}
	e.put(id, n)
	return nil
}

// put stores the already normalised vector n under id.
func (e *Exact) put(id string, n []float32) {
	if e.dim == 0 {
		e.dim = len(n)
	}
	e.data.dim = e.dim
	if i, ok := e.pos[id]; ok {
		copy(e.vec(i), n)
		return
	}
	e.pos[id] = len(e.ids)
	e.ids = append(e.ids, id)
	e.data.push(n)
}

// Delete removes id's vector, reporting whether there was one. The last
// vector moves into the freed place, so deletes cost O(dim).
func (e *Exact) Delete(id string) bool {
	i, ok := e.pos[id]
	if !ok {
		return false
	}
	last := len(e.ids) - 1
	if i != last {
		copy(e.vec(i), e.vec(last))
		e.ids[i] = e.ids[last]
		e.pos[e.ids[i]] = i
	}
	e.ids[last] = ""
	e.ids = e.ids[:last]
	e.data.pop()
	delete(e.pos, id)
	return true
}

// Get returns the stored (normalised) vector of id. The slice is the
// index's own: the caller must not modify it.
func (e *Exact) Get(id string) ([]float32, bool) {
	i, ok := e.pos[id]
	if !ok {
		return nil, false
	}
	return e.vec(i), true
}

// vec returns the vector at position i.
func (e *Exact) vec(i int) []float32 {
	return e.data.at(i)
}

// Search returns up to k entries with a cosine similarity to q of at least
// minScore, best first, ties broken by id. Entries that filter rejects are
// skipped. An empty index gives no results whatever q's dimension.
func (e *Exact) Search(q []float32, k int, minScore float32, filter Filter) ([]Result, error) {
	if err := checkQuery(k, minScore); err != nil {
		return nil, err
	}
	if len(e.ids) == 0 {
		return nil, nil
	}
	if err := checkDim(len(q), e.dim); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	nq, err := normalized(q)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return e.search(nq, k, minScore, filter), nil
}

// search is Search for a checked, normalised query.
func (e *Exact) search(q []float32, k int, minScore float32, filter Filter) []Result {
	return e.data.scan(e.ids, nil, q, k, minScore, filter)
}
