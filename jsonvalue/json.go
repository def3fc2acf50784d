package jsonvalue

import (
	"encoding/json"
	"fmt"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts:
// 64 nested levels are accepted, 65 are rejected.
const MaxDepth = 64

// JSONError reports JSON text that is not strict JSON, or a Go value that
// has no JSON form.
type JSONError struct {
	// Offset is the byte offset in the input text where the problem was found
	// (-1 for a Go value passed to Normalize, Marshal or Canonical).
	Offset int
	// Path is the JSON path of the value being read, like $.a[2].b, with
	// ['key'] for keys that are not plain identifiers.
	Path string
	// Msg says what is wrong, like `duplicate key "b"`.
	Msg string
}

// Error returns the problem with its place, for text like
// `invalid JSON at byte 17 ($.a[2]): duplicate key "b"` and for a Go value
// like `invalid JSON value at $.a: non-finite number NaN`.
func (e *JSONError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("invalid JSON value at %s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("invalid JSON at byte %d (%s): %s", e.Offset, e.Path, e.Msg)
}

// TypeName returns the JSON type of v for error messages: "null",
// "boolean", "string", "number" (json.Number and Go numbers), "array" or
// "object". A value outside the model gives its Go type, like "chan int".
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return "number"
	case []any, *Packed:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// pathSeg is one step of a JSON path: an object key or an array index.
type pathSeg struct {
	key   string
	index int // -1 for a key
}

func keySeg(k string) pathSeg { return pathSeg{key: k, index: -1} }
func indexSeg(i int) pathSeg  { return pathSeg{index: i} }

// errPath collects the path of a failing value while the recursion unwinds:
// the innermost step is added first. Nothing is recorded on success.
type errPath []pathSeg

// String writes the path from the root: $, then .key or ['key'], then [i].
func (p errPath) String() string {
	b := []byte{'$'}
	for i := len(p) - 1; i >= 0; i-- {
		b = appendPathSeg(b, p[i])
	}
	return string(b)
}

func appendPathSeg(b []byte, s pathSeg) []byte {
	if s.index >= 0 {
		return AppendIndex(b, s.index)
	}
	return AppendMember(b, s.key)
}

const hexDigits = "0123456789abcdef"
