package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// HNSWConfig configures an [HNSW]. The zero value gives the defaults.
type HNSWConfig struct {
	// M is the number of neighbours a node keeps on each layer above the
	// ground layer; the ground layer keeps 2*M. Larger M gives better recall
	// and slower builds. Default 16; at most 127.
	M int
	// EfConstruction is the breadth of the search that finds a new node's
	// neighbours. Default 100.
	EfConstruction int
	// EfSearch is the breadth of a query's search on the ground layer when
	// the caller passes ef 0; it is raised to k when smaller. Default 64.
	EfSearch int
	// Seed seeds the random layer assignment: the same seed and the same
	// sequence of Adds and Deletes give the same graph and the same answers.
	// Default 0 (a valid seed).
	Seed uint64
	// RebuildFraction is the fraction of tombstoned nodes at which the graph
	// is rebuilt from its live nodes. Default 0.25; 1 or more never rebuilds.
	RebuildFraction float64
}

// withDefaults returns c with zero fields set to their defaults.
func (c HNSWConfig) withDefaults() HNSWConfig {
	if c.M <= 0 {
		c.M = 16
	}
	c.M = min(max(c.M, 2), 127)
	if c.EfConstruction <= 0 {
		c.EfConstruction = 100
	}
	c.EfConstruction = max(c.EfConstruction, c.M)
	if c.EfSearch <= 0 {
		c.EfSearch = 64
	}
	if c.RebuildFraction <= 0 || math.IsNaN(c.RebuildFraction) {
		c.RebuildFraction = 0.25
	}
	return c
}

// maxLevel caps the layer a node can be drawn for; with M 16 a node reaches
// layer 16 with probability 16^-16, so the cap only bounds a corrupt draw.
const maxLevel = 16

// HNSW is an approximate nearest-neighbour index: a hierarchical navigable
// small-world graph over normalised vectors, searched by cosine similarity.
//
// Delete marks a node as a tombstone: it still routes searches but is never
// returned. When the tombstones reach HNSWConfig.RebuildFraction of the
// nodes, the graph is rebuilt from the live nodes in their insertion order.
//
// Exact duplicates are a known weak spot of HNSW graphs: when one vector is
// stored more than about 2*M times, the copies crowd each other out of
// their neighbour lists and a search may find only some of them. Storing
// one entry per distinct text avoids it.
//
// An HNSW is not safe for concurrent use: callers serialise writes and may
// run searches in parallel only while no write is in progress ([Index] does
// this).
type HNSW struct {
	cfg HNSWConfig
	m0  int     // neighbours on layer 0 (2*M)
	ml  float64 // level multiplier 1/ln(M)
	rng *rand.Rand

	dim   int
	data  slab     // node i's vector is data.at(i)
	ids   []string // node i's id
	dead  []bool   // node i is a tombstone
	level []uint8  // node i's top layer
	// links0 holds each node's layer-0 neighbours in a slot of m0+1 words:
	// the count, then the neighbour node numbers.
	links0 []uint32
	// upper[i] holds node i's neighbours on layers 1..level[i], each in a
	// slot of M+1 words laid out as in links0; nil for level-0 nodes.
	upper [][]uint32
	pos   map[string]uint32 // live id to node

	entry   uint32 // the node searches start from
	top     int    // entry's level; -1 while the graph is empty
	ndead   int
	visited *sync.Pool // of *visitSet
}

// NewHNSW returns an empty HNSW for vectors of dim dimensions, or, when dim
// is 0, of the dimension of the first vector added.
func NewHNSW(dim int, cfg HNSWConfig) *HNSW {
	cfg = cfg.withDefaults()
	return &HNSW{
		cfg: cfg,
		m0:  2 * cfg.M,
		ml:  1 / math.Log(float64(cfg.M)),
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		dim: max(dim, 0),
		pos: make(map[string]uint32),
		top: -1,

		visited: new(sync.Pool),
	}
}

// Dim returns the dimension of the index's vectors (0 while it is unset).
func (h *HNSW) Dim() int { return h.dim }

// Len returns the number of live (not deleted) vectors.
func (h *HNSW) Len() int { return len(h.pos) }

// Tombstones returns the number of deleted nodes still in the graph.
func (h *HNSW) Tombstones() int { return h.ndead }

// Config returns the configuration in use, defaults filled in.
func (h *HNSW) Config() HNSWConfig { return h.cfg }

// Add stores a normalised copy of v under id, replacing (deleting, then
// adding) any vector id had. It refuses a vector of the wrong dimension, a
// zero vector and one with a NaN or infinite component. A replaced vector
// leaves a tombstone, as a Delete does.
func (h *HNSW) Add(id string, v []float32) error {
	n, err := normalized(v)
	if err != nil {
		return fmt.Errorf("add %q: %w", id, err)
	}
	if h.dim != 0 {
		if err := checkDim(len(v), h.dim); err != nil {
			return fmt.Errorf("add %q: %w", id, err)
		}
	}
	h.put(id, n)
	h.maybeRebuild()
	return nil
}

// Delete removes id, reporting whether it was present. The node stays in
// the graph as a tombstone until the next rebuild, which Delete starts when
// the tombstones reach the configured fraction.
func (h *HNSW) Delete(id string) bool {
	if !h.kill(id) {
		return false
	}
	h.maybeRebuild()
	return true
}

// Get returns the stored (normalised) vector of id. The slice is the
// index's own: the caller must not modify it.
func (h *HNSW) Get(id string) ([]float32, bool) {
	i, ok := h.pos[id]
	if !ok {
		return nil, false
	}
	return h.vec(i), true
}

// kill tombstones id's node, reporting whether id was live.
func (h *HNSW) kill(id string) bool {
	i, ok := h.pos[id]
	if !ok {
		return false
	}
	delete(h.pos, id)
	h.dead[i] = true
	h.ndead++
	return true
}

// maybeRebuild rebuilds the graph when the tombstones reach the configured
// fraction of its nodes.
func (h *HNSW) maybeRebuild() {
	if h.cfg.RebuildFraction >= 1 || float64(h.ndead) < h.cfg.RebuildFraction*float64(len(h.ids)) {
		return
	}
	h.rebuild()
}

// rebuild replaces the graph with one built from the live nodes, in their
// insertion order, with the random source restarted from the seed.
func (h *HNSW) rebuild() {
	fresh := NewHNSW(h.dim, h.cfg)
	fresh.reserve(len(h.pos))
	for i, id := range h.ids {
		if !h.dead[i] {
			fresh.put(id, h.vec(uint32(i)))
		}
	}
	*h = *fresh
}

// reserve grows the node arrays for n more nodes.
func (h *HNSW) reserve(n int) {
	h.ids = slices.Grow(h.ids, n)
	h.dead = slices.Grow(h.dead, n)
	h.level = slices.Grow(h.level, n)
	h.upper = slices.Grow(h.upper, n)
	h.links0 = slices.Grow(h.links0, n*(h.m0+1))
}

// vec returns node i's vector.
func (h *HNSW) vec(i uint32) []float32 {
	return h.data.at(int(i))
}

// links returns node i's neighbour slot on layer l (count first).
func (h *HNSW) links(i uint32, l int) []uint32 {
	if l == 0 {
		o := int(i) * (h.m0 + 1)
		return h.links0[o : o+h.m0+1 : o+h.m0+1]
	}
	w := h.cfg.M + 1
	o := (l - 1) * w
	return h.upper[i][o : o+w : o+w]
}

// randomLevel draws a new node's top layer.
func (h *HNSW) randomLevel() int {
	u := 1 - h.rng.Float64() // in (0, 1]
	return min(int(-math.Log(u)*h.ml), maxLevel)
}

// put inserts the normalised vector n under id (Algorithm 1 of the paper).
func (h *HNSW) put(id string, n []float32) {
	if h.dim == 0 {
		h.dim = len(n)
	}
	h.kill(id)
	node := uint32(len(h.ids))
	lvl := h.randomLevel()
	h.data.dim = h.dim
	h.data.push(n)
	h.ids = append(h.ids, id)
	h.dead = append(h.dead, false)
	h.level = append(h.level, uint8(lvl))
	h.links0 = append(h.links0, make([]uint32, h.m0+1)...)
	var up []uint32
	if lvl > 0 {
		up = make([]uint32, lvl*(h.cfg.M+1))
	}
	h.upper = append(h.upper, up)
	h.pos[id] = node

	if h.top < 0 {
		h.entry, h.top = node, lvl
		return
	}
	q := h.vec(node)
	vs := h.visits()
	defer h.visited.Put(vs)
	ep := cand{sim: dot(q, h.vec(h.entry)), node: h.entry}
	for l := h.top; l > lvl; l-- {
		ep = h.greedy(q, ep, l)
	}
	eps := []cand{ep}
	for l := min(lvl, h.top); l >= 0; l-- {
		w := h.searchLayer(q, eps, h.cfg.EfConstruction, l, vs, nil)
		m := h.cfg.M
		if l == 0 {
			m = h.m0
		}
		chosen := h.selectNeighbours(w, h.cfg.M)
		setLinks(h.links(node, l), chosen)
		for _, c := range chosen {
			h.link(c.node, node, c.sim, l, m)
		}
		eps = w
	}
	if lvl > h.top {
		h.entry, h.top = node, lvl
	}
}

// setLinks writes cs into the neighbour slot s.
func setLinks(s []uint32, cs []cand) {
	s[0] = uint32(len(cs))
	for i, c := range cs {
		s[1+i] = c.node
	}
}

// link adds a link from node a to node b (similarity sim) on layer l, whose
// slots hold m neighbours; when a's slot is full, a's neighbours and b are
// thinned to m with the selection heuristic.
func (h *HNSW) link(a, b uint32, sim float32, l, m int) {
	s := h.links(a, l)
	n := int(s[0])
	if n < m {
		s[1+n] = b
		s[0]++
		return
	}
	av := h.vec(a)
	cs := make([]cand, 0, n+1)
	cs = append(cs, cand{sim: sim, node: b})
	for _, x := range s[1 : 1+n] {
		cs = append(cs, cand{sim: dot(av, h.vec(x)), node: x})
	}
	slices.SortFunc(cs, byNearness)
	setLinks(s, h.selectNeighbours(cs, m))
}

// byNearness orders candidates most similar first, then by node number.
func byNearness(a, b cand) int {
	switch {
	case a.sim > b.sim:
		return -1
	case a.sim < b.sim:
		return 1
	case a.node < b.node:
		return -1
	case a.node > b.node:
		return 1
	}
	return 0
}

// selectNeighbours picks up to m of the candidates cs (sorted most similar
// first) by the paper's heuristic (Algorithm 4): a candidate is kept only if
// it is more similar to the base than to every candidate already kept, which
// spreads links across directions instead of into one dense cluster.
func (h *HNSW) selectNeighbours(cs []cand, m int) []cand {
	if len(cs) <= m {
		return slices.Clone(cs)
	}
	out := make([]cand, 0, m)
	for _, c := range cs {
		if len(out) == m {
			break
		}
		cv := h.vec(c.node)
		keep := true
		for _, r := range out {
			if dot(cv, h.vec(r.node)) > c.sim {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// greedy walks layer l from ep towards q, moving to the most similar
// neighbour until none is more similar, and returns where it stopped.
func (h *HNSW) greedy(q []float32, ep cand, l int) cand {
	for changed := true; changed; {
		changed = false
		s := h.links(ep.node, l)
		for _, x := range s[1 : 1+s[0]] {
			if sim := dot(q, h.vec(x)); sim > ep.sim {
				ep = cand{sim: sim, node: x}
				changed = true
			}
		}
	}
	return ep
}

// walk carries a query's filtering through searchLayer and counts what the
// filter rejected, so that a search can give up on a filter that rejects
// most of the graph.
type walk struct {
	filter   Filter
	accepted int
	rejected int
	limit    int // give up once rejected passes limit and 3*accepted
	gaveUp   bool
}

// accepts reports whether node i may be a result of the query.
func (w *walk) accepts(h *HNSW, i uint32) bool {
	if h.dead[i] {
		return false
	}
	if w.filter == nil || w.filter(h.ids[i]) {
		w.accepted++
		return true
	}
	w.rejected++
	if w.rejected > w.limit && w.rejected > 3*w.accepted {
		w.gaveUp = true
	}
	return false
}

// searchLayer is the beam search of layer l (Algorithm 2 of the paper) from
// the entry points eps, keeping the ef most similar nodes found. When wk is
// not nil only the nodes it accepts are kept (tombstones and filtered nodes
// still route the search); otherwise every node is. The result is sorted
// most similar first.
func (h *HNSW) searchLayer(q []float32, eps []cand, ef, l int, vs *visitSet, wk *walk) []cand {
	vs.reset(len(h.ids))
	var cands nearFirst = make([]cand, 0, ef*2)
	var found farFirst = make([]cand, 0, ef+1)
	for _, e := range eps {
		vs.visit(e.node)
		cands.push(e)
		if wk == nil || wk.accepts(h, e.node) {
			found.push(e)
		}
	}
	for len(found) > ef {
		found.pop()
	}
	for len(cands) > 0 {
		c := cands.pop()
		if len(found) == ef && c.sim < found[0].sim {
			break
		}
		s := h.links(c.node, l)
		for _, x := range s[1 : 1+s[0]] {
			if !vs.visit(x) {
				continue
			}
			sim := dot(q, h.vec(x))
			if len(found) < ef || sim > found[0].sim {
				cands.push(cand{sim: sim, node: x})
				if wk == nil || wk.accepts(h, x) {
					found.push(cand{sim: sim, node: x})
					if len(found) > ef {
						found.pop()
					}
				}
			}
		}
		if wk != nil && wk.gaveUp {
			return nil
		}
	}
	out := []cand(found)
	slices.SortFunc(out, byNearness)
	return out
}

// Search returns up to k live entries with a cosine similarity to q of at
// least minScore, best first, ties broken by id. ef is the breadth of the
// search on the ground layer (0 means HNSWConfig.EfSearch; it is raised to k
// when smaller): larger is slower and finds more of the true nearest
// entries. Entries that filter rejects are skipped; when the filter rejects
// more than three quarters of what the search meets, Search answers by an
// exact scan instead, which is then the reference answer.
func (h *HNSW) Search(q []float32, k int, minScore float32, ef int, filter Filter) ([]Result, error) {
	res, _, err := h.search(q, k, minScore, ef, filter)
	return res, err
}

// search is Search, also reporting whether it fell back to an exact scan.
func (h *HNSW) search(q []float32, k int, minScore float32, ef int, filter Filter) ([]Result, bool, error) {
	if err := checkQuery(k, minScore); err != nil {
		return nil, false, err
	}
	if len(h.pos) == 0 {
		return nil, false, nil
	}
	if err := checkDim(len(q), h.dim); err != nil {
		return nil, false, fmt.Errorf("search: %w", err)
	}
	nq, err := normalized(q)
	if err != nil {
		return nil, false, fmt.Errorf("search: %w", err)
	}
	if ef <= 0 {
		ef = h.cfg.EfSearch
	}
	ef = max(ef, k)
	ep := cand{sim: dot(nq, h.vec(h.entry)), node: h.entry}
	for l := h.top; l > 0; l-- {
		ep = h.greedy(nq, ep, l)
	}
	vs := h.visits()
	wk := &walk{filter: filter, limit: 4 * ef}
	found := h.searchLayer(nq, []cand{ep}, ef, 0, vs, wk)
	h.visited.Put(vs)
	if wk.gaveUp {
		return h.scan(nq, k, minScore, filter), true, nil
	}
	top := newTopK(k)
	for _, c := range found {
		if c.sim >= minScore {
			top.offer(Result{ID: h.ids[c.node], Score: c.sim})
		}
	}
	return top.sorted(), false, nil
}

// scan is the exact search over the live nodes.
func (h *HNSW) scan(q []float32, k int, minScore float32, filter Filter) []Result {
	return h.data.scan(h.ids, h.dead, q, k, minScore, filter)
}

// visitSet marks the nodes one search has seen. A mark equal to the current
// epoch means seen, so resetting is one increment rather than a clear.
type visitSet struct {
	mark  []uint32
	epoch uint32
}

// visits takes a visitSet from the pool.
func (h *HNSW) visits() *visitSet {
	if v, ok := h.visited.Get().(*visitSet); ok {
		return v
	}
	return &visitSet{}
}

// reset starts a new search over n nodes.
func (v *visitSet) reset(n int) {
	if len(v.mark) < n {
		v.mark = make([]uint32, n+n/4)
		v.epoch = 0
	}
	v.epoch++
	if v.epoch == 0 {
		clear(v.mark)
		v.epoch = 1
	}
}

// visit marks node i, reporting whether it was unseen.
func (v *visitSet) visit(i uint32) bool {
	if v.mark[i] == v.epoch {
		return false
	}
	v.mark[i] = v.epoch
	return true
}
