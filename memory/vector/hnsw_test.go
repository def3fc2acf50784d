package vector

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/internal/vectordata"
)

// buildPair adds vs to a fresh HNSW and a fresh Exact under ids "v0", "v1", ….
func buildPair(t testing.TB, vs [][]float32, cfg HNSWConfig) (*HNSW, *Exact, []string) {
	t.Helper()
	h := NewHNSW(0, cfg)
	e := NewExact(0)
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = fmt.Sprintf("v%d", i)
		if err := h.Add(ids[i], v); err != nil {
			t.Fatal(err)
		}
		if err := e.Add(ids[i], v); err != nil {
			t.Fatal(err)
		}
	}
	return h, e, ids
}

// meanRecall returns the mean recall@k of h against e over the queries.
func meanRecall(t testing.TB, h *HNSW, e *Exact, qs [][]float32, k, ef int, filter Filter) float64 {
	t.Helper()
	var sum float64
	for _, q := range qs {
		want, err := e.Search(q, k, -1, filter)
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Search(q, k, -1, ef, filter)
		if err != nil {
			t.Fatal(err)
		}
		sum += recall(got, want)
	}
	return sum / float64(len(qs))
}

func TestHNSWRecall(t *testing.T) {
	const dim, queries = 384, 100
	vs := vectordata.Clustered(recallN+queries, dim, 50, 1, 7)
	h, e, _ := buildPair(t, vs[:recallN], HNSWConfig{Seed: 1})
	if r := meanRecall(t, h, e, vs[recallN:], 10, 0, nil); r < 0.95 {
		t.Errorf("recall@10 over %d vectors = %.3f, want at least 0.95", recallN, r)
	}
}

func TestHNSWScoresAreExact(t *testing.T) {
	vs := vectordata.Clustered(600, 24, 6, 1, 11)
	h, e, _ := buildPair(t, vs[:500], HNSWConfig{M: 8})
	for _, q := range vs[500:] {
		got, err := h.Search(q, 10, 0.2, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			v, _ := e.Get(r.ID)
			nq, _ := normalized(q)
			if s := dot(nq, v); s != r.Score || s < 0.2 {
				t.Fatalf("result %d %v: exact score %v (minimum 0.2)", i, r, s)
			}
			if i > 0 && better(r, got[i-1]) {
				t.Fatalf("results out of order: %v", got)
			}
		}
	}
}

func TestHNSWDeterministic(t *testing.T) {
	vs := vectordata.Clustered(800, 32, 8, 1, 5)
	answers := func(seed uint64) [][]Result {
		h, _, _ := buildPair(t, vs[:700], HNSWConfig{M: 6, EfConstruction: 20, Seed: seed})
		var out [][]Result
		for _, q := range vs[700:] {
			r, err := h.Search(q, 10, -1, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	a, b := answers(42), answers(42)
	if !reflect.DeepEqual(a, b) {
		t.Error("two graphs built with the same seed answer differently")
	}
}

func TestHNSWDelete(t *testing.T) {
	vs := vectordata.Clustered(1100, 32, 8, 1, 9)
	h, e, ids := buildPair(t, vs[:1000], HNSWConfig{M: 8, EfConstruction: 40, RebuildFraction: 0.3335})
	// Delete every third vector: 333 tombstones, one short of the rebuild.
	deleted := map[string]bool{}
	for i := 0; i < 999; i += 3 {
		deleted[ids[i]] = true
		if !h.Delete(ids[i]) || !e.Delete(ids[i]) {
			t.Fatalf("Delete(%s) found nothing", ids[i])
		}
	}
	if h.Delete(ids[0]) {
		t.Error("second Delete reported a hit")
	}
	if h.Len() != 667 || h.Tombstones() != 333 {
		t.Errorf("Len, Tombstones = %d, %d, want 667, 333", h.Len(), h.Tombstones())
	}
	check := func(stage string) {
		for _, q := range vs[1000:] {
			got, err := h.Search(q, 10, -1, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				if deleted[r.ID] {
					t.Fatalf("%s: deleted %s returned", stage, r.ID)
				}
			}
		}
		if r := meanRecall(t, h, e, vs[1000:], 10, 0, nil); r < 0.95 {
			t.Errorf("%s: recall@10 = %.3f, want at least 0.95", stage, r)
		}
	}
	check("tombstones")
	deleted[ids[1]] = true
	h.Delete(ids[1])
	e.Delete(ids[1])
	if h.Tombstones() != 0 || h.Len() != 666 {
		t.Errorf("after rebuild Len, Tombstones = %d, %d, want 666, 0", h.Len(), h.Tombstones())
	}
	check("rebuilt")
	// Replacing a vector tombstones the old node.
	if err := h.Add(ids[2], vs[1050]); err != nil {
		t.Fatal(err)
	}
	if h.Tombstones() != 1 || h.Len() != 666 {
		t.Errorf("after replace Len, Tombstones = %d, %d, want 666, 1", h.Len(), h.Tombstones())
	}
	got, err := h.Search(vs[1050], 1, -1, 0, nil)
	if err != nil || len(got) != 1 || got[0].ID != ids[2] {
		t.Errorf("Search for the replacement = %v, %v, want %s", got, err, ids[2])
	}
	// Deleting everything empties the graph.
	for _, id := range ids {
		h.Delete(id)
	}
	if got, err := h.Search(vs[0], 3, -1, 0, nil); err != nil || len(got) != 0 || h.Len() != 0 {
		t.Errorf("Search of emptied graph = %v, %v (Len %d)", got, err, h.Len())
	}
	if err := h.Add("again", vs[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Search(vs[0], 3, -1, 0, nil); len(got) != 1 || got[0].ID != "again" {
		t.Errorf("Search after refilling = %v", got)
	}
}

func TestHNSWFilter(t *testing.T) {
	vs := vectordata.Clustered(1100, 32, 8, 1, 13)
	h, e, _ := buildPair(t, vs[:1000], HNSWConfig{M: 8, EfConstruction: 40})
	tests := []struct {
		name     string
		filter   Filter
		fallback bool
	}{
		{"drops a tenth", func(id string) bool { return !strings.HasSuffix(id, "7") }, false},
		{"keeps a half", func(id string) bool { return strings.ContainsAny(id[len(id)-1:], "02468") }, false},
		{"keeps one in a hundred", func(id string) bool { return strings.HasSuffix(id, "42") }, true},
		{"keeps nothing", func(string) bool { return false }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sum float64
			for _, q := range vs[1000:] {
				got, exact, err := h.search(q, 10, -1, 0, tt.filter)
				if err != nil {
					t.Fatal(err)
				}
				if exact != tt.fallback {
					t.Fatalf("exact fallback = %v, want %v", exact, tt.fallback)
				}
				for _, r := range got {
					if !tt.filter(r.ID) {
						t.Fatalf("filtered %s returned", r.ID)
					}
				}
				want, _ := e.Search(q, 10, -1, tt.filter)
				if exact && !reflect.DeepEqual(got, want) {
					t.Fatalf("fallback answer %v, want the exact %v", got, want)
				}
				sum += recall(got, want)
			}
			if r := sum / 100; r < 0.95 {
				t.Errorf("recall@10 = %.3f, want at least 0.95", r)
			}
		})
	}
}

func TestHNSWDuplicates(t *testing.T) {
	// Up to 2*M copies of one vector among others stay reachable: a query
	// for the vector finds all of them at score 1.
	vs := vectordata.Clustered(300, 16, 3, 1, 19)
	h := NewHNSW(0, HNSWConfig{M: 12, EfConstruction: 32})
	for i, v := range vs {
		if err := h.Add(fmt.Sprintf("o%d", i), v); err != nil {
			t.Fatal(err)
		}
		if i%15 == 0 {
			if err := h.Add(fmt.Sprintf("d%d", i), vs[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := h.Search(vs[0], 20, 0.9999, 0, func(id string) bool { return id != "o0" })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Fatalf("Search found %d copies, want 20: %v", len(got), got)
	}
	for _, r := range got {
		if !strings.HasPrefix(r.ID, "d") {
			t.Errorf("result %v is not a copy", r)
		}
	}
}
