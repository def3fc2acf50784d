package jsonvalue

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSizeCache(t *testing.T) {
	shared := mustDecode(t, `{"text":"`+strings.Repeat("lorem ipsum ", 60)+`","list":[`+strings.Repeat(`{"k":"v","n":1},`, 40)+`{}]}`)
	var c SizeCache
	for i := range 5 {
		// Each round builds a new document around the same shared part.
		doc := map[string]any{"round": IntNumber(int64(i)), "shared": shared, "again": []any{shared, "x"}}
		for _, limit := range []int{10, Size(doc) - 1, Size(doc), 1 << 20} {
			got, within := c.Within(doc, limit)
			want, wantWithin := SizeWithin(doc, limit)
			if within != wantWithin || within && got != want {
				t.Errorf("round %d limit %d: Within = %d, %v; SizeWithin = %d, %v", i, limit, got, within, want, wantWithin)
			}
		}
	}
	if len(c.sizes) == 0 {
		t.Error("the cache remembered nothing")
	}
	for _, v := range []any{nil, "s", []any{}, map[string]any{}, json.Number("1"), []any{1, "a"}} {
		if got, _ := c.Within(v, 100); got != Size(v) {
			t.Errorf("Within(%v) = %d, want %d", v, got, Size(v))
		}
	}
}
