// Package governance compiles the Governance block of a definition into
// immutable rules and checks a transition — a previous and a proposed
// document — against them. It knows nothing of states or of running: the
// engine's commit point calls it for every state that changes the
// document.
//
// A block has three parts:
//
//   - Guard.Schema, a JSON Schema 2020-12 the document must match, applied
//     as written (additionalProperties defaults to true; 2.0 is an integer,
//     true is not). Every problem is reported, each with its path.
//   - Guard.Transitions, rules between the previous and the proposed
//     document: ImmutablePaths never change (nor appear or disappear),
//     MonotonicIntegerPaths never decrease, OrderedEnumPaths never move
//     backward in their list, and KeyedObjectArrayPaths keep their items,
//     in order, with their fields unchanged except booleans (those listed
//     in MonotonicBooleanFields only go from false to true), adding items
//     only when AllowNewItems is true (the default). A rule's path missing
//     from either document is a violation.
//   - WritePolicy, checked on the written set (see Written): Allow and Deny
//     patterns and Deny rules in expr-lang (see Policy.Check), cut down at
//     compile time to what an evaluation budget bounds and metered when
//     they run, so that no rule can stall the commit point.
//
// OnViolation tells the engine what to do with a violation (see Mode).
//
// Paths in messages and in written sets are written $.a.b[2], with ['key']
// for keys that are not plain identifiers; an item of a keyed array is
// named by its key, as in $.tasks[id="task-1"].done.
//
// Documents are values of package jsonpath's model (nil, bool, string,
// json.Number, []any, map[string]any) and are never modified. Objects and
// arrays that the previous and the proposed document share (the same map
// or slice) are taken as unchanged without being compared, which relies on
// that rule.
//
// Everything compiled here (Rules, Policy) is immutable and safe for
// concurrent use; a nil *Rules and a nil *Policy check nothing.
package governance
