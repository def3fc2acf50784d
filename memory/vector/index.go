package vector

import (
	"fmt"
	"sync"
)

// Config configures an [Index]. The zero value gives the defaults.
type Config struct {
	// Dim is the dimension of every vector. Default 0: the dimension of the
	// first vector added.
	Dim int
	// Threshold is the number of entries at which the index switches from
	// exact search to the HNSW graph (building it from the entries held, in
	// their order). It switches back when deletes bring it below half the
	// threshold. Default 2000; a negative value never builds the graph.
	Threshold int
	// HNSW configures the graph; see [HNSWConfig] for its defaults.
	HNSW HNSWConfig
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = 2000
	}
	c.HNSW = c.HNSW.withDefaults()
	return c
}

// Index holds vectors by string id and answers nearest-neighbour queries by
// cosine similarity: by an exact scan while it holds fewer than
// Config.Threshold entries, through an [HNSW] graph above that, and by an
// exact scan again for a query whose filter rejects most of what the graph
// search meets.
//
// An Index is safe for concurrent use: searches run in parallel, and Add and
// Delete hold it exclusively. The Add that reaches the threshold builds the
// graph and the Delete that reaches the rebuild fraction rebuilds it; both
// block the index while they run.
type Index struct {
	cfg Config

	mu    sync.RWMutex
	exact *Exact // the entries while the graph is not built
	graph *HNSW  // the entries once it is; exactly one of the two is set
}

// NewIndex returns an empty Index.
func NewIndex(cfg Config) *Index {
	cfg = cfg.withDefaults()
	return &Index{cfg: cfg, exact: NewExact(cfg.Dim)}
}

// Add stores a normalised copy of v under id, replacing any vector id had.
// It refuses a vector whose dimension differs from the index's (the error is
// a *[DimensionError]), a zero vector ([ErrEmptyVector]) and one with a NaN
// or infinite component ([ErrNotFinite]).
func (x *Index) Add(id string, v []float32) error {
	n, err := normalized(v)
	if err != nil {
		return fmt.Errorf("add %q: %w", id, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if d := x.dimLocked(); d != 0 {
		if err := checkDim(len(v), d); err != nil {
			return fmt.Errorf("add %q: %w", id, err)
		}
	}
	if x.graph != nil {
		x.graph.put(id, n)
		x.graph.maybeRebuild()
		return nil
	}
	x.exact.put(id, n)
	if x.cfg.Threshold > 0 && x.exact.Len() >= x.cfg.Threshold {
		g := NewHNSW(x.exact.dim, x.cfg.HNSW)
		g.reserve(x.exact.Len())
		for i, id := range x.exact.ids {
			g.put(id, x.exact.vec(i))
		}
		x.graph, x.exact = g, nil
	}
	return nil
}

// Delete removes id, reporting whether it was present.
func (x *Index) Delete(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.graph == nil {
		return x.exact.Delete(id)
	}
	if !x.graph.kill(id) {
		return false
	}
	if x.graph.Len() < x.cfg.Threshold/2 {
		e := NewExact(x.graph.dim)
		for i, id := range x.graph.ids {
			if !x.graph.dead[i] {
				e.put(id, x.graph.vec(uint32(i)))
			}
		}
		x.graph, x.exact = nil, e
		return true
	}
	x.graph.maybeRebuild()
	return true
}

// Get returns a copy of the stored (normalised) vector of id.
func (x *Index) Get(id string) ([]float32, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var v []float32
	var ok bool
	if x.graph != nil {
		v, ok = x.graph.Get(id)
	} else {
		v, ok = x.exact.Get(id)
	}
	return append([]float32(nil), v...), ok
}

// Len returns the number of entries.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.graph != nil {
		return x.graph.Len()
	}
	return x.exact.Len()
}

// dimLocked returns the index's dimension, 0 while unset; x.mu is held.
func (x *Index) dimLocked() int {
	if x.graph != nil {
		return x.graph.dim
	}
	return x.exact.dim
}

// Search returns up to k entries with a cosine similarity to q of at least
// minScore, best first, ties broken by id, skipping entries that filter
// rejects (nil accepts all). Above the threshold the answer is approximate:
// it may miss some of the true nearest entries (see the package's
// benchmarks for the recall) but never returns a wrong score. Errors name a
// bad k, a NaN minScore, a query of the wrong dimension, and a zero or
// non-finite query.
func (x *Index) Search(q []float32, k int, minScore float32, filter Filter) ([]Result, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.graph != nil {
		return x.graph.Search(q, k, minScore, 0, filter)
	}
	return x.exact.Search(q, k, minScore, filter)
}

// Stats describes an index's size and memory use.
type Stats struct {
	// Len is the number of entries.
	Len int
	// Dim is the dimension of the vectors (0 while unset).
	Dim int
	// Approximate reports whether searches go through the HNSW graph.
	Approximate bool
	// Tombstones is the number of deleted graph nodes awaiting a rebuild.
	Tombstones int
	// Bytes estimates the memory the index holds: vectors, ids, the id map
	// and the graph's links, counting allocated capacity.
	Bytes int64
	// BytesPerVector is Bytes divided by Len (0 when empty).
	BytesPerVector float64
}

// Stats returns the index's current size and an estimate of its memory use.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var s Stats
	if g := x.graph; g != nil {
		s = Stats{Len: g.Len(), Dim: g.dim, Approximate: true, Tombstones: g.ndead, Bytes: g.Bytes()}
	} else {
		s = Stats{Len: x.exact.Len(), Dim: x.exact.dim, Bytes: x.exact.Bytes()}
	}
	if s.Len > 0 {
		s.BytesPerVector = float64(s.Bytes) / float64(s.Len)
	}
	return s
}
