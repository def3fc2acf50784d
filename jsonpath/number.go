package jsonpath

// TEMPORARY naive implementation; replaced by exact number handling.

import (
	"encoding/json"
	"math/big"
	"strconv"
)

// CompareNumbers compares two JSON numbers by value: -1, 0 or +1.
func CompareNumbers(a, b json.Number) int {
	x, _, _ := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, _ := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	if x == nil || y == nil {
		return 0
	}
	return x.Cmp(y)
}

// Float64 returns n as a float64.
func Float64(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// Int64 returns n as an int64 when its value is an integer that fits.
func Int64(n json.Number) (int64, bool) {
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// IntNumber returns i as a JSON number.
func IntNumber(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// FloatNumber returns f as a JSON number.
func FloatNumber(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}
