package jsonvalue

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
)

// sharing returns documents built from v as a workflow builds them: each
// a copy of the one before along a path, sharing everything else, so
// that an EncodeCache finds v's objects and arrays again and again.
func sharing(v any) []any {
	a := map[string]any{"doc": v, "n": IntNumber(1)}
	b := map[string]any{"doc": v, "n": IntNumber(2), "r": map[string]any{"ok": true}}
	c := map[string]any{"wrapped": []any{b, v, "x"}, "doc": v}
	return []any{v, a, b, c, []any{v, v}, v}
}

// checkCached writes each of docs with c and without a cache, and fails
// when any result (bytes, sum or error) differs.
func checkCached(t *testing.T, c *EncodeCache, docs ...any) {
	t.Helper()
	for i, v := range docs {
		want, wantErr := Marshal(v)
		got, err := c.Marshal(v)
		if !bytes.Equal(got, want) || !sameError(err, wantErr) {
			t.Fatalf("document %d: cached Marshal = %s, %v; want %s, %v", i, got, err, want, wantErr)
		}
		wantC, wantErr := Canonical(v)
		gotC, err := c.Canonical(v)
		if !bytes.Equal(gotC, wantC) || !sameError(err, wantErr) {
			t.Fatalf("document %d: cached Canonical = %s, %v; want %s, %v", i, gotC, err, wantC, wantErr)
		}
		sum, err := c.CanonicalSum(v)
		if wantErr != nil {
			if !sameError(err, wantErr) {
				t.Fatalf("document %d: CanonicalSum error %v, want %v", i, err, wantErr)
			}
			continue
		}
		h, _ := CanonicalHash(v)
		if err != nil || hex.EncodeToString(sum[:]) != h {
			t.Fatalf("document %d: CanonicalSum = %x, %v; want %s", i, sum, err, h)
		}
	}
}

// sameError reports whether two errors are both nil or both *JSONError
// with the same message and path.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ja, jb *JSONError
	return errors.As(a, &ja) && errors.As(b, &jb) && ja.Error() == jb.Error() && ja.Path == jb.Path
}

func TestEncodeCache(t *testing.T) {
	sample, err := Decode([]byte(sampleDocument))
	if err != nil {
		t.Fatal(err)
	}
	big := map[string]any{"text": strings.Repeat("x", 300), "list": []any{strings.Repeat("y", 300), IntNumber(3)}}
	nfc := map[string]any{"A\u030a": strings.Repeat("\u00e9", 200), "b": json2(t, `1.50e3`)}
	tests := []struct {
		name  string
		limit int
		docs  []any
	}{
		{"sample", 1 << 20, sharing(sample)},
		{"large strings", 1 << 20, sharing(big)},
		{"keys and numbers to normalize", 1 << 20, sharing(nfc)},
		{"limit below every encoding", 100, sharing(sample)},
		{"limit of a few encodings", 2048, append(sharing(sample), sharing(big)...)},
		{"scalars", 1 << 20, []any{nil, "s", IntNumber(5), 1.5, []any{}, map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewEncodeCache(tt.limit)
			checkCached(t, c, tt.docs...)
			// Again, now that the cache holds what it keeps.
			checkCached(t, c, tt.docs...)
			if c.Bytes() > tt.limit {
				t.Errorf("Bytes() = %d, over the limit %d", c.Bytes(), tt.limit)
			}
		})
	}
}

// TestEncodeCacheHits checks that a large shared object is written once
// and found in the cache after: changing it behind the cache's back (which
// the cache's contract forbids) does not show.
func TestEncodeCacheHits(t *testing.T) {
	inner := map[string]any{"text": strings.Repeat("x", 400)}
	c := NewEncodeCache(1 << 20)
	first, err := c.Marshal(map[string]any{"a": inner})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Canonical(map[string]any{"b": inner}); err != nil {
		t.Fatal(err)
	}
	inner["text"] = "changed"
	for _, canonical := range []bool{false, true} {
		var got []byte
		if canonical {
			got, err = c.Canonical(map[string]any{"a": inner})
		} else {
			got, err = c.Marshal(map[string]any{"a": inner})
		}
		if err != nil || bytes.Contains(got, []byte("changed")) {
			t.Errorf("encoding again (canonical %v) = %.40s…, %v; want the cached encoding", canonical, got, err)
		}
	}
	if !bytes.Contains(first, []byte("xxx")) {
		t.Errorf("first encoding = %.40s…", first)
	}
}

// TestEncodeCacheRefuses checks that the cache refuses what Marshal and
// Canonical refuse, with the same error, even when part of the document
// was cached where it was valid.
func TestEncodeCacheRefuses(t *testing.T) {
	// deep is MaxDepth-2 arrays around a long string: valid at the root,
	// too deep three levels down.
	var deep any = strings.Repeat("z", 300)
	for range MaxDepth - 2 {
		deep = []any{deep}
	}
	bad := map[string]any{"pad": strings.Repeat("p", 300), "f": math.NaN()}
	dup := map[string]any{"\u00c5": strings.Repeat("a", 300), "A\u030a": IntNumber(1)}
	tests := []struct {
		name string
		docs []any
	}{
		{"cached shallow, used deep", []any{deep, []any{deep}, []any{[]any{[]any{deep}}}}},
		{"NaN inside", []any{map[string]any{"x": bad}, bad}},
		{"keys equal after NFC", []any{map[string]any{"x": dup}}},
		{"unsupported type", []any{map[string]any{"x": struct{}{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkCached(t, NewEncodeCache(1<<20), tt.docs...)
		})
	}
}

func json2(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzEncodeCache checks that documents written with an EncodeCache, of
// any limit, are byte for byte those written without: for the documents a
// workflow builds from any JSON value, sharing its parts.
func FuzzEncodeCache(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint16(0))
		f.Add([]byte(s), uint16(600))
	}
	f.Add([]byte(`{"a":[`+strings.Repeat(`"long string",`, 40)+`1],"b":{"c":"`+strings.Repeat("é", 200)+`"}}`), uint16(1000))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		c := NewEncodeCache(int(limit) * 4)
		docs := sharing(v)
		checkCached(t, c, docs...)
		checkCached(t, c, docs...)
		for _, d := range docs {
			s1, err1 := c.CanonicalSum(d)
			canon, err2 := Canonical(d)
			if (err1 == nil) != (err2 == nil) || (err1 == nil && s1 != sha256.Sum256(canon)) {
				t.Fatalf("CanonicalSum(%q) = %x, %v; want the sum of %s, %v", data, s1, err1, canon, err2)
			}
		}
	})
}

// TestEncodeCacheOwned: Marshal and Canonical return slices the caller
// owns, whether the encoding fits the cache's scratch buffer or is larger
// than its limit (then returned without a copy).
func TestEncodeCacheOwned(t *testing.T) {
	c := NewEncodeCache(64)
	small := map[string]any{"a": "b"}
	big := map[string]any{"a": strings.Repeat("x", 200)}
	for _, v := range []any{small, big, small, big} {
		for _, f := range []func(any) ([]byte, error){c.Marshal, c.Canonical} {
			first, err := f(v)
			if err != nil {
				t.Fatal(err)
			}
			want := string(first)
			for i := range first {
				first[i] = '!'
			}
			second, err := f(v)
			if err != nil || string(second) != want {
				t.Fatalf("after the caller changed the first result: %s, %v; want %s", second, err, want)
			}
			other, _ := f(small)
			if string(second) != want {
				t.Fatalf("a later call changed an earlier result: %s (then %s)", second, other)
			}
		}
	}
}
