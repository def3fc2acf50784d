package jsonvalue

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ValidNumber reports whether s is a number in the JSON grammar:
// an optional '-', then 0 or a digit 1-9 followed by digits, then an optional
// '.' with at least one digit, then an optional exponent 'e' or 'E' with an
// optional sign and at least one digit. Leading zeros, '+', "1.", ".5", NaN
// and Infinity are not numbers.
func ValidNumber(s string) bool {
	n := scanNumber(s)
	return n > 0 && n == len(s)
}

// scanNumber returns the length of the JSON number at the start of s, or 0
// when s does not start with one. It reads the longest prefix that follows
// the grammar; the caller decides what may come after it.
func scanNumber(s string) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return 0
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || !isDigit(s[i]) {
			return 0
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			return 0
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// decimal is a JSON number split into its exact parts, without copying:
// the value is ±0.d₁d₂…dₙ × 10^pos, where d₁…dₙ are the significant digits
// (no leading or trailing zeros) read from intPart followed by fracPart.
type decimal struct {
	neg      bool
	intPart  string // digits before the '.', as written
	fracPart string // digits after the '.', as written
	first    int    // index of the first significant digit in intPart+fracPart
	last     int    // index just past the last significant digit
	pos      int64  // decimal point position when !bigPos
	bigPos   *big.Int
}

// maxSmallExp bounds the exponents handled with int64 arithmetic; larger
// ones (only in absurd inputs such as 1e99999999999999999999) use big.Int.
const maxSmallExp = 1e15

// parseDecimal splits the number text s. ok is false when s is not a valid
// JSON number.
func parseDecimal(s string) (d decimal, ok bool) {
	if !ValidNumber(s) {
		return d, false
	}
	if s[0] == '-' {
		d.neg = true
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	d.intPart = mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		d.intPart, d.fracPart = mant[:i], mant[i+1:]
	}
	n := len(d.intPart) + len(d.fracPart)
	d.first = 0
	for d.first < n && d.digit(d.first) == '0' {
		d.first++
	}
	if d.first == n { // zero: nothing else matters
		d.first, d.last = 0, 0
		return d, true
	}
	d.last = n
	for d.digit(d.last-1) == '0' {
		d.last--
	}
	shift := int64(len(d.intPart) - d.first)
	e, small := parseExponent(exp)
	if small {
		d.pos = e + shift
		return d, true
	}
	d.bigPos, _ = new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	d.bigPos.Add(d.bigPos, big.NewInt(shift))
	return d, true
}

// parseExponent parses the exponent digits (with optional sign). small is
// false when its magnitude is at least maxSmallExp.
func parseExponent(s string) (e int64, small bool) {
	neg := false
	switch {
	case s == "":
		return 0, true
	case s[0] == '+':
		s = s[1:]
	case s[0] == '-':
		neg, s = true, s[1:]
	}
	for i := 0; i < len(s); i++ {
		e = e*10 + int64(s[i]-'0')
		if e >= maxSmallExp {
			return 0, false
		}
	}
	if neg {
		e = -e
	}
	return e, true
}

// digit returns the i-th digit of intPart followed by fracPart.
func (d *decimal) digit(i int) byte {
	if i < len(d.intPart) {
		return d.intPart[i]
	}
	return d.fracPart[i-len(d.intPart)]
}

func (d *decimal) isZero() bool { return d.first == d.last }

// numDigits returns the count of significant digits.
func (d *decimal) numDigits() int { return d.last - d.first }

// sigDigit returns the i-th significant digit.
func (d *decimal) sigDigit(i int) byte { return d.digit(d.first + i) }

// cmpPos compares the decimal point positions of two non-zero decimals.
func cmpPos(a, b *decimal) int {
	if a.bigPos == nil && b.bigPos == nil {
		switch {
		case a.pos < b.pos:
			return -1
		case a.pos > b.pos:
			return 1
		}
		return 0
	}
	return a.posBig().Cmp(b.posBig())
}

func (d *decimal) posBig() *big.Int {
	if d.bigPos != nil {
		return d.bigPos
	}
	return big.NewInt(d.pos)
}

// cmpMagnitude compares |a| and |b|.
func cmpMagnitude(a, b *decimal) int {
	switch az, bz := a.isZero(), b.isZero(); {
	case az && bz:
		return 0
	case az:
		return -1
	case bz:
		return 1
	}
	if c := cmpPos(a, b); c != 0 {
		return c
	}
	na, nb := a.numDigits(), b.numDigits()
	for i := 0; i < na && i < nb; i++ {
		if x, y := a.sigDigit(i), b.sigDigit(i); x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case na < nb:
		return -1
	case na > nb:
		return 1
	}
	return 0
}

// CompareNumbers compares two JSON numbers by their exact decimal value and
// returns -1, 0 or +1. "1", "1.0" and "10e-1" are equal; "0.1" is less than
// "0.10000000000000001"; no float64 rounding takes place. Text that is not a
// valid JSON number sorts before every valid number, and two invalid texts
// compare as strings, so the order stays total.
func CompareNumbers(a, b json.Number) int {
	if x, ok := plainInt64(string(a)); ok {
		if y, ok := plainInt64(string(b)); ok {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	da, okA := parseDecimal(string(a))
	db, okB := parseDecimal(string(b))
	switch {
	case !okA && !okB:
		return strings.Compare(string(a), string(b))
	case !okA:
		return -1
	case !okB:
		return 1
	}
	negA := da.neg && !da.isZero()
	negB := db.neg && !db.isZero()
	switch {
	case negA && !negB:
		return -1
	case !negA && negB:
		return 1
	case negA:
		return -cmpMagnitude(&da, &db)
	}
	return cmpMagnitude(&da, &db)
}

// plainInt64 parses s when it is a short plain integer (at most 18 digits,
// no fraction or exponent), the common case that needs no decimal logic.
func plainInt64(s string) (int64, bool) {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	if len(s) == i || len(s)-i > 18 || (s[i] == '0' && len(s)-i > 1) {
		return 0, false
	}
	var n int64
	for ; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if s[0] == '-' {
		n = -n
	}
	return n, true
}

// IsInteger reports whether the value of n is an integer: "3", "3.0", "3e2"
// and "-0" are integers, "3.5" and "1e-2" are not. Invalid text is not.
func IsInteger(n json.Number) bool {
	if _, ok := plainInt64(string(n)); ok {
		return true
	}
	d, ok := parseDecimal(string(n))
	if !ok {
		return false
	}
	if d.isZero() {
		return true
	}
	if d.bigPos != nil {
		return d.bigPos.Sign() > 0
	}
	return d.pos >= int64(d.numDigits())
}

// Int64 returns the value of n when it is an integer that fits in an int64:
// "1.0" gives 1 and "1e2" gives 100; "1.5", "1e19" and invalid text give
// false.
func Int64(n json.Number) (int64, bool) {
	if i, ok := plainInt64(string(n)); ok {
		return i, true
	}
	d, ok := parseDecimal(string(n))
	if !ok {
		return 0, false
	}
	if d.isZero() {
		return 0, true
	}
	if d.bigPos != nil || d.pos > 19 || d.pos < int64(d.numDigits()) {
		return 0, false
	}
	// Accumulate the magnitude as a negative number so that MinInt64 fits.
	var v int64
	for i := int64(0); i < d.pos; i++ {
		c := byte('0')
		if i < int64(d.numDigits()) {
			c = d.sigDigit(int(i))
		}
		dig := int64(c - '0')
		if v < (math.MinInt64+dig)/10 {
			return 0, false
		}
		v = v*10 - dig
	}
	if d.neg {
		return v, true
	}
	if v == math.MinInt64 {
		return 0, false
	}
	return -v, true
}

// Float64 returns the float64 nearest to the value of n. ok is false when n
// is not a valid JSON number or its magnitude is too large for a float64
// (1e400); values too small for a float64 become 0 or a subnormal.
func Float64(n json.Number) (float64, bool) {
	if i, ok := plainInt64(string(n)); ok && i > -1<<53 && i < 1<<53 {
		return float64(i), true
	}
	if !ValidNumber(string(n)) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// IntNumber returns i as a JSON number, in plain decimal digits.
func IntNumber(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// FloatNumber returns f as a JSON number: the shortest decimal that reads
// back as f, written without an exponent when 1e-7 <= |f| < 1e21 and
// without a fraction when f is integral (3, not 3.0); outside that range as
// d[.ddd]e±n (1e21, 1.5e-8). -0 is written 0. This is also the canonical
// spelling of that value (see Canonical). NaN and ±Inf have no JSON form:
// they give "NaN", "+Inf" and "-Inf", which Marshal rejects, so callers
// check math.IsNaN and math.IsInf first.
func FloatNumber(f float64) json.Number {
	var buf [40]byte
	return json.Number(appendFloat(buf[:0], f, 64))
}

// appendFloat appends the FloatNumber text of f, taking the shortest digits
// that read back as f at the given bit size (32 or 64).
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	case f == 0:
		return append(dst, '0')
	}
	// Shortest digits in scientific form, d.ddde±xx, then respelled.
	var buf [32]byte
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, bits)
	neg := sci[0] == '-'
	if neg {
		sci = sci[1:]
	}
	e := strings.IndexByte(string(sci), 'e')
	exp, _ := strconv.Atoi(string(sci[e+1:]))
	var digs [24]byte
	digits := append(digs[:0], sci[0])
	if e > 1 {
		digits = append(digits, sci[2:e]...)
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendDigits(dst, digits, int64(exp)+1)
}

// appendDigits writes the value 0.digits × 10^pos (digits significant, no
// leading or trailing zeros, non-empty) in the canonical spelling: plain
// when the scientific exponent pos-1 is in [-7, 21), else d[.ddd]e<exp>.
func appendDigits(dst []byte, digits []byte, pos int64) []byte {
	n := int64(len(digits))
	x := pos - 1
	switch {
	case x < -7 || x >= 21:
		dst = append(dst, digits[0])
		if n > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		return strconv.AppendInt(dst, x, 10)
	case pos >= n:
		dst = append(dst, digits...)
		for i := n; i < pos; i++ {
			dst = append(dst, '0')
		}
		return dst
	case pos > 0:
		dst = append(dst, digits[:pos]...)
		dst = append(dst, '.')
		return append(dst, digits[pos:]...)
	}
	dst = append(dst, '0', '.')
	for i := pos; i < 0; i++ {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

// appendCanonicalNumber appends the canonical spelling of the valid number
// text s (see Canonical).
func appendCanonicalNumber(dst []byte, s string) []byte {
	d, ok := parseDecimal(s)
	if !ok {
		return dst // callers validate first
	}
	if d.isZero() {
		return append(dst, '0')
	}
	if d.neg {
		dst = append(dst, '-')
	}
	if d.bigPos == nil {
		if d.intPart != "0" && d.fracPart == "" && d.first == 0 && d.pos <= 21 && len(d.intPart) == int(d.pos) {
			// Already a plain integer without an exponent: keep the text.
			return append(dst, d.intPart...)
		}
		var buf [64]byte
		digits := buf[:0]
		for i := 0; i < d.numDigits(); i++ {
			digits = append(digits, d.sigDigit(i))
		}
		return appendDigits(dst, digits, d.pos)
	}
	// Exponent too large for int64 arithmetic: always the exponent form.
	dst = append(dst, d.sigDigit(0))
	if d.numDigits() > 1 {
		dst = append(dst, '.')
		for i := 1; i < d.numDigits(); i++ {
			dst = append(dst, d.sigDigit(i))
		}
	}
	dst = append(dst, 'e')
	x := new(big.Int).Sub(d.bigPos, big.NewInt(1))
	return x.Append(dst, 10)
}
