package models

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Embedder turns texts into vectors whose cosine similarity says how close
// the texts' meanings are.
//
// Embed returns one vector per text, in the order of texts, each of
// Dimensions() components and of unit length (so the dot product of two
// vectors is their cosine similarity). It does not modify texts, and the
// vectors it returns are the caller's to keep or change. An empty texts
// gives an empty result without any request. Embedders refuse a text that
// is empty, or that they cannot embed, with an error naming its index.
// Once ctx is done Embed returns promptly with an error that wraps ctx's
// error.
//
// Model names the model and its vector size, such as
// "text-embedding-3-small@1536": vectors are comparable only when they
// come from the same Model, so whoever stores vectors stores the Model with
// them and never compares vectors of two models.
//
// Implementations are safe for concurrent use.
type Embedder interface {
	Model() string
	Dimensions() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedUsage counts what one Embed cost, as the provider reports it.
type EmbedUsage struct {
	// Tokens is the number of input tokens, 0 when the provider reports
	// none.
	Tokens int64
}

// UsageEmbedder is an Embedder that also reports the tokens an Embed used.
// EmbedWithUsage is Embed with the usage of its requests (summed when it
// made several).
//
// Implementations are safe for concurrent use.
type UsageEmbedder interface {
	Embedder
	EmbedWithUsage(ctx context.Context, texts []string) ([][]float32, EmbedUsage, error)
}

// EmbedError is a problem with one text or vector of an Embed: a text the
// embedder refuses, or an answer that is not what Embedder promises.
type EmbedError struct {
	// Model is the Embedder's Model().
	Model string
	// Index is the index of the text in the Embed's texts, -1 when the
	// problem is not one text's (such as a wrong number of vectors).
	Index int
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error when there is one, such as the inner
	// embedder's failure that a CachedEmbedder renumbers; it is not part
	// of Error().
	Err error
}

// Error returns "embedding model M: text I: Msg", without the text part
// when Index is -1.
func (e *EmbedError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("embedding model %s: %s", e.Model, e.Msg)
	}
	return fmt.Sprintf("embedding model %s: text %d: %s", e.Model, e.Index, e.Msg)
}

// Unwrap returns Err.
func (e *EmbedError) Unwrap() error { return e.Err }

// NormalizeEmbeddings checks the vectors an embedding model returned for n
// texts and scales each to unit length, in place. It returns an
// *EmbedError naming model and the text's index for the first problem: a
// number of vectors other than n, a vector of other than dims components,
// a NaN or infinite component, or a zero vector (which has no direction).
func NormalizeEmbeddings(model string, dims, n int, vecs [][]float32) error {
	norms, err := checkEmbeddings(model, dims, n, vecs)
	if err != nil {
		return err
	}
	for i, v := range vecs {
		s := 1 / norms[i]
		for j := range v {
			v[j] = float32(float64(v[j]) * s)
		}
	}
	return nil
}

// checkEmbeddings checks vecs as NormalizeEmbeddings does and returns each
// vector's length.
func checkEmbeddings(model string, dims, n int, vecs [][]float32) ([]float64, error) {
	if len(vecs) != n {
		return nil, &EmbedError{Model: model, Index: -1, Msg: fmt.Sprintf("%d vectors for %d texts", len(vecs), n)}
	}
	norms := make([]float64, n)
	for i, v := range vecs {
		if len(v) != dims {
			return nil, &EmbedError{Model: model, Index: i, Msg: fmt.Sprintf("vector has %d dimensions, want %d", len(v), dims)}
		}
		var sum float64
		for j, x := range v {
			f := float64(x)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, &EmbedError{Model: model, Index: i, Msg: fmt.Sprintf("component %d is %v", j, x)}
			}
			sum += f * f
		}
		if sum == 0 {
			return nil, &EmbedError{Model: model, Index: i, Msg: "zero vector"}
		}
		norms[i] = math.Sqrt(sum)
	}
	return norms, nil
}

// DefaultCacheEntries is the size of a CachedEmbedder made with a
// maxEntries ≤ 0.
const DefaultCacheEntries = 10000

// CachedEmbedder is an Embedder that remembers the vectors of the texts it
// embedded, keyed by the inner model's name and the text's SHA-256, and
// asks its inner Embedder only for the texts it does not hold. It keeps at
// most a fixed number of vectors, dropping the least recently used.
//
// It is safe for concurrent use. Two concurrent Embeds that both miss a text
// both ask for it.
type CachedEmbedder struct {
	inner Embedder
	max   int

	mu      sync.Mutex
	entries map[cacheKey]*list.Element // of *cacheEntry
	lru     list.List                  // front is the most recently used
	hits    int64
	misses  int64
}

// cacheKey names one text of one model.
type cacheKey struct {
	model string
	sum   [sha256.Size]byte
}

// cacheEntry is one cached vector.
type cacheEntry struct {
	key cacheKey
	vec []float32
}

// EmbedCacheStats is what a CachedEmbedder has done so far.
type EmbedCacheStats struct {
	// Hits and Misses count texts found and not found in the cache (a
	// text given twice in one Embed counts twice).
	Hits, Misses int64
	// Entries is the number of vectors held now.
	Entries int
}

var _ UsageEmbedder = (*CachedEmbedder)(nil)

// NewCachedEmbedder returns e with a cache of at most maxEntries vectors
// (DefaultCacheEntries when maxEntries ≤ 0).
func NewCachedEmbedder(e Embedder, maxEntries int) *CachedEmbedder {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	return &CachedEmbedder{inner: e, max: maxEntries, entries: make(map[cacheKey]*list.Element)}
}

// Model returns the inner Embedder's Model.
func (c *CachedEmbedder) Model() string { return c.inner.Model() }

// Dimensions returns the inner Embedder's Dimensions.
func (c *CachedEmbedder) Dimensions() int { return c.inner.Dimensions() }

// Embed returns the vectors of texts: those in the cache from it, the
// others from one Embed of the inner Embedder with each missing text once,
// which are then cached. An error of the inner Embedder is returned as it
// is, and nothing is cached; but when it holds an *EmbedError naming one
// of the texts sent, it is wrapped in an *EmbedError naming the text's
// index in texts.
func (c *CachedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, _, err := c.EmbedWithUsage(ctx, texts)
	return vecs, err
}

// EmbedWithUsage is Embed with the usage of the inner Embed: zero when every
// text was cached or the inner Embedder is not a UsageEmbedder.
func (c *CachedEmbedder) EmbedWithUsage(ctx context.Context, texts []string) ([][]float32, EmbedUsage, error) {
	model := c.inner.Model()
	out := make([][]float32, len(texts))
	keys := make([]cacheKey, len(texts))
	hit := make([]bool, len(texts))
	for i, t := range texts {
		keys[i] = cacheKey{model: model, sum: sha256.Sum256([]byte(t))}
	}
	var (
		missing []string             // each missing text once
		wanted  = map[cacheKey]int{} // key → index in missing
	)
	c.mu.Lock()
	for i, k := range keys {
		if el, ok := c.entries[k]; ok {
			c.lru.MoveToFront(el)
			out[i] = slices.Clone(el.Value.(*cacheEntry).vec)
			hit[i] = true
			c.hits++
			continue
		}
		c.misses++
		if _, ok := wanted[k]; !ok {
			wanted[k] = len(missing)
			missing = append(missing, texts[i])
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, EmbedUsage{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, EmbedUsage{}, err
	}
	var (
		got   [][]float32
		usage EmbedUsage
		err   error
	)
	if u, ok := c.inner.(UsageEmbedder); ok {
		got, usage, err = u.EmbedWithUsage(ctx, missing)
	} else {
		got, err = c.inner.Embed(ctx, missing)
	}
	if err != nil {
		var ee *EmbedError
		if errors.As(err, &ee) && ee.Index >= 0 && ee.Index < len(missing) {
			k := cacheKey{model: model, sum: sha256.Sum256([]byte(missing[ee.Index]))}
			at := slices.Index(keys, k)
			err = &EmbedError{Model: ee.Model, Index: at, Msg: ee.Msg, Err: err}
		}
		return nil, usage, err
	}
	if _, err := checkEmbeddings(model, c.inner.Dimensions(), len(missing), got); err != nil {
		return nil, usage, err
	}
	c.mu.Lock()
	for k, j := range wanted {
		c.put(k, got[j])
	}
	c.mu.Unlock()
	for i, k := range keys {
		if !hit[i] {
			out[i] = slices.Clone(got[wanted[k]])
		}
	}
	return out, usage, nil
}

// put caches a copy of vec under k, dropping the least recently used
// entries beyond the bound. c.mu is held.
func (c *CachedEmbedder) put(k cacheKey, vec []float32) {
	if el, ok := c.entries[k]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.entries[k] = c.lru.PushFront(&cacheEntry{key: k, vec: slices.Clone(vec)})
	for c.lru.Len() > c.max {
		el := c.lru.Back()
		c.lru.Remove(el)
		delete(c.entries, el.Value.(*cacheEntry).key)
	}
}

// CacheStats returns the cache's counters.
func (c *CachedEmbedder) CacheStats() EmbedCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return EmbedCacheStats{Hits: c.hits, Misses: c.misses, Entries: c.lru.Len()}
}
