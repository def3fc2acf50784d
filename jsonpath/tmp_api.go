package jsonpath

// TEMPORARY declarations until the strict JSON layer lands.

import (
	"encoding/json"
	"strconv"
)

// SizeExceeds is TEMPORARY.
func SizeExceeds(v any, limit int) bool { b, _ := Marshal(v); return len(b) > limit }

// IsInteger is TEMPORARY.
func IsInteger(n json.Number) bool { _, ok := Int64(n); return ok }

// ValidNumber is TEMPORARY.
func ValidNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

// MarshalIndent is TEMPORARY.
func MarshalIndent(v any, indent string) ([]byte, error) { return Marshal(v) }
