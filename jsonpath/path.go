package jsonpath

// AWS Step Functions evaluates JSONPath with Jayway JSONPath (Java). What we
// reproduce, and where it comes from:
//
//   - A definite path whose last name is missing, or whose index is out of
//     range anywhere: "Invalid path '$.x' : No results for path: $['x']", the
//     whole path normalized (AWS recordings; Jayway's EvaluationContext).
//   - A definite path missing a name before the last: "Invalid path
//     '$.a.b' : Missing property in path $['a']", normalized up to and
//     including the missing name (AWS recordings; Jayway's PathToken).
//   - A name applied to a non-object, an index to null or to another
//     non-array: Jayway's PathNotFoundException texts (see getDefinite).
//     AWS's exact class names for these are not recorded.
//   - Indefinite paths never fail: a missing or mistyped container selects
//     nothing and the result is [] (AWS recordings of $.items[*],
//     $.items[1:5].itemValue and $.item.items[:1] on {}).
//   - In Parameters and other templates, any definite path that does not
//     resolve becomes "The JSONPath '$.x' specified for the field 'x.$'
//     could not be found in the input '<input>'" (AWS recordings, for "$" and
//     "$$" paths); see FieldError.
//   - ResultPath that cannot be applied (through a non-object, or an index
//     out of range) fails with States.ResultPathMatchFailure and the cause
//     "Unable to apply ReferencePath $.x to input <input as JSON>" (quoted by
//     users in public bug reports); see Set.
//   - An undefined "$name" variable: AWS's wording is not recorded anywhere
//     we could find, so the message is ours.
//
// Where Jayway's dialect and ours differ, on purpose: a union of names
// ['a','b'] is indefinite and returns a list (Jayway merges the members
// into one object when the union ends the path); slices accept a step
// ([::2], Python semantics); object members are visited in key order, since
// decoded objects keep no order; a deep-scan filter ..[?()] selects each
// matching descendant once.

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/ohler55/ojg/jp"
)

// SyntaxError reports an expression (a path, a filter or an intrinsic call)
// that does not parse.
type SyntaxError struct {
	// Expr is the source text of the whole expression.
	Expr string
	// Offset is the byte offset in Expr where the problem was found.
	Offset int
	// Msg says what is wrong, like "unterminated bracket".
	Msg string
}

// Error returns the message with the expression and the offset.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid expression %q at offset %d: %s", e.Expr, e.Offset, e.Msg)
}

// PathError reports a path that does not resolve in a document (Get), or a
// reference path that cannot be applied to one (Set).
//
// Its Error text is the cause AWS Step Functions reports, so that the engine
// can use it verbatim: for Get, "Invalid path '<Path>' : <Msg>"; for Set,
// "Unable to apply ReferencePath <Path> to input <Input as JSON>".
type PathError struct {
	// Path is the source text of the path.
	Path string
	// Msg is the part of a Get failure after " : ", e.g.
	// "No results for path: $['a']" or "Missing property in path $['a']".
	// For a Set failure it says in our own words why the path cannot be
	// applied; it is not part of Error.
	Msg string
	// Input is the document a Set failed on; nil for Get failures. Error
	// writes it as JSON, only when called.
	Input any

	set bool
	// step is the name a Set could not apply, when the failure is a name
	// applied to something that is not an object inside a container.
	step string
}

// Error returns the cause AWS reports for the failure.
func (e *PathError) Error() string {
	switch {
	case e.step != "":
		return fmt.Sprintf("Unable to apply step \"%s\" to input %s", e.step, marshalForMessage(e.Input))
	case e.set:
		return fmt.Sprintf("Unable to apply ReferencePath %s to input %s", e.Path, marshalForMessage(e.Input))
	}
	return fmt.Sprintf("Invalid path '%s' : %s", e.Path, e.Msg)
}

// rootKind says what a path is evaluated against.
type rootKind uint8

const (
	rootInput    rootKind = iota // $
	rootContext                  // $$
	rootVariable                 // $name
)

// Path is a compiled JSONPath expression in the dialect AWS Step Functions
// accepts (Jayway JSONPath). It starts with a root, "$" (the input), "$$"
// (the context object) or "$name" (a variable: a letter or "_", then
// letters, digits or "_"), followed by segments:
//
//	.name  ['name']  ["name"]   a member; a dotted name runs up to the next
//	                            . [ ] ( ) quote or space, so $.detail-type
//	                            works; quoted names take JSON escapes and \'
//	[0]  [-1]                   an element, negative indexes from the end
//	[0,2]  ['a','b']            unions
//	[*]  .*                     every element or member
//	[1:5]  [:1]  [1:]  [::2]    slices, with Python semantics
//	..name  ..*  ..[0]          deep scan: the segment applied at every level
//	[?(<filter>)]               a filter (see filter.go for its grammar)
//	.[0]  .['name']  .[*]  …    a single dot before any bracketed segment
//	                            is ignored, as AWS (Jayway) reads it:
//	                            $.a.[0] is $.a[0], $.[0] is $[0]
//
// A dot must be followed by a name, "*", a bracket or (making "..") a
// second dot; so "$.", "$..", "$..." and "$. [0]" are errors, as they are
// in Jayway.
//
// Inside a filter, "@" is the value being tested and "$" the value the path
// is rooted at (the input, the context object or the variable).
//
// A Path is immutable and safe for concurrent use.
type Path struct {
	src      string
	root     rootKind
	variable string
	segs     []segment
	definite bool
	steps    []step // segs of a definite path, compacted for the fast walk
	query    query  // segs for ojg's jp, when the path is not definite
}

// step is one name or index of a definite path.
type step struct {
	name    string
	index   int
	isIndex bool
}

// Compile compiles a JSONPath expression. See Path for the accepted syntax;
// anything else is a *SyntaxError.
func Compile(expr string) (*Path, error) {
	p := &parser{src: expr}
	return p.parsePath()
}

// CompileReference compiles a reference path, the only kind of path
// ResultPath accepts: rooted at "$" and made of names and non-negative
// indexes only (no "$$", no variables, no wildcards, unions, slices, deep
// scans or filters). Anything else is a *SyntaxError that says why.
func CompileReference(expr string) (*Path, error) {
	p, err := Compile(expr)
	if err != nil {
		return nil, err
	}
	fail := func(offset int, msg string) error {
		return &SyntaxError{Expr: expr, Offset: offset, Msg: msg}
	}
	switch p.root {
	case rootContext:
		return nil, fail(0, "a reference path cannot refer to the context object ($$)")
	case rootVariable:
		return nil, fail(0, "a reference path cannot refer to a variable")
	}
	for _, s := range p.segs {
		switch {
		case s.deep:
			return nil, fail(s.offset, "a reference path cannot use a deep scan (..)")
		case s.kind == segIndex && s.index < 0:
			return nil, fail(s.offset, "a reference path cannot use a negative index")
		case s.kind != segName && s.kind != segIndex:
			return nil, fail(s.offset, "a reference path can only use names and single indexes, not "+s.kind.String())
		}
	}
	return p, nil
}

// String returns the source text of the path.
func (p *Path) String() string { return p.src }

// Definite reports whether the path selects at most one value: it uses only
// names and single indexes. Get returns that value itself; an indefinite
// path's Get returns a list.
func (p *Path) Definite() bool { return p.definite }

// IsContext reports whether the path is rooted at the context object ("$$").
func (p *Path) IsContext() bool { return p.root == rootContext }

// Variable returns the name of the variable the path is rooted at (without
// the "$"), or "" when it is rooted at "$" or "$$".
func (p *Path) Variable() string { return p.variable }

// Get evaluates the path against input (for "$"), env.Context() (for "$$")
// or a variable of env (for "$name"). env may be nil when the path uses
// neither.
//
// A definite path returns the value it selects, or a *PathError worded as
// AWS words it. An indefinite path returns a []any of its matches in
// document order (object members in key order), an empty list when nothing
// matches — even when a container on the way is missing or of another type
// — or a *LimitError when it visits more values than env's Bounds allow.
// The result shares memory with the document: callers must not modify it.
func (p *Path) Get(input any, env Env) (any, error) {
	root := input
	if p.root != rootInput {
		var err error
		if root, err = p.rootValue(input, env); err != nil {
			return nil, err
		}
	}
	if p.definite {
		return p.getDefinite(root)
	}
	// jp walks arrays as []any: packed ones are decoded for the walk.
	root, err := jsonvalue.Expand(root)
	if err != nil {
		return nil, err
	}
	out, over := collect(p.query, root, root, nil, boundsOf(env).PathSteps)
	if over {
		return nil, p.overBudget(env)
	}
	return out, nil
}

// LimitError reports an evaluation of a path stopped at its bound of steps
// (Bounds.PathSteps). It is not a *PathError: the path did not miss, it
// was refused.
type LimitError struct {
	// Path is the source text of the path.
	Path string
	// Steps is the bound it reached.
	Steps int
}

// Error says which path reached which bound.
func (e *LimitError) Error() string {
	return fmt.Sprintf("The JSONPath '%s' visits more than %d values (the limit of one evaluation)", e.Path, e.Steps)
}

// overBudget is the failure of an evaluation that spent its budget.
func (p *Path) overBudget(env Env) error {
	return &LimitError{Path: p.src, Steps: boundsOf(env).PathSteps}
}

// Step is one step of a Location: into the member Key of an object, or,
// when IsIndex, into the element Index of an array.
type Step struct {
	Key     string
	Index   int
	IsIndex bool
}

// Location is where a value sits in a document: the steps from the root.
type Location []Step

// String writes l as a path: $, then .key, ['key'] or [i] per step.
func (l Location) String() string {
	b := make([]byte, 1, 32)
	b[0] = '$'
	for _, s := range l {
		if s.IsIndex {
			b = jsonvalue.AppendIndex(b, s.Index)
		} else {
			b = jsonvalue.AppendMember(b, s.Key)
		}
	}
	return string(b)
}

// Steps returns the steps of a path on the input made only of names and
// non-negative indexes ($.a[0]['b c']), and false for any other path. Its
// String is the path's written form, whichever way the source spells it.
func (p *Path) Steps() (Location, bool) {
	if p.root != rootInput {
		return nil, false
	}
	l := make(Location, 0, len(p.segs))
	for i := range p.segs {
		s := &p.segs[i]
		switch {
		case s.deep:
			return nil, false
		case s.kind == segName:
			l = append(l, Step{Key: s.name})
		case s.kind == segIndex && s.index >= 0:
			l = append(l, Step{Index: s.index, IsIndex: true})
		default:
			return nil, false
		}
	}
	return l, true
}

// Locate returns where each value p selects in input sits, in the order
// Get returns the values (a location repeats when the path selects it
// twice, as $.a[0,0] does). Negative indexes are resolved against their
// arrays. A path that selects nothing gives no location, without error,
// definite or not. Only paths on the input ($) have locations: a context
// ($$) or variable path is an error. An indefinite path that visits more
// than DefaultPathSteps values fails with a *LimitError.
func (p *Path) Locate(input any) ([]Location, error) {
	if p.root != rootInput {
		return nil, &PathError{Path: p.src, Msg: "only a path on the input ($) has locations in it"}
	}
	locs := []Location{}
	if p.definite {
		if l, ok := p.locateDefinite(input); ok {
			locs = append(locs, l)
		}
		return locs, nil
	}
	input, err := jsonvalue.Expand(input)
	if err != nil {
		return nil, err
	}
	b := walkBudget{left: DefaultPathSteps}
	walk(p.query, &walkState{root: input, b: &b}, input, func(path jp.Expr, nodes []any) {
		if b.spend() {
			locs = append(locs, location(path, nodes))
		}
	})
	if b.over() {
		return nil, p.overBudget(nil)
	}
	return locs, nil
}

// locateDefinite returns where the value of a definite path sits in cur,
// or false when the path selects nothing.
func (p *Path) locateDefinite(cur any) (Location, bool) {
	loc := make(Location, len(p.steps))
	for i, s := range p.steps {
		if !s.isIndex {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s.name]; !ok {
				return nil, false
			}
			loc[i] = Step{Key: s.name}
			continue
		}
		n, ok := arrayLen(cur)
		if !ok {
			return nil, false
		}
		j, ok := resolveIndex(n, s.index)
		if !ok {
			return nil, false
		}
		if cur, ok = element(cur, j); !ok {
			return nil, false
		}
		loc[i] = Step{Index: j, IsIndex: true}
	}
	return loc, true
}

// rootValue returns what the path's root refers to.
func (p *Path) rootValue(input any, env Env) (any, error) {
	switch p.root {
	case rootContext:
		if env == nil {
			return nil, nil
		}
		return env.Context(), nil
	case rootVariable:
		var v any
		ok := false
		if env != nil {
			v, ok = env.Variable(p.variable)
		}
		if !ok {
			// AWS's wording for an undefined variable in a JSONPath
			// expression is not recorded anywhere we could find (LocalStack
			// evaluates these with JSONata); this is our own.
			return nil, &PathError{Path: p.src, Msg: "undefined variable $" + p.variable}
		}
		return v, nil
	}
	return input, nil
}

// getDefinite walks a path made only of names and single indexes. The walk
// allocates nothing unless it fails.
//
// Failures reproduce Jayway JSONPath, which AWS runs with its default
// options:
//   - the last name is missing, or any index is out of range:
//     "No results for path: $['a']['b'][2]" (the whole path, normalized);
//   - a name before the last is missing:
//     "Missing property in path $['a']" (the path up to that name);
//   - a name is applied to a non-object: "Expected to find an object with
//     property ['b'] in path $['a'] but found 'java.lang.String'. This is not
//     a json object according to the JsonProvider: '…'";
//   - an index is applied to null: "The path $['a'] is null";
//   - an index is applied to another non-array: "Filter: [0]['b'] can only
//     be applied to arrays. Current context is: text".
//
// The first two are AWS recordings. The others are Jayway's messages; the
// Java class and provider names AWS prints are not recorded, so we give
// those of Jayway's default provider (json-smart).
func (p *Path) getDefinite(cur any) (any, error) {
	for i := range p.steps {
		s := &p.steps[i]
		if !s.isIndex {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, p.pathError(fmt.Sprintf(
					"Expected to find an object with property %s in path %s but found '%s'. "+
						"This is not a json object according to the JsonProvider: "+
						"'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.",
					p.segs[i].fragment(), p.normalized(i), javaClassName(cur)))
			}
			v, ok := m[s.name]
			if !ok {
				if i == len(p.steps)-1 {
					return nil, p.noResults()
				}
				return nil, p.pathError("Missing property in path " + p.normalized(i+1))
			}
			cur = v
			continue
		}
		n, ok := arrayLen(cur)
		if !ok {
			if cur == nil {
				return nil, p.pathError("The path " + p.normalized(i) + " is null")
			}
			return nil, p.pathError(fmt.Sprintf(
				"Filter: %s can only be applied to arrays. Current context is: %s",
				p.fragments(i), javaString(cur)))
		}
		j, ok := resolveIndex(n, s.index)
		if !ok {
			return nil, p.noResults()
		}
		if cur, ok = element(cur, j); !ok {
			return nil, p.pathError(fmt.Sprintf("element %d of %s cannot be read", j, p.normalized(i)))
		}
	}
	return cur, nil
}

func (p *Path) noResults() error {
	return &PathError{Path: p.src, Msg: "No results for path: " + p.normalized(len(p.segs))}
}

func (p *Path) pathError(msg string) error {
	return &PathError{Path: p.src, Msg: msg}
}

// normalized returns the first n segments in Jayway's normalized form,
// like $['a'][0]. Whatever the root, Jayway sees a path rooted at "$".
func (p *Path) normalized(n int) string {
	var b strings.Builder
	b.WriteByte('$')
	for i := range p.segs[:n] {
		b.WriteString(p.segs[i].fragment())
	}
	return b.String()
}

// fragments returns segments i and after in normalized form, as Jayway's
// PathToken.toString does.
func (p *Path) fragments(i int) string {
	var b strings.Builder
	for j := range p.segs[i:] {
		b.WriteString(p.segs[i+j].fragment())
	}
	return b.String()
}

// Set returns a new document: doc with value placed at the path, which must
// be a definite path rooted at "$" (see CompileReference). "$" returns value
// itself. Only the containers along the path are copied; doc and everything
// else is shared, never modified. Missing objects on the way are created.
//
// Walking through something that is not an object (for a name) or through an
// index that is out of range is a *PathError, which AWS reports as
// States.ReferencePathConflict with the cause
// "Unable to apply ReferencePath $.x to input <input>" when the input itself
// is not a container, and "Unable to apply step "name" to input <input>"
// when a name meets something else than an object inside it (both wordings
// are quoted from real AWS executions).
func (p *Path) Set(doc, value any) (any, error) {
	if !p.definite || p.root != rootInput {
		return nil, &PathError{Path: p.src, Msg: "only a definite path rooted at $ can be set", Input: doc, set: true}
	}
	if len(p.segs) == 0 {
		return value, nil
	}
	return p.setAt(doc, doc, true, 0, value)
}

// setAt returns cur with value placed at segments i and after. present is
// false when cur does not exist (a missing member), which Set may create.
// smallObject is the most members an object can have for Set to copy it
// with maps.Clone when the member it sets is new: a map of up to 8 members
// holds one more without growing.
const smallObject = 8

func (p *Path) setAt(doc, cur any, present bool, i int, value any) (any, error) {
	s := &p.segs[i]
	last := i == len(p.segs)-1
	fail := func(msg string) error {
		return &PathError{Path: p.src, Msg: msg, Input: doc, set: true}
	}
	if s.kind == segName {
		m, ok := cur.(map[string]any)
		if present && !ok {
			err := &PathError{Path: p.src, Msg: p.normalized(i) + " is " + typeName(cur) + ", not an object", Input: doc, set: true}
			if _, isArray := cur.([]any); i > 0 || isArray {
				err.step = s.name
			}
			return nil, err
		}
		child, has := m[s.name]
		nv := value
		if !last {
			var err error
			if nv, err = p.setAt(doc, child, has, i+1, value); err != nil {
				return nil, err
			}
		}
		var out map[string]any
		if has || len(m) < smallObject {
			// A copy of the same size, which holds the new member
			// without growing (maps.Clone copies without hashing again).
			out = maps.Clone(m)
		}
		if out == nil {
			out = make(map[string]any, len(m)+1)
			for k, v := range m {
				out[k] = v
			}
		}
		out[s.name] = nv
		return out, nil
	}
	if pk, isPacked := cur.(*jsonvalue.Packed); isPacked {
		// Set copies the arrays on its way: a packed one is decoded.
		if a, err := pk.Slice(); err == nil {
			cur = a
		}
	}
	a, ok := cur.([]any)
	if !present || !ok {
		what := "missing"
		if present {
			what = typeName(cur)
		}
		return nil, fail(p.normalized(i) + " is " + what + ", not an array")
	}
	j := s.index
	if j < 0 {
		j += len(a)
	}
	if j < 0 || j >= len(a) {
		return nil, fail("index " + strconv.Itoa(s.index) + " is out of range for " + p.normalized(i))
	}
	nv := value
	if !last {
		var err error
		if nv, err = p.setAt(doc, a[j], true, i+1, value); err != nil {
			return nil, err
		}
	}
	out := make([]any, len(a))
	copy(out, a)
	out[j] = nv
	return out, nil
}

// arrayLen returns the length of v when it is an array ([]any or a
// *jsonvalue.Packed).
func arrayLen(v any) (int, bool) {
	switch a := v.(type) {
	case []any:
		return len(a), true
	case *jsonvalue.Packed:
		return a.Len(), true
	}
	return 0, false
}

// resolveIndex resolves index i of an array of n elements, counting a
// negative i from the end; false when it is out of range.
func resolveIndex(n, i int) (int, bool) {
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

// element returns element j (in range) of array v; a packed element is
// decoded, and false only when that fails.
func element(v any, j int) (any, bool) {
	switch a := v.(type) {
	case []any:
		return a[j], true
	case *jsonvalue.Packed:
		e, err := a.At(j)
		return e, err == nil
	}
	return nil, false
}
