package vector

// blockShift sets the size of a slab's blocks: 1<<blockShift vectors each.
const blockShift = 10

// blockVectors is the number of vectors in a full block.
const blockVectors = 1 << blockShift

// slab stores vectors of one dimension back to back in blocks of
// blockVectors vectors. Growing never copies more than one block, so an Add
// to a large index does not stall on copying every vector, while a scan
// still reads long contiguous runs. The first block grows by appending, so
// a small index holds little more than its vectors.
type slab struct {
	dim    int
	n      int
	blocks [][]float32
}

// at returns vector i (0 <= i < len), a slice into the block.
func (s *slab) at(i int) []float32 {
	b := s.blocks[i>>blockShift]
	o := (i & (blockVectors - 1)) * s.dim
	return b[o : o+s.dim : o+s.dim]
}

// push appends v, whose length is the slab's dimension.
func (s *slab) push(v []float32) {
	b := s.n >> blockShift
	if b == len(s.blocks) {
		var blk []float32
		if b > 0 {
			blk = make([]float32, 0, blockVectors*s.dim)
		}
		s.blocks = append(s.blocks, blk)
	}
	s.blocks[b] = append(s.blocks[b], v...)
	s.n++
}

// pop removes the last vector.
func (s *slab) pop() {
	s.n--
	b := s.n >> blockShift
	s.blocks[b] = s.blocks[b][:(s.n&(blockVectors-1))*s.dim]
	if len(s.blocks[b]) == 0 && b > 0 {
		s.blocks[b] = nil
		s.blocks = s.blocks[:b]
	}
}

// bytes returns the capacity the blocks hold, in bytes.
func (s *slab) bytes() int64 {
	var n int64
	for _, b := range s.blocks {
		n += int64(cap(b)) * 4
	}
	return n
}

// scan is the exact search over the vectors of s (the i-th named ids[i]),
// skipping positions marked in dead (when not nil) and ids that filter
// rejects.
func (s *slab) scan(ids []string, dead []bool, q []float32, k int, minScore float32, filter Filter) []Result {
	top := newTopK(k)
	dim := s.dim
	for bi, blk := range s.blocks {
		base := bi << blockShift
		for j, off := 0, 0; off+dim <= len(blk); j, off = j+1, off+dim {
			i := base + j
			if dead != nil && dead[i] {
				continue
			}
			sc := dot(q, blk[off:off+dim:off+dim])
			if sc < minScore {
				continue
			}
			r := Result{ID: ids[i], Score: sc}
			if top.full() && !better(r, top.worst()) {
				continue
			}
			if filter != nil && !filter(r.ID) {
				continue
			}
			top.offer(r)
		}
	}
	return top.sorted()
}
