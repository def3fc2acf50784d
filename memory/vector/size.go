package vector

import "unsafe"

// mapEntryBytes estimates the cost of one entry in a map from string to a
// position: the key and value, the control byte and the load factor.
const mapEntryBytes = 40

// Bytes estimates the memory e holds: vectors, ids and the id map,
// counting allocated capacity.
func (e *Exact) Bytes() int64 {
	return e.data.bytes() + idBytes(e.ids) + int64(len(e.pos))*mapEntryBytes
}

// Bytes estimates the memory h holds: vectors (tombstones included), ids,
// the id map and the links of every layer, counting allocated capacity.
func (h *HNSW) Bytes() int64 {
	n := h.data.bytes() + idBytes(h.ids) + int64(len(h.pos))*mapEntryBytes +
		int64(cap(h.dead)) + int64(cap(h.level)) + int64(cap(h.links0))*4 +
		int64(cap(h.upper))*int64(unsafe.Sizeof([]uint32(nil)))
	for _, u := range h.upper {
		n += int64(cap(u)) * 4
	}
	return n
}

// idBytes is the memory of an id slice: the string headers of its capacity
// and the bytes of the strings.
func idBytes(ids []string) int64 {
	n := int64(cap(ids)) * int64(unsafe.Sizeof(""))
	for _, id := range ids {
		n += int64(len(id))
	}
	return n
}
