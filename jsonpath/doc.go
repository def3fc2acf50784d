// Package jsonpath is the JSONPath query language of Amazon States
// Language: compiled paths ($.a.b[0], with a fast path for plain ones, and
// filters, wildcards and recursive descent), payload templates (the ".$"
// keys of Parameters, ResultSelector, ItemSelector and Assign), and the
// intrinsic functions (States.Format, …). It reads and builds JSON values
// as package jsonvalue defines them, and never mutates a value it is given:
// Path.Set and templates copy what they change and share the rest.
//
// # Paths
//
// Paths are compiled by this package, in the dialect AWS accepts (see
// Path). A path of names and indexes only ($.a.b[0]) is evaluated by a
// compiled walk of its own; any other (wildcards, unions, slices, deep scans,
// filters) by github.com/ohler55/ojg's jp package, on the values as they are.
// Filter conditions are evaluated here, so that numbers compare exactly.
// docs/jsonpath.md says where and why ojg is not used.
//
// Everything in this package is safe for concurrent use: compiled paths,
// templates and expressions are immutable.
package jsonpath
