package jsonpath

import "github.com/aslrun/aslrun/jsonvalue"

// maxFactor caps the growth factors below so that bounds cannot overflow;
// anything that large is simply "unbounded" for the payload limit.
const maxFactor = 1 << 20

// sizeFactor bounds the size of what p selects from the input: at most
// factor times the size of the input. ok is false when p reads something
// else than the input ("$$", a variable) or can select more than a
// multiple of it (a deep scan visits nested values several times).
func (p *Path) sizeFactor() (factor int, ok bool) {
	if p.root != rootInput {
		return 0, false
	}
	if p.definite {
		return 1, true
	}
	factor = 1
	for _, s := range p.segs {
		if s.deep {
			return 0, false
		}
		switch s.kind {
		case segNames:
			factor *= len(s.names)
		case segIndexes:
			factor *= len(s.indexes)
		}
		if factor > maxFactor {
			return 0, false
		}
	}
	// A list of matches adds brackets and commas: at most one byte per
	// matched byte.
	return 2 * factor, true
}

// boundParts returns, for the compiled template node n, the bytes its
// literal parts take and how many times the input's size its paths may
// add; ok is false when part of it cannot be bounded by the input.
func (n *tnode) boundParts() (fixed, factor int, ok bool) {
	switch {
	case n.isLit:
		return jsonvalue.Size(n.literal), 0, true
	case n.expr != nil:
		if n.expr.path == nil {
			if f := n.expr.fn; f != nil && f.root.fn.size > 0 {
				// A function whose results have a size of their own.
				return f.root.fn.size, 0, true
			}
			return 0, 0, false
		}
		f, ok := n.expr.path.sizeFactor()
		return 0, f, ok
	case n.isArray:
		fixed = 2 + len(n.items)
		for _, c := range n.items {
			cf, cfac, ok := c.boundParts()
			if !ok {
				return 0, 0, false
			}
			fixed, factor = fixed+cf, factor+cfac
		}
	default:
		fixed = 2 + len(n.keys)
		for i, c := range n.vals {
			cf, cfac, ok := c.boundParts()
			if !ok {
				return 0, 0, false
			}
			fixed, factor = fixed+jsonvalue.Size(n.keys[i])+1+cf, factor+cfac
		}
	}
	if factor > maxFactor {
		return 0, 0, false
	}
	return fixed, factor, true
}

// SizeBound returns an upper bound of the size, in bytes of compact JSON,
// of what Eval returns for an input whose size is at most inputSize; ok is
// false when the template reads the context object or variables, or calls
// intrinsic functions, whose sizes the input does not bound (but for
// States.MathAdd, States.ArrayLength, States.ArrayContains and States.UUID,
// whose results are never larger than a few bytes). The engine uses
// it to hold documents to the payload limit without measuring each one.
func (t *Template) SizeBound(inputSize int) (bound int, ok bool) {
	if !t.bounded {
		return 0, false
	}
	if t.factor > 0 && inputSize > (1<<62)/t.factor {
		return 0, false
	}
	return t.fixed + t.factor*inputSize, true
}
