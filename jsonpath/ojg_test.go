package jsonpath

import (
	"encoding/json"
	"testing"

	"github.com/ohler55/ojg/jp"
)

// The tests in this file record what ojg's jp does where this package
// keeps its own code instead (docs/jsonpath.md, "Where we do not use ojg").
// Each fails when ojg stops doing it: then the reason written there no
// longer holds, and the place is worth another look.

// TestOjgScripts: jp's filter scripts compare a json.Number as a string,
// apply a filter on an object to its members, and panic on comparing lists.
func TestOjgScripts(t *testing.T) {
	get := func(path string, doc any) (got []any, panicked bool) {
		defer func() { panicked = recover() != nil }()
		return jp.MustParseString(path).Get(doc), false
	}
	if got, _ := get("$[?(@ > 5)]", []any{json.Number("10")}); len(got) != 0 {
		t.Errorf("jp $[?(@ > 5)] on [10] = %v, want []: see docs/jsonpath.md", got)
	}
	if got, _ := get("$[?(@ == '10')]", []any{json.Number("10")}); len(got) != 1 {
		t.Errorf("jp $[?(@ == '10')] on [10] = %v, want [10]: see docs/jsonpath.md", got)
	}
	if got, _ := get("$.o[?(@.p > 1)]", map[string]any{"o": map[string]any{"p": int64(3)}}); len(got) != 0 {
		t.Errorf(`jp $.o[?(@.p > 1)] on {"o":{"p":3}} = %v, want []: see docs/jsonpath.md`, got)
	}
	if _, panicked := get("$[?(@.a == @.a)]", []any{map[string]any{"a": []any{}}}); !panicked {
		t.Errorf(`jp $[?(@.a == @.a)] on [{"a":[]}] did not panic: see docs/jsonpath.md`)
	}
}

// TestOjgSliceNegativeStep: jp.Slice starts a slice with a negative step at
// the first element when its start is before it; Python selects nothing.
func TestOjgSliceNegativeStep(t *testing.T) {
	if got := jp.MustParseString("$[-10::-1]").Get([]any{"a", "b"}); len(got) != 1 {
		t.Errorf(`jp $[-10::-1] on ["a","b"] = %v, want ["a"]: see docs/jsonpath.md`, got)
	}
	got, err := mustCompile(t, "$[-10::-1]").Get([]any{"a", "b"}, nil)
	if err != nil || len(got.([]any)) != 0 {
		t.Errorf(`Get($[-10::-1]) on ["a","b"] = %v, %v; want []`, got, err)
	}
}

// TestOjgParse: jp's parser refuses names AWS accepts and accepts paths AWS
// refuses, which is why paths are compiled here and handed to jp built.
func TestOjgParse(t *testing.T) {
	for _, src := range []string{"$.detail-type", "$.a.[0]"} { // AWS accepts these
		if _, err := jp.ParseString(src); err == nil {
			t.Errorf("jp.ParseString(%s) accepted it: see docs/jsonpath.md", src)
		}
		mustCompile(t, src)
	}
	for _, src := range []string{"a.b", "$..", "$...a"} { // AWS refuses these
		if _, err := jp.ParseString(src); err != nil {
			t.Errorf("jp.ParseString(%s): %v, want it accepted: see docs/jsonpath.md", src, err)
		}
		if _, err := Compile(src); err == nil {
			t.Errorf("Compile(%s) accepted it", src)
		}
	}
}

// TestOjgSet: jp's Set changes the document it is given, and setting a
// member of a scalar silently does nothing.
func TestOjgSet(t *testing.T) {
	inner := map[string]any{"b": "old"}
	if err := jp.MustParseString("$.a.b").Set(map[string]any{"a": inner}, "new"); err != nil || inner["b"] != "new" {
		t.Errorf("jp Set($.a.b) = %v and left the document %v, want it changed in place: see docs/jsonpath.md", err, inner)
	}
	if err := jp.MustParseString("$.x").Set("scalar", "new"); err != nil {
		t.Errorf("jp Set($.x) on a string: %v, want no error: see docs/jsonpath.md", err)
	}
}

// BenchmarkOjgGetPlain1KiB is BenchmarkPathGetPlain1KiB through jp's Get,
// which is why plain paths keep their compiled walk.
func BenchmarkOjgGetPlain1KiB(b *testing.B) {
	doc := benchDoc(b)
	x := jp.MustParseString("$.a.b[2].c")
	b.ReportAllocs()
	for b.Loop() {
		if got := x.Get(doc); len(got) != 1 {
			b.Fatalf("Get = %v", got)
		}
	}
}
