package vector

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/aslrun/aslrun/internal/vectordata"
)

func TestExactMatchesBruteForce(t *testing.T) {
	const dim = 16
	vs := vectordata.Clustered(300, dim, 5, 0.8, 3)
	ids := make([]string, len(vs))
	e := NewExact(0)
	for i, v := range vs {
		ids[i] = fmt.Sprintf("e%03d", i)
		if err := e.Add(ids[i], v); err != nil {
			t.Fatal(err)
		}
	}
	even := func(id string) bool { return (id[len(id)-1]-'0')%2 == 0 }
	tests := []struct {
		name     string
		k        int
		minScore float32
		filter   Filter
	}{
		{"top1", 1, -1, nil},
		{"top10", 10, -1, nil},
		{"all", 1000, -1, nil},
		{"min score cuts", 50, 0.8, nil},
		{"min score above everything", 10, 1.01, nil},
		{"filter", 10, -1, even},
		{"filter and min score", 100, 0.5, even},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for qi, q := range vectordata.Clustered(5, dim, 5, 0.8, 4) {
				got, err := e.Search(q, tt.k, tt.minScore, tt.filter)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteForce(ids, vs, q, tt.k, tt.minScore, tt.filter)
				if len(got) != len(want) {
					t.Fatalf("query %d: %d results, want %d", qi, len(got), len(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5 {
						t.Errorf("query %d result %d = %v, want %v", qi, i, got[i], want[i])
					}
				}
			}
		})
	}
}

func TestExactTiesByID(t *testing.T) {
	e := NewExact(2)
	for _, id := range []string{"c", "a", "d", "b"} {
		if err := e.Add(id, []float32{1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Add("far", []float32{-1, 0}); err != nil {
		t.Fatal(err)
	}
	got, err := e.Search([]float32{2, 2}, 3, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("Search ids = %v, want %v", ids, want)
	}
}

func TestExactReplaceAndDelete(t *testing.T) {
	e := NewExact(2)
	for i, v := range [][]float32{{1, 0}, {0, 1}, {-1, 0}} {
		if err := e.Add(fmt.Sprint(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Add("0", []float32{0, -3}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Get("0"); !reflect.DeepEqual(got, []float32{0, -1}) {
		t.Errorf("Get(0) after replace = %v, want [0 -1]", got)
	}
	if !e.Delete("1") || e.Delete("1") || e.Delete("nope") {
		t.Error("Delete reported wrongly")
	}
	if e.Len() != 2 {
		t.Errorf("Len() = %d, want 2", e.Len())
	}
	got, err := e.Search([]float32{0, 1}, 5, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{{ID: "2", Score: 0}, {ID: "0", Score: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Search = %v, want %v", got, want)
	}
	if got, ok := e.Get("2"); !ok || !reflect.DeepEqual(got, []float32{-1, 0}) {
		t.Errorf("Get(2) after moving = %v, %v", got, ok)
	}
}

func TestRefusals(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	idx := func() searcher {
		x := NewIndex(Config{})
		if err := x.Add("a", []float32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		return x
	}
	graph := func() searcher {
		h := NewHNSW(0, HNSWConfig{})
		if err := h.Add("a", []float32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		return hnswSearcher{h}
	}
	exact := func() searcher {
		e := NewExact(0)
		if err := e.Add("a", []float32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for name, mk := range map[string]func() searcher{"Index": idx, "HNSW": graph, "Exact": exact} {
		t.Run(name, func(t *testing.T) {
			s := mk()
			addTests := []struct {
				v    []float32
				want error
			}{
				{[]float32{0, 0, 0}, ErrEmptyVector},
				{nil, ErrEmptyVector},
				{[]float32{1, nan, 0}, ErrNotFinite},
				{[]float32{inf, 0, 0}, ErrNotFinite},
			}
			for _, tt := range addTests {
				if err := s.Add("b", tt.v); !errors.Is(err, tt.want) {
					t.Errorf("Add(%v) = %v, want %v", tt.v, err, tt.want)
				}
			}
			var de *DimensionError
			if err := s.Add("b", []float32{1, 2}); !errors.As(err, &de) || de.Got != 2 || de.Want != 3 {
				t.Errorf("Add of 2 dimensions = %v, want a DimensionError 2 vs 3", err)
			}
			if _, err := s.Search([]float32{1, 2}, 1, 0, nil); !errors.As(err, &de) {
				t.Errorf("Search of 2 dimensions = %v, want a DimensionError", err)
			}
			if _, err := s.Search([]float32{0, 0, 0}, 1, 0, nil); !errors.Is(err, ErrEmptyVector) {
				t.Errorf("Search of zero vector = %v, want ErrEmptyVector", err)
			}
			if _, err := s.Search([]float32{1, 0, 0}, 0, 0, nil); err == nil {
				t.Error("Search with k 0 succeeded")
			}
			if _, err := s.Search([]float32{1, 0, 0}, 1, nan, nil); err == nil {
				t.Error("Search with NaN minimum score succeeded")
			}
			if got, err := s.Search([]float32{1, 2, 3}, 5, -1, nil); err != nil || len(got) != 1 || got[0].ID != "a" {
				t.Errorf("Search after refusals = %v, %v, want only a", got, err)
			}
		})
	}
}

// searcher is what TestRefusals exercises on each index type.
type searcher interface {
	Add(id string, v []float32) error
	Search(q []float32, k int, minScore float32, filter Filter) ([]Result, error)
}

// hnswSearcher adapts an HNSW to searcher with the default ef.
type hnswSearcher struct{ h *HNSW }

// Add adds to the graph.
func (s hnswSearcher) Add(id string, v []float32) error { return s.h.Add(id, v) }

// Search searches the graph with the default ef.
func (s hnswSearcher) Search(q []float32, k int, minScore float32, filter Filter) ([]Result, error) {
	return s.h.Search(q, k, minScore, 0, filter)
}

func TestNormalizedExtremes(t *testing.T) {
	tests := [][]float32{
		{math.MaxFloat32, math.MaxFloat32},
		{math.SmallestNonzeroFloat32, 0},
		{1e-30, 1e-30},
	}
	for _, v := range tests {
		n, err := normalized(v)
		if err != nil {
			t.Fatalf("normalized(%v): %v", v, err)
		}
		if l := dot(n, n); math.Abs(float64(l)-1) > 1e-5 {
			t.Errorf("normalized(%v) has squared length %v, want 1", v, l)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	v := []float32{0, -1.5, 3.25e-7, math.MaxFloat32}
	b := Encode(v)
	if len(b) != 16 {
		t.Fatalf("len(Encode) = %d, want 16", len(b))
	}
	if b[4+3] != 0xbf || b[4+2] != 0xc0 {
		t.Errorf("Encode(-1.5) = % x, want little-endian 00 00 c0 bf", b[4:8])
	}
	got, err := Decode(b)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Errorf("Decode(Encode(v)) = %v, %v, want %v", got, err, v)
	}
	if got, err := Decode(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Decode(nil) = %#v, %v, want empty", got, err)
	}
	if _, err := Decode(make([]byte, 7)); err == nil {
		t.Error("Decode of 7 bytes succeeded")
	}
	if _, err := Decode(Encode([]float32{1, float32(math.NaN())})); !errors.Is(err, ErrNotFinite) {
		t.Errorf("Decode of NaN = %v, want ErrNotFinite", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0x80, 0x3f})
	f.Add([]byte{0, 0, 0xc0, 0x7f})
	f.Add([]byte{1, 2, 3})
	f.Add(Encode([]float32{1, 2, 3, -4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		if got := Encode(v); !reflect.DeepEqual(got, b) {
			t.Fatalf("Encode(Decode(% x)) = % x", b, got)
		}
		e := NewExact(0)
		if err := e.Add("x", v); err != nil {
			if !errors.Is(err, ErrEmptyVector) {
				t.Fatalf("Add of decoded %v: %v", v, err)
			}
			return
		}
		if r, err := e.Search(v, 1, -1, nil); err != nil || len(r) != 1 {
			t.Fatalf("Search of itself = %v, %v", r, err)
		}
	})
}

func TestExactAcrossBlocks(t *testing.T) {
	// More vectors than one block holds, then deletes that empty the last
	// blocks and move vectors between blocks.
	vs := vectordata.Clustered(2*blockVectors+300, 4, 3, 1, 23)
	e := NewExact(0)
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = fmt.Sprintf("b%04d", i)
		if err := e.Add(ids[i], v); err != nil {
			t.Fatal(err)
		}
	}
	var keptIDs []string
	var kept [][]float32
	for i := range vs {
		if i%3 == 0 || i > 1500 {
			if !e.Delete(ids[i]) {
				t.Fatalf("Delete(%s) found nothing", ids[i])
			}
			continue
		}
		keptIDs, kept = append(keptIDs, ids[i]), append(kept, vs[i])
	}
	if e.Len() != len(kept) || len(e.data.blocks) != 1 {
		t.Fatalf("Len = %d in %d blocks, want %d in 1", e.Len(), len(e.data.blocks), len(kept))
	}
	for _, q := range vectordata.Clustered(5, 4, 3, 1, 24) {
		got, _ := e.Search(q, 7, -1, nil)
		want := bruteForce(keptIDs, kept, q, 7, -1, nil)
		for i := range want {
			if got[i].ID != want[i].ID {
				t.Fatalf("Search = %v, want %v", got, want)
			}
		}
	}
	for i, id := range keptIDs {
		v, ok := e.Get(id)
		n, _ := normalized(kept[i])
		if !ok || !reflect.DeepEqual(v, n) {
			t.Fatalf("Get(%s) = %v, %v, want %v", id, v, ok, n)
		}
	}
}
