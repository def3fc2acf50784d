package jsonvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal writes v as compact JSON the way AWS Step Functions writes it: no
// spaces, object keys sorted by byte order, numbers as their json.Number
// text, and strings escaped minimally: \" \\ \n \r \t \b \f, other control
// characters as \u00xx, everything else (/, <, >, &, non-ASCII) as it is in
// UTF-8. Invalid UTF-8 in a string is written as U+FFFD, one per bad byte.
//
// v is a value of the model (nil, bool, string, json.Number, []any,
// map[string]any; a nil slice or map is written [] or {}) whose numbers may
// also be Go int, int8…int64, uint…uint64, float32 or float64, written as
// IntNumber and FloatNumber would. Anything else, a NaN or infinite float, a
// json.Number that is not valid number text, or nesting deeper than
// MaxDepth gives a *JSONError naming the path of the value. Marshal does
// not look for object keys that are equal after Unicode NFC normalization
// (only a map built by hand can have them; Normalize rejects them); apart
// from those, Decode reads back whatever Marshal writes.
func Marshal(v any) ([]byte, error) {
	// Sizing first costs a walk but saves growing the buffer step by step,
	// and the result holds no spare capacity.
	n := Size(v)
	if n < 0 {
		n = 0 // AppendJSON reports the problem
	}
	return AppendJSON(make([]byte, 0, n), v)
}

// AppendJSON appends the Marshal form of v to dst and returns the extended
// buffer. On error it returns dst unchanged.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	var e encoder
	out, err := e.value(dst, v, 0)
	if err != nil {
		err.Path = e.path.String()
		return dst, err
	}
	return out, nil
}

// AppendString appends s as Marshal writes a string: AppendJSON(dst, s)
// without making s an interface value.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// MarshalIndent is Marshal with one line per array element and object
// member, each line indented by indent once per level, and ": " between a
// key and its value; empty arrays and objects stay [] and {}. It is meant
// for people (the command line), not for identity or size checks.
func MarshalIndent(v any, indent string) ([]byte, error) {
	e := encoder{indent: indent, pretty: true}
	out, err := e.value(nil, v, 0)
	if err != nil {
		err.Path = e.path.String()
		return nil, err
	}
	return out, nil
}

// encoder writes values; its scratch stack holds the keys of the objects
// being written so that sorting them allocates once per call.
type encoder struct {
	pretty    bool
	indent    string
	canonical bool      // see Canonical
	keys      []string  // keys being sorted
	pairs     []keyPair // canonical: keys with their NFC forms
	path      errPath   // filled only when an error unwinds
	cache     *EncodeCache
}

func valueError(format string, args ...any) *JSONError {
	return &JSONError{Offset: -1, Msg: fmt.Sprintf(format, args...)}
}

func tooDeep() *JSONError {
	return valueError("nesting deeper than %d levels", MaxDepth)
}

// value appends v; depth counts the arrays and objects around it.
func (e *encoder) value(dst []byte, v any, depth int) ([]byte, *JSONError) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if e.canonical {
			return appendString(dst, canonicalString(v)), nil
		}
		return appendString(dst, v), nil
	case json.Number:
		if !ValidNumber(string(v)) {
			return dst, valueError("invalid number %q", string(v))
		}
		if e.canonical {
			return appendCanonicalNumber(dst, string(v)), nil
		}
		return append(dst, v...), nil
	case []any:
		if depth >= MaxDepth {
			return dst, tooDeep()
		}
		if e.cache != nil && len(v) > 0 {
			return e.cachedValue(dst, sliceKey(v), depth, func(dst []byte) ([]byte, *JSONError) { return e.array(dst, v, depth+1) })
		}
		return e.array(dst, v, depth+1)
	case map[string]any:
		if depth >= MaxDepth {
			return dst, tooDeep()
		}
		if e.cache != nil && len(v) > 0 {
			return e.cachedValue(dst, mapKey(v), depth, func(dst []byte) ([]byte, *JSONError) { return e.objectOf(dst, v, depth+1) })
		}
		return e.objectOf(dst, v, depth+1)
	case *Packed:
		if depth+v.depth >= MaxDepth {
			return dst, tooDeep()
		}
		if e.pretty || e.canonical && !v.canon {
			return e.packed(dst, v, depth+1)
		}
		return v.appendRaw(dst), nil
	case float64:
		return appendGoFloat(dst, v, 64)
	case float32:
		return appendGoFloat(dst, float64(v), 32)
	}
	if out, ok := appendGoInt(dst, v); ok {
		return out, nil
	}
	return dst, valueError("unsupported Go type %T", v)
}

// appendGoInt appends v when it is a Go integer (int, int8…int64,
// uint…uint64); ok is false for any other type.
func appendGoInt(dst []byte, v any) (out []byte, ok bool) {
	switch v := v.(type) {
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(dst, v, 10), true
	}
	return dst, false
}

func appendGoFloat(dst []byte, f float64, bits int) ([]byte, *JSONError) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, valueError("non-finite number %s", appendFloat(nil, f, bits))
	}
	return appendFloat(dst, f, bits), nil
}

func (e *encoder) newline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, e.indent...)
	}
	return dst
}

func (e *encoder) array(dst []byte, a []any, depth int) ([]byte, *JSONError) {
	if len(a) == 0 {
		return append(dst, '[', ']'), nil
	}
	dst = append(dst, '[')
	for i, x := range a {
		if i > 0 {
			dst = append(dst, ',')
		}
		if e.pretty {
			dst = e.newline(dst, depth)
		}
		var err *JSONError
		if dst, err = e.value(dst, x, depth); err != nil {
			e.path = append(e.path, indexSeg(i))
			return dst, err
		}
	}
	if e.pretty {
		dst = e.newline(dst, depth-1)
	}
	return append(dst, ']'), nil
}

// packed appends p element by element, each decoded and written as the
// encoder's form asks (pretty, or canonical when the text is not).
func (e *encoder) packed(dst []byte, p *Packed, depth int) ([]byte, *JSONError) {
	if p.Len() == 0 {
		return append(dst, '[', ']'), nil
	}
	dst = append(dst, '[')
	for i := range p.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		if e.pretty {
			dst = e.newline(dst, depth)
		}
		x, derr := p.At(i)
		var err *JSONError
		if derr != nil {
			err = valueError("packed element: %v", derr)
		} else {
			dst, err = e.value(dst, x, depth)
		}
		if err != nil {
			e.path = append(e.path, indexSeg(i))
			return dst, err
		}
	}
	if e.pretty {
		dst = e.newline(dst, depth-1)
	}
	return append(dst, ']'), nil
}

// objectOf appends m as its form (canonical or not) asks.
func (e *encoder) objectOf(dst []byte, m map[string]any, depth int) ([]byte, *JSONError) {
	if e.canonical && !asciiKeys(m) {
		return e.canonicalObject(dst, m, depth)
	}
	return e.object(dst, m, depth)
}

func (e *encoder) object(dst []byte, m map[string]any, depth int) ([]byte, *JSONError) {
	if len(m) == 0 {
		return append(dst, '{', '}'), nil
	}
	if e.keys == nil {
		// One scratch stack for the keys of all the objects being written.
		e.keys = make([]string, 0, max(32, len(m)))
	}
	base := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys[base:])
	dst = append(dst, '{')
	for i := base; i < len(e.keys); i++ {
		// e.keys may grow (and move) while a member is written: index it
		// afresh each time.
		k := e.keys[i]
		if i > base {
			dst = append(dst, ',')
		}
		if e.pretty {
			dst = e.newline(dst, depth)
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		if e.pretty {
			dst = append(dst, ' ')
		}
		var err *JSONError
		if dst, err = e.value(dst, m[k], depth); err != nil {
			e.path = append(e.path, keySeg(k))
			e.keys = e.keys[:base]
			return dst, err
		}
	}
	e.keys = e.keys[:base]
	if e.pretty {
		dst = e.newline(dst, depth-1)
	}
	return append(dst, '}'), nil
}

// escapes gives, for each ASCII byte, the character after the backslash
// of its short escape, 'u' for a \u00xx escape, or 0 when it is written as
// it is.
var escapes = [utf8.RuneSelf]byte{
	0x00: 'u', 0x01: 'u', 0x02: 'u', 0x03: 'u', 0x04: 'u', 0x05: 'u', 0x06: 'u', 0x07: 'u',
	'\b': 'b', '\t': 't', '\n': 'n', 0x0b: 'u', '\f': 'f', '\r': 'r', 0x0e: 'u', 0x0f: 'u',
	0x10: 'u', 0x11: 'u', 0x12: 'u', 0x13: 'u', 0x14: 'u', 0x15: 'u', 0x16: 'u', 0x17: 'u',
	0x18: 'u', 0x19: 'u', 0x1a: 'u', 0x1b: 'u', 0x1c: 'u', 0x1d: 'u', 0x1e: 'u', 0x1f: 'u',
	'"': '"', '\\': '\\',
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending, to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			esc := escapes[c]
			if esc == 0 {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', esc)
			if esc == 'u' {
				dst = append(dst, '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// stringSize returns len(appendString(nil, s)) without writing.
func stringSize(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); i++ {
		switch x := extraBytes[s[i]]; x {
		case 0:
		case nonASCII:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += 2 // one byte becomes the three of U+FFFD
			} else {
				i += size - 1
			}
		default:
			n += int(x)
		}
	}
	return n
}

// nonASCII marks the bytes that start (or break) a UTF-8 sequence in
// extraBytes.
const nonASCII = 0xff

// extraBytes gives, for each byte, how many bytes its escape adds when
// appendString writes it, or nonASCII.
var extraBytes = func() (t [256]uint8) {
	for c := range utf8.RuneSelf {
		switch escapes[c] {
		case 0:
		case 'u':
			t[c] = 5
		default:
			t[c] = 1
		}
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = nonASCII
	}
	return t
}()

// Size returns the exact length in bytes of Marshal(v), without writing or
// allocating, or -1 when Marshal(v) fails.
func Size(v any) int {
	n := 0
	if !sizeOf(v, math.MaxInt, 0, &n) {
		return -1
	}
	return n
}

// SizeExceeds reports whether Marshal(v) is longer than limit bytes. It
// stops walking v as soon as the limit is passed, so checking a large
// document against a small limit is cheap. For a value that Marshal
// rejects, the answer is true when the bytes counted before the walk reached
// the problem already pass limit, else false; use Size or Marshal to find
// such values.
func SizeExceeds(v any, limit int) bool {
	n := 0
	sizeOf(v, limit, 0, &n)
	return n > limit
}

// SizeWithin returns the size of v (as Size) and true when it is at most
// limit; otherwise it stops measuring as soon as limit is passed and
// returns false.
func SizeWithin(v any, limit int) (int, bool) {
	n := 0
	sizeOf(v, limit, 0, &n)
	return n, n <= limit
}

// sizeOf adds the Marshal length of v to *n. It returns false when v cannot
// be marshalled, or as soon as *n passes limit.
func sizeOf(v any, limit, depth int, n *int) bool {
	switch v := v.(type) {
	case nil:
		*n += 4
	case bool:
		if v {
			*n += 4
		} else {
			*n += 5
		}
	case string:
		*n += stringSize(v)
	case json.Number:
		if !ValidNumber(string(v)) {
			return false
		}
		*n += len(v)
	case []any:
		if depth >= MaxDepth {
			return false
		}
		*n += 2
		if len(v) > 1 {
			*n += len(v) - 1
		}
		for _, x := range v {
			if *n > limit || !sizeOf(x, limit, depth+1, n) {
				return false
			}
		}
	case map[string]any:
		if depth >= MaxDepth {
			return false
		}
		*n += 2
		if len(v) > 1 {
			*n += len(v) - 1
		}
		for k, x := range v {
			*n += stringSize(k) + 1
			if *n > limit || !sizeOf(x, limit, depth+1, n) {
				return false
			}
		}
	case *Packed:
		if depth+v.depth >= MaxDepth {
			return false
		}
		*n += v.size()
	case float64:
		return floatSize(v, 64, limit, n)
	case float32:
		return floatSize(float64(v), 32, limit, n)
	default:
		var buf [24]byte
		b, ok := appendGoInt(buf[:0], v)
		if !ok {
			return false
		}
		*n += len(b)
	}
	return *n <= limit
}

func floatSize(f float64, bits, limit int, n *int) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	var buf [40]byte
	*n += len(appendFloat(buf[:0], f, bits))
	return *n <= limit
}

// asciiKeys reports whether all keys of m are ASCII, and so already in NFC.
func asciiKeys(m map[string]any) bool {
	for k := range m {
		if !isASCII(k) {
			return false
		}
	}
	return true
}

// keyPair is an object key with its canonical (NFC) form.
type keyPair struct{ form, key string }

func (e *encoder) canonicalObject(dst []byte, m map[string]any, depth int) ([]byte, *JSONError) {
	if len(m) == 0 {
		return append(dst, '{', '}'), nil
	}
	base := len(e.pairs)
	for k := range m {
		e.pairs = append(e.pairs, keyPair{form: canonicalString(k), key: k})
	}
	slices.SortFunc(e.pairs[base:], func(a, b keyPair) int { return strings.Compare(a.form, b.form) })
	for i := base + 1; i < len(e.pairs); i++ {
		if e.pairs[i].form == e.pairs[i-1].form {
			a, b := min(e.pairs[i].key, e.pairs[i-1].key), max(e.pairs[i].key, e.pairs[i-1].key)
			err := valueError("duplicate key %q (equal to %q after Unicode NFC normalization)", b, a)
			e.pairs = e.pairs[:base]
			return dst, err
		}
	}
	dst = append(dst, '{')
	for i := base; i < base+len(m); i++ {
		p := e.pairs[i]
		if i > base {
			dst = append(dst, ',')
		}
		dst = appendString(dst, p.form)
		dst = append(dst, ':')
		var err *JSONError
		if dst, err = e.value(dst, m[p.key], depth); err != nil {
			e.path = append(e.path, keySeg(p.key))
			e.pairs = e.pairs[:base]
			return dst, err
		}
	}
	e.pairs = e.pairs[:base]
	return append(dst, '}'), nil
}
