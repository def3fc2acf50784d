package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// packedDocs are documents whose arrays DecodePacked packs at small bounds.
var packedDocs = []string{
	`[]`,
	`[1]`,
	`[1,2,3]`,
	`{"items":[{"id":1,"title":"a"},{"id":2,"title":"b"},{"id":3,"title":"c"}]}`,
	`[[1,[2,[3,4]]],{"a":[5,6,7]},"x",null,true,false]`,
	`{"a":[1.0, 2e0, 0.10, -0],"b":["e\u0301","é"]}`,
	`[{"z":1,"a":2},{"é":"\u00e9"},"\ud83d\ude00",1e400]`,
	` [ 1 , [ ] , { } ] `,
}

func TestDecodePackedAgreesWithDecode(t *testing.T) {
	for _, doc := range packedDocs {
		want, err := Decode([]byte(doc))
		if err != nil {
			t.Fatalf("Decode(%s): %v", doc, err)
		}
		for _, minItems := range []int{1, 2, 3, PackFrom} {
			got, err := DecodePacked([]byte(doc), minItems)
			if err != nil {
				t.Fatalf("DecodePacked(%s, %d): %v", doc, minItems, err)
			}
			name := fmt.Sprintf("%s/%d", doc, minItems)
			if !Equal(got, want) || !Equal(want, got) {
				t.Errorf("%s: not Equal to Decode's value", name)
			}
			for _, f := range []struct {
				what string
				fn   func(any) ([]byte, error)
			}{
				{"Marshal", Marshal},
				{"Canonical", Canonical},
				{"MarshalIndent", func(v any) ([]byte, error) { return MarshalIndent(v, "  ") }},
				{"encoding/json", json.Marshal},
			} {
				a, err1 := f.fn(got)
				b, err2 := f.fn(want)
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Errorf("%s: %s gives %s (%v), want %s (%v)", name, f.what, a, err1, b, err2)
				}
			}
			if Size(got) != Size(want) {
				t.Errorf("%s: Size %d, want %d", name, Size(got), Size(want))
			}
			if TypeName(got) != TypeName(want) {
				t.Errorf("%s: TypeName %s, want %s", name, TypeName(got), TypeName(want))
			}
			h1, _ := CanonicalHash(got)
			h2, _ := CanonicalHash(want)
			if h1 != h2 {
				t.Errorf("%s: CanonicalHash differs", name)
			}
			exp, err := Expand(got)
			if err != nil || HasPacked(exp) || !Equal(exp, want) {
				t.Errorf("%s: Expand gives %v (%v), packed %v", name, exp, err, HasPacked(exp))
			}
			if n, err := Normalize(got); err != nil || !Equal(n, want) {
				t.Errorf("%s: Normalize: %v", name, err)
			}
		}
	}
}

func TestDecodePackedPacks(t *testing.T) {
	v, err := DecodePacked([]byte(`{"small":[1,2],"big":[{"id":1},{"id":2},{"id":3}],"deep":[[1,2,3]]}`), 3)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if _, ok := m["small"].([]any); !ok {
		t.Errorf("small: %T, want []any (2 elements, under the bound)", m["small"])
	}
	p, ok := m["big"].(*Packed)
	if !ok {
		t.Fatalf("big: %T, want *Packed", m["big"])
	}
	if p.Len() != 3 || string(p.Raw(1)) != `{"id":2}` {
		t.Errorf("big: Len %d, Raw(1) %s", p.Len(), p.Raw(1))
	}
	e, err := p.At(2)
	if err != nil || !Equal(e, map[string]any{"id": json.Number("3")}) {
		t.Errorf("At(2) = %v, %v", e, err)
	}
	if _, err := p.At(3); err == nil {
		t.Error("At(3) of 3 elements: no error")
	}
	if _, err := p.At(-1); err == nil {
		t.Error("At(-1): no error")
	}
	// The outer array has one element, under the bound; its element of
	// three is packed.
	if d, ok := m["deep"].([]any); !ok {
		t.Errorf("deep: %T, want []any", m["deep"])
	} else if _, ok := d[0].(*Packed); !ok {
		t.Errorf("deep[0]: %T, want *Packed", d[0])
	}
	if !HasPacked(v) {
		t.Error("HasPacked: false")
	}
	if HasPacked(map[string]any{"a": []any{1}}) {
		t.Error("HasPacked of plain values: true")
	}
}

func TestDecodePackedRefuses(t *testing.T) {
	for _, c := range []struct {
		doc, want string
	}{
		{`[1,2,{"a":1,"a":2}]`, `$[2]`},
		{`[1,2,3,]`, `unexpected`},
		{`[1,2,3`, `end of input`},
		{`[1,2,3,"\ud800"]`, `surrogate`},
		{`{"a":[1,2,3,NaN]}`, `$.a[3]`},
	} {
		_, want := Decode([]byte(c.doc))
		_, err := DecodePacked([]byte(c.doc), 2)
		if err == nil || want == nil || err.Error() != want.Error() || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodePacked(%s) = %v, want Decode's %v (containing %q)", c.doc, err, want, c.want)
		}
	}
	if _, err := DecodePacked([]byte(`[1]`), 0); err == nil || !strings.Contains(err.Error(), "minItems") {
		t.Errorf("minItems 0: %v", err)
	}
}

func TestPackedDepth(t *testing.T) {
	// A packed array whose elements nest MaxDepth-1 levels is MaxDepth
	// deep: fine where it is, too deep one level further down.
	inner := strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1)
	doc := "[" + inner + "," + inner + "]"
	v, err := DecodePacked([]byte(doc), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Marshal(v); err != nil {
		t.Errorf("Marshal at its own depth: %v", err)
	}
	if _, err := Marshal([]any{v}); err == nil {
		t.Error("Marshal one level deeper than MaxDepth: no error")
	}
	if Size([]any{v}) != -1 {
		t.Error("Size one level deeper than MaxDepth: not -1")
	}
	if _, err := Normalize([]any{v}); err == nil {
		t.Error("Normalize one level deeper than MaxDepth: no error")
	}
}

func TestPackedCombine(t *testing.T) {
	a, _ := DecodePacked([]byte(`[1,2]`), 1)
	b, _ := DecodePacked([]byte(`[3]`), 1)
	got := Combine(a, b)
	if !Equal(got, []any{json.Number("1"), json.Number("2"), json.Number("3")}) {
		t.Errorf("Combine(packed, packed) = %v", got)
	}
	got = Combine([]any{json.Number("0")}, a)
	if !Equal(got, []any{json.Number("0"), json.Number("1"), json.Number("2")}) {
		t.Errorf("Combine([]any, packed) = %v", got)
	}
	if got := Combine(a, "x"); got != "x" {
		t.Errorf("Combine(packed, scalar) = %v", got)
	}
}

func TestPackedCompact(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	const n = 10000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"title":"%s"}`, i, strings.Repeat("t", 46))
	}
	b.WriteString(`]}`)
	v, err := DecodePacked([]byte(b.String()), PackFrom)
	if err != nil {
		t.Fatal(err)
	}
	p := v.(map[string]any)["items"].(*Packed)
	// What it holds: the text, the offsets and spare capacity (at most an
	// eighth of each).
	held := cap(p.text) + 4*cap(p.ends)
	if limit := b.Len() * 5 / 4; held > limit {
		t.Errorf("a packed array of %d bytes of JSON holds %d bytes, more than %d", b.Len(), held, limit)
	}
	if !p.canon {
		t.Error("plain ASCII objects with sorted keys: not canonical")
	}
}

func ExampleDecodePacked() {
	v, _ := DecodePacked([]byte(`{"items":[{"id":1},{"id":2},{"id":3}]}`), 3)
	items := v.(map[string]any)["items"].(*Packed)
	second, _ := items.At(1)
	out, _ := Marshal(v)
	fmt.Println(items.Len(), second, string(out))
	// Output: 3 map[id:2] {"items":[{"id":1},{"id":2},{"id":3}]}
}

func FuzzDecodePacked(f *testing.F) {
	for _, d := range packedDocs {
		f.Add([]byte(d), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, minItems uint8) {
		if minItems == 0 {
			minItems = 1
		}
		want, werr := Decode(data)
		got, err := DecodePacked(data, int(minItems))
		if (err == nil) != (werr == nil) {
			t.Fatalf("DecodePacked error %v, Decode error %v", err, werr)
		}
		if err != nil {
			if err.Error() != werr.Error() {
				t.Fatalf("DecodePacked error %v, Decode error %v", err, werr)
			}
			return
		}
		if !Equal(got, want) {
			t.Fatal("not Equal to Decode's value")
		}
		a, err1 := Marshal(got)
		b, err2 := Marshal(want)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(a, b) {
			t.Fatalf("Marshal %s (%v), want %s (%v)", a, err1, b, err2)
		}
		c1, err1 := Canonical(got)
		c2, err2 := Canonical(want)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(c1, c2) {
			t.Fatalf("Canonical %s (%v), want %s (%v)", c1, err1, c2, err2)
		}
		if Size(got) != Size(want) {
			t.Fatalf("Size %d, want %d", Size(got), Size(want))
		}
	})
}
