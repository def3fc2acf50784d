package governance

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
)

func TestInvalidJSON(t *testing.T) {
	deep := func(n int) any {
		var v any = "leaf"
		for range n {
			v = []any{v}
		}
		return v
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name  string
		doc   any
		cause string // "" when valid
	}{
		{"decoded", decode(t, `{"a": [1, 2.5, "x", true, null, {"b": 1e400}]}`), ""},
		{"nil", nil, ""},
		{"NaN", map[string]any{"a": []any{json.Number("1"), math.NaN()}}, "$.a[1] is NaN, which is not a JSON value"},
		{"+Inf", map[string]any{"x": math.Inf(1)}, "$.x is +Inf, which is not a JSON value"},
		{"-Inf float32", map[string]any{"x": float32(math.Inf(-1))}, "$.x is -Inf, which is not a JSON value"},
		{"finite float", map[string]any{"x": 1.5}, "$.x is a Go float64, which is not a JSON value (numbers are json.Number)"},
		{"int", map[string]any{"n": 3}, "$.n is a Go int, which is not a JSON value"},
		{"time", map[string]any{"when": time.Time{}}, "$.when is a Go time.Time, which is not a JSON value"},
		{"string slice", []any{[]string{"a"}}, "$[0] is a Go []string, which is not a JSON value"},
		{"bad number text", map[string]any{"n": json.Number("0x10")}, `$.n is the number text "0x10", which is not a JSON number`},
		{"invalid UTF-8", map[string]any{"s": "a\xffb"}, "$.s is a string that is not valid UTF-8"},
		{"invalid UTF-8 key", map[string]any{"k\xff": "v"}, "$ has a key that is not valid UTF-8"},
		{"the first path wins", map[string]any{"b": math.NaN(), "a": map[string]any{"z": 1, "y": 2}}, "$.a.y is a Go int, which is not a JSON value"},
		{"64 levels", deep(64), ""},
		{"65 levels", deep(65), "$" + strings.Repeat("[0]", 64) + " nests objects and arrays deeper than 64 levels"},
		{"cyclic", cyclic, "$" + strings.Repeat(".self", 64) + " nests objects and arrays deeper than 64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := InvalidJSON(tt.doc)
			if tt.cause == "" {
				if v != nil {
					t.Errorf("InvalidJSON = %v, want nil", v)
				}
				return
			}
			if v == nil || v.Name != ErrInvalidJSON || v.Cause != tt.cause || v.Detail.Rule != "JSON" || v.Detail.Reason != tt.cause {
				t.Errorf("InvalidJSON = %#v, want %s: %s", v, ErrInvalidJSON, tt.cause)
			}
		})
	}
}

// TestCheckInvalidJSON checks that Check refuses a proposed document that
// holds a value outside the model where it differs from the previous one,
// before anything else.
func TestCheckInvalidJSON(t *testing.T) {
	r := mustCompile(t, `{"Guard": {"Schema": {"type": "object"}, "Transitions": {"ImmutablePaths": ["$.id"]}}, "WritePolicy": {"Deny": ["$.score"]}}`)
	prev := decode(t, `{"id": "a", "score": 1}`)
	tests := []struct {
		name     string
		proposed any
		cause    string
	}{
		{"NaN from a Go agent", map[string]any{"id": "a", "score": math.NaN()}, "$.score is NaN, which is not a JSON value"},
		{"inside an added object", map[string]any{"id": "a", "score": json.Number("1"), "r": map[string]any{"x": math.Inf(1)}}, "$.r.x is +Inf, which is not a JSON value"},
		{"a Go number equal to the old one", map[string]any{"id": "a", "score": 1}, "$.score is a Go int, which is not a JSON value"},
		{"an added key that is not UTF-8", map[string]any{"id": "a", "score": json.Number("1"), "r": map[string]any{"k\xff": "v"}}, "$.r has a key that is not valid UTF-8"},
		{"a new key that is not UTF-8", map[string]any{"id": "a", "score": json.Number("1"), "\xff": "v"}, "$ has a key that is not valid UTF-8"},
		{"before the transition rules", map[string]any{"id": "b", "score": json.Number("1"), "x": 1.5}, "$.x is a Go float64, which is not a JSON value (numbers are json.Number)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := r.Check(prev, tt.proposed, "S")
			if v == nil || v.Name != ErrInvalidJSON || v.Cause != tt.cause {
				t.Errorf("Check = %v, want %s: %s", v, ErrInvalidJSON, tt.cause)
			}
		})
	}
	if v := r.CheckDocument(map[string]any{"id": "a", "score": math.NaN()}); v == nil || v.Name != ErrInvalidJSON {
		t.Errorf("CheckDocument with a NaN = %v, want %s", v, ErrInvalidJSON)
	}
}

// TestStrictJSONIsDecodes shows that the strict-JSON cases of the reference
// guard are jsonvalue.Decode's: it refuses them before governance sees a
// document, and Check works on what it returns.
func TestStrictJSONIsDecodes(t *testing.T) {
	for _, bad := range []string{
		`{"a": 1, "a": 2}`,
		"{\"\u00e9\": 1, \"e\u0301\": 2}", // é composed and decomposed: equal after NFC
		`{"a": NaN}`,
		`{"a": Infinity}`,
		`{"a": -Infinity}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		``,
		`{"a": 1} x`,
	} {
		if _, err := jsonvalue.Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%.40s) = nil error, want it refused", bad)
		}
	}

	r := mustCompile(t, `{"Guard": {"Schema": {"type": "object", "properties": {"d": {"type": "array"}}}, "Transitions": {"ImmutablePaths": ["$.id"]}}, "WritePolicy": {"Allow": ["$.d"]}}`)
	depth64 := `{"id": 1, "d": ` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`
	proposed, err := jsonvalue.Decode([]byte(depth64))
	if err != nil {
		t.Fatalf("Decode of 64 levels: %v", err)
	}
	if v := r.Check(decode(t, `{"id": 1}`), proposed, "S"); v != nil {
		t.Errorf("Check of a 64-level document = %v, want nil", v)
	}
	if v := r.CheckDocument(proposed); v != nil {
		t.Errorf("CheckDocument of a 64-level document = %v, want nil", v)
	}
	// Keys that are equal after NFC but were decoded apart (two different
	// objects) are distinct keys to governance: they are strings as written.
	nfc := decode(t, "{\"\u00e9\": 1}")
	nfd := decode(t, "{\"e\u0301\": 1}")
	if got := writesString(Written(nfc, nfd)); got != "add $['e\u0301'] - → 1\nremove $['\u00e9'] 1 → -\n" {
		t.Errorf("Written(NFC, NFD) = %q", got)
	}
}
