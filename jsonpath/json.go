package jsonpath

// TEMPORARY naive implementation (encoding/json based) so that the other
// files of the package compile and run; replaced by the strict decoder.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts.
const MaxDepth = 64

// JSONError reports JSON text that is not strict JSON, or a Go value that
// has no JSON form.
type JSONError struct {
	// Offset is the byte offset in the input text where the problem was found
	// (-1 for a Go value passed to Normalize or Marshal).
	Offset int
	// Path is the JSON path of the value being read, like $.a[2].b.
	Path string
	// Msg says what is wrong, like `duplicate key "b"`.
	Msg string
}

func (e *JSONError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("invalid JSON value at %s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("invalid JSON at byte %d (%s): %s", e.Offset, e.Path, e.Msg)
}

// Decode parses data as exactly one strict JSON value.
func Decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, &JSONError{Offset: 0, Path: "$", Msg: err.Error()}
	}
	return v, nil
}

// Marshal writes v as compact JSON.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, &JSONError{Offset: -1, Path: "$", Msg: err.Error()}
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Equal reports whether a and b are the same JSON value.
func Equal(a, b any) bool { return reflect.DeepEqual(a, b) }

// Normalize turns a Go value into the package's value model.
func Normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &JSONError{Offset: -1, Path: "$", Msg: err.Error()}
	}
	return Decode(b)
}
