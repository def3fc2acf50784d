package jsonvalue

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestValidNumber(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true}, {"-0", true}, {"7", true}, {"-7", true}, {"10", true},
		{"0.5", true}, {"-0.50", true}, {"1e5", true}, {"1E5", true}, {"1e+5", true},
		{"1e-5", true}, {"1.5e005", true}, {"12345678901234567890123", true}, {"1e400", true},
		{"", false}, {"-", false}, {"+1", false}, {"01", false}, {"-01", false}, {"00", false},
		{"1.", false}, {".5", false}, {"-.5", false}, {"1.e5", false}, {"1e", false}, {"1e+", false},
		{"1e5.0", false}, {"NaN", false}, {"Infinity", false}, {"-Infinity", false}, {"0x10", false},
		{" 1", false}, {"1 ", false}, {"1_000", false}, {"١", false}, {"--1", false},
	}
	for _, tt := range tests {
		if got := ValidNumber(tt.in); got != tt.want {
			t.Errorf("ValidNumber(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCompareNumbers(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "1", 0},
		{"1", "2", -1},
		{"2", "1", 1},
		{"-1", "1", -1},
		{"1", "1.0", 0},
		{"1", "1e0", 0},
		{"2", "20e-1", 0},
		{"100", "1e2", 0},
		{"100", "1E+2", 0},
		{"0", "-0", 0},
		{"0", "0.000", 0},
		{"0e10", "-0.0e-5", 0},
		{"-0", "1e-400", -1},
		{"-1e-400", "0", -1},
		{"0.1", "0.10", 0},
		{"0.1", "0.10000000000000001", -1},
		{"0.30000000000000004", "0.3", 1},
		{"123.4567890123456789", "123.45678901234567891", -1},
		{"123.4567890123456789", "123.4567890123456789000", 0},
		{"12345678901234567890123", "12345678901234567890124", -1},
		{"12345678901234567890123", "1.2345678901234567890123e22", 0},
		{"9223372036854775807", "9223372036854775808", -1},
		{"-9223372036854775808", "-9223372036854775809", 1},
		{"1e400", "1e401", -1},
		{"1e400", "10e399", 0},
		{"-1e400", "-1e401", 1},
		{"1e-400", "1e-401", 1},
		{"1e400", "99999999999999999999", 1},
		{"1.5", "1.49999999999999999999999", 1},
		{"-1.5", "-1.49999999999999999999999", -1},
		{"0.001", "1e-3", 0},
		{"0.0011", "1e-3", 1},
		{"1e99999999999999999999", "1e99999999999999999998", 1},
		{"1e99999999999999999999", "1e400", 1},
		{"1e-99999999999999999999", "0", 1},
		{"-1e-99999999999999999999", "1e-99999999999999999999", -1},
		{"10e99999999999999999999", "1e100000000000000000000", 0},
		{"5", "5.000000000000000000000000000000000000001", -1},
		{"invalid", "0", -1},
		{"0", "invalid", 1},
		{"", "", 0},
	}
	for _, tt := range tests {
		if got := CompareNumbers(json.Number(tt.a), json.Number(tt.b)); got != tt.want {
			t.Errorf("CompareNumbers(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := CompareNumbers(json.Number(tt.b), json.Number(tt.a)); got != -tt.want {
			t.Errorf("CompareNumbers(%s, %s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestCompareNumbersMatchesFloats(t *testing.T) {
	// For short decimals float64 comparison is exact, so the two must agree.
	values := []string{"0", "-0", "1", "-1", "0.5", "1.25", "-3.75", "1e10", "2.5e-3", "1000000", "0.001", "123.456"}
	for _, a := range values {
		for _, b := range values {
			fa, _ := strconv.ParseFloat(a, 64)
			fb, _ := strconv.ParseFloat(b, 64)
			want := 0
			if fa < fb {
				want = -1
			} else if fa > fb {
				want = 1
			}
			if got := CompareNumbers(json.Number(a), json.Number(b)); got != want {
				t.Errorf("CompareNumbers(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestInt64(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"42", 42, true},
		{"-42", -42, true},
		{"1.0", 1, true},
		{"1.000", 1, true},
		{"1e2", 100, true},
		{"1E+2", 100, true},
		{"2500e-2", 25, true},
		{"0.0e5", 0, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9.223372036854775807e18", math.MaxInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"1e19", 0, false},
		{"1e400", 0, false},
		{"1.5", 0, false},
		{"1e-2", 0, false},
		{"12345678901234567890123", 0, false},
		{"abc", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := Int64(json.Number(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("Int64(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIsInteger(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true}, {"-0", true}, {"3", true}, {"3.0", true}, {"3e2", true}, {"1.5e1", true},
		{"12345678901234567890123", true}, {"1e400", true}, {"1e99999999999999999999", true},
		{"3.5", false}, {"1e-2", false}, {"0.1", false}, {"1.25e1", false},
		{"1e-99999999999999999999", false}, {"x", false}, {"", false},
	}
	for _, tt := range tests {
		if got := IsInteger(json.Number(tt.in)); got != tt.want {
			t.Errorf("IsInteger(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFloat64(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"-1", -1, true},
		{"0.1", 0.1, true},
		{"1.5e3", 1500, true},
		{"12345678901234567890123", 1.2345678901234568e22, true},
		{"9007199254740993", 9007199254740992, true},
		{"1e-400", 0, true},
		{"1e400", 0, false},
		{"-1e400", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"0x10", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := Float64(json.Number(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("Float64(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIntNumber(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"}, {7, "7"}, {-7, "-7"}, {math.MaxInt64, "9223372036854775807"}, {math.MinInt64, "-9223372036854775808"},
	}
	for _, tt := range tests {
		if got := IntNumber(tt.in); string(got) != tt.want {
			t.Errorf("IntNumber(%d) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestFloatNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{3, "3"},
		{-3, "-3"},
		{0.1, "0.1"},
		{math.Nextafter(0.3, 1), "0.30000000000000004"},
		{1.5, "1.5"},
		{100, "100"},
		{123456789, "123456789"},
		{1e20, "100000000000000000000"},
		{1.5e20, "150000000000000000000"},
		{1e21, "1e21"},
		{1.5e21, "1.5e21"},
		{1e-7, "0.0000001"},
		{1.25e-7, "0.000000125"},
		{9.99e-8, "9.99e-8"},
		{1e-8, "1e-8"},
		{-2.5e-10, "-2.5e-10"},
		{math.MaxFloat64, "1.7976931348623157e308"},
		{5e-324, "5e-324"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
	}
	for _, tt := range tests {
		got := FloatNumber(tt.in)
		if string(got) != tt.want {
			t.Errorf("FloatNumber(%v) = %s, want %s", tt.in, got, tt.want)
		}
		if math.IsNaN(tt.in) || math.IsInf(tt.in, 0) {
			continue
		}
		if back, ok := Float64(got); !ok || back != tt.in {
			t.Errorf("Float64(FloatNumber(%v)) = %v, %v; want %v, true", tt.in, back, ok, tt.in)
		}
		if c, err := Canonical(got); err != nil || string(c) != tt.want {
			t.Errorf("Canonical(FloatNumber(%v)) = %s, %v; want %s", tt.in, c, err, tt.want)
		}
	}
}
