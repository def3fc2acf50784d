package jsonvalue

// Combine returns what storing add "merged" into old gives: two objects
// merge key by key (keys of both combine in turn), two arrays are joined
// (old's items, then add's), and anything else is replaced by add. Neither
// argument is modified; the result shares their unchanged parts.
func Combine(old, add any) any {
	// Packed arrays join as arrays: their elements are decoded.
	if oa, ok := arrayValue(old); ok {
		if aa, ok := arrayValue(add); ok {
			old, add = oa, aa
		}
	}
	switch a := add.(type) {
	case map[string]any:
		o, ok := old.(map[string]any)
		if !ok {
			return add
		}
		out := make(map[string]any, len(o)+len(a))
		for k, v := range o {
			out[k] = v
		}
		for k, v := range a {
			if ov, ok := o[k]; ok {
				out[k] = Combine(ov, v)
			} else {
				out[k] = v
			}
		}
		return out
	case []any:
		o, ok := old.([]any)
		if !ok {
			return add
		}
		out := make([]any, 0, len(o)+len(a))
		return append(append(out, o...), a...)
	}
	return add
}

// arrayValue returns v as a []any when it is an array: a *Packed is
// decoded (its elements cannot fail to decode).
func arrayValue(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case *Packed:
		a, err := x.Slice()
		return a, err == nil
	}
	return nil, false
}
