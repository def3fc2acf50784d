// Package jsonpath holds everything that reads, writes and addresses JSON
// values: the strict JSON decoder used wherever JSON text enters the engine,
// the writers (compact, indented and canonical), compiled JSONPath
// expressions, payload templates (the ".$" keys of Parameters, ResultSelector,
// ItemSelector and Assign), and the intrinsic functions (States.Format, …).
//
// # Values
//
// A JSON value is one of: nil, bool, string, json.Number, []any and
// map[string]any. Numbers are json.Number so that their decimal text survives
// exactly (a 20-digit integer and 0.1 keep their value and their spelling).
// Values decoded once are never mutated afterwards: functions that produce a
// changed document (Path.Set, templates) copy what they change and share the
// rest. Use Normalize to turn an arbitrary Go value (ints, floats, structs)
// into this model.
//
// Everything in this package is safe for concurrent use: compiled paths,
// templates and expressions are immutable.
package jsonpath
