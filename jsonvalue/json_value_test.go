package jsonvalue

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"nulls", nil, nil, true},
		{"null and false", nil, false, false},
		{"booleans", true, true, true},
		{"different booleans", true, false, false},
		{"strings", "a", "a", true},
		{"different strings", "a", "b", false},
		{"string and number", "1", json.Number("1"), false},
		{"NFC variants differ", "\u00c5", "A\u030a", false},
		{"same number text", json.Number("1"), json.Number("1"), true},
		{"1 and 1.0", json.Number("1"), json.Number("1.0"), true},
		{"1 and 1e0", json.Number("1"), json.Number("1e0"), true},
		{"0 and -0", json.Number("0"), json.Number("-0"), true},
		{"0.1 and 0.10000000000000001", json.Number("0.1"), json.Number("0.10000000000000001"), false},
		{"big integers", json.Number("12345678901234567890123"), json.Number("12345678901234567890124"), false},
		{"Go int and number", 1, json.Number("1.0"), true},
		{"number and Go int", json.Number("1.0"), int64(1), true},
		{"Go uint64 max", uint64(math.MaxUint64), json.Number("18446744073709551615"), true},
		{"Go float and number", 0.1, json.Number("0.1"), true},
		{"Go float32 and number", float32(0.1), json.Number("0.10"), true},
		{"Go int and Go float", 2, 2.0, true},
		{"Go ints of two types", int8(3), uint16(3), true},
		{"NaN", math.NaN(), math.NaN(), false},
		{"infinity", math.Inf(1), math.Inf(1), false},
		{"number and bool", json.Number("1"), true, false},
		{"empty arrays", []any{}, []any{}, true},
		{"nil array and empty array", []any(nil), []any{}, true},
		{"arrays", []any{1, "a", nil}, []any{json.Number("1.0"), "a", nil}, true},
		{"arrays in another order", []any{1, 2}, []any{2, 1}, false},
		{"arrays of other lengths", []any{1}, []any{1, 1}, false},
		{"array and object", []any{}, map[string]any{}, false},
		{"objects", map[string]any{"a": 1, "b": []any{true}}, map[string]any{"b": []any{true}, "a": json.Number("1")}, true},
		{"nil object and empty object", map[string]any(nil), map[string]any{}, true},
		{"objects with other keys", map[string]any{"a": 1}, map[string]any{"b": 1}, false},
		{"objects with other values", map[string]any{"a": 1}, map[string]any{"a": 2}, false},
		{"object with a null member and empty object", map[string]any{"a": nil}, map[string]any{}, false},
		{"objects of other sizes", map[string]any{"a": 1}, map[string]any{"a": 1, "b": 1}, false},
		{"outside the model", []string{"a"}, []string{"a"}, false},
		{"invalid number texts", json.Number("x"), json.Number("y"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestEqualCyclic(t *testing.T) {
	a := map[string]any{}
	a["self"] = a
	if Equal(a, a) {
		t.Errorf("Equal(cyclic, cyclic) = true, want false (too deep)")
	}
}

func TestClone(t *testing.T) {
	orig := mustDecode(t, `{"a":[1,{"b":"c"}],"d":null,"e":{}}`)
	c := Clone(orig)
	if !sameValue(c, orig) {
		t.Fatalf("Clone(%v) = %v, want an equal value", orig, c)
	}
	// Changing the copy leaves the original alone.
	cm := c.(map[string]any)
	cm["d"] = true
	cm["a"].([]any)[1].(map[string]any)["b"] = "changed"
	cm["e"].(map[string]any)["new"] = 1
	want := mustDecode(t, `{"a":[1,{"b":"c"}],"d":null,"e":{}}`)
	if !sameValue(orig, want) {
		t.Errorf("original after changing the clone = %v, want %v", orig, want)
	}
	for _, v := range []any{nil, "s", json.Number("1"), true, []any(nil), map[string]any(nil)} {
		if got := Clone(v); !sameValue(got, v) {
			t.Errorf("Clone(%#v) = %#v, want %#v", v, got, v)
		}
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic
	if Clone(cyclic) == nil {
		t.Errorf("Clone(cyclic) = nil, want a value")
	}
}

type point struct {
	X     int     `json:"x"`
	Y     float64 `json:"y"`
	Label string  `json:"label,omitempty"`
}

type celsius float64

func (c celsius) MarshalJSON() ([]byte, error) {
	return []byte(`{"celsius":` + string(FloatNumber(float64(c))) + `}`), nil
}

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot encode") }

type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return []byte(`{"a":1,"a":2}`), nil }

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string // Marshal of the result
	}{
		{"null", nil, `null`},
		{"bool", true, `true`},
		{"string", "s", `"s"`},
		{"number", json.Number("1.50"), `1.50`},
		{"int", 42, `42`},
		{"int64 min", int64(math.MinInt64), `-9223372036854775808`},
		{"uint64 max", uint64(math.MaxUint64), `18446744073709551615`},
		{"float64", 0.1, `0.1`},
		{"integral float", 3.0, `3`},
		{"large float", 1e21, `1e21`},
		{"float32", float32(0.1), `0.1`},
		{"nested Go numbers", map[string]any{"a": []any{1, 2.5, uint8(3)}}, `{"a":[1,2.5,3]}`},
		{"typed slice", []string{"a", "b"}, `["a","b"]`},
		{"typed map", map[string]string{"b": "2", "a": "1"}, `{"a":"1","b":"2"}`},
		{"map of ints", map[string]int{"n": 7}, `{"n":7}`},
		{"struct", point{X: 1, Y: 2.5}, `{"x":1,"y":2.5}`},
		{"pointer to struct", &point{X: -1, Y: 0.1, Label: "p"}, `{"label":"p","x":-1,"y":0.1}`},
		{"nil pointer", (*point)(nil), `null`},
		{"struct inside the model", map[string]any{"p": point{X: 3}}, `{"p":{"x":3,"y":0}}`},
		{"json.Marshaler", []any{celsius(21.5)}, `[{"celsius":21.5}]`},
		{"time", map[string]any{"t": time.Date(2024, 6, 11, 12, 0, 0, 0, time.UTC)}, `{"t":"2024-06-11T12:00:00Z"}`},
		{"raw message", json.RawMessage(`{"z": [1.0]}`), `{"z":[1.0]}`},
		{"typed nil slice", []string(nil), `null`},
		{"invalid UTF-8 string", []any{"a\xffb"}, "[\"a\uFFFDb\"]"},
		{"invalid UTF-8 key", map[string]any{"k\xff": 1}, "{\"k\uFFFD\":1}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%#v) error: %v", tt.in, err)
			}
			if !inModel(got) {
				t.Errorf("Normalize(%#v) = %#v, which is outside the value model", tt.in, got)
			}
			out, err := Marshal(got)
			if err != nil || string(out) != tt.want {
				t.Errorf("Marshal(Normalize(%#v)) = %s, %v; want %s", tt.in, out, err, tt.want)
			}
		})
	}
}

// inModel reports whether v uses only the value model's types.
func inModel(v any) bool {
	switch v := v.(type) {
	case nil, bool, string, json.Number:
		return true
	case []any:
		for _, x := range v {
			if !inModel(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, x := range v {
			if !inModel(x) {
				return false
			}
		}
		return true
	}
	return false
}

func TestNormalizeKeepsModelValues(t *testing.T) {
	arr := []any{json.Number("1"), "x", []any{true, nil}}
	obj := map[string]any{"a": arr, "b": map[string]any{"c": json.Number("2.0")}}
	got, err := Normalize(obj)
	if err != nil {
		t.Fatal(err)
	}
	// The very same map comes back: writing through it shows in obj.
	gm, ok := got.(map[string]any)
	if !ok {
		t.Fatalf("Normalize(object) = %T, want map[string]any", got)
	}
	gm["probe"] = true
	if _, same := obj["probe"]; !same {
		t.Errorf("Normalize(model value) returned a copy, want the same map")
	}
	delete(obj, "probe")
	ga, _ := Normalize(arr)
	ga.([]any)[0] = "probe"
	if arr[0] != "probe" {
		t.Errorf("Normalize(model array) returned a copy, want the same slice")
	}
}

func TestNormalizeCopiesOnChange(t *testing.T) {
	inner := []any{json.Number("1"), 2}
	obj := map[string]any{"keep": "x", "inner": inner}
	got, err := Normalize(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, isInt := inner[1].(int); !isInt {
		t.Errorf("Normalize changed its input: inner[1] = %#v, want int 2", inner[1])
	}
	want := map[string]any{"keep": "x", "inner": []any{json.Number("1"), json.Number("2")}}
	if !sameValue(got, want) {
		t.Errorf("Normalize(%#v) = %#v, want %#v", obj, got, want)
	}
}

func TestNormalizeErrors(t *testing.T) {
	deep := any(json.Number("1"))
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	deepStruct := any(point{})
	for range MaxDepth {
		deepStruct = []any{deepStruct}
	}
	tests := []struct {
		name string
		in   any
		path string
	}{
		{"NaN", map[string]any{"score": math.NaN()}, "$.score"},
		{"infinity in array", []any{1, []any{math.Inf(-1)}}, "$[1][0]"},
		{"float32 infinity", map[string]any{"a b": float32(math.Inf(1))}, "$['a b']"},
		{"invalid number text", map[string]any{"n": json.Number("01")}, "$.n"},
		{"channel", map[string]any{"c": make(chan int)}, "$.c"},
		{"func", []any{func() {}}, "$[0]"},
		{"NaN in struct", map[string]any{"p": point{Y: math.NaN()}}, "$.p"},
		{"failing Marshaler", []any{failing{}}, "$[0]"},
		{"Marshaler with duplicate keys", map[string]any{"x": badJSON{}}, "$.x"},
		{"NFC-equal keys", map[string]any{"o": map[string]any{"\u00c5": 1, "A\u030a": 2}}, "$.o"},
		{"Kelvin sign and K", map[string]any{"K": 1, "\u212a": 2}, "$"},
		{"keys equal after UTF-8 repair", map[string]any{"a\xff": 1, "a\xfe": 2}, "$"},
		{"too deep", deep, "$" + strings.Repeat("[0]", MaxDepth)},
		{"objects too deep", deepObject(MaxDepth + 1), "$" + strings.Repeat(".k", MaxDepth)},
		{"struct too deep", deepStruct, "$" + strings.Repeat("[0]", MaxDepth)},
		{"path inside a struct", map[string]any{"m": map[string]any{"k": badJSONList{}}}, "$.m.k[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("Normalize(%s) = %v, %v; want a *JSONError", tt.name, got, err)
			}
			if je.Offset != -1 || je.Path != tt.path {
				t.Errorf("Normalize(%s) error offset %d, path %s (%v); want -1, %s", tt.name, je.Offset, je.Path, err, tt.path)
			}
		})
	}
	_, err := Normalize(map[string]any{"score": math.NaN()})
	if got, want := err.Error(), "invalid JSON value at $.score: non-finite number NaN"; got != want {
		t.Errorf("Normalize(NaN) error = %q, want %q", got, want)
	}
}

func deepObject(n int) any {
	v := any(nil)
	for range n {
		v = map[string]any{"k": v}
	}
	return v
}

type badJSONList struct{}

func (badJSONList) MarshalJSON() ([]byte, error) { return []byte(`[1, {"a":1, "a":2}]`), nil }

func TestTypeName(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, "null"}, {true, "boolean"}, {"s", "string"}, {json.Number("1"), "number"},
		{3, "number"}, {uint8(3), "number"}, {2.5, "number"}, {float32(1), "number"},
		{[]any{}, "array"}, {map[string]any{}, "object"}, {[]string{}, "[]string"},
	}
	for _, tt := range tests {
		if got := TypeName(tt.in); got != tt.want {
			t.Errorf("TypeName(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
