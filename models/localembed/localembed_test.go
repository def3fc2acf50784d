package localembed_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/localembed"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

func mustNew(t testing.TB, dims int) *localembed.Embedder {
	t.Helper()
	e, err := localembed.New(localembed.Config{Dimensions: dims})
	if err != nil {
		t.Fatalf("New(%d): %v", dims, err)
	}
	return e
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestNew(t *testing.T) {
	tests := []struct {
		dims      int
		wantDims  int
		wantModel string
	}{
		{0, 384, "local-ngram-v1@384"},
		{16, 16, "local-ngram-v1@16"},
		{4096, 4096, "local-ngram-v1@4096"},
		{15, 0, ""},
		{4097, 0, ""},
		{-1, 0, ""},
	}
	for _, tt := range tests {
		e, err := localembed.New(localembed.Config{Dimensions: tt.dims})
		if tt.wantDims == 0 {
			var ce *models.ConfigError
			if !errors.As(err, &ce) || ce.Field != "Dimensions" {
				t.Errorf("New(%d) = %v, want a *models.ConfigError for Dimensions", tt.dims, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("New(%d): %v", tt.dims, err)
		}
		if e.Dimensions() != tt.wantDims || e.Model() != tt.wantModel {
			t.Errorf("New(%d) = %d dimensions of %q, want %d of %q", tt.dims, e.Dimensions(), e.Model(), tt.wantDims, tt.wantModel)
		}
	}
}

// tickets are the support tickets of the neighbour tests.
var tickets = []string{
	"I was charged twice, please refund",
	"My parcel has not arrived yet",
	"How do I reset my password?",
	"The app crashes when I open settings",
	"Can I change the delivery address of my order?",
	"Cancel my subscription please",
}

func TestNearestTicket(t *testing.T) {
	e := mustNew(t, 0)
	tv, err := e.Embed(t.Context(), tickets)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	tests := []struct {
		query string
		want  int // index in tickets
	}{
		{"refund for a double charge", 0},
		{"double charged on my card", 0},
		{"where is my package, it did not arrive", 1},
		{"forgot password, cannot log in", 2},
		{"application crash on startup", 3},
		{"SUBSCRIPTION: cancel it!", 5},
	}
	for _, tt := range tests {
		q, err := e.Embed(t.Context(), []string{tt.query})
		if err != nil {
			t.Fatalf("Embed(%q): %v", tt.query, err)
		}
		best, bestScore := -1, math.Inf(-1)
		for i, v := range tv {
			if s := dot(q[0], v); s > bestScore {
				best, bestScore = i, s
			}
		}
		if best != tt.want {
			t.Errorf("nearest to %q = %q (%.3f), want %q (%.3f)", tt.query, tickets[best], bestScore, tickets[tt.want], dot(q[0], tv[tt.want]))
		}
	}
}

func TestSimilarity(t *testing.T) {
	e := mustNew(t, 0)
	tests := []struct {
		a, b     string
		min, max float64
	}{
		{"refund", "refund", 0.9999, 1.0001},
		{"Refund", "REFUND", 0.9999, 1.0001},
		{"ｒｅｆｕｎｄ", "refund", 0.9999, 1.0001},   // NFKC folds full-width letters
		{"café", "cafe\u0301", 0.9999, 1.0001}, // and composes accents
		{"charge", "charged", 0.5, 0.99},
		{"crash", "crashes", 0.3, 0.99},
		{"refund", "password", -0.2, 0.2},
	}
	for _, tt := range tests {
		v, err := e.Embed(t.Context(), []string{tt.a, tt.b})
		if err != nil {
			t.Fatalf("Embed: %v", err)
		}
		if s := dot(v[0], v[1]); s < tt.min || s > tt.max {
			t.Errorf("cosine(%q, %q) = %.3f, want between %v and %v", tt.a, tt.b, s, tt.min, tt.max)
		}
	}
}

func TestEmbedRefusesEmptyText(t *testing.T) {
	e := mustNew(t, 0)
	for _, text := range []string{"", " \t\n", "\u00a0"} {
		_, err := e.Embed(t.Context(), []string{"fine", text})
		var ee *models.EmbedError
		if !errors.As(err, &ee) || ee.Index != 1 || ee.Model != e.Model() {
			t.Errorf("Embed(%q) = %v, want an *EmbedError for text 1", text, err)
		}
	}
	// Texts without letters or digits embed by their tokens.
	v, err := e.Embed(t.Context(), []string{"?!", "🙂", "?!"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if !slices.Equal(v[0], v[2]) || dot(v[0], v[1]) > 0.5 {
		t.Errorf("vectors of ?!, 🙂, ?! = %v…, %v…, %v…; want the first and last equal and apart from the second", v[0][:4], v[1][:4], v[2][:4])
	}
	if got, err := e.Embed(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want no vectors", got, err)
	}
}

func TestEmbedCanceled(t *testing.T) {
	e := mustNew(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed = %v, want context.Canceled", err)
	}
}

// golden is one entry of testdata/golden.json: the first components of a
// text's vector and the SHA-256 of the whole vector (little-endian
// float32s), so that no change to the embedding goes unnoticed.
type golden struct {
	Model  string    `json:"model"`
	Text   string    `json:"text"`
	First  []float32 `json:"first"`
	SHA256 string    `json:"sha256"`
}

func TestGolden(t *testing.T) {
	texts := []string{
		"I was charged twice, please refund",
		"Straße ÉTÉ naïve café №5",
		"日本語のテキスト",
		"?!",
		strings.Repeat("long text ", 50),
	}
	var got []golden
	for _, dims := range []int{384, 16} {
		e := mustNew(t, dims)
		vecs, err := e.Embed(t.Context(), texts)
		if err != nil {
			t.Fatalf("Embed: %v", err)
		}
		for i, v := range vecs {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			sum := sha256.Sum256(b)
			got = append(got, golden{Model: e.Model(), Text: texts[i], First: v[:8], SHA256: hex.EncodeToString(sum[:])})
		}
	}
	path := filepath.Join("testdata", "golden.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./models/localembed -update)", err)
	}
	var want []golden
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d vectors, %s has %d", len(got), path, len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Model != w.Model || g.Text != w.Text || g.SHA256 != w.SHA256 || !slices.Equal(g.First, w.First) {
			t.Errorf("vector of %q by %s = %v… (%s), want %v… (%s): a changed embedding needs a new Version", g.Text, g.Model, g.First, g.SHA256, w.First, w.SHA256)
		}
	}
}

func FuzzEmbed(f *testing.F) {
	for _, s := range []string{"", " ", "refund", "I was charged twice, please refund", "日本語", "🙂", "?!", "a\u0301", "\xff\xfe", "ｒｅｆｕｎｄ", "ﬁ ligature"} {
		f.Add(s)
	}
	e, err := localembed.New(localembed.Config{Dimensions: 64})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := e.Embed(context.Background(), []string{text})
		if err != nil {
			var ee *models.EmbedError
			if !errors.As(err, &ee) || ee.Index != 0 {
				t.Fatalf("Embed(%q) = %v, want an *EmbedError for text 0", text, err)
			}
			if strings.TrimSpace(text) != "" && utf8.ValidString(text) {
				t.Logf("Embed(%q) refused: %v", text, err)
			}
			return
		}
		if len(v) != 1 || len(v[0]) != 64 {
			t.Fatalf("Embed(%q) = %d vectors, want one of 64", text, len(v))
		}
		if n := math.Sqrt(dot(v[0], v[0])); math.Abs(n-1) > 1e-5 {
			t.Fatalf("Embed(%q) has length %v, want 1", text, n)
		}
	})
}

func BenchmarkEmbed1KB(b *testing.B) {
	e := mustNew(b, 0)
	var sb strings.Builder
	for i := 0; sb.Len() < 1024; i++ {
		fmt.Fprintf(&sb, "%s %d ", tickets[i%len(tickets)], i)
	}
	text := []string{sb.String()[:1024]}
	b.SetBytes(1024)
	for b.Loop() {
		if _, err := e.Embed(context.Background(), text); err != nil {
			b.Fatal(err)
		}
	}
}

func Example() {
	e, err := localembed.New(localembed.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	texts := []string{"refund for a double charge", "I was charged twice, please refund", "My parcel has not arrived yet"}
	v, err := e.Embed(context.Background(), texts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Model())
	fmt.Printf("%.2f %.2f\n", dot(v[0], v[1]), dot(v[0], v[2]))
	// Output:
	// local-ngram-v1@384
	// 0.43 0.03
}
