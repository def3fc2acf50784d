package vector

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Encode returns v as little-endian IEEE 754 float32s, four bytes per
// component, for storing in a blob or bytea column. It does not check v.
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Decode is the inverse of [Encode]. It refuses a length that is not a
// multiple of four and a NaN or infinite component (naming its position),
// so that what it returns can be added to an index. An empty b gives an
// empty, non-nil vector.
func Decode(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("decode vector: %d bytes is not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("decode vector: component %d is %v: %w", i, x, ErrNotFinite)
		}
		v[i] = x
	}
	return v, nil
}
