package engine

import (
	"reflect"
	"sync"

	"github.com/aslrun/aslrun/jsonvalue"
)

// plainCache hands documents to agents with their packed arrays
// (jsonvalue.Packed) decoded, as jsonvalue.Expand does, remembering the
// objects and arrays it found to hold none: a document shares most of its
// parts with the documents before it (ResultPath and Set copy only the
// containers on their way), so that a call does not walk again what the
// calls before it walked.
//
// It relies on the rule that a document is never modified once built. It
// holds the containers it remembers, so that their addresses are not
// reused while they are remembered, and starts over past
// plainCacheMaxEntries. The zero value is ready to use; a plainCache is
// safe for concurrent use (a simultaneous Debate round calls its agents
// together).
type plainCache struct {
	mu   sync.Mutex
	seen map[plainKey]any
}

// plainKey is a container's identity: the address of its map or of its
// first element, and an array's length (a shorter array may share its
// elements).
type plainKey struct {
	p uintptr
	n int
}

// plainCacheMinNodes is the fewest values a container must hold, counted
// through its nested containers, to be remembered, and plainCacheMaxEntries
// how many containers are remembered before the cache starts over.
const (
	plainCacheMinNodes   = 8
	plainCacheMaxEntries = 1024
)

// expand returns v with every packed array in it decoded, as
// jsonvalue.Expand does; a v without one is returned as it is.
func (c *plainCache) expand(v any) (any, error) {
	c.mu.Lock()
	packed, _ := c.packed(v, 0)
	c.mu.Unlock()
	if !packed {
		return v, nil
	}
	return jsonvalue.Expand(v)
}

// packed reports whether v holds a packed array within jsonvalue.MaxDepth
// (the depth jsonvalue.Expand looks to), and how many values it holds.
func (c *plainCache) packed(v any, depth int) (bool, int) {
	if depth > jsonvalue.MaxDepth {
		return false, 1
	}
	var key plainKey
	nodes := 1
	switch x := v.(type) {
	case *jsonvalue.Packed:
		return true, 1
	case map[string]any:
		if len(x) == 0 {
			return false, 1
		}
		key = plainKey{p: reflect.ValueOf(x).Pointer()}
		if _, ok := c.seen[key]; ok {
			return false, 1
		}
		for _, e := range x {
			p, n := c.packed(e, depth+1)
			if p {
				return true, 0
			}
			nodes += n
		}
	case []any:
		if len(x) == 0 {
			return false, 1
		}
		key = plainKey{p: reflect.ValueOf(x).Pointer(), n: len(x)}
		if _, ok := c.seen[key]; ok {
			return false, 1
		}
		for _, e := range x {
			p, n := c.packed(e, depth+1)
			if p {
				return true, 0
			}
			nodes += n
		}
	default:
		return false, 1
	}
	if nodes >= plainCacheMinNodes {
		if c.seen == nil || len(c.seen) >= plainCacheMaxEntries {
			c.seen = make(map[plainKey]any)
		}
		c.seen[key] = v
	}
	return false, nodes
}
