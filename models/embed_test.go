package models_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/localembed"
)

// countingEmbedder is an Embedder of 3 dimensions that records every batch
// it is asked for. Its vector of a text is a unit vector that depends on
// the text's length and first byte.
type countingEmbedder struct {
	mu      sync.Mutex
	batches [][]string
	err     error  // returned by every Embed when set
	refuse  string // a text refused with an *EmbedError
	dims    int    // the size of the vectors it returns; 0 means 3
	tokens  int64  // reported per text by EmbedWithUsage
}

func (c *countingEmbedder) Model() string   { return "counting@3" }
func (c *countingEmbedder) Dimensions() int { return 3 }

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	v, _, err := c.EmbedWithUsage(ctx, texts)
	return v, err
}

func (c *countingEmbedder) EmbedWithUsage(_ context.Context, texts []string) ([][]float32, models.EmbedUsage, error) {
	c.mu.Lock()
	c.batches = append(c.batches, slices.Clone(texts))
	c.mu.Unlock()
	if c.err != nil {
		return nil, models.EmbedUsage{}, c.err
	}
	if i := slices.Index(texts, c.refuse); c.refuse != "" && i >= 0 {
		return nil, models.EmbedUsage{}, &models.EmbedError{Model: c.Model(), Index: i, Msg: "refused"}
	}
	dims := c.dims
	if dims == 0 {
		dims = 3
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, dims)
		v[0] = float32(len(t)) + 1
		if t != "" {
			v[1%dims] += float32(t[0])
		}
		out[i] = v
	}
	if dims == 3 {
		if err := models.NormalizeEmbeddings(c.Model(), 3, len(texts), out); err != nil {
			return nil, models.EmbedUsage{}, err
		}
	}
	return out, models.EmbedUsage{Tokens: c.tokens * int64(len(texts))}, nil
}

func (c *countingEmbedder) seen() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.batches)
}

func TestNormalizeEmbeddings(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	tests := []struct {
		name  string
		n     int
		vecs  [][]float32
		index int // of the *EmbedError; -2 means no error
	}{
		{"ok", 2, [][]float32{{3, 4}, {0, -2}}, -2},
		{"none", 0, nil, -2},
		{"too few", 3, [][]float32{{1, 0}, {0, 1}}, -1},
		{"too many", 1, [][]float32{{1, 0}, {0, 1}}, -1},
		{"short vector", 2, [][]float32{{1, 0}, {1}}, 1},
		{"long vector", 2, [][]float32{{1, 0, 0}, {1, 0}}, 0},
		{"NaN", 2, [][]float32{{1, 0}, {nan, 1}}, 1},
		{"infinity", 1, [][]float32{{inf, 0}}, 0},
		{"zero vector", 2, [][]float32{{1, 1}, {0, 0}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := models.NormalizeEmbeddings("m@2", 2, tt.n, tt.vecs)
			if tt.index == -2 {
				if err != nil {
					t.Fatalf("NormalizeEmbeddings = %v, want nil", err)
				}
				for i, v := range tt.vecs {
					if d := math.Abs(norm(v) - 1); d > 1e-6 {
						t.Errorf("vector %d has length %v, want 1", i, norm(v))
					}
				}
				return
			}
			var ee *models.EmbedError
			if !errors.As(err, &ee) {
				t.Fatalf("NormalizeEmbeddings = %v (%T), want an *EmbedError", err, err)
			}
			if ee.Model != "m@2" || ee.Index != tt.index || ee.Msg == "" {
				t.Errorf("error = %+v, want model m@2 and index %d", ee, tt.index)
			}
		})
	}
	v := [][]float32{{3, 4}}
	if err := models.NormalizeEmbeddings("m", 2, 1, v); err != nil || v[0][0] != 0.6 || v[0][1] != 0.8 {
		t.Errorf("NormalizeEmbeddings({3, 4}) = %v, %v; want [0.6 0.8]", v, err)
	}
}

func TestEmbedErrorText(t *testing.T) {
	tests := []struct {
		err  models.EmbedError
		want string
	}{
		{models.EmbedError{Model: "m@3", Index: 2, Msg: "vector has 2 dimensions, want 3"}, "embedding model m@3: text 2: vector has 2 dimensions, want 3"},
		{models.EmbedError{Model: "m@3", Index: -1, Msg: "1 vectors for 2 texts"}, "embedding model m@3: 1 vectors for 2 texts"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestCachedEmbedderSendsOnlyMissingTexts(t *testing.T) {
	inner := &countingEmbedder{tokens: 5}
	c := models.NewCachedEmbedder(inner, 10)
	if c.Model() != inner.Model() || c.Dimensions() != 3 {
		t.Errorf("Model, Dimensions = %q, %d; want the inner's", c.Model(), c.Dimensions())
	}
	ctx := t.Context()
	first, u, err := c.EmbedWithUsage(ctx, []string{"a", "bb", "a"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if u.Tokens != 10 {
		t.Errorf("usage = %d tokens, want 10 (two texts sent)", u.Tokens)
	}
	second, u, err := c.EmbedWithUsage(ctx, []string{"ccc", "bb", "a"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if u.Tokens != 5 {
		t.Errorf("usage = %d tokens, want 5 (one text sent)", u.Tokens)
	}
	want := [][]string{{"a", "bb"}, {"ccc"}}
	if got := inner.seen(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("inner batches = %q, want %q", got, want)
	}
	direct, _ := inner.Embed(ctx, []string{"a", "bb", "a", "ccc"})
	for i, p := range []struct {
		got  []float32
		want []float32
	}{{first[0], direct[0]}, {first[1], direct[1]}, {first[2], direct[2]}, {second[0], direct[3]}, {second[1], direct[1]}, {second[2], direct[0]}} {
		if !slices.Equal(p.got, p.want) {
			t.Errorf("vector %d = %v, want %v", i, p.got, p.want)
		}
	}
	if got, want := c.CacheStats(), (models.EmbedCacheStats{Hits: 2, Misses: 4, Entries: 3}); got != want {
		t.Errorf("CacheStats = %+v, want %+v", got, want)
	}
	// Vectors are the caller's: changing one changes nothing cached.
	second[1][0] = 42
	again, _ := c.Embed(ctx, []string{"bb"})
	if again[0][0] == 42 {
		t.Error("a change to a returned vector reached the cache")
	}
	if got, _ := c.Embed(ctx, nil); len(got) != 0 {
		t.Errorf("Embed(nil) = %v, want none", got)
	}
	if n := len(inner.seen()); n != 3 { // two cached batches and the direct call
		t.Errorf("inner called %d times, want 3", n)
	}
}

func TestCachedEmbedderEvictsLeastRecentlyUsed(t *testing.T) {
	inner := &countingEmbedder{}
	c := models.NewCachedEmbedder(inner, 2)
	ctx := t.Context()
	for _, texts := range [][]string{{"a", "b"}, {"a"}, {"c"}, {"a", "b"}} {
		if _, err := c.Embed(ctx, texts); err != nil {
			t.Fatalf("Embed(%q): %v", texts, err)
		}
	}
	// "c" pushed out "b" (used less recently than "a"), and "b" then
	// pushed out "c".
	want := [][]string{{"a", "b"}, {"c"}, {"b"}}
	if got := inner.seen(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("inner batches = %q, want %q", got, want)
	}
	if got, want := c.CacheStats(), (models.EmbedCacheStats{Hits: 2, Misses: 4, Entries: 2}); got != want {
		t.Errorf("CacheStats = %+v, want %+v", got, want)
	}
	if models.NewCachedEmbedder(inner, 0) == nil {
		t.Error("NewCachedEmbedder(e, 0) = nil")
	}
}

func TestCachedEmbedderFailures(t *testing.T) {
	boom := errors.New("boom")
	t.Run("inner error", func(t *testing.T) {
		inner := &countingEmbedder{err: boom}
		c := models.NewCachedEmbedder(inner, 10)
		if _, err := c.Embed(t.Context(), []string{"a"}); !errors.Is(err, boom) {
			t.Errorf("Embed = %v, want the inner error", err)
		}
		inner.err = nil
		if _, err := c.Embed(t.Context(), []string{"a"}); err != nil {
			t.Errorf("Embed after the failure: %v", err)
		}
		if got := c.CacheStats(); got.Entries != 1 || got.Misses != 2 {
			t.Errorf("CacheStats = %+v, want 2 misses and 1 entry", got)
		}
	})
	t.Run("refused text", func(t *testing.T) {
		inner := &countingEmbedder{refuse: "bad"}
		c := models.NewCachedEmbedder(inner, 10)
		if _, err := c.Embed(t.Context(), []string{"a"}); err != nil {
			t.Fatalf("Embed: %v", err)
		}
		_, err := c.Embed(t.Context(), []string{"a", "b", "a", "bad"})
		var ee, inner1 *models.EmbedError
		if !errors.As(err, &ee) || ee.Index != 3 || ee.Model != "counting@3" {
			t.Fatalf("Embed = %v, want an *EmbedError for text 3", err)
		}
		if !errors.As(ee.Err, &inner1) || inner1.Index != 1 {
			t.Errorf("wrapped error = %v, want the inner's for text 1 of its batch", ee.Err)
		}
	})
	t.Run("wrong dimensions", func(t *testing.T) {
		c := models.NewCachedEmbedder(&countingEmbedder{dims: 2}, 10)
		_, err := c.Embed(t.Context(), []string{"a", "b"})
		var ee *models.EmbedError
		if !errors.As(err, &ee) || ee.Index != 0 || ee.Model != "counting@3" {
			t.Fatalf("Embed = %v, want an *EmbedError for text 0 of counting@3", err)
		}
		if got := c.CacheStats(); got.Entries != 0 {
			t.Errorf("CacheStats = %+v, want nothing cached", got)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		inner := &countingEmbedder{}
		c := models.NewCachedEmbedder(inner, 10)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := c.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Embed = %v, want context.Canceled", err)
		}
		if n := len(inner.seen()); n != 0 {
			t.Errorf("inner called %d times, want 0", n)
		}
	})
}

func TestCachedEmbedderConcurrent(t *testing.T) {
	inner := &countingEmbedder{}
	c := models.NewCachedEmbedder(inner, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				text := fmt.Sprint((g + i) % 12)
				v, err := c.Embed(t.Context(), []string{text})
				if err != nil {
					t.Errorf("Embed(%q): %v", text, err)
					return
				}
				want, _ := inner.Embed(t.Context(), []string{text})
				if !slices.Equal(v[0], want[0]) {
					t.Errorf("Embed(%q) = %v, want %v", text, v[0], want[0])
				}
			}
		})
	}
	wg.Wait()
	s := c.CacheStats()
	if s.Hits+s.Misses != 400 || s.Entries > 8 {
		t.Errorf("CacheStats = %+v, want 400 lookups and at most 8 entries", s)
	}
}

func ExampleCachedEmbedder() {
	local, err := localembed.New(localembed.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := models.NewCachedEmbedder(local, 1000)
	ctx := context.Background()
	if _, err := c.Embed(ctx, []string{"refund", "invoice"}); err != nil {
		fmt.Println(err)
		return
	}
	// Only "shipping" is embedded: "invoice" comes from the cache.
	vecs, err := c.Embed(ctx, []string{"invoice", "shipping"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Model(), len(vecs), len(vecs[0]))
	fmt.Printf("%+v\n", c.CacheStats())
	// Output:
	// local-ngram-v1@384 2 384
	// {Hits:1 Misses:3 Entries:3}
}
