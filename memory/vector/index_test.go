package vector

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/internal/vectordata"
)

func TestIndexSwitchesAtThreshold(t *testing.T) {
	vs := vectordata.Clustered(330, 16, 4, 1, 21)
	x := NewIndex(Config{Threshold: 200, HNSW: HNSWConfig{M: 8}})
	for i, v := range vs[:300] {
		if err := x.Add(fmt.Sprint(i), v); err != nil {
			t.Fatal(err)
		}
		if want := i+1 >= 200; x.Stats().Approximate != want {
			t.Fatalf("after %d adds Approximate = %v, want %v", i+1, !want, want)
		}
	}
	e := NewExact(0)
	for i, v := range vs[:300] {
		_ = e.Add(fmt.Sprint(i), v)
	}
	for _, q := range vs[300:] {
		got, err := x.Search(q, 5, -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := e.Search(q, 5, -1, nil)
		if recall(got, want) < 0.8 {
			t.Errorf("Search = %v, want about %v", got, want)
		}
	}
	// Deleting down below half the threshold goes back to exact search.
	for i := range 201 {
		if !x.Delete(fmt.Sprint(i)) {
			t.Fatalf("Delete(%d) found nothing", i)
		}
	}
	s := x.Stats()
	if s.Approximate || s.Len != 99 || s.Dim != 16 {
		t.Errorf("Stats after deletes = %+v, want exact, 99 entries of 16 dimensions", s)
	}
	for i := range 201 {
		e.Delete(fmt.Sprint(i))
	}
	for _, q := range vs[300:] {
		got, _ := x.Search(q, 5, -1, nil)
		want, _ := e.Search(q, 5, -1, nil)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("exact Search = %v, want %v", got, want)
		}
	}
	if v, ok := x.Get("250"); !ok || len(v) != 16 {
		t.Errorf("Get(250) = %v, %v", v, ok)
	}
	if _, ok := x.Get("3"); ok {
		t.Error("Get of a deleted id succeeded")
	}
}

func TestIndexNeverApproximate(t *testing.T) {
	x := NewIndex(Config{Threshold: -1})
	for i, v := range vectordata.Clustered(50, 4, 2, 1, 1) {
		if err := x.Add(fmt.Sprint(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if s := x.Stats(); s.Approximate || s.Len != 50 {
		t.Errorf("Stats = %+v, want 50 exact entries", s)
	}
}

func TestIndexStats(t *testing.T) {
	x := NewIndex(Config{Threshold: 100})
	if s := x.Stats(); s.Len != 0 || s.BytesPerVector != 0 {
		t.Errorf("empty Stats = %+v", s)
	}
	for i, v := range vectordata.Clustered(200, 384, 4, 1, 1) {
		if err := x.Add(fmt.Sprint(i), v); err != nil {
			t.Fatal(err)
		}
	}
	s := x.Stats()
	// 1,536 bytes of vector plus 33 words of layer-0 links at the least.
	if !s.Approximate || s.BytesPerVector < 1536+33*4 || s.BytesPerVector > 4*1536 {
		t.Errorf("Stats = %+v, want about 1.7 KB a vector", s)
	}
}

func TestIndexConcurrent(t *testing.T) {
	const writers, readers, each = 2, 4, 150
	vs := vectordata.Clustered(writers*each+10, 16, 4, 1, 17)
	x := NewIndex(Config{Threshold: 100, HNSW: HNSWConfig{M: 6, EfConstruction: 20}})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i
				if err := x.Add(fmt.Sprint(n), vs[n]); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 4 {
					x.Delete(fmt.Sprint(n - 2))
				}
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			for i := range each {
				q := vs[writers*each+(r+i)%10]
				if _, err := x.Search(q, 5, -1, func(id string) bool { return len(id) > 1 }); err != nil {
					t.Error(err)
					return
				}
				x.Stats()
			}
		})
	}
	wg.Wait()
	if got, want := x.Len(), writers*(each-each/5); got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}
