package contextwin

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds Strategy "semantic": the candidates are scored by their
// similarity to the query, the TopK best stay and the others are dropped.
// The rules are written down in doc.go.

// Embedder turns texts into vectors, one per text and in order, all of the
// same length. BuildWith calls it once per window, with the query first
// and then the text of every candidate that is not blank; no text it gets
// is empty or only white space. The engine passes its embedder (the
// offline n-gram one by default). An error is returned by Build as it is,
// wrapped: an *asl.Error keeps its name.
//
// It must be safe for concurrent use when Build is called concurrently.
type Embedder func(ctx context.Context, texts []string) ([][]float32, error)

// Pick is a candidate Strategy "semantic" kept.
type Pick struct {
	// Path is the candidate's location in the input, in JSONPath syntax
	// ($.docs[3]), as Dropped writes locations.
	Path string
	// Score is the cosine similarity of the candidate's text to the
	// query, from -1 to 1.
	Score float64
}

// candidate is a location a Candidates path selects, with its text.
type candidate struct {
	at    loc
	text  string
	score float64
}

// semantic keeps the TopK candidates most similar to the query and drops
// the others (except what Include protects and what a kept candidate
// holds), and records the picks.
func (b *builder) semantic(ctx context.Context, f Funcs) error {
	cands, err := b.candidates()
	if err != nil {
		return err
	}
	b.picked = []Pick{}
	if len(cands) == 0 {
		return nil
	}
	if strings.TrimSpace(f.Query) == "" {
		return fmt.Errorf("context window: the query of Strategy \"semantic\" is blank, so there is nothing to compare its %d candidates with", len(cands))
	}
	// Blank candidates have no meaning to embed: they score 0.
	texts := []string{f.Query}
	var embedded []int
	for i, c := range cands {
		if strings.TrimSpace(c.text) != "" {
			texts = append(texts, c.text)
			embedded = append(embedded, i)
		}
	}
	if len(embedded) > 0 {
		if f.Embed == nil {
			return fmt.Errorf("context window: Strategy \"semantic\" has %d candidates to score but no embedder was given", len(embedded))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("context window: %w", err)
		}
		vecs, err := f.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("context window: embedding the query and %d candidates: %w", len(embedded), err)
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("context window: the embedder gave %d vectors for %d texts (the query and %d candidates)", len(vecs), len(texts), len(embedded))
		}
		for j, i := range embedded {
			s, err := cosine(vecs[0], vecs[j+1])
			if err != nil {
				return fmt.Errorf("context window: candidate %s: %w", cands[i].at, err)
			}
			cands[i].score = s
		}
	}
	// cands is in document order: a stable sort keeps it among equal scores.
	ranked := slices.Clone(cands)
	slices.SortStableFunc(ranked, func(x, y candidate) int { return cmp.Compare(y.score, x.score) })
	k := min(int(b.cfg.TopK), len(ranked))
	keep := &trie{}
	for _, c := range ranked[:k] {
		keep.add(c.at)
		b.picked = append(b.picked, Pick{Path: c.at.String(), Score: c.score})
	}
	for _, c := range ranked[k:] {
		b.w.drop(c.at, b.protect, keep)
	}
	return nil
}

// candidates returns the locations the Candidates paths select that are
// still in the window (after Exclude), each once, in document order, with
// their texts: a string as it is, any other value as its JSON text (object
// keys sorted), without what Exclude removed.
func (b *builder) candidates() ([]candidate, error) {
	var locs []loc
	for _, p := range b.cfg.Candidates {
		found, err := locate(p, b.w.root.val)
		if err != nil {
			return nil, fmt.Errorf("context window: candidates: %w", err)
		}
		locs = append(locs, found...)
	}
	slices.SortFunc(locs, compareLoc)
	locs = slices.CompactFunc(locs, func(x, y loc) bool { return compareLoc(x, y) == 0 })
	out := make([]candidate, 0, len(locs))
	for _, l := range locs {
		if !b.w.present(l) {
			continue
		}
		v := b.w.current(b.w.node(l))
		s, ok := v.(string)
		if !ok {
			text, err := jsonvalue.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("context window: candidate %s: %w", l, err)
			}
			s = string(text)
		}
		out = append(out, candidate{at: l, text: s})
	}
	return out, nil
}

// cosine returns the cosine similarity of a and b, computed in float64:
// their dot product over the product of their lengths, 0 when either is
// all zeros. Vectors of different lengths, or holding a NaN or an
// infinity, are an error.
func cosine(a, b []float32) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("the embedder gave a vector of %d dimensions for it and one of %d for the query", len(b), len(a))
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if math.IsNaN(dot) || math.IsInf(dot, 0) || math.IsInf(na, 0) || math.IsInf(nb, 0) {
		return 0, fmt.Errorf("the embedder gave a vector that is not finite")
	}
	if na == 0 || nb == 0 {
		return 0, nil
	}
	s := dot / (math.Sqrt(na) * math.Sqrt(nb))
	return max(-1, min(1, s)), nil
}
