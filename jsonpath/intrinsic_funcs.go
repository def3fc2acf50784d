package jsonpath

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonvalue"
)

// valueKind is the type a function expects of an argument.
type valueKind uint8

const (
	kindAny valueKind = iota
	kindString
	kindNumber
	kindBool
	kindArray
	kindObject
)

func (k valueKind) String() string {
	switch k {
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	case kindBool:
		return "a boolean"
	case kindArray:
		return "an array"
	case kindObject:
		return "an object"
	}
	return "any value"
}

// accepts reports whether a literal argument has the kind. Literals are
// strings, numbers, booleans and null; no literal is an array or an object.
func (k valueKind) accepts(lit any) bool {
	switch lit.(type) {
	case string:
		return k == kindAny || k == kindString
	case json.Number:
		return k == kindAny || k == kindNumber
	case bool:
		return k == kindAny || k == kindBool
	}
	return k == kindAny
}

func literalKind(lit any) string {
	switch lit.(type) {
	case string:
		return "a string literal"
	case json.Number:
		return "a number literal"
	case bool:
		return "a boolean literal"
	}
	return "null"
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// funcSpec describes one intrinsic function.
type funcSpec struct {
	name string
	// min and max bound the argument count; max is -1 for no bound.
	min, max int
	// params are the kinds of the arguments; the last one repeats.
	params []valueKind
	// check, when set, validates a call at compile time beyond count and
	// literal types. It returns the offset and message of a problem, or "".
	check func(c *call) (int, string)
	eval  func(c *call, args []any, env Env) (any, error)
	// builds, when set, returns (before eval runs) about how many bytes
	// eval will build from args, counting no further than limit: the
	// evaluation's budget is charged that instead of the result's size.
	builds func(c *call, args []any, limit int) int
	// size, when set, bounds the size of every result of the function in
	// bytes of compact JSON, whatever its arguments (Template.SizeBound).
	size int
}

func (f *funcSpec) param(i int) valueKind {
	if len(f.params) == 0 {
		return kindAny
	}
	return f.params[min(i, len(f.params)-1)]
}

// lookupIntrinsic returns the function named name (case-sensitive), or nil.
func lookupIntrinsic(name string) *funcSpec {
	return intrinsicFuncs[name]
}

// intrinsicFuncs is the read-only table of functions.
var intrinsicFuncs = map[string]*funcSpec{
	"States.Format":         {name: "States.Format", min: 1, max: -1, params: []valueKind{kindString, kindAny}, check: checkFormat, eval: evalFormat, builds: formatBuilds},
	"States.StringToJson":   {name: "States.StringToJson", min: 1, max: 1, params: []valueKind{kindString}, eval: evalStringToJSON},
	"States.JsonToString":   {name: "States.JsonToString", min: 1, max: 1, eval: evalJSONToString, builds: argsBuild},
	"States.Array":          {name: "States.Array", min: 0, max: -1, eval: evalArray},
	"States.ArrayPartition": {name: "States.ArrayPartition", min: 2, max: 2, params: []valueKind{kindArray, kindNumber}, eval: evalArrayPartition},
	"States.ArrayContains":  {name: "States.ArrayContains", min: 2, max: 2, params: []valueKind{kindArray, kindAny}, eval: evalArrayContains, size: len("false")},
	"States.ArrayRange":     {name: "States.ArrayRange", min: 3, max: 3, params: []valueKind{kindNumber}, eval: evalArrayRange},
	"States.ArrayGetItem":   {name: "States.ArrayGetItem", min: 2, max: 2, params: []valueKind{kindArray, kindNumber}, eval: evalArrayGetItem},
	"States.ArrayLength":    {name: "States.ArrayLength", min: 1, max: 1, params: []valueKind{kindArray}, eval: evalArrayLength, size: len("-9223372036854775808")},
	"States.ArrayUnique":    {name: "States.ArrayUnique", min: 1, max: 1, params: []valueKind{kindArray}, eval: evalArrayUnique},
	"States.Base64Encode":   {name: "States.Base64Encode", min: 1, max: 1, params: []valueKind{kindString}, eval: evalBase64Encode},
	"States.Base64Decode":   {name: "States.Base64Decode", min: 1, max: 1, params: []valueKind{kindString}, eval: evalBase64Decode},
	"States.Hash":           {name: "States.Hash", min: 2, max: 2, params: []valueKind{kindAny, kindString}, check: checkHash, eval: evalHash},
	"States.JsonMerge":      {name: "States.JsonMerge", min: 3, max: 3, params: []valueKind{kindObject, kindObject, kindBool}, check: checkJSONMerge, eval: evalJSONMerge},
	"States.MathRandom":     {name: "States.MathRandom", min: 2, max: 3, params: []valueKind{kindNumber}, eval: evalMathRandom},
	"States.MathAdd":        {name: "States.MathAdd", min: 2, max: 2, params: []valueKind{kindNumber}, eval: evalMathAdd, size: len("-2147483648")},
	"States.StringSplit":    {name: "States.StringSplit", min: 2, max: 2, params: []valueKind{kindString}, eval: evalStringSplit},
	"States.UUID":           {name: "States.UUID", min: 0, max: 0, eval: evalUUID, size: len(`"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"`)},

	// ASL extensions, documented on the intrinsic type.
	"States.ArrayConcat":   {name: "States.ArrayConcat", min: 2, max: -1, params: []valueKind{kindArray}, eval: evalArrayConcat, builds: membersBuild},
	"States.MathSubtract":  {name: "States.MathSubtract", min: 2, max: 2, params: []valueKind{kindNumber}, eval: evalMathSubtract},
	"States.MathMultiply":  {name: "States.MathMultiply", min: 2, max: 2, params: []valueKind{kindNumber}, eval: evalMathMultiply},
	"States.Merge":         {name: "States.Merge", min: 2, max: -1, params: []valueKind{kindObject}, eval: evalMerge},
	"States.Pick":          {name: "States.Pick", min: 2, max: -1, params: []valueKind{kindObject, kindString}, eval: evalPick},
	"States.Omit":          {name: "States.Omit", min: 2, max: -1, params: []valueKind{kindObject, kindString}, eval: evalOmit},
	"States.Coalesce":      {name: "States.Coalesce", min: 1, max: -1, eval: evalCoalesce},
	"States.TokenCount":    {name: "States.TokenCount", min: 1, max: 1, eval: evalTokenCount},
	"States.Truncate":      {name: "States.Truncate", min: 2, max: 2, params: []valueKind{kindString, kindNumber}, eval: evalTruncate},
	"States.CurrentCost":   {name: "States.CurrentCost", min: 0, max: 0, eval: evalCurrentCost},
	"States.CurrentTokens": {name: "States.CurrentTokens", min: 0, max: 0, eval: evalCurrentTokens},
}

// AWS limits.
const (
	// maxEncodeChars is the longest string Base64Encode, Base64Decode and
	// Hash accept, in characters.
	maxEncodeChars = 10000
	// maxRangeItems is the most items ArrayRange may produce.
	maxRangeItems = 1000
)

// Argument accessors: each returns the argument as the wanted type or the
// AWS error of fn.

func stringArg(fn string, args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", invalidArgs(fn, "argument %d must be a string, got %s", i+1, typeName(args[i]))
	}
	return s, nil
}

func arrayArg(fn string, args []any, i int) ([]any, error) {
	a, ok := args[i].([]any)
	if !ok {
		return nil, invalidArgs(fn, "argument %d must be an array, got %s", i+1, typeName(args[i]))
	}
	return a, nil
}

func objectArg(fn string, args []any, i int) (map[string]any, error) {
	m, ok := args[i].(map[string]any)
	if !ok {
		return nil, invalidArgs(fn, "argument %d must be an object, got %s", i+1, typeName(args[i]))
	}
	return m, nil
}

func numberArg(fn string, args []any, i int) (json.Number, error) {
	n, ok := args[i].(json.Number)
	if !ok {
		return "", invalidArgs(fn, "argument %d must be a number, got %s", i+1, typeName(args[i]))
	}
	return n, nil
}

// intArg returns a number argument as an integer, its fraction dropped
// (AWS truncates the arguments of ArrayRange, ArrayPartition, ArrayGetItem
// and MathRandom although its documentation says "rounded").
func intArg(fn string, args []any, i int) (int64, error) {
	n, err := numberArg(fn, args, i)
	if err != nil {
		return 0, err
	}
	v, ok := toInt(n, false)
	if !ok {
		return 0, invalidArgs(fn, "argument %d (%s) is out of range", i+1, n)
	}
	return v, nil
}

// States.Format

// checkFormat splits a literal template at compile time and checks that the
// call has one argument per placeholder.
func checkFormat(c *call) (int, string) {
	t := &c.args[0]
	if t.kind != argLiteral {
		return 0, ""
	}
	texts, off, msg := splitLiteralTemplate(t.raw)
	if msg != "" {
		return t.offset + 1 + off, "invalid States.Format template: " + msg
	}
	if got := len(c.args) - 1; got != len(texts)-1 {
		return c.offset, "States.Format template has " + plural(len(texts)-1, "placeholder") +
			" but the call passes " + plural(got, "argument") + " to fill them"
	}
	c.tmpl = texts
	return 0, ""
}

// splitLiteralTemplate splits the source text of a string literal at its {}
// placeholders. Escaped braces are text; a lone brace is an error, reported
// with its offset in raw.
func splitLiteralTemplate(raw string) (texts []string, offset int, msg string) {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '\\':
			i++
			b.WriteByte(raw[i]) // the parser accepted only valid escapes
		case '{':
			if i+1 >= len(raw) || raw[i+1] != '}' {
				return nil, i, `unmatched "{" (write \{ for a literal brace)`
			}
			texts = append(texts, b.String())
			b.Reset()
			i++
		case '}':
			return nil, i, `unmatched "}" (write \} for a literal brace)`
		default:
			b.WriteByte(c)
		}
	}
	return append(texts, b.String()), 0, ""
}

// splitValueTemplate splits a template that came from a path or a call.
func splitValueTemplate(s string) ([]string, bool) {
	var texts []string
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			if i+1 >= len(s) || s[i+1] != '}' {
				return nil, false
			}
			texts = append(texts, s[last:i])
			i++
			last = i + 1
		case '}':
			return nil, false
		}
	}
	return append(texts, s[last:]), true
}

func evalFormat(c *call, args []any, _ Env) (any, error) {
	const fn = "States.Format"
	texts := c.tmpl
	if texts == nil {
		s, err := stringArg(fn, args, 0)
		if err != nil {
			return nil, err
		}
		var ok bool
		if texts, ok = splitValueTemplate(s); !ok {
			return nil, invalidArgs(fn, "the template %q has an unmatched brace", s)
		}
		if len(texts)-1 != len(args)-1 {
			return nil, invalidArgs(fn, "the template has %s but the call passes %s",
				plural(len(texts)-1, "placeholder"), plural(len(args)-1, "argument"))
		}
	}
	size := 0
	for _, t := range texts {
		size += len(t)
	}
	for _, a := range args[1:] {
		if s, ok := a.(string); ok {
			size += len(s)
		} else {
			size += 8
		}
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(texts[0])
	for i, a := range args[1:] {
		writeJavaString(&b, a)
		b.WriteString(texts[i+1])
	}
	return b.String(), nil
}

// formatBuilds is about what States.Format builds: its template's text
// and its arguments written out.
func formatBuilds(c *call, args []any, limit int) int {
	n := 0
	for _, t := range c.tmpl {
		n += len(t)
	}
	if t, ok := args[0].(string); ok && c.tmpl == nil {
		n += len(t)
	}
	if len(args) > 1 {
		n += argsBuild(c, args[1:], limit-n)
	}
	return n
}

// argsBuild is the size of args written out (a string's bytes, anything
// else as JSON), counted no further than past limit.
func argsBuild(_ *call, args []any, limit int) int {
	n := 0
	for _, a := range args {
		m := 0
		if s, ok := a.(string); ok {
			m = len(s)
		} else {
			m, _ = jsonvalue.SizeWithin(a, limit-n)
		}
		if n += m; n > limit {
			break
		}
	}
	return n
}

// membersBuild is what an array of the members of args takes: 16 bytes
// a member.
func membersBuild(_ *call, args []any, _ int) int {
	n := 0
	for _, a := range args {
		if arr, ok := a.([]any); ok {
			n += 16 * len(arr)
		}
	}
	return n
}

// writeJavaString writes v as AWS renders a States.Format argument: the way
// Java prints the value. Strings are raw, numbers keep their text, arrays
// are [a, b] and objects {k=v, k2=v2} (keys in sorted order: the value
// model keeps no order).
func writeJavaString(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(x)
	case json.Number:
		b.WriteString(string(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJavaString(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteByte('=')
			writeJavaString(b, x[k])
		}
		b.WriteByte('}')
	default:
		if t, err := jsonvalue.Marshal(v); err == nil {
			b.Write(t)
		} else {
			b.WriteString(typeName(v))
		}
	}
}

// States.StringToJson and States.JsonToString

func evalStringToJSON(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.StringToJson"
	s, err := stringArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil // AWS: "" and " " give null
	}
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		return nil, invalidArgs(fn, "the string is not JSON: %v", err)
	}
	if strings.Contains(s, "-0") {
		v = positiveZero(v)
	}
	return v, nil
}

// positiveZero rewrites the integer -0 as 0, as AWS's parser does.
func positiveZero(v any) any {
	switch x := v.(type) {
	case json.Number:
		if x == "-0" {
			return json.Number("0")
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = positiveZero(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = positiveZero(e)
		}
		return out
	}
	return v
}

func evalJSONToString(_ *call, args []any, _ Env) (any, error) {
	b, err := jsonvalue.Marshal(args[0])
	if err != nil {
		return nil, invalidArgs("States.JsonToString", "%v", err)
	}
	return string(b), nil
}

// Arrays

// evalArray returns the arguments themselves: call.eval makes a new slice
// for every evaluation and never touches it afterwards.
func evalArray(_ *call, args []any, _ Env) (any, error) {
	return args, nil
}

func evalArrayPartition(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.ArrayPartition"
	arr, err := arrayArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	size, err := intArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, invalidArgs(fn, "the chunk size must be a positive integer, got %s", args[1])
	}
	out := make([]any, 0, (int64(len(arr))+size-1)/size)
	for i := 0; i < len(arr); {
		j := len(arr)
		if int64(j-i) > size {
			j = i + int(size)
		}
		out = append(out, arr[i:j:j])
		i = j
	}
	return out, nil
}

func evalArrayContains(_ *call, args []any, _ Env) (any, error) {
	arr, err := arrayArg("States.ArrayContains", args, 0)
	if err != nil {
		return nil, err
	}
	for _, e := range arr {
		if jsonvalue.Equal(e, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

func evalArrayRange(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.ArrayRange"
	var v [3]int64
	for i := range v {
		n, err := intArg(fn, args, i)
		if err != nil {
			return nil, err
		}
		v[i] = n
	}
	start, end, step := v[0], v[1], v[2]
	if step == 0 {
		return nil, invalidArgs(fn, "the step must not be 0")
	}
	count := int64(0)
	if step > 0 && start <= end || step < 0 && start >= end {
		count = (end-start)/step + 1
	}
	if count > maxRangeItems {
		return nil, invalidArgs(fn, "the range has %d items, more than the %d allowed", count, maxRangeItems)
	}
	out := make([]any, count)
	for i := range out {
		out[i] = jsonvalue.IntNumber(start + int64(i)*step)
	}
	return out, nil
}

func evalArrayGetItem(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.ArrayGetItem"
	arr, err := arrayArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	i, err := intArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	switch {
	case i < 0:
		return nil, invalidArgs(fn, "the index %d is negative", i)
	case len(arr) == 0:
		return nil, nil // AWS returns null for any index into an empty array
	case i >= int64(len(arr)):
		return nil, invalidArgs(fn, "the index %d is out of bounds for an array of %s", i, plural(len(arr), "item"))
	}
	return arr[i], nil
}

func evalArrayLength(_ *call, args []any, _ Env) (any, error) {
	arr, err := arrayArg("States.ArrayLength", args, 0)
	if err != nil {
		return nil, err
	}
	return jsonvalue.IntNumber(int64(len(arr))), nil
}

func evalArrayUnique(_ *call, args []any, _ Env) (any, error) {
	arr, err := arrayArg("States.ArrayUnique", args, 0)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(arr))
	// Values that can be equal share a bucket; Equal decides within it.
	buckets := make(map[string][]int, len(arr))
	for _, e := range arr {
		key := uniqueKey(e)
		dup := false
		for _, j := range buckets[key] {
			if jsonvalue.Equal(out[j], e) {
				dup = true
				break
			}
		}
		if !dup {
			buckets[key] = append(buckets[key], len(out))
			out = append(out, e)
		}
	}
	return out, nil
}

// uniqueKey returns a key that is the same for any two equal values.
func uniqueKey(v any) string {
	switch x := v.(type) {
	case nil:
		return "n"
	case bool:
		if x {
			return "t"
		}
		return "f"
	case string:
		return "s" + x
	case json.Number:
		if f, ok := jsonvalue.Float64(x); ok {
			return "#" + strconv.FormatFloat(f, 'g', -1, 64)
		}
		return "#"
	case []any:
		return "a" + strconv.Itoa(len(x))
	case map[string]any:
		return "o" + strconv.Itoa(len(x))
	}
	return "?"
}

// Encoding and hashing

// javaLength is the length of s in UTF-16 code units, as Java counts the
// characters of a string.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

func evalBase64Encode(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Base64Encode"
	s, err := stringArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	if n := javaLength(s); n > maxEncodeChars {
		return nil, invalidArgs(fn, "the string has %d characters, more than the %d allowed", n, maxEncodeChars)
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func evalBase64Decode(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Base64Decode"
	s, err := stringArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	if n := javaLength(s); n > maxEncodeChars {
		return nil, invalidArgs(fn, "the string has %d characters, more than the %d allowed", n, maxEncodeChars)
	}
	return javaUTF8(lenientBase64(s)), nil
}

// javaUTF8 turns bytes into a string as Java's new String(bytes, UTF_8)
// does: each malformed sequence becomes one U+FFFD.
func javaUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
			i += malformedLength(b[i:])
			continue
		}
		sb.WriteRune(r)
		i += size
	}
	return sb.String()
}

// malformedLength is how many bytes Java's UTF-8 decoder takes as one
// malformed sequence at the start of b: the lead byte and the continuation
// bytes that could still belong to it.
func malformedLength(b []byte) int {
	n, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		n = 1
	case c == 0xE0:
		n, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEF: // Java takes a surrogate ED A0..BF xx whole
		n = 2
	case c == 0xF0:
		n, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		n = 3
	case c == 0xF4:
		n, hi = 3, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i <= n && i < len(b) && b[i] >= lo && b[i] <= hi; i++ {
		lo, hi = 0x80, 0xBF
	}
	return i
}

// lenientBase64 decodes s the forgiving way AWS does: characters outside the
// alphabet (standard or URL-safe) are skipped, decoding stops at the first
// "=", and a short final group yields the whole bytes it holds.
func lenientBase64(s string) []byte {
	out := make([]byte, 0, len(s)*3/4+2)
	var acc uint32
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= 'A' && c <= 'Z':
			d = c - 'A'
		case c >= 'a' && c <= 'z':
			d = c - 'a' + 26
		case c >= '0' && c <= '9':
			d = c - '0' + 52
		case c == '+' || c == '-':
			d = 62
		case c == '/' || c == '_':
			d = 63
		case c == '=':
			i = len(s)
			continue
		default:
			continue
		}
		acc = acc<<6 | uint32(d)
		n++
		if n == 4 {
			out = append(out, byte(acc>>16), byte(acc>>8), byte(acc))
			acc, n = 0, 0
		}
	}
	switch n {
	case 2:
		out = append(out, byte(acc>>4))
	case 3:
		out = append(out, byte(acc>>10), byte(acc>>2))
	}
	return out
}

// hashAlgorithms are the algorithms States.Hash accepts, spelled as AWS spells them.
var hashAlgorithms = map[string]func() hash.Hash{
	"MD5":     md5.New,
	"SHA-1":   sha1.New,
	"SHA-256": sha256.New,
	"SHA-384": sha512.New384,
	"SHA-512": sha512.New,
}

func checkHash(c *call) (int, string) {
	a := &c.args[1]
	if s, ok := a.lit.(string); ok && a.kind == argLiteral && hashAlgorithms[s] == nil {
		return a.offset, "unknown States.Hash algorithm " + strconv.Quote(s) + ": use MD5, SHA-1, SHA-256, SHA-384 or SHA-512"
	}
	return 0, ""
}

func evalHash(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Hash"
	data, ok := args[0].(string)
	if !ok {
		// AWS hashes the text of a value that is not a string.
		b, err := jsonvalue.Marshal(args[0])
		if err != nil {
			return nil, invalidArgs(fn, "%v", err)
		}
		data = string(b)
	}
	if n := javaLength(data); n > maxEncodeChars {
		return nil, invalidArgs(fn, "the data has %d characters, more than the %d allowed", n, maxEncodeChars)
	}
	alg, err := stringArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	newHash := hashAlgorithms[alg]
	if newHash == nil {
		return nil, invalidArgs(fn, "unknown algorithm %q", alg)
	}
	h := newHash()
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// JSON merge

func checkJSONMerge(c *call) (int, string) {
	if a := &c.args[2]; a.kind == argLiteral && a.lit == true {
		return a.offset, "States.JsonMerge supports only shallow merging: its third argument must be false"
	}
	return 0, ""
}

func evalJSONMerge(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.JsonMerge"
	a, err := objectArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	b, err := objectArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	if args[2] == true {
		return nil, invalidArgs(fn, "deep merging is not supported: the third argument must be false")
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out, nil
}

// Math

func evalMathRandom(_ *call, args []any, env Env) (any, error) {
	const fn = "States.MathRandom"
	start, err := intArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	end, err := intArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	bound := end - start
	if bound <= 0 || bound > 1<<31-1 {
		return nil, invalidArgs(fn, "the end (%d) must be greater than the start (%d), by at most 2147483647", end, start)
	}
	if len(args) == 2 {
		drew(env)
		return jsonvalue.IntNumber(start + mrand.Int64N(bound)), nil
	}
	seed, err := intArg(fn, args, 2)
	if err != nil {
		return nil, err
	}
	r := newJavaRandom(seed)
	return jsonvalue.IntNumber(start + int64(r.nextInt(int32(bound)))), nil
}

// javaRandom is java.util.Random: with a seed, MathRandom draws the number
// Java's new Random(seed).nextInt(end-start) would, our best guess at what
// AWS (written in Java) does.
type javaRandom struct{ seed int64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ javaMultiplier) & javaMask}
}

func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaMultiplier + 0xB) & javaMask
	return int32(r.seed >> (48 - bits))
}

func (r *javaRandom) nextInt(bound int32) int32 {
	n := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(n)) >> 31)
	}
	for u := n; ; u = r.next(31) {
		n = u % bound
		if u-n+m >= 0 { // int32 arithmetic: overflow makes it negative, as in Java
			return n
		}
	}
}

func evalMathAdd(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.MathAdd"
	var v [2]int64
	for i := range v {
		n, err := numberArg(fn, args, i)
		if err != nil {
			return nil, err
		}
		x, ok := toInt(n, true)
		if !ok || x < -1<<31 || x > 1<<31-1 {
			return nil, invalidArgs(fn, "argument %d (%s) is not in the integer range -2147483648 to 2147483647", i+1, n)
		}
		v[i] = x
	}
	sum := v[0] + v[1]
	if sum < -1<<31 || sum > 1<<31-1 {
		return nil, invalidArgs(fn, "the sum %d is not in the integer range -2147483648 to 2147483647", sum)
	}
	return jsonvalue.IntNumber(sum), nil
}

// Strings

// evalStringSplit splits at every character of the delimiter string and
// drops empty tokens, as Java's StringTokenizer does.
func evalStringSplit(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.StringSplit"
	s, err := stringArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	delims, err := stringArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, 4)
	start := -1
	for i, r := range s {
		if strings.ContainsRune(delims, r) {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out, nil
}

// evalUUID returns a random version 4 UUID.
func evalUUID(_ *call, _ []any, env Env) (any, error) {
	drew(env)
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:]), nil
}
