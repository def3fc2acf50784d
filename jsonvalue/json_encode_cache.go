package jsonvalue

import (
	"bytes"
	"crypto/sha256"
	"unsafe"
)

// EncodeCache writes documents as Marshal and Canonical do, remembering
// the encodings of their large objects and arrays by identity, so that
// writing a document again costs only its new parts. A workflow's
// documents share most of their values from one state to the next (every
// change copies only the objects along its path), so that hashing each
// new document of an execution re-encodes little. The bytes written are
// exactly those of Marshal and Canonical.
//
// It relies on the rule of this package that a value is never modified
// once built: a cached object or array must not change afterwards. It
// holds the encodings of at most about its limit in bytes (two
// generations: when the newer fills half the limit, the older is dropped,
// and what is still used is carried into the next). Holding an encoding
// keeps the object or array it encodes alive, so that its memory is not
// reused by another. An EncodeCache is not safe for concurrent use.
type EncodeCache struct {
	limit    int
	cur, old map[encodeKey]encoded
	curBytes int
	oldBytes int
	scratch  []byte
	keys     []string // the encoders' scratch stacks, kept between calls
	pairs    []keyPair
}

// encodeKey identifies an object or a non-empty array by its memory (as
// cacheKey) and the form it was written in.
type encodeKey struct {
	cacheKey
	canonical bool
}

// encoded is a cached encoding and the depth it was written at: written
// there, it is within MaxDepth at that depth or any lesser one.
type encoded struct {
	b     []byte
	depth int
}

// encodeMinSize is the smallest encoding worth remembering: a smaller one
// costs about as much to write as to look up and copy.
const encodeMinSize = 256

// NewEncodeCache returns a cache holding at most about limit bytes of
// encodings.
func NewEncodeCache(limit int) *EncodeCache {
	return &EncodeCache{limit: limit}
}

// Bytes is about the size of the encodings the cache holds.
func (c *EncodeCache) Bytes() int { return c.curBytes + c.oldBytes }

// Marshal returns Marshal(v), a new slice the caller owns.
func (c *EncodeCache) Marshal(v any) ([]byte, error) {
	out, err := c.encode(v, false)
	if err != nil {
		return nil, err
	}
	return c.owned(out), nil
}

// owned returns out, an encoding just written, as a slice the caller
// owns: a copy when it is the cache's scratch buffer, else out itself (a
// document larger than the cache's limit is not kept as scratch, and is
// not copied).
func (c *EncodeCache) owned(out []byte) []byte {
	if cap(c.scratch) > 0 && unsafe.SliceData(c.scratch[:1]) == unsafe.SliceData(out[:1]) {
		return bytes.Clone(out)
	}
	return out
}

// Canonical returns Canonical(v), a new slice the caller owns.
func (c *EncodeCache) Canonical(v any) ([]byte, error) {
	out, err := c.encode(v, true)
	if err != nil {
		return nil, err
	}
	return c.owned(out), nil
}

// CanonicalSum returns the SHA-256 of Canonical(v), the bytes of which
// CanonicalHash is the hex.
func (c *EncodeCache) CanonicalSum(v any) ([sha256.Size]byte, error) {
	out, err := c.encode(v, true)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(out), nil
}

// encode writes v into the cache's scratch buffer, valid until the next
// call.
func (c *EncodeCache) encode(v any, canonical bool) ([]byte, error) {
	e := encoder{canonical: canonical, cache: c, keys: c.keys[:0], pairs: c.pairs[:0]}
	out, err := e.value(c.scratch[:0], v, 0)
	c.keys, c.pairs = e.keys[:0], e.pairs[:0]
	if err != nil {
		err.Path = e.path.String()
		return nil, err
	}
	if cap(out) <= c.limit {
		// Keep the buffer for the next document, unless it is larger than
		// everything the cache may hold.
		c.scratch = out[:0]
	}
	return out, nil
}

// cachedValue appends the encoding of the object or array identified by
// key, at depth, to dst: from the cache when it holds it (written at that
// depth or a deeper one), else written by write and remembered when it is
// large. A document itself (depth 0) is not remembered: its caller
// usually remembers it whole, and a new document is mostly a new object
// around shared parts.
func (e *encoder) cachedValue(dst []byte, key cacheKey, depth int, write func([]byte) ([]byte, *JSONError)) ([]byte, *JSONError) {
	c := e.cache
	if depth == 0 {
		return write(dst)
	}
	k := encodeKey{cacheKey: key, canonical: e.canonical}
	if x, ok := c.cur[k]; ok && depth <= x.depth {
		return append(dst, x.b...), nil
	}
	if x, ok := c.old[k]; ok && depth <= x.depth {
		c.put(k, x)
		return append(dst, x.b...), nil
	}
	start := len(dst)
	out, err := write(dst)
	if n := len(out) - start; err == nil && n >= encodeMinSize && n <= c.limit/2 {
		c.put(k, encoded{b: bytes.Clone(out[start:]), depth: depth})
	}
	return out, err
}

// put adds an encoding to the newer generation, starting a new one first
// when it would pass half the limit.
func (c *EncodeCache) put(k encodeKey, x encoded) {
	if c.cur == nil || c.curBytes+len(x.b) > c.limit/2 {
		c.old, c.cur, c.oldBytes, c.curBytes = c.cur, make(map[encodeKey]encoded), c.curBytes, 0
	}
	if old, ok := c.cur[k]; ok {
		c.curBytes -= len(old.b)
	}
	c.cur[k] = x
	c.curBytes += len(x.b)
}

// mapKey and sliceKey identify an object or a non-empty array by its
// memory.
func mapKey(m map[string]any) cacheKey {
	return cacheKey{p: *(*unsafe.Pointer)(unsafe.Pointer(&m))}
}

func sliceKey(a []any) cacheKey {
	return cacheKey{p: unsafe.Pointer(&a[0]), n: len(a)}
}
