// Package jsonvalue holds JSON values as aslrun keeps them, and everything
// that reads and writes them: the strict JSON decoder used wherever JSON
// text enters the engine (every error at its path), the writers (compact,
// indented and canonical, and the canonical hash that names documents),
// exact number arithmetic and comparison, equality, sizes, and the written
// paths and JSON Pointers that report locations.
//
// A JSON value is one of: nil, bool, string, json.Number, []any and
// map[string]any, or a *Packed: an array held as its elements' JSON text,
// which DecodePacked makes of a document's large arrays (an execution's
// input) so that a million small objects cost their JSON and not a Go map
// each. Everything here reads a Packed as the array it is; code that walks
// values by their Go types reads it with Len and At, or Expand decodes it
// into a []any. Numbers are json.Number so that their decimal text
// survives exactly (a 20-digit integer and 0.1 keep their value and their
// spelling). Values decoded once are never mutated afterwards. Use
// Normalize to turn an arbitrary Go value (ints, floats, structs) into
// this model.
//
// Everything in this package is safe for concurrent use.
package jsonvalue
