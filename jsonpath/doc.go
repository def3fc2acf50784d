// Package jsonpath is the JSONPath query language of Amazon States
// Language: compiled paths ($.a.b[0], with a fast path for plain ones, and
// filters, wildcards and recursive descent), payload templates (the ".$"
// keys of Parameters, ResultSelector, ItemSelector and Assign), and the
// intrinsic functions (States.Format, …). It reads and builds JSON values
// as package jsonvalue defines them, and never mutates a value it is given:
// Path.Set and templates copy what they change and share the rest.
//
// Everything in this package is safe for concurrent use: compiled paths,
// templates and expressions are immutable.
package jsonpath
