package engine

import (
	"reflect"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// TestPlainCacheExpand checks that plainCache.expand gives what
// jsonvalue.Expand gives, whether or not it remembers parts of the
// document from an earlier call: documents that share a part without a
// packed array, and documents that put a packed array next to (or inside a
// copy of) a part it remembers.
func TestPlainCacheExpand(t *testing.T) {
	decode := func(text string) any {
		t.Helper()
		v, err := jsonvalue.DecodePacked([]byte(text), 3)
		if err != nil {
			t.Fatalf("DecodePacked(%s): %v", text, err)
		}
		return v
	}
	shared := decode(`{"a":{"b":1,"c":[1,2],"d":{"e":"f","g":null,"h":true}},"i":["x","y"],"j":{"k":1,"l":2,"m":3,"n":4,"o":5,"p":6,"q":7}}`)
	packed := decode(`{"list":[1,2,3,{"z":[4,5,6]}]}`)
	if !jsonvalue.HasPacked(packed) {
		t.Fatalf("the test's packed document holds no packed array")
	}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	var c plainCache
	for i, doc := range []any{
		shared,
		with("shared", shared, "n", jsonvalue.IntNumber(1)),
		with("shared", shared, "n", jsonvalue.IntNumber(2)),
		with("shared", shared, "packed", packed),
		with("inner", with("shared", shared, "packed", packed)),
		[]any{shared, packed},
		[]any{shared, shared},
		packed,
		with("shared", shared),
		nil,
		"text",
		map[string]any{},
		[]any{},
	} {
		got, err := c.expand(doc)
		if err != nil {
			t.Fatalf("%d: expand: %v", i, err)
		}
		want, err := jsonvalue.Expand(doc)
		if err != nil {
			t.Fatalf("%d: jsonvalue.Expand: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d: expand = %v, want %v", i, got, want)
		}
		if jsonvalue.HasPacked(got) {
			t.Errorf("%d: expand left a packed array in %v", i, got)
		}
	}
	if len(c.seen) == 0 {
		t.Errorf("the cache remembers nothing of the documents")
	}
}

// TestPlainCacheStartsOver checks that the cache forgets what it
// remembered once it holds plainCacheMaxEntries containers, and still
// answers rightly after.
func TestPlainCacheStartsOver(t *testing.T) {
	var c plainCache
	for i := range plainCacheMaxEntries + 10 {
		doc := []any{jsonvalue.IntNumber(int64(i)), "a", "b", "c", "d", "e", "f", "g"}
		if _, err := c.expand(doc); err != nil {
			t.Fatalf("expand: %v", err)
		}
		if len(c.seen) > plainCacheMaxEntries {
			t.Fatalf("after %d documents the cache holds %d, want at most %d", i+1, len(c.seen), plainCacheMaxEntries)
		}
	}
	if len(c.seen) != 10 {
		t.Errorf("the cache holds %d containers, want 10 (it started over once)", len(c.seen))
	}
}
