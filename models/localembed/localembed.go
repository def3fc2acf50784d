// Package localembed is a models.Embedder that needs no model and no
// network: it hashes the words of a text and their character n-grams into a
// vector. Texts that share words, or parts of words ("charge", "charged"),
// get close vectors; it knows nothing of synonyms or meaning. It is meant
// for tests, examples and offline runs, and its vectors never change for a
// given Model name.
//
// A text is NFKC-normalised and lower-cased, then cut into words: runs of
// letters, digits and combining marks (a text with none falls back to its
// white-space separated tokens, so "🙂" or "?!" still embed). Each word adds
// one feature for itself and one for each of its 3-, 4- and 5-rune n-grams
// taken with a boundary mark at either end ("<ch", "cha", …, "ge>"), the
// word's n-grams weighing more than the word itself and short words less
// than long ones. Each feature is hashed (64-bit FNV-1a, then mixed) to one
// of the vector's components and a sign, and added there; the sum is
// scaled to unit length.
package localembed

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/aslrun/aslrun/models"
)

const (
	// DefaultDimensions is Config.Dimensions when it is zero.
	DefaultDimensions = 384
	// MinDimensions and MaxDimensions bound Config.Dimensions.
	MinDimensions, MaxDimensions = 16, 4096
	// Version is the version of the features and the hashing. It is part
	// of Model, and changes whenever a vector would.
	Version = 1
)

// The weights of a word's features. Its n-grams together weigh
// gramsWeight (each gramsWeight / √count, the n-grams falling mostly on
// distinct components) and its own feature wordWeight, so a shared stem
// counts for more than a shared whole word does. A word of fewer than
// shortWord runes weighs proportionally less ("a", "my", "of" carry little).
const (
	wordWeight  = 0.5
	gramsWeight = 1.0
	shortWord   = 4
)

// Hash seeds that keep the kinds of features apart.
const (
	kindWord = 'w'
	kindGram = 'g'
)

// Config sets up an Embedder. Its zero value works.
type Config struct {
	// Dimensions is the size of the vectors: DefaultDimensions when zero,
	// else between MinDimensions and MaxDimensions.
	Dimensions int
}

// Embedder is the hashing embedder. It is immutable and safe for
// concurrent use.
type Embedder struct {
	dims  int
	model string
}

var _ models.Embedder = (*Embedder)(nil)

// New returns the Embedder cfg describes, or a *models.ConfigError when
// cfg.Dimensions is out of bounds.
func New(cfg Config) (*Embedder, error) {
	d := cfg.Dimensions
	if d == 0 {
		d = DefaultDimensions
	}
	if d < MinDimensions || d > MaxDimensions {
		return nil, &models.ConfigError{Field: "Dimensions", Msg: fmt.Sprintf("%d is not between %d and %d", cfg.Dimensions, MinDimensions, MaxDimensions)}
	}
	return &Embedder{dims: d, model: "local-ngram-v" + strconv.Itoa(Version) + "@" + strconv.Itoa(d)}, nil
}

// Model returns "local-ngram-v1@384": the version of the features and the
// number of dimensions.
func (e *Embedder) Model() string { return e.model }

// Dimensions returns the size of the vectors.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns the unit vector of each text. It refuses, with a
// *models.EmbedError naming its index, a text that is empty or only white
// space (it has no direction to give), and one whose features happen to
// cancel out. It returns ctx's error once ctx is done.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	acc := make([]float64, e.dims)
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		clear(acc)
		if !e.accumulate(acc, t) {
			return nil, &models.EmbedError{Model: e.model, Index: i, Msg: "empty text"}
		}
		var sum float64
		for _, x := range acc {
			sum += x * x
		}
		if sum == 0 {
			return nil, &models.EmbedError{Model: e.model, Index: i, Msg: "the text's features cancel out"}
		}
		s := 1 / math.Sqrt(sum)
		v := make([]float32, e.dims)
		for j, x := range acc {
			v[j] = float32(x * s)
		}
		out[i] = v
	}
	return out, nil
}

// accumulate adds the features of text to acc and reports whether it had
// any.
func (e *Embedder) accumulate(acc []float64, text string) bool {
	text = strings.ToLower(norm.NFKC.String(text))
	var buf []rune
	words := 0
	for w := range strings.FieldsFuncSeq(text, notWordRune) {
		buf = e.word(acc, w, buf)
		words++
	}
	if words > 0 {
		return true
	}
	for w := range strings.FieldsSeq(text) {
		buf = e.word(acc, w, buf)
		words++
	}
	return words > 0
}

// notWordRune reports whether r ends a word.
func notWordRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
}

// word adds the features of w to acc, using buf as scratch space, and
// returns buf.
func (e *Embedder) word(acc []float64, w string, buf []rune) []rune {
	buf = append(buf[:0], '<')
	for _, r := range w {
		buf = append(buf, r)
	}
	buf = append(buf, '>')
	n := len(buf)
	scale := float64(min(n-2, shortWord)) / shortWord
	e.add(acc, fnvString(seed(kindWord), w), scale*wordWeight)
	grams := 0
	for size := 3; size <= 5; size++ {
		grams += max(n-size+1, 0)
	}
	weight := scale * gramsWeight / math.Sqrt(float64(grams))
	for i := 0; i+3 <= n; i++ {
		h := seed(kindGram)
		for j := i; j < i+5 && j < n; j++ {
			h = fnvRune(h, buf[j])
			if j-i+1 >= 3 {
				e.add(acc, h, weight)
			}
		}
	}
	return buf
}

// add adds weight, with the sign h gives, to the component h gives.
func (e *Embedder) add(acc []float64, h uint64, weight float64) {
	h = mix(h)
	if h>>63 == 1 {
		weight = -weight
	}
	acc[(h&math.MaxUint32)%uint64(e.dims)] += weight
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// seed starts a hash of a feature of kind.
func seed(kind byte) uint64 { return (fnvOffset ^ uint64(kind)) * fnvPrime }

// fnvString continues the FNV-1a hash h with the bytes of s.
func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// fnvRune continues the FNV-1a hash h with the UTF-8 bytes of r.
func fnvRune(h uint64, r rune) uint64 {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	for _, c := range b[:n] {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// mix spreads the bits of h (the finaliser of MurmurHash3), so that its
// low bits pick the component and its top bit the sign independently.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
