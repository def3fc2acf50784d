package jsonvalue

import (
	"bytes"
	"fmt"
	"math"
)

// Packed is a JSON array held as text: the Marshal form of each element,
// one after the other, decoded element by element when read. A Go []any of
// small objects costs several times its JSON (a map of two entries is
// about 300 bytes); a Packed costs its JSON and four bytes per element.
// DecodePacked makes them for the large arrays of a document, so that an
// inline Map over a million items holds its input once, compactly.
//
// A Packed is immutable and safe for concurrent use. It is an array of the
// value model wherever this package reads values (Marshal, Canonical,
// Size, Equal, TypeName); code that walks documents by their Go types
// reads it through Len and At, or Expand turns it into a []any.
type Packed struct {
	text []byte
	// ends[i] is the end of element i in text; it starts where element
	// i-1 ends.
	ends []uint32
	// canon is set when every element's Marshal form is its canonical
	// form, so that Canonical copies the text.
	canon bool
	// depth is the deepest nesting of arrays and objects in an element (0:
	// the elements are scalars), to hold documents to MaxDepth.
	depth int
}

// PackFrom is the element count from which DecodePacked packs an array.
const PackFrom = 1024

// maxPacked bounds a Packed's text: its offsets are 32-bit.
const maxPacked = math.MaxUint32

// Len returns the number of elements.
func (p *Packed) Len() int { return len(p.ends) }

// Raw returns the Marshal form of element i (0 <= i < Len), shared with p:
// callers must not modify it.
func (p *Packed) Raw(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = p.ends[i-1]
	}
	return p.text[start:p.ends[i]:p.ends[i]]
}

// At decodes element i (0 <= i < Len). The value is the element's own:
// nothing of it is shared with p or with another call.
func (p *Packed) At(i int) (any, error) {
	if i < 0 || i >= len(p.ends) {
		return nil, fmt.Errorf("element %d of a packed array of %d", i, len(p.ends))
	}
	return Decode(p.Raw(i))
}

// Slice decodes every element into a []any.
func (p *Packed) Slice() ([]any, error) {
	out := make([]any, len(p.ends))
	for i := range out {
		v, err := p.At(i)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// MarshalJSON returns the array's Marshal form, so that encoding/json
// writes a Packed as the array it is.
func (p *Packed) MarshalJSON() ([]byte, error) {
	return p.appendRaw(make([]byte, 0, p.size())), nil
}

// size is the length of the array's Marshal form.
func (p *Packed) size() int {
	return 2 + len(p.text) + max(len(p.ends)-1, 0)
}

// appendRaw appends the array's Marshal form.
func (p *Packed) appendRaw(dst []byte) []byte {
	dst = append(dst, '[')
	start := uint32(0)
	for i, end := range p.ends {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, p.text[start:end]...)
		start = end
	}
	return append(dst, ']')
}

// Pack makes a Packed of the elements of a, which must be values Marshal
// accepts; a Packed in a is written into the new one's text.
func Pack(a []any) (*Packed, error) {
	var b packer
	for _, v := range a {
		if err := b.add(v); err != nil {
			return nil, err
		}
	}
	return b.done(), nil
}

// packer builds a Packed element by element.
type packer struct {
	p       Packed
	scratch []byte
	notCan  bool
}

// newPacker returns a packer for an array of at most room bytes of text
// whose first n elements took read bytes, its buffers sized for all of
// room: the array's text is never longer than its JSON, so a packed
// array that is most of a document is built without growing its buffer.
func newPacker(room, read, n int) *packer {
	per := max(read/max(n, 1), 1)
	return &packer{p: Packed{text: make([]byte, 0, room), ends: make([]uint32, 0, room/per+16)}}
}

// add appends element v.
func (b *packer) add(v any) *JSONError {
	var e encoder
	start := len(b.p.text)
	text, err := e.value(b.p.text, v, 1)
	if err != nil {
		e.path = append(e.path, indexSeg(len(b.p.ends)))
		err.Path = e.path.String()
		return err
	}
	if len(text) > maxPacked {
		return valueError("a packed array holds at most %d bytes", maxPacked)
	}
	b.p.text = text
	b.p.ends = append(b.p.ends, uint32(len(text)))
	b.p.depth = max(b.p.depth, nesting(v, 0))
	if !b.notCan {
		c := encoder{canonical: true}
		var cerr *JSONError
		b.scratch, cerr = c.value(b.scratch[:0], v, 0)
		b.notCan = cerr != nil || !bytes.Equal(b.scratch, text[start:])
	}
	return nil
}

// done returns the Packed built, its buffers trimmed to their length.
func (b *packer) done() *Packed {
	p := b.p
	// Growing by append leaves up to half of the buffers spare: trim them
	// when that is more than an eighth.
	if cap(p.text)-len(p.text) > len(p.text)/8 {
		p.text = bytes.Clone(p.text)
	}
	if p.text == nil {
		p.text = []byte{}
	}
	if cap(p.ends)-len(p.ends) > len(p.ends)/8 {
		p.ends = append(make([]uint32, 0, len(p.ends)), p.ends...)
	}
	p.canon = !b.notCan
	return &p
}

// nesting is the deepest nesting of arrays and objects in v: 0 for a
// scalar, 1 for an array of scalars, and so on.
func nesting(v any, depth int) int {
	if depth > MaxDepth {
		return depth
	}
	switch x := v.(type) {
	case []any:
		d := 1
		for _, e := range x {
			d = max(d, 1+nesting(e, depth+1))
		}
		return d
	case map[string]any:
		d := 1
		for _, e := range x {
			d = max(d, 1+nesting(e, depth+1))
		}
		return d
	case *Packed:
		return 1 + x.depth
	}
	return 0
}

// DecodePacked is Decode, except that an array of at least minItems
// elements (PackFrom, unless another bound is wanted; at least 1) is
// returned as a *Packed, read element by element so that its elements are
// never all decoded at once. Arrays inside a packed array's elements are
// part of its text.
func DecodePacked(data []byte, minItems int) (any, error) {
	if minItems < 1 {
		return nil, fmt.Errorf("DecodePacked: minItems is %d, want at least 1", minItems)
	}
	d := newDecoder(data)
	d.pack = minItems
	return d.decode()
}

// Expand returns v with every *Packed in it replaced by the []any of its
// elements: the containers on the way to one are copied, everything else
// shared. A v without a Packed is returned as it is, and nothing is
// allocated.
func Expand(v any) (any, error) {
	out, _, err := expand(v, 0)
	return out, err
}

func expand(v any, depth int) (any, bool, error) {
	if depth > MaxDepth {
		return v, false, nil
	}
	switch x := v.(type) {
	case *Packed:
		a, err := x.Slice()
		return a, true, err
	case []any:
		var out []any
		for i, e := range x {
			ne, changed, err := expand(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = append(make([]any, 0, len(x)), x[:i]...)
			}
			if out != nil {
				out = append(out, ne)
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			ne, changed, err := expand(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for k2, e2 := range x {
						out[k2] = e2
					}
				}
				out[k] = ne
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	}
	return v, false, nil
}

// HasPacked reports whether v holds a *Packed.
func HasPacked(v any) bool {
	return hasPacked(v, 0)
}

func hasPacked(v any, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	switch x := v.(type) {
	case *Packed:
		return true
	case []any:
		for _, e := range x {
			if hasPacked(e, depth+1) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasPacked(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// Text returns the elements' Marshal forms, one after the other with
// nothing between them, shared with p: callers must not modify it. A byte
// string absent from it is in no element.
func (p *Packed) Text() []byte { return p.text }
