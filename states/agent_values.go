package states

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds the value grammars of the agent-native fields (durations,
// TTLs, money, percentages, {{$.path}} text) and the object-reading helpers
// they share.

// TTL is how long something is kept. The zero TTL means the field was not
// set (the field's documented default applies); Never means it is kept
// until it is deleted; otherwise Duration is positive.
type TTL struct {
	// Duration is the retention time; 0 when Never or unset.
	Duration time.Duration
	// Never is true for the TTL "never".
	Never bool
}

// IsZero reports whether t was not set.
func (t TTL) IsZero() bool { return t.Duration == 0 && !t.Never }

// String returns "never", the duration (like "168h0m0s"), or "" when unset.
func (t TTL) String() string {
	switch {
	case t.Never:
		return "never"
	case t.Duration == 0:
		return ""
	}
	return t.Duration.String()
}

// durationUnits are the unit suffixes of the duration grammar, longest
// first so that "ms" is tried before "m" and "s".
var durationUnits = []struct {
	suffix string
	unit   time.Duration
}{
	{"ms", time.Millisecond},
	{"s", time.Second},
	{"m", time.Minute},
	{"h", time.Hour},
	{"d", 24 * time.Hour},
	{"w", 7 * 24 * time.Hour},
}

// errDuration, errDurationZero and errDurationRange are the ways a
// duration can be wrong.
var (
	errDuration      = errors.New("not a duration")
	errDurationZero  = errors.New("must be greater than zero")
	errDurationRange = errors.New("is too long")
)

// ParseDuration parses the duration grammar of the agent-native fields
// (Approval Timeout, Escalation After and Repeat, Tools Timeout, TTLs):
// bare seconds ("300"), or a whole number followed by one unit: "ms", "s",
// "m", "h", "d" (24 hours) or "w" (7 days), like "500ms", "30m", "7d". No
// sign, fraction, space or combination ("1h30m") is accepted, and the
// duration must be greater than zero and fit a time.Duration (about 292
// years).
func ParseDuration(s string) (time.Duration, error) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

// ParseTTL parses a TTL: the duration grammar of ParseDuration, or "never".
func ParseTTL(s string) (TTL, error) {
	if s == "never" {
		return TTL{Never: true}, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return TTL{}, err
	}
	return TTL{Duration: d}, nil
}

func parseDuration(s string) (time.Duration, error) {
	digits, unit := s, time.Second
	for _, u := range durationUnits {
		if d, ok := strings.CutSuffix(s, u.suffix); ok {
			digits, unit = d, u.unit
			break
		}
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, errDuration
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	switch {
	case err != nil || n > math.MaxInt64/int64(unit):
		return 0, errDurationRange
	case n == 0:
		return 0, errDurationZero
	}
	return time.Duration(n) * unit, nil
}

const durationSyntax = `bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"`

// duration reads a duration field.
func (o *object) duration(key string) (time.Duration, bool) {
	s, ok := o.durationText(key, "")
	if !ok {
		return 0, false
	}
	d, err := parseDuration(s)
	if err != nil {
		o.durationError(key, s, err, "")
		return 0, false
	}
	return d, true
}

// ttl reads a TTL field (a duration or "never").
func (o *object) ttl(key string) (TTL, bool) {
	const never = `, or "never"`
	s, ok := o.durationText(key, never)
	if !ok {
		return TTL{}, false
	}
	if s == "never" {
		return TTL{Never: true}, true
	}
	d, err := parseDuration(s)
	if err != nil {
		o.durationError(key, s, err, never)
		return TTL{}, false
	}
	return TTL{Duration: d}, true
}

func (o *object) durationText(key, extra string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		o.errorf(key, "%s must be a duration string (%s%s), not %s", key, durationSyntax, extra, jsonvalue.TypeName(v))
		return "", false
	}
	return s, true
}

func (o *object) durationError(key, s string, err error, extra string) {
	switch err {
	case errDurationZero:
		o.errorf(key, "%s must be greater than zero, not %q", key, s)
	case errDurationRange:
		o.errorf(key, "%s is too long: %q", key, s)
	default:
		o.errorf(key, "%s must be a duration (%s%s), not %q", key, durationSyntax, extra, s)
	}
}

// money reads a cost: "$5.00", a number or a numeric string ("5", "0.25"),
// which must be greater than zero.
func (o *object) money(key string) (float64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		text = strings.TrimPrefix(x, "$")
		if !isDecimal(text) {
			o.errorf(key, `%s must be an amount like "$5.00", a number or a numeric string, not %q`, key, x)
			return 0, false
		}
	default:
		o.errorf(key, `%s must be an amount like "$5.00", a number or a numeric string, not %s`, key, jsonvalue.TypeName(v))
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	if math.IsInf(f, 0) {
		o.errorf(key, "%s is too large", key)
		return 0, false
	}
	if err != nil || f <= 0 {
		o.errorf(key, "%s must be greater than zero, not %s", key, text)
		return 0, false
	}
	return f, true
}

// isDecimal reports whether s is digits with an optional fraction ("5",
// "5.00", "0.25").
func isDecimal(s string) bool {
	whole, frac, hasDot := strings.Cut(s, ".")
	onlyDigits := func(t string) bool { return t != "" && strings.TrimLeft(t, "0123456789") == "" }
	return onlyDigits(whole) && (!hasDot || onlyDigits(frac))
}

// fraction reads a number in (0, 1].
func (o *object) fraction(key string) (float64, bool) {
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
	if !fok || !(f > 0 && f <= 1) {
		o.errorf(key, "%s must be greater than 0 and at most 1, not %s", key, n)
		return 0, false
	}
	return f, true
}

// percentage reads a fraction in (0, 1] written as a number or as a
// percentage string like "75%".
func (o *object) percentage(key string) (float64, bool) {
	v, ok := o.m[key]
	if !ok {
		return 0, false
	}
	s, isStr := v.(string)
	if !isStr {
		if _, isNum := v.(json.Number); !isNum {
			o.used[key] = true
			o.errorf(key, `%s must be a percentage like "50%%" or a number between 0 and 1, not %s`, key, jsonvalue.TypeName(v))
			return 0, false
		}
		return o.fraction(key)
	}
	o.used[key] = true
	digits, isPct := strings.CutSuffix(s, "%")
	if !isPct || !isDecimal(digits) {
		o.errorf(key, `%s must be a percentage like "50%%" or a number between 0 and 1, not %q`, key, s)
		return 0, false
	}
	f, err := strconv.ParseFloat(digits, 64)
	if err != nil || !(f > 0 && f <= 100) {
		o.errorf(key, "%s must be greater than 0%% and at most 100%%, not %q", key, s)
		return 0, false
	}
	return f / 100, true
}

// count reads an integer field that must be at least min.
func (o *object) count(key string, min int64) (int64, bool) {
	return o.integer(key, min, math.MaxInt64)
}

// name reads a non-empty string naming something (an agent, a tool, a
// key); it reports a missing field when required.
func (o *object) name(key string, required bool) (string, bool) {
	if _, ok := o.m[key]; !ok {
		if required {
			o.errorf("", "missing required field %s", key)
		}
		return "", false
	}
	return o.requiredStr(key)
}

// names reads an array of non-empty strings; with unique set, a repeated
// entry is an error too. It returns the entries read and whether the field
// was present.
func (o *object) names(key string, unique bool) ([]string, bool) {
	list, _, present := o.indexedNames(key, unique)
	return list, present
}

// indexedNames is names, also returning the index in the array of each
// entry returned.
func (o *object) indexedNames(key string, unique bool) (list []string, index []int, present bool) {
	v, present := o.m[key]
	if !present {
		return nil, nil, false
	}
	list, ok := o.strings(key)
	if !ok {
		return nil, nil, true
	}
	arr, _ := v.([]any)
	seen := make(map[string]bool, len(list))
	out := list[:0:0]
	for i, e := range arr {
		s, _ := e.(string)
		ptr := fmt.Sprintf("%s/%d", o.at(key), i)
		switch {
		case s == "":
			o.p.errorf(ptr, o.state, "%s[%d] must not be empty", key, i)
		case unique && seen[s]:
			o.p.errorf(ptr, o.state, "%s lists %q more than once", key, s)
		default:
			seen[s] = true
			out = append(out, s)
			index = append(index, i)
		}
	}
	return out, index, true
}

// enum reads a string field that must be one of supported; a value in
// unsupported is reported as not supported rather than as invalid.
func (o *object) enum(key string, supported, unsupported []string) (string, bool) {
	s, ok := o.str(key)
	if !ok {
		return "", false
	}
	for _, v := range supported {
		if s == v {
			return s, true
		}
	}
	for _, v := range unsupported {
		if s == v {
			o.errorf(key, "%s %q is not supported; use %s", key, s, orList(supported))
			return "", false
		}
	}
	o.errorf(key, "%s must be %s, not %q", key, orList(supported), s)
	return "", false
}

// article returns word with its indefinite article ("a Task", "an
// Approval").
func article(word string) string {
	if word != "" && strings.ContainsRune("AEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// isEmptyArray reports whether key holds an empty array.
func (o *object) isEmptyArray(key string) bool {
	arr, ok := o.m[key].([]any)
	return ok && len(arr) == 0
}

// orList renders values as `"a", "b" or "c"`.
func orList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// unsupported reports every present key of keys as a field the engine does
// not support, in a block described by where ("Tools", "a Debate
// Consensus"), and marks it read.
func (o *object) unsupported(where string, keys ...string) {
	for _, k := range keys {
		if o.has(k) {
			o.errorf(k, "%s is not supported in %s", k, where)
		}
	}
}

// skipRest marks every field of o as read, after o has been rejected as a
// whole, so its fields are not reported one by one.
func (o *object) skipRest() {
	for k := range o.m {
		o.used[k] = true
	}
}

// child returns a reader for the object under key, or nil (reporting the
// problem) when it is not an object; ok is false when key is absent.
func (o *object) child(key, what string) (c *object, present bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	return o.p.newObject(v, o.at(key), o.state, what), true
}

// refPath compiles the string value of key as a reference path (what
// ResultPath accepts: $-rooted names and indexes).
func (p *parser) refPath(o *object, key string) *jsonpath.Path {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		o.errorf(key, "%s must be a JSONPath string, not %s", key, jsonvalue.TypeName(v))
		return nil
	}
	path, err := jsonpath.CompileReference(s)
	if err != nil {
		o.errorf(key, "%s is not a valid reference path: %s", key, errText(err))
		return nil
	}
	return path
}

// paths compiles an array of JSONPath strings.
func (p *parser) paths(o *object, key string) []*jsonpath.Path {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		o.errorf(key, "%s must be an array of JSONPath strings, not %s", key, jsonvalue.TypeName(v))
		return nil
	}
	out := make([]*jsonpath.Path, 0, len(arr))
	for i, e := range arr {
		ptr := fmt.Sprintf("%s/%d", o.at(key), i)
		s, isStr := e.(string)
		if !isStr {
			p.errorf(ptr, o.state, "%s[%d] must be a JSONPath string, not %s", key, i, jsonvalue.TypeName(e))
			continue
		}
		path, err := jsonpath.Compile(s)
		if err != nil {
			p.errorf(ptr, o.state, "%s[%d] is not a valid JSONPath: %s", key, i, errText(err))
			continue
		}
		if path.IsContext() || path.Variable() != "" {
			p.errorf(ptr, o.state, "%s[%d] must select from the state's input (start with $.), not %s", key, i, s)
			continue
		}
		out = append(out, path)
	}
	return out
}

// Text is a string that may hold {{$.path}} placeholders (an Approval
// Prompt, a memory Namespace). Each placeholder is a JSONPath, compiled at
// parse time and replaced at run time by the value it selects. Literal
// text around placeholders is kept as written.
//
// It is immutable after Parse and safe for concurrent use.
type Text struct {
	// Source is the text as written in the definition.
	Source string
	// Literals are the pieces of text between placeholders: Literals[0],
	// then the value of Paths[0], then Literals[1], and so on; there is one
	// more literal than there are paths.
	Literals []string
	// Paths are the placeholders' paths, in order; empty for plain text.
	Paths []*jsonpath.Path
}

// IsZero reports whether t is empty (the field was absent).
func (t Text) IsZero() bool { return t.Source == "" }

// Render replaces each placeholder by the value its path selects in input:
// a string as it is, any other value as compact JSON. A path that does not
// resolve returns its error.
func (t Text) Render(input any, env jsonpath.Env) (string, error) {
	if len(t.Paths) == 0 {
		return t.Source, nil
	}
	var b strings.Builder
	for i, lit := range t.Literals {
		b.WriteString(lit)
		if i >= len(t.Paths) {
			break
		}
		v, err := t.Paths[i].Get(input, env)
		if err != nil {
			return "", err
		}
		if s, ok := v.(string); ok {
			b.WriteString(s)
			continue
		}
		js, err := jsonvalue.Marshal(v)
		if err != nil {
			return "", err
		}
		b.Write(js)
	}
	return b.String(), nil
}

// text reads a string field that may hold {{$.path}} placeholders.
func (p *parser) text(o *object, key string) (Text, bool) {
	s, ok := o.str(key)
	if !ok {
		return Text{}, false
	}
	t, problems := parseText(s)
	for _, msg := range problems {
		o.errorf(key, "%s %s", key, msg)
	}
	return t, len(problems) == 0
}

// textOrExpr reads the pair of fields key (a non-empty Text) and key.$ (a
// path or an intrinsic), of which at most one may be given.
func (p *parser) textOrExpr(o *object, key string) (Text, *jsonpath.Expr) {
	o.exclusive(key, key+".$")
	var t Text
	if _, ok := o.m[key]; ok {
		t, _ = p.text(o, key)
		if o.m[key] == "" {
			o.errorf(key, "%s must not be empty", key)
		}
	}
	return t, p.expr(o, key+".$")
}

// ParseText parses s as a Text: literal text with {{$.path}}
// placeholders. The error lists every bad placeholder.
func ParseText(s string) (Text, error) {
	t, problems := parseText(s)
	if len(problems) > 0 {
		return Text{}, errors.New("text " + strings.Join(problems, "; "))
	}
	return t, nil
}

// parseText parses s, returning what is wrong with it (each problem
// reads after the field's name: "has a {{ placeholder that …").
func parseText(s string) (Text, []string) {
	t := Text{Source: s}
	var problems []string
	rest := s
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			break
		}
		end := strings.Index(rest[open:], "}}")
		if end < 0 {
			return Text{}, []string{"has a {{ placeholder that is not closed with }}"}
		}
		inner := strings.TrimSpace(rest[open+2 : open+end])
		t.Literals = append(t.Literals, rest[:open])
		rest = rest[open+end+2:]
		if !strings.HasPrefix(inner, "$") {
			problems = append(problems, fmt.Sprintf("placeholder {{%s}} must be a JSONPath starting with $", inner))
			continue
		}
		path, err := jsonpath.Compile(inner)
		if err != nil {
			problems = append(problems, fmt.Sprintf("placeholder {{%s}} is not a valid JSONPath: %s", inner, errText(err)))
			continue
		}
		t.Paths = append(t.Paths, path)
	}
	t.Literals = append(t.Literals, rest)
	if len(problems) > 0 {
		return Text{}, problems
	}
	return t, nil
}
