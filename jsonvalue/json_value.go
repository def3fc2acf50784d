package jsonvalue

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// maxWalk bounds the recursion of Equal and Clone, which cannot fail, so
// that a cyclic Go value (a map that contains itself) cannot exhaust the
// stack. Decoded values are never deeper than MaxDepth.
const maxWalk = 10000

// Equal reports whether a and b are the same JSON value: numbers by value
// (1 equals 1.0 and 1e0; Go int, uint and float values may stand for
// numbers, and a NaN or infinite float equals nothing), strings exactly,
// arrays element by element, and objects by their key sets and the values
// under each key. A nil []any or map[string]any is an empty array or
// object. Values outside the model are equal to nothing.
func Equal(a, b any) bool { return equal(a, b, 0) }

func equal(a, b any, depth int) bool {
	if depth > maxWalk {
		return false
	}
	if pa, ok := a.(*Packed); ok {
		if pb, ok := b.(*Packed); ok && pa.canon && pb.canon {
			return bytes.Equal(pa.text, pb.text) && slices.Equal(pa.ends, pb.ends)
		}
		return equalPacked(pa, b, depth)
	}
	if pb, ok := b.(*Packed); ok {
		return equalPacked(pb, a, depth)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		if y, ok := b.(json.Number); ok && x == y {
			return true
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv, depth+1) {
				return false
			}
		}
		return true
	}
	x, ok := numberOf(a)
	if !ok {
		return false
	}
	y, ok := numberOf(b)
	return ok && CompareNumbers(x, y) == 0
}

// equalPacked reports whether p and v are equal arrays, element by element.
func equalPacked(p *Packed, v any, depth int) bool {
	at := func(i int) (any, bool) { x, err := p.At(i); return x, err == nil }
	var n int
	var other func(int) (any, bool)
	switch y := v.(type) {
	case []any:
		n, other = len(y), func(i int) (any, bool) { return y[i], true }
	case *Packed:
		n, other = y.Len(), func(i int) (any, bool) { x, err := y.At(i); return x, err == nil }
	default:
		return false
	}
	if n != p.Len() {
		return false
	}
	for i := range n {
		x, ok1 := at(i)
		y, ok2 := other(i)
		if !ok1 || !ok2 || !equal(x, y, depth+1) {
			return false
		}
	}
	return true
}

// numberOf returns the number v stands for: a json.Number, or a Go integer
// or finite float as IntNumber and FloatNumber write it.
func numberOf(v any) (json.Number, bool) {
	var buf [40]byte
	switch v := v.(type) {
	case json.Number:
		return v, true
	case float64:
		return floatNumber(buf[:0], v, 64)
	case float32:
		return floatNumber(buf[:0], float64(v), 32)
	}
	if b, ok := appendGoInt(buf[:0], v); ok {
		return json.Number(b), true
	}
	return "", false
}

func floatNumber(buf []byte, f float64, bits int) (json.Number, bool) {
	b, err := appendGoFloat(buf, f, bits)
	if err != nil {
		return "", false
	}
	return json.Number(b), true
}

// Clone returns a deep copy of v: every []any and map[string]any in it is
// copied, everything else (strings, numbers, values outside the model) is
// shared. Values nested more than 10,000 levels deep are shared rather than
// copied.
func Clone(v any) any { return clone(v, 0) }

func clone(v any, depth int) any {
	if depth > maxWalk {
		return v
	}
	switch v := v.(type) {
	case []any:
		if v == nil {
			return v
		}
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = clone(x, depth+1)
		}
		return c
	case map[string]any:
		if v == nil {
			return v
		}
		c := make(map[string]any, len(v))
		for k, x := range v {
			c[k] = clone(x, depth+1)
		}
		return c
	}
	return v
}

// Normalize turns a Go value into the package's value model, for results
// that Go code (such as a Go agent) produces:
//
//   - nil, bool and string are kept; a string with invalid UTF-8 has each
//     bad byte replaced by U+FFFD, as Marshal would write it;
//   - a json.Number is kept when its text is a valid JSON number;
//   - Go integers become IntNumber-style json.Number, float32 and float64
//     become FloatNumber text (a NaN or infinity is an error);
//   - []any and map[string]any are walked; when nothing inside needed a
//     change the same slice or map is returned, not a copy; object keys
//     equal after Unicode NFC normalization are an error, as in Decode;
//   - anything else ([]string, map[string]int, structs, pointers, types
//     implementing json.Marshaler) is encoded with encoding/json and read
//     back with Decode.
//
// Errors are *JSONError with Offset -1 and the path of the offending value,
// like `invalid JSON value at $.score: non-finite number NaN`. Nesting
// deeper than MaxDepth is an error too.
func Normalize(v any) (any, error) {
	var n normalizer
	out, _, err := n.value(v, 0)
	if err != nil {
		err.Path = n.path.String() + n.suffix
		return nil, err
	}
	return out, nil
}

type normalizer struct {
	path   errPath // filled only when an error unwinds
	suffix string  // the path inside a value read back with Decode
}

// value returns the normalized v and whether it differs from v. depth is the
// number of arrays and objects around v.
func (n *normalizer) value(v any, depth int) (any, bool, *JSONError) {
	switch x := v.(type) {
	case nil, bool:
		return v, false, nil
	case string:
		if utf8.ValidString(x) {
			return v, false, nil
		}
		return validUTF8(x), true, nil
	case json.Number:
		if !ValidNumber(string(x)) {
			return nil, false, valueError("invalid number %q", string(x))
		}
		return v, false, nil
	case []any:
		if depth >= MaxDepth {
			return nil, false, tooDeep()
		}
		return n.array(x, depth+1)
	case map[string]any:
		if depth >= MaxDepth {
			return nil, false, tooDeep()
		}
		return n.object(x, depth+1)
	case *Packed:
		// Made by this package: already in the model.
		if depth+x.depth >= MaxDepth {
			return nil, false, tooDeep()
		}
		return v, false, nil
	case float64:
		return n.float(x, 64)
	case float32:
		return n.float(float64(x), 32)
	}
	var buf [24]byte
	if b, ok := appendGoInt(buf[:0], v); ok {
		return json.Number(b), true, nil
	}
	return n.viaEncodingJSON(v, depth)
}

func (n *normalizer) float(f float64, bits int) (any, bool, *JSONError) {
	var buf [40]byte
	b, err := appendGoFloat(buf[:0], f, bits)
	if err != nil {
		return nil, false, err
	}
	return json.Number(b), true, nil
}

func (n *normalizer) array(a []any, depth int) (any, bool, *JSONError) {
	var out []any // nil until an element changes
	for i, x := range a {
		y, changed, err := n.value(x, depth)
		if err != nil {
			n.path = append(n.path, indexSeg(i))
			return nil, false, err
		}
		if changed && out == nil {
			out = make([]any, len(a))
			copy(out, a[:i])
		}
		if out != nil {
			out[i] = y
		}
	}
	if out == nil {
		return a, false, nil
	}
	return out, true, nil
}

func (n *normalizer) object(m map[string]any, depth int) (any, bool, *JSONError) {
	var out map[string]any // nil until a member changes
	var forms map[string]string
	for k, x := range m {
		key := k
		if !isASCII(k) {
			if forms == nil {
				forms = make(map[string]string)
			}
			key = validUTF8(k)
			if err := addForm(forms, k, canonicalString(key)); err != nil {
				return nil, false, err
			}
		}
		y, changed, err := n.value(x, depth)
		if err != nil {
			n.path = append(n.path, keySeg(k))
			return nil, false, err
		}
		if (changed || key != k) && out == nil {
			out = make(map[string]any, len(m))
			for k2, x2 := range m {
				out[k2] = x2
			}
		}
		if out != nil {
			if key != k {
				delete(out, k)
			}
			out[key] = y
		}
	}
	if forms != nil {
		// An ASCII key is its own NFC form; check those against the rest.
		for k := range m {
			if isASCII(k) {
				if err := addForm(forms, k, k); err != nil {
					return nil, false, err
				}
			}
		}
	}
	if out == nil {
		return m, false, nil
	}
	return out, true, nil
}

// addForm records that key has the NFC form form, and fails when another
// key already has it. The two keys are named in byte order, so the message
// does not depend on map iteration order.
func addForm(forms map[string]string, key, form string) *JSONError {
	prev, dup := forms[form]
	if !dup {
		forms[form] = key
		return nil
	}
	if prev > key {
		prev, key = key, prev
	}
	return valueError("duplicate key %q (equal to %q after Unicode NFC normalization)", key, prev)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// viaEncodingJSON converts a value outside the model with encoding/json and
// reads the text back with the strict decoder, counting the levels around v
// towards MaxDepth.
func (n *normalizer) viaEncodingJSON(v any, depth int) (any, bool, *JSONError) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, false, valueError("cannot encode %T as JSON: %v", v, err)
	}
	d := newDecoder(text)
	out, derr := d.value(depth)
	if derr != nil {
		n.suffix = d.path.String()[1:]
		return nil, false, valueError("%s", derr.Msg)
	}
	return out, true, nil
}
