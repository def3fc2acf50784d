package contextwin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

func TestBuildWithoutConfig(t *testing.T) {
	input := mustDecode(t, `{"a":[1,2,3],"b":"text"}`)
	w, err := Build(context.Background(), nil, input, nil)
	if err != nil {
		t.Fatalf("Build(nil config): %v", err)
	}
	if reflect.ValueOf(w.Content).UnsafePointer() != reflect.ValueOf(input).UnsafePointer() {
		t.Errorf("Build(nil config) Content = %s, a copy; want the input itself", compact(t, w.Content))
	}
	if w.Tokens != 6 || w.Dropped != nil || w.Summarized {
		t.Errorf("Build(nil config) = {Tokens: %d, Dropped: %q, Summarized: %v}, want {6, [], false}", w.Tokens, w.Dropped, w.Summarized)
	}
}

func TestBuildSharesWhatDidNotChange(t *testing.T) {
	input := mustDecode(t, `{"h":[`+strs("e", 10, 40)+`],"keep":{"x":[1,2]},"list":[{"a":1}]}`)
	t.Run("nothing changes", func(t *testing.T) {
		w, err := Build(context.Background(), parseContext(t, `{"MaxTokens": 1000}`), input, nil)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if reflect.ValueOf(w.Content).UnsafePointer() != reflect.ValueOf(input).UnsafePointer() {
			t.Errorf("Content is a copy of the input; want the input itself")
		}
	})
	t.Run("a part changes", func(t *testing.T) {
		w, err := Build(context.Background(), parseContext(t, `{"MaxTokens": 60}`), input, nil)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		got, ok := w.Content.(map[string]any)
		if !ok {
			t.Fatalf("Content = %s, want an object", compact(t, w.Content))
		}
		in := input.(map[string]any)
		if reflect.ValueOf(got["keep"]).UnsafePointer() != reflect.ValueOf(in["keep"]).UnsafePointer() {
			t.Errorf("Content.keep is a copy; want the input's")
		}
		h, _ := got["h"].([]any)
		inH := in["h"].([]any)
		if len(h) == 0 || len(h) == len(inH) {
			t.Fatalf("Content.h has %d elements, want some of %d dropped", len(h), len(inH))
		}
		if &h[0] == &inH[len(inH)-len(h)] {
			t.Errorf("Content.h shares the input's backing array; want a new array")
		}
	})
}

func TestBuildCountsRunes(t *testing.T) {
	// Non-ASCII characters count one each, escapes as written: "é" is 1
	// rune, "\n" 2, "\u0001" 6. Each element below is 42 runes of JSON.
	a := `"` + text("é", 40) + `"`
	b := `"\n` + text("", 38) + `"`
	c := `"\u0001` + text("", 34) + `"`
	runBuildCases(t, []buildCase{
		{
			// {"ü":[a,b,c]} is 2+4+2+3×42+2 = 136 runes: 34 tokens.
			name:  "exactly at the limit",
			block: `{"MaxTokens": 34}`,
			input: `{"ü":[` + a + `,` + b + `,` + c + `]}`,
			want:  `{"ü":[` + a + `,` + b + `,` + c + `]}`,
		},
		{
			name:    "one token less",
			block:   `{"MaxTokens": 33}`,
			input:   `{"ü":[` + a + `,` + b + `,` + c + `]}`,
			want:    `{"ü":[` + b + `,` + c + `]}`,
			dropped: []string{"$['ü'][0]"},
		},
	})
}

func TestBuildConfigErrors(t *testing.T) {
	ctxPath, err := jsonpath.Compile("$$.Execution.Input")
	if err != nil {
		t.Fatal(err)
	}
	varPath, err := jsonpath.Compile("$v.x")
	if err != nil {
		t.Fatal(err)
	}
	input := mustDecode(t, `{"a":[1,2,3]}`)
	tests := []struct {
		name  string
		cfg   *states.ContextConfig
		input any
	}{
		{"an unknown strategy", &states.ContextConfig{Strategy: "random"}, input},
		{"semantic without Candidates", &states.ContextConfig{Strategy: "semantic", TopK: 1}, input},
		{"semantic without TopK", &states.ContextConfig{Strategy: "semantic", Candidates: []*jsonpath.Path{mustCompile(t, "$.a[*]")}}, input},
		{"semantic without an embedder", &states.ContextConfig{Strategy: "semantic", TopK: 1, Candidates: []*jsonpath.Path{mustCompile(t, "$.a[*]")}}, input},
		{"a Candidates path on the context object", &states.ContextConfig{Strategy: "semantic", TopK: 1, Candidates: []*jsonpath.Path{ctxPath}}, input},
		{"summarize without Summarize", &states.ContextConfig{Strategy: "summarize"}, input},
		{"a negative MaxTokens", &states.ContextConfig{MaxTokens: -1}, input},
		{"an Exclude path on the context object", &states.ContextConfig{Exclude: []*jsonpath.Path{ctxPath}}, input},
		{"an Include path on a variable", &states.ContextConfig{Include: []*jsonpath.Path{varPath}}, input},
		{"a Priority path on the context object", &states.ContextConfig{Strategy: "priority_based", MaxTokens: 1, Priority: []*jsonpath.Path{ctxPath}}, input},
		{"an input outside the JSON model", &states.ContextConfig{}, map[string]any{"c": make(chan int)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Build(context.Background(), tt.cfg, tt.input, nil)
			if err == nil {
				t.Fatalf("Build = %s, nil; want an error", compact(t, w.Content))
			}
			var ae *asl.Error
			if errors.As(err, &ae) {
				t.Errorf("Build error = %v, an *asl.Error; want a plain error", err)
			}
		})
	}
	t.Run("no config, an input outside the JSON model", func(t *testing.T) {
		if _, err := Build(context.Background(), nil, make(chan int), nil); err == nil {
			t.Errorf("Build(nil, chan) = nil error, want one")
		}
	})
}

// wideInput returns an object of many members of various kinds, so that
// map iteration order would show if it leaked into the result.
func wideInput(tb testing.TB) any {
	tb.Helper()
	m := make(map[string]any)
	for i := range 60 {
		key := fmt.Sprintf("k%02d", (i*37)%60)
		switch i % 3 {
		case 0:
			var arr []any
			for j := range i%7 + 1 {
				arr = append(arr, text(fmt.Sprintf("%s-%d", key, j), 20+i%5))
			}
			m[key] = arr
		case 1:
			m[key] = map[string]any{"a": text(key, 30), "b": []any{json(i), json(i + 1)}}
		default:
			m[key] = text(key, 10+i)
		}
	}
	return m
}

func json(i int) any { return jsonvalue.IntNumber(int64(i)) }

func TestBuildIsDeterministic(t *testing.T) {
	input := wideInput(t)
	blocks := []string{
		`{"MaxTokens": 300}`,
		`{"MaxTokens": 300, "Include": ["$.k03", "$..a"]}`,
		`{"Strategy": "priority_based", "MaxTokens": 200, "Priority": ["$.k10", "$..b", "$.k20[*]"]}`,
		`{"MaxTokens": 200, "Include": ["$.k07.a"], "Summarize": {"Using": "sum", "Target": "$.k07"}}`,
		`{"MaxTokens": 400, "Include": ["$.k07.a"], "Summarize": {"Using": "sum"}}`,
		`{"Exclude": ["$..b[0]"], "Summarize": {"When": "Always", "Using": "sum", "Ratio": 0.5}}`,
	}
	for _, block := range blocks {
		t.Run(block, func(t *testing.T) {
			cfg := parseContext(t, block)
			run := func() (string, []string, []call) {
				f := &fakeSummarizer{}
				w, err := Build(context.Background(), cfg, input, f.summarize)
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				checkWindow(t, cfg.MaxTokens, w)
				return compact(t, w.Content), w.Dropped, f.calls
			}
			first, dropped, calls := run()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 5 {
						got, gotDropped, gotCalls := run()
						if got != first || !reflect.DeepEqual(gotDropped, dropped) || !reflect.DeepEqual(gotCalls, calls) {
							t.Errorf("Build = %s, %q, %+v; first run gave %s, %q, %+v", got, gotDropped, gotCalls, first, dropped, calls)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestDroppedPaths(t *testing.T) {
	k := func(s string) step { return step{key: s} }
	i := func(n int) step { return step{index: n, isIndex: true} }
	tests := []struct {
		name string
		in   []loc
		want []string
	}{
		{"none", nil, nil},
		{"document order", []loc{{k("b")}, {k("a"), i(2)}, {k("a"), i(0)}}, []string{"$.a[0]", "$.a[2]", "$.b"}},
		{"a run becomes a slice", []loc{{k("h"), i(3)}, {k("h"), i(1)}, {k("h"), i(2)}, {k("h"), i(5)}}, []string{"$.h[1:4]", "$.h[5]"}},
		{"runs of different arrays stay apart", []loc{{k("a"), i(0)}, {k("b"), i(1)}, {k("a"), i(1)}}, []string{"$.a[0:2]", "$.b[1]"}},
		{"inside another", []loc{{k("a"), k("x")}, {k("a")}, {k("a"), i(1)}}, []string{"$.a"}},
		{"inside an element of a run", []loc{{k("h"), i(0)}, {k("h"), i(0), k("t")}, {k("h"), i(1)}}, []string{"$.h[0:2]"}},
		{"the root", []loc{{k("a")}, {}}, []string{"$"}},
		{"a root array", []loc{{i(0)}, {i(1)}, {i(2), k("x")}}, []string{"$[0:2]", "$[2].x"}},
		{"names that need quotes", []loc{{k("a b"), i(0)}, {k("a b"), i(1)}}, []string{"$['a b'][0:2]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := droppedPaths(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("droppedPaths(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestWindowJSON(t *testing.T) {
	w := &Window{Content: "ignored", Tokens: 42, Dropped: []string{"$.a", "$.h[0:3]"}, Summarized: true}
	got := compact(t, w.JSON())
	want := `{"dropped":["$.a","$.h[0:3]"],"summarized":true,"tokens":42}`
	if got != want {
		t.Errorf("JSON() = %s, want %s", got, want)
	}
	empty := compact(t, (&Window{}).JSON())
	if want := `{"dropped":[],"summarized":false,"tokens":0}`; empty != want {
		t.Errorf("JSON() of an empty window = %s, want %s", empty, want)
	}
}

func TestRunesOf(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"ascii", map[string]any{"a": []any{"x", json(12), true, nil}}},
		{"escapes", "a\"b\\c\nd\x01e\tf/<>&"},
		{"non-ASCII", map[string]any{"ключ": "значение ✓ 😀", "é": []any{"ü"}}},
		{"invalid UTF-8", "a\xffb\xc3(\xed\xa0\x80"},
		{"U+FFFD itself", "\uFFFD"},
		{"an invalid key", map[string]any{"\xfe": "x"}},
		{"Go numbers", []any{1, int64(-7), 2.5, float32(0.1), uint8(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := jsonvalue.Marshal(tt.v)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			got, err := runesOf(tt.v)
			if err != nil {
				t.Fatalf("runesOf: %v", err)
			}
			if want := utf8.RuneCount(b); got != want {
				t.Errorf("runesOf(%s) = %d, want %d", b, got, want)
			}
		})
	}
	if _, err := runesOf([]any{make(chan int)}); err == nil {
		t.Errorf("runesOf(a chan) = nil error, want one")
	}
}
