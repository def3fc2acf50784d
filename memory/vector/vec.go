package vector

import (
	"errors"
	"fmt"
	"math"
)

// Result is one search hit: an entry's id and its cosine similarity to the
// query, in [-1, 1].
type Result struct {
	ID    string
	Score float32
}

// Filter reports whether the entry with the given id may be returned by a
// search (false skips it, for example because it has expired). A nil Filter
// accepts every entry. A Filter is called while the index is read-locked, so
// it must not call back into the index; it may be called from several
// goroutines at once.
type Filter func(id string) bool

// ErrEmptyVector is returned (wrapped) for a vector with no components or a
// length of zero, which has no direction and so no cosine similarity.
var ErrEmptyVector = errors.New("vector has zero length")

// ErrNotFinite is returned (wrapped) for a vector with a NaN or infinite
// component.
var ErrNotFinite = errors.New("vector has a NaN or infinite component")

// DimensionError is returned when a vector's dimension differs from the
// index's.
type DimensionError struct {
	Got, Want int
}

// Error names both dimensions.
func (e *DimensionError) Error() string {
	return fmt.Sprintf("vector has %d dimensions, index has %d", e.Got, e.Want)
}

// normalized checks v (finite, not zero) and returns a copy scaled to length
// 1, leaving v untouched. The norm is accumulated in float64 so that very
// large or very small components neither overflow nor underflow.
func normalized(v []float32) ([]float32, error) {
	if len(v) == 0 {
		return nil, ErrEmptyVector
	}
	var sum float64
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("component %d is %v: %w", i, x, ErrNotFinite)
		}
		sum += f * f
	}
	if sum == 0 {
		return nil, ErrEmptyVector
	}
	inv := 1 / math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, nil
}

// checkDim returns a *DimensionError unless got equals want.
func checkDim(got, want int) error {
	if got != want {
		return &DimensionError{Got: got, Want: want}
	}
	return nil
}

// checkQuery validates the k and minScore of a search.
func checkQuery(k int, minScore float32) error {
	if k < 1 {
		return fmt.Errorf("k is %d, must be at least 1", k)
	}
	if math.IsNaN(float64(minScore)) {
		return errors.New("minimum score is NaN")
	}
	return nil
}

// dot returns the dot product of a and b, which must have the same length.
// Four independent accumulators let the CPU overlap the multiply-adds, and
// re-slicing both vectors as it goes lets the compiler drop the bounds
// checks inside the loop.
func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	for len(a) >= 4 && len(b) >= 4 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		a, b = a[4:], b[4:]
	}
	for i := range min(len(a), len(b)) {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
