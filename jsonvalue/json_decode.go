package jsonvalue

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"
)

// Decode parses data as exactly one strict JSON value (RFC 8259 with no
// extensions) and returns it in the package's value model: nil, bool,
// string, json.Number, []any and map[string]any. It is the one decoder for
// every JSON text that enters the engine.
//
// Besides malformed syntax, Decode rejects what other decoders let through:
// duplicate object keys, including keys equal after Unicode NFC
// normalization; NaN, Infinity and other non-JSON tokens; anything but
// whitespace after the value; nesting deeper than MaxDepth; invalid UTF-8;
// unpaired UTF-16 surrogate escapes; raw control characters in strings;
// numbers with leading zeros, "1.", ".5" or "+1"; and empty input. The error
// is a *JSONError with the byte offset and the JSON path of the problem.
//
// Numbers become json.Number holding exactly their input text, so
// 12345678901234567890123, 0.1, 1.0 and 1e400 keep their value and spelling.
// Object keys and strings are kept as written (not normalized), with their
// escapes decoded. The result shares no memory with data.
func Decode(data []byte) (any, error) {
	d := newDecoder(data)
	return d.decode()
}

// decode reads d.data as exactly one JSON value.
func (d *decoder) decode() (any, error) {
	data := d.data
	d.skipSpace()
	if d.pos == len(data) {
		return nil, &JSONError{Offset: d.pos, Path: "$", Msg: "empty input"}
	}
	v, err := d.value(0)
	if err == nil {
		d.skipSpace()
		if d.pos < len(data) {
			err = d.fail(d.pos, "unexpected %s after the top-level value", d.describe(d.pos))
		}
	}
	if err != nil {
		err.Path = d.path.String()
		return nil, err
	}
	return v, nil
}

// decoder reads one JSON text. The scratch stacks hold the members of the
// arrays and objects being read, so that each is allocated once at its
// final size.
type decoder struct {
	data  []byte
	pos   int
	path  errPath     // filled only when an error unwinds
	vals  []any       // array elements and object values being read
	keys  []objectKey // object keys being read
	buf   []byte      // scratch for strings with escapes
	arena strArena
	// pack is the element count from which an array is packed
	// (DecodePacked); 0 never packs.
	pack int
}

// objectKey is a key as written and its NFC form, to find duplicates.
type objectKey struct{ key, form string }

func newDecoder(data []byte) decoder {
	d := decoder{data: data}
	// Room for the members of a typical document's largest container, so
	// that the scratch stacks rarely grow; tiny texts start empty.
	if n := min(32, len(data)/8); n > 0 {
		d.vals = make([]any, 0, n)
		d.keys = make([]objectKey, 0, n)
	}
	return d
}

// strArena makes the strings of one Decode call (keys, string values and
// number texts) out of shared chunks: one allocation per chunk instead of
// one per string. A chunk's bytes are written once and never changed, which
// is what makes unsafe.String sound here. Chunks are small so that a string
// kept long after the rest of its document is gone pins little memory.
type strArena struct{ chunk []byte }

const (
	arenaChunk     = 1024 // bytes per chunk, at most
	arenaMaxString = 64   // longer strings get their own allocation
)

// str returns b as a string; remaining (the input bytes not yet read)
// bounds the size of a new chunk, so small documents get small chunks.
func (a *strArena) str(b []byte, remaining int) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaMaxString {
		return string(b)
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, max(len(b), min(arenaChunk, remaining)))
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return unsafe.String(&a.chunk[start], len(b))
}

// digitNumbers are the one-digit numbers, boxed once: small integers are
// common and need no allocation this way.
var digitNumbers = [10]any{
	json.Number("0"), json.Number("1"), json.Number("2"), json.Number("3"), json.Number("4"),
	json.Number("5"), json.Number("6"), json.Number("7"), json.Number("8"), json.Number("9"),
}

func (d *decoder) fail(offset int, format string, args ...any) *JSONError {
	return &JSONError{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// describe names the input at offset for an error message.
func (d *decoder) describe(offset int) string {
	if offset >= len(d.data) {
		return "end of input"
	}
	r, size := utf8.DecodeRune(d.data[offset:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte 0x%02x", d.data[offset])
	}
	return fmt.Sprintf("character %q", r)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value reads the value at d.pos, after any whitespace. depth is the number
// of arrays and objects that enclose it.
func (d *decoder) value(depth int) (any, *JSONError) {
	d.skipSpace()
	if d.pos == len(d.data) {
		return nil, d.fail(d.pos, "unexpected end of input, expected a value")
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		s, _, err := d.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '-' || isDigit(c):
		return d.number()
	case c == 't' || c == 'f' || c == 'n':
		return d.literal()
	}
	return nil, d.badValue()
}

// word returns the run of letters, digits and sign characters at d.pos, at
// most 32 bytes, to name a bad token.
func (d *decoder) word() string {
	end := d.pos
	for end < len(d.data) && end-d.pos < 32 {
		if !isWordByte(d.data[end]) {
			break
		}
		end++
	}
	return string(d.data[d.pos:end])
}

func (d *decoder) literal() (any, *JSONError) {
	rest := d.data[d.pos:]
	switch {
	case isWord(rest, "true"):
		d.pos += 4
		return true, nil
	case isWord(rest, "false"):
		d.pos += 5
		return false, nil
	case isWord(rest, "null"):
		d.pos += 4
		return nil, nil
	}
	return nil, d.badValue()
}

// isWord reports whether b starts with the whole word w.
func isWord(b []byte, w string) bool {
	return len(b) >= len(w) && string(b[:len(w)]) == w && (len(b) == len(w) || !isWordByte(b[len(w)]))
}

func isWordByte(c byte) bool {
	return isDigit(c) || c == '_' || c == '+' || c == '-' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// badValue reports what stands at d.pos where a value was expected.
func (d *decoder) badValue() *JSONError {
	switch w := d.word(); w {
	case "NaN", "Infinity", "-Infinity", "+Infinity", "+NaN", "-NaN":
		return d.fail(d.pos, "non-finite number %s is not valid JSON", w)
	case "":
		return d.fail(d.pos, "unexpected %s, expected a value", d.describe(d.pos))
	default:
		if w[0] == '+' || w[0] == '.' || w[0] == '-' {
			return d.fail(d.pos, "invalid number %q", w)
		}
		return d.fail(d.pos, "invalid token %q", w)
	}
}

// number reads a number; the text is kept exactly as json.Number.
func (d *decoder) number() (any, *JSONError) {
	data, start := d.data, d.pos
	i := start
	if data[i] == '-' {
		i++
		if i == len(data) || !isDigit(data[i]) {
			return nil, d.badValue()
		}
	}
	if data[i] == '0' {
		i++
		if i < len(data) && isDigit(data[i]) {
			return nil, d.fail(start, "invalid number: leading zero")
		}
	} else {
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i == len(data) || !isDigit(data[i]) {
			return nil, d.fail(i, "invalid number: expected a digit after the decimal point")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i == len(data) || !isDigit(data[i]) {
			return nil, d.fail(i, "invalid number: expected a digit in the exponent")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	d.pos = i
	if i == start+1 {
		return digitNumbers[data[start]-'0'], nil
	}
	return json.Number(d.arena.str(data[start:i], len(data)-start)), nil
}

// str reads a string at d.pos (which holds the opening quote) and reports
// whether it is pure ASCII.
func (d *decoder) str() (s string, ascii bool, err *JSONError) {
	data := d.data
	start := d.pos + 1
	ascii = true
	for i := start; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.arena.str(data[start:i], len(data)-start), ascii, nil
		case c == '\\':
			return d.strEscaped(start, i, ascii)
		case c < 0x20:
			return "", false, d.fail(i, "control character %U in string", c)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false, d.fail(i, "invalid UTF-8 in string")
			}
			ascii = false
			i += size
		}
	}
	return "", false, d.fail(d.pos, "unterminated string")
}

// strEscaped continues str from the first backslash at i, decoding escapes
// into the scratch buffer.
func (d *decoder) strEscaped(start, i int, ascii bool) (string, bool, *JSONError) {
	data := d.data
	b := append(d.buf[:0], data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.buf = b
			return d.arena.str(b, len(data)-start), ascii, nil
		case c == '\\':
			if i+1 == len(data) {
				return "", false, d.fail(i, "unterminated string")
			}
			switch e := data[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, n, err := d.unicodeEscape(i)
				if err != nil {
					return "", false, err
				}
				if r >= utf8.RuneSelf {
					ascii = false
				}
				b = utf8.AppendRune(b, r)
				i += n
				continue
			default:
				return "", false, d.fail(i, "invalid escape %s in string", d.describe(i+1))
			}
			i += 2
		case c < 0x20:
			return "", false, d.fail(i, "control character %U in string", c)
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false, d.fail(i, "invalid UTF-8 in string")
			}
			ascii = false
			b = append(b, data[i:i+size]...)
			i += size
		}
	}
	return "", false, d.fail(start-1, "unterminated string")
}

// unicodeEscape reads the \uXXXX escape at i, and its low surrogate when it
// is a high surrogate. It returns the rune and the bytes read.
func (d *decoder) unicodeEscape(i int) (rune, int, *JSONError) {
	r, ok := Hex4(d.data, i+2)
	if !ok {
		return 0, 0, d.fail(i, "invalid \\u escape in string")
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, d.fail(i, "unpaired UTF-16 surrogate \\u%04X in string", r)
	case r >= 0xD800 && r <= 0xDBFF:
		lo, ok := rune(0), false
		if i+7 < len(d.data) && d.data[i+6] == '\\' && d.data[i+7] == 'u' {
			lo, ok = Hex4(d.data, i+8)
		}
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0, d.fail(i, "unpaired UTF-16 surrogate \\u%04X in string", r)
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, nil
	}
	return r, 6, nil
}

// Hex4 parses the four hex digits of a \u escape at data[i:]; false when they are not four hex digits.
func Hex4[T string | []byte](data T, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := data[k]
		switch {
		case isDigit(c):
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// array reads an array at d.pos (which holds the '[').
func (d *decoder) array(depth int) (any, *JSONError) {
	if depth > MaxDepth {
		return nil, d.fail(d.pos, "nesting deeper than %d levels", MaxDepth)
	}
	start := d.pos
	d.pos++
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return []any{}, nil
	}
	base := len(d.vals)
	var packed *packer
	for i := 0; ; i++ {
		v, err := d.value(depth)
		if err != nil {
			d.path = append(d.path, indexSeg(i))
			return nil, err
		}
		if packed != nil {
			if err := packed.add(v); err != nil {
				return nil, d.fail(d.pos, "%s", err.Msg)
			}
		} else {
			d.vals = append(d.vals, v)
			if d.pack > 0 && i+1 == d.pack {
				// Large enough to pack: the elements read so far go
				// into its text, and each next one as soon as it is read.
				packed = newPacker(len(d.data)-start, d.pos-start, i+1)
				for _, e := range d.vals[base:] {
					if err := packed.add(e); err != nil {
						return nil, d.fail(d.pos, "%s", err.Msg)
					}
				}
				clear(d.vals[base:])
				d.vals = d.vals[:base]
			}
		}
		d.skipSpace()
		if d.pos == len(d.data) {
			return nil, d.fail(d.pos, "unexpected end of input in array")
		}
		c := d.data[d.pos]
		d.pos++
		if c == ']' {
			break
		}
		if c != ',' {
			return nil, d.fail(d.pos-1, "expected ',' or ']' after array element, found %s", d.describe(d.pos-1))
		}
	}
	if packed != nil {
		return packed.done(), nil
	}
	arr := make([]any, len(d.vals)-base)
	copy(arr, d.vals[base:])
	clear(d.vals[base:])
	d.vals = d.vals[:base]
	return arr, nil
}

// indexFrom is the member count from which an object's duplicate check uses
// a map instead of a linear scan.
const indexFrom = 24

// object reads an object at d.pos (which holds the '{').
func (d *decoder) object(depth int) (any, *JSONError) {
	if depth > MaxDepth {
		return nil, d.fail(d.pos, "nesting deeper than %d levels", MaxDepth)
	}
	d.pos++
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return map[string]any{}, nil
	}
	kbase, vbase := len(d.keys), len(d.vals)
	var index map[string]int // NFC form → member, for large objects
	for {
		d.skipSpace()
		if d.pos == len(d.data) {
			return nil, d.fail(d.pos, "unexpected end of input in object")
		}
		if d.data[d.pos] != '"' {
			return nil, d.fail(d.pos, "expected a string for an object key, found %s", d.describe(d.pos))
		}
		keyAt := d.pos
		k, ascii, err := d.str()
		if err != nil {
			return nil, err
		}
		form := k
		if !ascii {
			form = norm.NFC.String(k)
		}
		j := -1
		if index != nil {
			if at, ok := index[form]; ok {
				j = at
			}
		} else {
			for at, f := range d.keys[kbase:] {
				if f.form == form {
					j = at
					break
				}
			}
		}
		if j >= 0 {
			if prev := d.keys[kbase+j].key; prev != k {
				return nil, d.fail(keyAt, "duplicate key %q (equal to %q after Unicode NFC normalization)", k, prev)
			}
			return nil, d.fail(keyAt, "duplicate key %q", k)
		}
		d.skipSpace()
		if d.pos == len(d.data) || d.data[d.pos] != ':' {
			return nil, d.fail(d.pos, "expected ':' after object key, found %s", d.describe(d.pos))
		}
		d.pos++
		v, err := d.value(depth)
		if err != nil {
			d.path = append(d.path, keySeg(k))
			return nil, err
		}
		d.keys = append(d.keys, objectKey{key: k, form: form})
		d.vals = append(d.vals, v)
		if n := len(d.keys) - kbase; index != nil {
			index[form] = n - 1
		} else if n == indexFrom {
			index = make(map[string]int, 2*indexFrom)
			for at, f := range d.keys[kbase:] {
				index[f.form] = at
			}
		}
		d.skipSpace()
		if d.pos == len(d.data) {
			return nil, d.fail(d.pos, "unexpected end of input in object")
		}
		c := d.data[d.pos]
		d.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			return nil, d.fail(d.pos-1, "expected ',' or '}' after object member, found %s", d.describe(d.pos-1))
		}
	}
	m := make(map[string]any, len(d.keys)-kbase)
	for i, k := range d.keys[kbase:] {
		m[k.key] = d.vals[vbase+i]
	}
	clear(d.vals[vbase:])
	d.vals = d.vals[:vbase]
	d.keys = d.keys[:kbase]
	return m, nil
}
