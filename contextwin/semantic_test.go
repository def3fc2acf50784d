package contextwin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
)

// mustCompile compiles a path or fails the test.
func mustCompile(tb testing.TB, src string) *jsonpath.Path {
	tb.Helper()
	p, err := jsonpath.Compile(src)
	if err != nil {
		tb.Fatalf("Compile(%q): %v", src, err)
	}
	return p
}

// fakeEmbedder gives each text the vector vecs holds for it ([0, 0] for
// the others) and records the texts of each call.
type fakeEmbedder struct {
	vecs  map[string][]float32
	mu    sync.Mutex
	calls [][]string
	err   error
}

func (f *fakeEmbedder) embed(_ context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(texts))
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := f.vecs[t]
		if !ok {
			v = []float32{0, 0}
		}
		out[i] = v
	}
	return out, nil
}

// similar holds vectors whose cosine with the query "refunds" is known:
// alpha 0, beta 1, gamma 0.6, delta 1 (not of unit length), epsilon -1.
var similar = map[string][]float32{
	"refunds": {1, 0},
	"alpha":   {0, 1},
	"beta":    {1, 0},
	"gamma":   {3, 4},
	"delta":   {2, 0},
	"epsilon": {-3, 0},
	// Texts of non-string candidates: their JSON.
	`{"t":"beta"}`:  {1, 0},
	`{"t":"gamma"}`: {3, 4},
	`{"t":"alpha"}`: {0, 1},
}

func TestSemantic(t *testing.T) {
	big := func(s string) string { return text(s+" ", 40) }
	vecs := maps.Clone(similar)
	for _, s := range []string{"alpha", "beta", "gamma", "delta"} {
		vecs[big(s)] = similar[s]
	}
	tests := []struct {
		name    string
		block   string
		input   string
		query   string
		want    string
		dropped []string
		picked  []Pick
		texts   []string // the embedder's one call; nil: not called
	}{
		{
			name:    "the TopK best stay, equal scores in document order",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 2}`,
			input:   `{"docs": ["alpha", "beta", "gamma", "delta"], "q": "refunds"}`,
			query:   "refunds",
			want:    `{"docs": ["beta", "delta"], "q": "refunds"}`,
			dropped: []string{"$.docs[0]", "$.docs[2]"},
			picked:  []Pick{{"$.docs[1]", 1}, {"$.docs[3]", 1}},
			texts:   []string{"refunds", "alpha", "beta", "gamma", "delta"},
		},
		{
			name:   "a TopK over the candidates keeps them all",
			block:  `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 10}`,
			input:  `{"docs": ["alpha", "gamma", "epsilon"]}`,
			query:  "refunds",
			want:   `{"docs": ["alpha", "gamma", "epsilon"]}`,
			picked: []Pick{{"$.docs[1]", 0.6}, {"$.docs[0]", 0}, {"$.docs[2]", -1}},
			texts:  []string{"refunds", "alpha", "gamma", "epsilon"},
		},
		{
			name:    "several paths, a location selected twice counts once",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.b", "$.a", "$.b"], "TopK": 1}`,
			input:   `{"a": "gamma", "b": "beta", "c": "alpha"}`,
			query:   "refunds",
			want:    `{"b": "beta", "c": "alpha"}`,
			dropped: []string{"$.a"},
			picked:  []Pick{{"$.b", 1}},
			texts:   []string{"refunds", "gamma", "beta"},
		},
		{
			name:    "Include protects a candidate that is not picked",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 1, "Include": ["$.docs[0]"]}`,
			input:   `{"docs": ["alpha", "beta", "gamma", "delta"]}`,
			query:   "refunds",
			want:    `{"docs": ["alpha", "beta"]}`,
			dropped: []string{"$.docs[2:4]"},
			picked:  []Pick{{"$.docs[1]", 1}},
			texts:   []string{"refunds", "alpha", "beta", "gamma", "delta"},
		},
		{
			name:    "an excluded candidate is not scored",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 1, "Exclude": ["$.docs[1]"]}`,
			input:   `{"docs": ["alpha", "beta", "gamma", "delta"]}`,
			query:   "refunds",
			want:    `{"docs": ["delta"]}`,
			dropped: []string{"$.docs[0:3]"},
			picked:  []Pick{{"$.docs[3]", 1}},
			texts:   []string{"refunds", "alpha", "gamma", "delta"},
		},
		{
			name:    "an object's text is its JSON, after Exclude",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 1, "Exclude": ["$.docs[*].secret"]}`,
			input:   `{"docs": [{"t": "alpha", "secret": 1}, {"t": "gamma"}, {"t": "beta", "secret": 2}]}`,
			query:   "refunds",
			want:    `{"docs": [{"t": "beta"}]}`,
			dropped: []string{"$.docs[0:2]", "$.docs[2].secret"},
			picked:  []Pick{{"$.docs[2]", 1}},
			texts:   []string{"refunds", `{"t":"alpha"}`, `{"t":"gamma"}`, `{"t":"beta"}`},
		},
		{
			name:    "a picked candidate inside a dropped one stays",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]", "$.docs[*].t"], "TopK": 1}`,
			input:   `{"docs": [{"t": "beta", "n": 1}]}`,
			query:   "refunds",
			want:    `{"docs": [{"t": "beta"}]}`,
			dropped: []string{"$.docs[0].n"},
			picked:  []Pick{{"$.docs[0].t", 1}},
			texts:   []string{"refunds", `{"n":1,"t":"beta"}`, "beta"},
		},
		{
			name:    "a blank candidate is not embedded and scores 0",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 2}`,
			input:   `{"docs": ["epsilon", " ", "alpha", ""]}`,
			query:   "refunds",
			want:    `{"docs": [" ", "alpha"]}`,
			dropped: []string{"$.docs[0]", "$.docs[3]"},
			picked:  []Pick{{"$.docs[1]", 0}, {"$.docs[2]", 0}},
			texts:   []string{"refunds", "epsilon", "alpha"},
		},
		{
			name:    "only blank candidates: no embedder call",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 1}`,
			input:   `{"docs": ["", "\t"]}`,
			query:   "refunds",
			want:    `{"docs": [""]}`,
			dropped: []string{"$.docs[1]"},
			picked:  []Pick{{"$.docs[0]", 0}},
		},
		{
			name:   "no candidate in the input: no embedder call",
			block:  `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.missing[*]"], "TopK": 3}`,
			input:  `{"docs": ["alpha"]}`,
			query:  "refunds",
			want:   `{"docs": ["alpha"]}`,
			picked: []Pick{},
		},
		{
			// Each big string is 40 runes: after the pick the docs are
			// 83 runes, the whole 97 (25 tokens), over MaxTokens 20.
			name:    "then a sliding window when it does not fit",
			block:   `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 2, "MaxTokens": 20}`,
			input:   `{"docs": [` + fmt.Sprintf("%q,%q,%q", big("beta"), big("alpha"), big("delta")) + `], "q": "refunds"}`,
			query:   "refunds",
			want:    `{"docs": [` + fmt.Sprintf("%q", big("delta")) + `], "q": "refunds"}`,
			dropped: []string{"$.docs[0:2]"},
			picked:  []Pick{{"$.docs[0]", 1}, {"$.docs[2]", 1}},
			texts:   []string{"refunds", big("beta"), big("alpha"), big("delta")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseContext(t, tt.block)
			input := mustDecode(t, tt.input)
			before := compact(t, input)
			e := &fakeEmbedder{vecs: vecs}
			w, err := BuildWith(context.Background(), cfg, input, Funcs{Embed: e.embed, Query: tt.query})
			if err != nil {
				t.Fatalf("BuildWith: %v", err)
			}
			if got, want := compact(t, w.Content), compact(t, mustDecode(t, tt.want)); got != want {
				t.Errorf("Content = %s\nwant      %s", got, want)
			}
			if !reflect.DeepEqual(w.Dropped, tt.dropped) {
				t.Errorf("Dropped = %q, want %q", w.Dropped, tt.dropped)
			}
			if !reflect.DeepEqual(w.Picked, tt.picked) {
				t.Errorf("Picked = %v, want %v", w.Picked, tt.picked)
			}
			var want [][]string
			if tt.texts != nil {
				want = [][]string{tt.texts}
			}
			if !reflect.DeepEqual(e.calls, want) {
				t.Errorf("embedder calls = %q, want %q", e.calls, want)
			}
			checkWindow(t, cfg.MaxTokens, w)
			if after := compact(t, input); after != before {
				t.Errorf("BuildWith changed its input to %s, was %s", after, before)
			}
		})
	}
}

func TestSemanticOverflow(t *testing.T) {
	cfg := parseContext(t, `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 1, "MaxTokens": 2, "Include": ["$.docs[*]"]}`)
	input := mustDecode(t, `{"docs": ["alpha", "beta", "gamma"]}`)
	e := &fakeEmbedder{vecs: similar}
	_, err := BuildWith(context.Background(), cfg, input, Funcs{Embed: e.embed, Query: "refunds"})
	var ae *asl.Error
	if !errors.As(err, &ae) || ae.Name != asl.ErrAgentContextOverflow {
		t.Fatalf("BuildWith error = %v, want Agent.ContextOverflow", err)
	}
}

func TestSemanticEmbedderErrors(t *testing.T) {
	cfg := parseContext(t, `{"Strategy": "semantic", "Query": "x", "Candidates": ["$.docs[*]"], "TopK": 1}`)
	input := mustDecode(t, `{"docs": ["alpha", "beta"]}`)
	named := asl.Errorf(asl.ErrAgentModelError, "the embedder is down")
	tests := []struct {
		name  string
		embed Embedder
		want  asl.ErrorName // "": a plain error
	}{
		{"an *asl.Error keeps its name", (&fakeEmbedder{err: named}).embed, asl.ErrAgentModelError},
		{"a plain error", (&fakeEmbedder{err: errors.New("boom")}).embed, ""},
		{"a blank query", (&fakeEmbedder{vecs: similar}).embed, ""},
		{"too few vectors", func(context.Context, []string) ([][]float32, error) { return [][]float32{{1}}, nil }, ""},
		{"vectors of different lengths", func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = make([]float32, i+1)
			}
			return out, nil
		}, ""},
		{"a NaN", func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = []float32{float32(nan()), 1}
			}
			return out, nil
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			query := "q"
			if tt.name == "a blank query" {
				query = " \n"
			}
			w, err := BuildWith(context.Background(), cfg, input, Funcs{Embed: tt.embed, Query: query})
			if err == nil {
				t.Fatalf("BuildWith = %s, nil; want an error", compact(t, w.Content))
			}
			var ae *asl.Error
			switch {
			case tt.want == "" && errors.As(err, &ae):
				t.Errorf("BuildWith error = %v, an *asl.Error; want a plain error", err)
			case tt.want != "" && (!errors.As(err, &ae) || ae.Name != tt.want):
				t.Errorf("BuildWith error = %v, want an *asl.Error named %s", err, tt.want)
			}
		})
	}
}

// nan returns a NaN the compiler does not fold.
func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestCosine(t *testing.T) {
	tests := []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{1, 0}, 1},
		{[]float32{3, 4}, []float32{6, 8}, 1},
		{[]float32{1, 0}, []float32{0, 5}, 0},
		{[]float32{1, 1}, []float32{-1, -1}, -1},
		{[]float32{0, 0}, []float32{1, 0}, 0},
		{[]float32{}, []float32{}, 0},
	}
	for _, tt := range tests {
		got, err := cosine(tt.a, tt.b)
		if err != nil || got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("cosine(%v, %v) = %v, %v; want %v", tt.a, tt.b, got, err, tt.want)
		}
	}
}

func TestStrategySummarize(t *testing.T) {
	// {"h":[10 strings of 40 runes],"q":…} is 462 runes, 116 tokens.
	hq := `{"h":[` + strs("e", 10, 40) + `],"q":` + str("q", 40) + `}`
	runBuildCases(t, []buildCase{
		{
			name:       "it summarizes even what fits",
			block:      `{"Strategy": "summarize", "MaxTokens": 500, "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      hq,
			want:       `{"h":"S(487)","q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 487}},
		},
		{
			name:       "without a limit the summarizer decides",
			block:      `{"Strategy": "summarize", "Summarize": {"Using": "sum"}}`,
			input:      hq,
			want:       `"S(0)"`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: hq, Target: 0}},
		},
		{
			// The summary of $.h is 1 + 50 + … runes: too large, so the
			// sliding window drops the top-level members but the summary.
			name:       "then a sliding window when the summary is too large",
			block:      `{"Strategy": "summarize", "MaxTokens": 20, "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      `{"h":[` + strs("e", 10, 40) + `],"q":` + str("q", 40) + `,"z":` + str("z", 40) + `}`,
			want:       `{"h":` + str("long", 60) + `}`,
			dropped:    []string{"$.q", "$.z"},
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 1}},
			reply:      func(any, int64) (any, error) { return text("long", 58), nil },
		},
	})
}

func TestWindowJSONPicked(t *testing.T) {
	w := &Window{Tokens: 3, Picked: []Pick{{"$.docs[1]", 0.75}, {"$.docs[0]", -0.5}}}
	got := compact(t, w.JSON())
	want := `{"dropped":[],"picked":[{"path":"$.docs[1]","score":0.75},{"path":"$.docs[0]","score":-0.5}],"summarized":false,"tokens":3}`
	if got != want {
		t.Errorf("JSON() = %s, want %s", got, want)
	}
	none := compact(t, (&Window{Picked: []Pick{}}).JSON())
	if want := `{"dropped":[],"picked":[],"summarized":false,"tokens":0}`; none != want {
		t.Errorf("JSON() with no picks = %s, want %s", none, want)
	}
}
