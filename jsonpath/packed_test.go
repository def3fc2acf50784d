package jsonpath

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// packedDoc's arrays are packed by jsonvalue.DecodePacked at bound 2.
const packedDoc = `{"items":[{"id":1,"tags":["a","b"]},{"id":2,"tags":["c"]},{"id":3,"tags":[]}],"n":[1,2,3],"one":[7],"s":"x"}`

// TestPackedAgreesWithPlain evaluates each path on the document decoded
// plainly and with its arrays packed: the values, errors and locations are
// the same.
func TestPackedAgreesWithPlain(t *testing.T) {
	plain, err := jsonvalue.Decode([]byte(packedDoc))
	if err != nil {
		t.Fatal(err)
	}
	packed, err := jsonvalue.DecodePacked([]byte(packedDoc), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonvalue.HasPacked(packed) {
		t.Fatal("nothing packed")
	}
	env := testEnv{ctx: packed, vars: map[string]any{"v": packed}}
	plainEnv := testEnv{ctx: plain, vars: map[string]any{"v": plain}}
	for _, src := range []string{
		"$.items", "$.items[0]", "$.items[1].id", "$.items[-1].id", "$.items[0].tags[1]",
		"$.items[3]", "$.items[-4]", "$.items.id", "$.s[0]", "$.n[0].x", "$.one[0]",
		"$.items[*].id", "$.items[0:2]", "$.items[::-1].id", "$..id", "$..tags[0]",
		"$.items[?(@.id > 1)].id", "$.items[?(@.tags[0] == 'c')]", "$.n[0,2]",
		"$$.items[2].id", "$v.items[1].tags",
		"States.ArrayLength($.items)", "States.ArrayGetItem($.n, 1)", "States.ArrayContains($.n, 3)",
		"States.JsonToString($.items[1])", "States.Array($.one, $.n)", "States.ArrayUnique($.n)",
		"States.ArrayPartition($.n, 2)", "States.Hash(States.JsonToString($.items), 'SHA-256')",
	} {
		e, err := CompileExpr(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, gerr := e.Eval(packed, env)
		want, werr := e.Eval(plain, plainEnv)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("%s: error %v, want %v", src, gerr, werr)
			continue
		}
		if !jsonvalue.Equal(got, want) {
			t.Errorf("%s: %v, want %v", src, got, want)
		}
		if p, err := Compile(src); err == nil && !p.IsContext() && p.Variable() == "" {
			gl, gerr := p.Locate(packed)
			wl, werr := p.Locate(plain)
			if (gerr == nil) != (werr == nil) || len(gl) != len(wl) {
				t.Errorf("%s: Locate %v (%v), want %v (%v)", src, gl, gerr, wl, werr)
				continue
			}
			for i := range gl {
				if gl[i].String() != wl[i].String() {
					t.Errorf("%s: location %d is %s, want %s", src, i, gl[i], wl[i])
				}
			}
		}
	}
}

func TestPackedSet(t *testing.T) {
	plain, _ := jsonvalue.Decode([]byte(packedDoc))
	packed, _ := jsonvalue.DecodePacked([]byte(packedDoc), 2)
	for _, src := range []string{"$.items[1].id", "$.n[0]", "$.extra", "$.n[5]", "$.s.x"} {
		p, err := CompileReference(src)
		if err != nil {
			t.Fatal(err)
		}
		got, gerr := p.Set(packed, "new")
		want, werr := p.Set(plain, "new")
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("%s: error %v, want %v", src, gerr, werr)
			continue
		}
		if !jsonvalue.Equal(got, want) {
			t.Errorf("Set %s: %v, want %v", src, got, want)
		}
	}
	// The document set into is not changed.
	again, _ := jsonvalue.DecodePacked([]byte(packedDoc), 2)
	if !jsonvalue.Equal(packed, again) {
		t.Error("Set changed the packed document")
	}
}
