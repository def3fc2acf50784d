package governance

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/aslrun/aslrun/jsonvalue"
)

// The operations of a write.
const (
	// OpAdd is a value that proposed has and prev does not.
	OpAdd = "add"
	// OpReplace is a value that differs between prev and proposed.
	OpReplace = "replace"
	// OpRemove is a value that prev has and proposed does not.
	OpRemove = "remove"
)

// Write is one member of the written set: a path where the previous and
// the proposed document differ.
type Write struct {
	// Path is the path of the value, like $.a.b[2] or $['odd key'] ("$" for
	// the whole document).
	Path string
	// Op is OpAdd, OpReplace or OpRemove.
	Op string
	// Old is the previous value (nil when added), New the proposed value
	// (nil when removed). Both are shared with the documents.
	Old, New any
}

// Written returns the written set of a transition: the minimal set of paths
// where prev and proposed differ, sorted by path (keys in byte order,
// indexes by value, a path before the paths below it). Objects are compared
// key by key and arrays index by index, so an array that grows or shrinks
// adds or removes its last items; numbers are compared by value (2.0 is 2).
// A value that is added, removed or replaced as a whole (a change of type,
// an object or array that appears or disappears, an empty one included) is
// one write at its own path, with the whole value as Old or New.
//
// Objects and arrays that prev and proposed share (the same map or slice,
// as jsonpath.Path.Set leaves them) are not compared again: documents are
// never modified once built.
func Written(prev, proposed any) []Write {
	var d differ
	d.diff(prev, proposed)
	d.sort()
	out := make([]Write, len(d.writes))
	for i, w := range d.writes {
		out[i] = Write{Path: formatPath(w.path), Op: w.op, Old: w.old, New: w.new}
	}
	return out
}

// write is a Write with its path still in segments.
type write struct {
	path     []segment
	op       string
	old, new any
}

// differ computes a written set. With check set it also looks at every
// value of proposed that it visits (all that is not shared with prev) and
// remembers the first one, by path, that is not a JSON value; with
// bigNumbers set it also remembers numbers whose exponent is too large for
// the schema validator.
type differ struct {
	path   []segment
	writes []write
	// arena holds the paths of the writes, each clipped to its length.
	arena []segment

	check      bool
	bigNumbers bool
	bad        *badValue
}

func (d *differ) emit(op string, old, new any) {
	if cap(d.arena)-len(d.arena) < len(d.path) {
		d.arena = make([]segment, 0, max(16, 2*len(d.path)))
	}
	start := len(d.arena)
	d.arena = append(d.arena, d.path...)
	path := d.arena[start:len(d.arena):len(d.arena)]
	d.writes = append(d.writes, write{path: path, op: op, old: old, new: new})
	if d.check && op != OpRemove {
		checkValue(new, d.path, d.bigNumbers, &d.bad)
	}
}

func (d *differ) sort() {
	slices.SortFunc(d.writes, func(a, b write) int { return comparePaths(a.path, b.path) })
}

func (d *differ) diff(p, q any) {
	switch qv := q.(type) {
	case map[string]any:
		pv, ok := p.(map[string]any)
		if !ok {
			d.emit(OpReplace, p, q)
			return
		}
		if sameMap(pv, qv) {
			return
		}
		if len(d.path) >= jsonvalue.MaxDepth {
			d.emit(OpReplace, p, q) // too deep: checkValue reports it
			return
		}
		for k, pval := range pv {
			d.path = append(d.path, keySeg(k))
			if qval, ok := qv[k]; ok {
				d.diff(pval, qval)
			} else {
				d.emit(OpRemove, pval, nil)
			}
			d.path = d.path[:len(d.path)-1]
		}
		for k, qval := range qv {
			if _, ok := pv[k]; !ok {
				if d.check && !utf8.ValidString(k) {
					c := checker{path: d.path, bad: &d.bad}
					c.report("has a key that is not valid UTF-8", false)
				}
				d.path = append(d.path, keySeg(k))
				d.emit(OpAdd, nil, qval)
				d.path = d.path[:len(d.path)-1]
			}
		}
	case []any:
		pv, ok := p.([]any)
		if !ok {
			d.emit(OpReplace, p, q)
			return
		}
		if sameSlice(pv, qv) {
			return
		}
		if len(d.path) >= jsonvalue.MaxDepth {
			d.emit(OpReplace, p, q)
			return
		}
		for i := range max(len(pv), len(qv)) {
			d.path = append(d.path, indexSeg(i))
			switch {
			case i >= len(qv):
				d.emit(OpRemove, pv[i], nil)
			case i >= len(pv):
				d.emit(OpAdd, nil, qv[i])
			default:
				d.diff(pv[i], qv[i])
			}
			d.path = d.path[:len(d.path)-1]
		}
	default:
		if !sameScalar(p, q) {
			d.emit(OpReplace, p, q)
		}
	}
}

// sameScalar reports whether q, which is not an object or array, is the
// same JSON value as p. A value outside the model is never the same, so
// that the check sees it.
func sameScalar(p, q any) bool {
	switch qv := q.(type) {
	case nil:
		return p == nil
	case bool:
		pv, ok := p.(bool)
		return ok && pv == qv
	case string:
		pv, ok := p.(string)
		return ok && pv == qv
	case json.Number:
		pv, ok := p.(json.Number)
		if !ok {
			return false
		}
		return pv == qv || (jsonvalue.ValidNumber(string(qv)) && jsonvalue.CompareNumbers(pv, qv) == 0)
	}
	return false
}

// sameMap and sameSlice report whether two values are the very same map or
// slice, which then need no comparing.
func sameMap(a, b map[string]any) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

func sameSlice(a, b []any) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// badValue is a value that is not a JSON value, or a number the schema
// check refuses.
type badValue struct {
	path []segment
	msg  string
	// number is set for a number whose exponent is too large, which is a
	// schema violation rather than invalid JSON; value is that number.
	number bool
	value  any
}

// maxExponent is the largest exponent (in absolute value) a number may be
// written with when a schema checks it: the validator computes exact
// rationals, and 10^1000000 costs it milliseconds.
const maxExponent = 1000

// checkValue walks v, found at path, and records in *bad the value with the
// smallest path that is outside the JSON model (or, with bigNumbers, a
// number written with an exponent beyond maxExponent). It walks at most
// jsonvalue.MaxDepth levels of nesting in all.
func checkValue(v any, path []segment, bigNumbers bool, bad **badValue) {
	c := checker{path: slices.Clip(path), bigNumbers: bigNumbers, bad: bad}
	c.value(v)
}

type checker struct {
	path       []segment
	bigNumbers bool
	bad        **badValue
}

func (c *checker) report(msg string, number bool) {
	c.reportValue(msg, number, nil)
}

func (c *checker) reportValue(msg string, number bool, value any) {
	if *c.bad != nil && comparePaths(c.path, (*c.bad).path) >= 0 {
		return
	}
	*c.bad = &badValue{path: slices.Clone(c.path), msg: msg, number: number, value: value}
}

func (c *checker) value(v any) {
	switch x := v.(type) {
	case nil, bool:
	case string:
		if !utf8.ValidString(x) {
			c.report("is a string that is not valid UTF-8", false)
		}
	case json.Number:
		switch {
		case !jsonvalue.ValidNumber(string(x)):
			c.report("is the number text "+show(string(x))+", which is not a JSON number", false)
		case c.bigNumbers && exponentTooLarge(string(x)):
			c.reportValue("is the number "+show(x)+", written with an exponent beyond ±1000, which the schema check refuses", true, x)
		}
	case map[string]any:
		if len(c.path) >= jsonvalue.MaxDepth {
			c.report("nests objects and arrays deeper than 64 levels", false)
			return
		}
		for k, item := range x {
			if !utf8.ValidString(k) {
				c.report("has a key that is not valid UTF-8", false)
			}
			c.path = append(c.path, keySeg(k))
			c.value(item)
			c.path = c.path[:len(c.path)-1]
		}
	case []any:
		if len(c.path) >= jsonvalue.MaxDepth {
			c.report("nests objects and arrays deeper than 64 levels", false)
			return
		}
		for i, item := range x {
			c.path = append(c.path, indexSeg(i))
			c.value(item)
			c.path = c.path[:len(c.path)-1]
		}
	case float64:
		c.report(goFloat(x, "float64"), false)
	case float32:
		c.report(goFloat(float64(x), "float32"), false)
	default:
		c.report(goValue(v), false)
	}
}

func goFloat(f float64, typ string) string {
	switch {
	case math.IsNaN(f):
		return "is NaN, which is not a JSON value"
	case math.IsInf(f, 1):
		return "is +Inf, which is not a JSON value"
	case math.IsInf(f, -1):
		return "is -Inf, which is not a JSON value"
	}
	return "is a Go " + typ + ", which is not a JSON value (numbers are json.Number)"
}

func goValue(v any) string {
	return fmt.Sprintf("is a Go %T, which is not a JSON value", v)
}

// exponentTooLarge reports whether the number text s (a valid JSON number)
// has an exponent part beyond ±maxExponent.
func exponentTooLarge(s string) bool {
	i := 0
	for i < len(s) && s[i] != 'e' && s[i] != 'E' {
		i++
	}
	if i == len(s) {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && s[i] == '0' {
		i++
	}
	n := 0
	for ; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > maxExponent {
			return true
		}
	}
	return false
}

func (b *badValue) violation() *Violation {
	where := formatPath(b.path)
	d := Detail{Rule: "JSON", Path: where, Reason: where + " " + b.msg}
	if b.number {
		d.Rule, d.New = "Guard.Schema", b.value
		return violation(ErrSchemaViolation, d)
	}
	return violation(ErrInvalidJSON, d)
}

// InvalidJSON checks that doc is a JSON value of the jsonpath model (nil,
// bool, string, json.Number, []any, map[string]any), with valid UTF-8 and
// valid number text, nested at most jsonvalue.MaxDepth levels. It returns
// nil when it is, and otherwise a Governance.InvalidJSON violation naming
// the first offending path: a NaN or infinite float, any Go number or other
// Go type (a Go agent's result must go through jsonvalue.Normalize), text
// that is not a number in a json.Number.
func InvalidJSON(doc any) *Violation {
	var bad *badValue
	checkValue(doc, nil, false, &bad)
	if bad != nil {
		return bad.violation()
	}
	return nil
}

// expanded returns doc with its packed arrays (jsonvalue.Packed) decoded:
// the checks read arrays as []any. A packed array's elements were written
// by jsonvalue, so decoding them cannot fail; if it did, doc is returned
// as it is and the checks report the packed array as not JSON.
func expanded(doc any) any {
	if !jsonvalue.HasPacked(doc) {
		return doc
	}
	out, err := jsonvalue.Expand(doc)
	if err != nil {
		return doc
	}
	return out
}
