package jsonvalue

import "unsafe"

// SizeCache measures documents like SizeWithin but remembers the sizes of
// the large objects and arrays it has measured, by identity, so that
// measuring a document again costs only its new parts. A workflow's
// documents share most of their values from one state to the next, since
// every change copies only what it changes.
//
// It relies on the rule of this package that a value is never modified once
// built: a cached object or array must not change afterwards. The zero
// value is ready to use; a SizeCache is not safe for concurrent use.
type SizeCache struct {
	sizes map[cacheKey]int
}

type cacheKey struct {
	p unsafe.Pointer
	n int // length of an array; 0 for an object
}

// cacheMinSize is the smallest size worth remembering, and cacheMaxEntries
// how many sizes are kept before the cache starts over.
const (
	cacheMinSize    = 256
	cacheMaxEntries = 4096
)

// Within returns the size of v and true when it is at most limit, as
// SizeWithin does.
func (c *SizeCache) Within(v any, limit int) (int, bool) {
	n := 0
	c.sizeOf(v, limit, 0, &n)
	return n, n <= limit
}

func (c *SizeCache) sizeOf(v any, limit, depth int, n *int) bool {
	var key cacheKey
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			break
		}
		key = cacheKey{p: *(*unsafe.Pointer)(unsafe.Pointer(&x))}
	case []any:
		if len(x) == 0 {
			break
		}
		key = cacheKey{p: unsafe.Pointer(&x[0]), n: len(x)}
	}
	if key.p == nil {
		return sizeOf(v, limit, depth, n)
	}
	if size, ok := c.sizes[key]; ok {
		*n += size
		return *n <= limit
	}
	start := *n
	if depth >= MaxDepth {
		return false
	}
	*n += 2
	switch x := v.(type) {
	case map[string]any:
		*n += len(x) - 1
		for k, item := range x {
			*n += stringSize(k) + 1
			if *n > limit || !c.sizeOf(item, limit, depth+1, n) {
				return false
			}
		}
	case []any:
		*n += len(x) - 1
		for _, item := range x {
			if *n > limit || !c.sizeOf(item, limit, depth+1, n) {
				return false
			}
		}
	}
	if size := *n - start; size >= cacheMinSize {
		if c.sizes == nil || len(c.sizes) >= cacheMaxEntries {
			c.sizes = make(map[cacheKey]int)
		}
		c.sizes[key] = size
	}
	return *n <= limit
}
