package jsonpath

import (
	"encoding/json"
	"math/big"
	"strings"
)

// exactDecimal is a finite decimal number read from a number's text without any
// rounding: (-1 if neg) × digits × 10^exp.
type exactDecimal struct {
	neg bool
	// digits are the significant digits, without leading or trailing zeros;
	// "" is zero.
	digits string
	exp    int
}

// maxDecimalExp bounds the exponent of numbers the arithmetic extensions
// accept, so that no result is absurdly long.
const maxDecimalExp = 10000

// parseExactDecimal reads a number in JSON's grammar. It fails on other text and
// on exponents too large to represent.
func parseExactDecimal(s string) (exactDecimal, bool) {
	var d exactDecimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" {
		return d, false
	}
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fracStart:i]
		if frac == "" {
			return d, false
		}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		expStart := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if exp < 1e9 {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if i == expStart {
			return d, false
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	if trimmed == "" {
		return exactDecimal{}, true
	}
	if exp >= 1e9 || exp <= -1e9 {
		return d, false
	}
	d.digits = trimmed
	d.exp = exp - len(frac) + len(digits) - len(trimmed)
	return d, true
}

// arithmeticOK reports whether d is small enough for exact arithmetic.
func (d exactDecimal) arithmeticOK() bool {
	return d.exp >= -maxDecimalExp && d.exp <= maxDecimalExp && len(d.digits) <= maxDecimalExp
}

// String writes d without exponent, like 1200, 0.05 or -3.25.
func (d exactDecimal) String() string {
	if d.digits == "" {
		return "0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	switch point := len(d.digits) + d.exp; {
	case d.exp >= 0:
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", d.exp))
	case point > 0:
		b.WriteString(d.digits[:point])
		b.WriteByte('.')
		b.WriteString(d.digits[point:])
	default:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(d.digits)
	}
	return b.String()
}

// mantissa returns the signed digits of d as an integer.
func (d exactDecimal) mantissa() *big.Int {
	m := new(big.Int)
	if d.digits != "" {
		m.SetString(d.digits, 10)
	}
	if d.neg {
		m.Neg(m)
	}
	return m
}

// decimalFromBig returns m × 10^exp.
func decimalFromBig(m *big.Int, exp int) exactDecimal {
	if m.Sign() == 0 {
		return exactDecimal{}
	}
	neg := m.Sign() < 0
	s := new(big.Int).Abs(m).String()
	trimmed := strings.TrimRight(s, "0")
	return exactDecimal{neg: neg, digits: trimmed, exp: exp + len(s) - len(trimmed)}
}

var bigTen = big.NewInt(10)

// scaled returns the mantissa of d scaled to exponent exp (exp <= d.exp).
func (d exactDecimal) scaled(exp int) *big.Int {
	m := d.mantissa()
	if d.exp > exp {
		m.Mul(m, new(big.Int).Exp(bigTen, big.NewInt(int64(d.exp-exp)), nil))
	}
	return m
}

func decimalSub(a, b exactDecimal) exactDecimal {
	exp := min(a.exp, b.exp)
	return decimalFromBig(new(big.Int).Sub(a.scaled(exp), b.scaled(exp)), exp)
}

func decimalMul(a, b exactDecimal) exactDecimal {
	return decimalFromBig(new(big.Int).Mul(a.mantissa(), b.mantissa()), a.exp+b.exp)
}

// toInt converts a number to an integer, exactly. With round it rounds as
// Java's Math.round does (half up: 2.5 → 3, -2.5 → -2, -0.5 → 0); without,
// it drops the fraction (-2.7 → -2). It fails when the integer does not fit
// in 18 digits.
func toInt(n json.Number, round bool) (int64, bool) {
	d, ok := parseExactDecimal(string(n))
	if !ok {
		return 0, false
	}
	if d.digits == "" {
		return 0, true
	}
	intLen := len(d.digits) + d.exp // digits before the exactDecimal point
	if intLen > 18 {
		return 0, false
	}
	var ip int64
	frac := ""
	switch {
	case intLen <= 0:
		frac = d.digits
	case d.exp >= 0:
		for _, c := range d.digits {
			ip = ip*10 + int64(c-'0')
		}
		for range d.exp {
			ip *= 10
		}
	default:
		for _, c := range d.digits[:intLen] {
			ip = ip*10 + int64(c-'0')
		}
		frac = d.digits[intLen:]
	}
	if round && frac != "" {
		// Compare the fraction with one half; digits have no trailing zeros.
		cmp := -1
		if intLen >= 0 {
			switch {
			case frac[0] > '5' || frac[0] == '5' && len(frac) > 1:
				cmp = 1
			case frac == "5":
				cmp = 0
			}
		}
		if cmp > 0 || cmp == 0 && !d.neg {
			ip++
		}
	}
	if d.neg {
		ip = -ip
	}
	return ip, true
}
