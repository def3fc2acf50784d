package states

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonvalue"
)

// parser collects every problem found while turning a decoded definition
// into a Machine.
type parser struct {
	errs ErrorList
	// stateAt maps every state name met so far, nested machines included,
	// to its pointer: names must be unique across the whole definition.
	stateAt map[string]string
	// depth is 1 inside the top-level machine, more in nested ones.
	depth int
	// ql is the query language of the machine being read (the default of
	// its states); topQL the top-level machine's.
	ql, topQL string
}

func (p *parser) errorf(ptr, state, format string, args ...any) {
	p.errs = append(p.errs, &ValidationError{Pointer: ptr, State: state, Msg: fmt.Sprintf(format, args...)})
}

// object reads the fields of one JSON object of the definition, remembering
// which fields were read so that the rest can be reported as unknown.
type object struct {
	p     *parser
	ptr   string
	state string
	m     map[string]any
	used  map[string]bool
}

// newObject returns a reader for v, which must be an object; otherwise it
// reports the problem and returns nil.
func (p *parser) newObject(v any, ptr, state, what string) *object {
	m, ok := v.(map[string]any)
	if !ok {
		p.errorf(ptr, state, "%s must be an object, not %s", what, jsonvalue.TypeName(v))
		return nil
	}
	return &object{p: p, ptr: ptr, state: state, m: m, used: make(map[string]bool, len(m))}
}

func (o *object) at(key string) string { return o.ptr + "/" + jsonvalue.EscapePointer(key) }

func (o *object) errorf(key, format string, args ...any) {
	ptr := o.ptr
	if key != "" {
		ptr = o.at(key)
	}
	o.p.errorf(ptr, o.state, format, args...)
}

// has reports whether key is present (marking it used).
func (o *object) has(key string) bool {
	_, ok := o.m[key]
	if ok {
		o.used[key] = true
	}
	return ok
}

// get returns the raw value of key (marking it used).
func (o *object) get(key string) (any, bool) {
	v, ok := o.m[key]
	if ok {
		o.used[key] = true
	}
	return v, ok
}

func (o *object) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		o.errorf(key, "%s must be a string, not %s", key, jsonvalue.TypeName(v))
		return "", false
	}
	return s, true
}

func (o *object) requiredStr(key string) (string, bool) {
	if _, ok := o.m[key]; !ok {
		o.errorf("", "missing required field %s", key)
		return "", false
	}
	s, ok := o.str(key)
	if ok && s == "" {
		o.errorf(key, "%s must not be empty", key)
		return "", false
	}
	return s, ok
}

func (o *object) boolean(key string) (bool, bool) {
	v, ok := o.get(key)
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		o.errorf(key, "%s must be a boolean, not %s", key, jsonvalue.TypeName(v))
		return false, false
	}
	return b, true
}

// integer reads an integer field within [min, max].
func (o *object) integer(key string, min, max int64) (int64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.errorf(key, "%s must be an integer, not %s", key, jsonvalue.TypeName(v))
		return 0, false
	}
	i, isInt := jsonvalue.Int64(n)
	if !isInt {
		o.errorf(key, "%s must be an integer, not %s", key, n)
		return 0, false
	}
	if i < min || i > max {
		if max == math.MaxInt64 {
			o.errorf(key, "%s must be at least %d, not %d", key, min, i)
		} else {
			o.errorf(key, "%s must be between %d and %d, not %d", key, min, max, i)
		}
		return 0, false
	}
	return i, true
}

// number reads a number field within [min, max].
func (o *object) number(key string, min, max float64) (float64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.errorf(key, "%s must be a number, not %s", key, jsonvalue.TypeName(v))
		return 0, false
	}
	f, fok := jsonvalue.Float64(n)
	if !fok || f < min || f > max {
		if math.IsInf(max, 1) {
			o.errorf(key, "%s must be at least %g, not %s", key, min, n)
		} else {
			o.errorf(key, "%s must be between %g and %g, not %s", key, min, max, n)
		}
		return 0, false
	}
	return f, true
}

func (o *object) strings(key string) ([]string, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	arr, isArr := v.([]any)
	if !isArr {
		o.errorf(key, "%s must be an array of strings, not %s", key, jsonvalue.TypeName(v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	good := true
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			o.p.errorf(fmt.Sprintf("%s/%d", o.at(key), i), o.state, "%s[%d] must be a string, not %s", key, i, jsonvalue.TypeName(e))
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

// oneOf reads a string field that must be one of values.
func (o *object) oneOf(key string, values ...string) (string, bool) {
	s, ok := o.str(key)
	if !ok {
		return "", false
	}
	for _, v := range values {
		if s == v {
			return s, true
		}
	}
	o.errorf(key, "%s must be one of %s, not %q", key, quoteList(values), s)
	return "", false
}

// exclusive reports an error when more than one of keys is present.
func (o *object) exclusive(keys ...string) {
	var present []string
	for _, k := range keys {
		if _, ok := o.m[k]; ok {
			present = append(present, k)
		}
	}
	if len(present) > 1 {
		o.errorf(present[1], "%s and %s cannot both be set", present[0], present[1])
	}
}

// done reports every field that was not read as unknown.
func (o *object) done(what string) {
	var unknown []string
	for k := range o.m {
		if !o.used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		o.errorf(k, "unknown field %q in %s", k, what)
	}
}

// sortedKeys returns the keys of m in byte order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quoteList writes values as "a", "b" or "c".
func quoteList(values []string) string {
	var b strings.Builder
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", v)
	}
	return b.String()
}

// governanceProblems reports the problems of a Governance block or a
// WritePolicy compiled at ptr.
func (p *parser) governanceProblems(ptr, state string, err error) {
	if err == nil {
		return
	}
	var problems governance.Problems
	if !errors.As(err, &problems) {
		p.errorf(ptr, state, "%v", err)
		return
	}
	for _, pr := range problems {
		p.errorf(ptr+pr.Pointer, state, "%s", pr.Msg)
	}
}
