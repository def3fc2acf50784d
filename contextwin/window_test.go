package contextwin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
)

// strs writes n JSON strings of size runes each (size-2 characters inside
// the quotes), named prefix0, prefix1, …, separated by commas.
func strs(prefix string, n, size int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", text(fmt.Sprintf("%s%d", prefix, i), size-2))
	}
	return b.String()
}

// str writes one JSON string of size runes.
func str(prefix string, size int) string {
	return fmt.Sprintf("%q", text(prefix, size-2))
}

// pick writes the elements with the given indexes of strs(prefix, …).
func pick(prefix string, size int, idx ...int) string {
	var parts []string
	for _, i := range idx {
		parts = append(parts, str(fmt.Sprintf("%s%d", prefix, i), size))
	}
	return strings.Join(parts, ",")
}

type buildCase struct {
	name       string
	block      string // the Context block
	input      string
	want       string // the content
	dropped    []string
	summarized bool
	calls      []call // nil: the summarizer must not be called
	reply      func(content any, target int64) (any, error)
}

func runBuildCases(t *testing.T, tests []buildCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseContext(t, tt.block)
			input := mustDecode(t, tt.input)
			before := compact(t, input)
			f := &fakeSummarizer{reply: tt.reply}
			w, err := Build(context.Background(), cfg, input, f.summarize)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got, want := compact(t, w.Content), compact(t, mustDecode(t, tt.want)); got != want {
				t.Errorf("Content = %s\nwant      %s", got, want)
			}
			if !reflect.DeepEqual(w.Dropped, tt.dropped) {
				t.Errorf("Dropped = %q, want %q", w.Dropped, tt.dropped)
			}
			if w.Summarized != tt.summarized {
				t.Errorf("Summarized = %v, want %v", w.Summarized, tt.summarized)
			}
			if !reflect.DeepEqual(f.calls, tt.calls) {
				t.Errorf("summarizer calls = %+v, want %+v", f.calls, tt.calls)
			}
			checkWindow(t, cfg.MaxTokens, w)
			if after := compact(t, input); after != before {
				t.Errorf("Build changed its input to %s, was %s", after, before)
			}
		})
	}
}

// checkWindow checks what holds for every window.
func checkWindow(t *testing.T, maxTokens int64, w *Window) {
	t.Helper()
	est, err := jsonpath.EstimateTokens(w.Content)
	if err != nil {
		t.Fatalf("EstimateTokens(Content): %v", err)
	}
	if w.Tokens != est {
		t.Errorf("Tokens = %d, EstimateTokens(Content) = %d", w.Tokens, est)
	}
	if maxTokens > 0 && w.Tokens > maxTokens {
		t.Errorf("Tokens = %d, more than MaxTokens %d", w.Tokens, maxTokens)
	}
	if again := mustDecode(t, compact(t, w.Content)); !reflect.DeepEqual(again, w.Content) {
		t.Errorf("Content %#v is not in the JSON model (it reads back as %#v)", w.Content, again)
	}
}

func TestSlidingWindow(t *testing.T) {
	// Strings of 40 runes: 41 with their comma. {"h":[n of them]} is
	// 41n+7 runes; 50 tokens are 200 runes, so 4 elements fit.
	h10 := `{"h":[` + strs("e", 10, 40) + `]}`
	runBuildCases(t, []buildCase{
		{
			name:  "under the limit nothing changes",
			block: `{"MaxTokens": 105}`,
			input: h10,
			want:  h10,
		},
		{
			name:  "no limit nothing is dropped",
			block: `{}`,
			input: h10,
			want:  h10,
		},
		{
			name:    "oldest elements go first",
			block:   `{"MaxTokens": 50}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 6, 7, 8, 9) + `]}`,
			dropped: []string{"$.h[0:6]"},
		},
		{
			name:    "the strategy is the default",
			block:   `{"Strategy": "sliding_window", "MaxTokens": 50}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 6, 7, 8, 9) + `]}`,
			dropped: []string{"$.h[0:6]"},
		},
		{
			name:    "a root array",
			block:   `{"MaxTokens": 30}`,
			input:   `[` + strs("e", 10, 40) + `]`,
			want:    `[` + pick("e", 40, 8, 9) + `]`,
			dropped: []string{"$[0:8]"},
		},
		{
			// a: 4×80 runes (325 with brackets), b: 6×20 (127); 463 in all.
			// 60 tokens (240 runes): a loses 3 and is then the smaller.
			name:    "the largest array first",
			block:   `{"MaxTokens": 60}`,
			input:   `{"a":[` + strs("a", 4, 80) + `],"b":[` + strs("b", 6, 20) + `]}`,
			want:    `{"a":[` + pick("a", 80, 3) + `],"b":[` + strs("b", 6, 20) + `]}`,
			dropped: []string{"$.a[0:3]"},
		},
		{
			// 40 tokens (160 runes): after a[0:3], b (127) is the larger
			// and loses 3 (85, then 64 runes, less than a's 82).
			name:    "arrays shrink together",
			block:   `{"MaxTokens": 40}`,
			input:   `{"a":[` + strs("a", 4, 80) + `],"b":[` + strs("b", 6, 20) + `]}`,
			want:    `{"a":[` + pick("a", 80, 3) + `],"b":[` + pick("b", 20, 3, 4, 5) + `]}`,
			dropped: []string{"$.a[0:3]", "$.b[0:3]"},
		},
		{
			name:    "arrays under object members are shortened",
			block:   `{"MaxTokens": 53}`,
			input:   `{"chat":{"history":[` + strs("e", 10, 40) + `]}}`,
			want:    `{"chat":{"history":[` + pick("e", 40, 6, 7, 8, 9) + `]}}`,
			dropped: []string{"$.chat.history[0:6]"},
		},
		{
			// Messages of 77 runes; the parts of a message are not shortened.
			name:    "arrays inside elements are not shortened",
			block:   `{"MaxTokens": 25}`,
			input:   `{"msgs":[{"parts":[` + strs("p", 2, 32) + `]},{"parts":[` + strs("q", 2, 32) + `]},{"parts":[` + strs("r", 2, 32) + `]}]}`,
			want:    `{"msgs":[{"parts":[` + strs("r", 2, 32) + `]}]}`,
			dropped: []string{"$.msgs[0:2]"},
		},
		{
			// a and c are 44 runes as members, b 47; 139 in all. b is
			// emptied (98), then c, the last key, goes (53 <= 56).
			name:    "then top-level members in reverse key order",
			block:   `{"MaxTokens": 14}`,
			input:   `{"a":` + str("a", 40) + `,"b":[` + strs("x", 2, 20) + `],"c":` + str("c", 40) + `}`,
			want:    `{"a":` + str("a", 40) + `,"b":[]}`,
			dropped: []string{"$.b[0:2]", "$.c"},
		},
		{
			name:    "reverse key order is byte order reversed",
			block:   `{"MaxTokens": 12}`,
			input:   `{"B":` + str("B", 40) + `,"a":` + str("a", 40) + `,"b":` + str("b", 40) + `}`,
			want:    `{"B":` + str("B", 40) + `}`,
			dropped: []string{"$.a", "$.b"},
		},
		{
			name:    "an emptied array goes whole, and its elements are not listed",
			block:   `{"MaxTokens": 14, "Include": ["$.c"]}`,
			input:   `{"a":` + str("a", 40) + `,"b":[` + strs("x", 2, 20) + `],"c":` + str("c", 40) + `}`,
			want:    `{"c":` + str("c", 40) + `}`,
			dropped: []string{"$.a", "$.b"},
		},
		{
			name:    "an included element stays",
			block:   `{"MaxTokens": 50, "Include": ["$.h[0]"]}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 0, 7, 8, 9) + `]}`,
			dropped: []string{"$.h[1:7]"},
		},
		{
			name:    "negative indexes in Include are the input's",
			block:   `{"MaxTokens": 23, "Include": ["$.h[-1]", "$.h[-2]"]}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 8, 9) + `]}`,
			dropped: []string{"$.h[0:8]"},
		},
		{
			name:    "what is included inside an element stays in place",
			block:   `{"MaxTokens": 30, "Include": ["$.h[*].role"]}`,
			input:   `{"h":[{"role":"u","text":` + str("a", 31) + `},{"role":"a","text":` + str("b", 35) + `},{"role":"u","text":` + str("c", 14) + `}],"q":` + str("z", 14) + `}`,
			want:    `{"h":[{"role":"u"},{"role":"a"},{"role":"u","text":` + str("c", 14) + `}],"q":` + str("z", 14) + `}`,
			dropped: []string{"$.h[0].text", "$.h[1].text"},
		},
		{
			name:    "an included top-level member stays",
			block:   `{"MaxTokens": 12, "Include": ["$.b"]}`,
			input:   `{"B":` + str("B", 40) + `,"a":` + str("a", 40) + `,"b":` + str("b", 40) + `}`,
			want:    `{"b":` + str("b", 40) + `}`,
			dropped: []string{"$.B", "$.a"},
		},
		{
			name:    "a member holding an included value keeps only that",
			block:   `{"MaxTokens": 12, "Include": ["$.z.id"]}`,
			input:   `{"a":` + str("a", 40) + `,"z":{"id":"z1","body":` + str("b", 40) + `}}`,
			want:    `{"z":{"id":"z1"}}`,
			dropped: []string{"$.a", "$.z.body"},
		},
		{
			name:    "Exclude goes first",
			block:   `{"MaxTokens": 50, "Exclude": ["$.debug", "$.h[0]", "$.nothing.here"]}`,
			input:   `{"debug":` + str("d", 100) + `,"h":[` + strs("e", 10, 40) + `]}`,
			want:    `{"h":[` + pick("e", 40, 6, 7, 8, 9) + `]}`,
			dropped: []string{"$.debug", "$.h[0:6]"},
		},
		{
			name:    "Exclude applies without a limit",
			block:   `{"Exclude": ["$.h[1:9]", "$..secret"]}`,
			input:   `{"h":[` + strs("e", 10, 40) + `],"user":{"secret":1,"name":"n"}}`,
			want:    `{"h":[` + pick("e", 40, 0, 9) + `],"user":{"name":"n"}}`,
			dropped: []string{"$.h[1:9]", "$.user.secret"},
		},
		{
			name:    "Exclude wins over Include",
			block:   `{"Exclude": ["$.secret"], "Include": ["$.secret", "$.keep"]}`,
			input:   `{"secret":"s","keep":"k"}`,
			want:    `{"keep":"k"}`,
			dropped: []string{"$.secret"},
		},
		{
			name:    "Exclude inside an included value",
			block:   `{"MaxTokens": 2, "Exclude": ["$.a.big"], "Include": ["$.a"]}`,
			input:   `{"a":{"big":` + str("b", 100) + `}}`,
			want:    `{"a":{}}`,
			dropped: []string{"$.a.big"},
		},
		{
			name:    "excluding the root leaves null",
			block:   `{"Exclude": ["$"]}`,
			input:   h10,
			want:    `null`,
			dropped: []string{"$"},
		},
		{
			name:    "overlapping Exclude paths",
			block:   `{"Exclude": ["$.a.b", "$.a", "$.a.c"]}`,
			input:   `{"a":{"b":1,"c":2},"d":3}`,
			want:    `{"d":3}`,
			dropped: []string{"$.a"},
		},
		{
			name:    "filters in Exclude",
			block:   `{"Exclude": ["$.h[?(@.role == 'tool')]"]}`,
			input:   `{"h":[{"role":"user"},{"role":"tool"},{"role":"assistant"},{"role":"tool"}]}`,
			want:    `{"h":[{"role":"user"},{"role":"assistant"}]}`,
			dropped: []string{"$.h[1]", "$.h[3]"},
		},
	})
}

func TestPriorityBased(t *testing.T) {
	// Members of 44 runes: {a, b, c, d} is 181 runes.
	abcd := `{"a":` + str("a", 40) + `,"b":` + str("b", 40) + `,"c":` + str("c", 40) + `,"d":` + str("d", 40) + `}`
	runBuildCases(t, []buildCase{
		{
			name:    "unlisted members first, in document order",
			block:   `{"Strategy": "priority_based", "MaxTokens": 34, "Priority": ["$.c", "$.a"]}`,
			input:   abcd,
			want:    `{"a":` + str("a", 40) + `,"c":` + str("c", 40) + `,"d":` + str("d", 40) + `}`,
			dropped: []string{"$.b"},
		},
		{
			name:    "all unlisted members",
			block:   `{"Strategy": "priority_based", "MaxTokens": 23, "Priority": ["$.c", "$.a"]}`,
			input:   abcd,
			want:    `{"a":` + str("a", 40) + `,"c":` + str("c", 40) + `}`,
			dropped: []string{"$.b", "$.d"},
		},
		{
			name:    "then the least important path",
			block:   `{"Strategy": "priority_based", "MaxTokens": 12, "Priority": ["$.c", "$.a"]}`,
			input:   abcd,
			want:    `{"c":` + str("c", 40) + `}`,
			dropped: []string{"$.a", "$.b", "$.d"},
		},
		{
			name:    "the matches of a path go oldest first",
			block:   `{"Strategy": "priority_based", "MaxTokens": 40, "Priority": ["$.q", "$.h[*]"]}`,
			input:   `{"h":[` + strs("e", 6, 40) + `],"q":` + str("q", 40) + `}`,
			want:    `{"h":[` + pick("e", 40, 4, 5) + `],"q":` + str("q", 40) + `}`,
			dropped: []string{"$.h[0:4]"},
		},
		{
			name:    "unlisted parts around a listed location",
			block:   `{"Strategy": "priority_based", "MaxTokens": 35, "Priority": ["$.a.b"]}`,
			input:   `{"a":{"b":` + str("b", 40) + `,"x":` + str("x", 40) + `,"y":` + str("y", 40) + `},"z":` + str("z", 40) + `}`,
			want:    `{"a":{"b":` + str("b", 40) + `},"z":` + str("z", 40) + `}`,
			dropped: []string{"$.a.x", "$.a.y"},
		},
		{
			name:    "a more important location inside a less important one stays",
			block:   `{"Strategy": "priority_based", "MaxTokens": 10, "Priority": ["$.doc.title", "$.doc"]}`,
			input:   `{"doc":{"title":` + str("t", 22) + `,"body":` + str("b", 100) + `},"other":` + str("o", 40) + `}`,
			want:    `{"doc":{"title":` + str("t", 22) + `}}`,
			dropped: []string{"$.doc.body", "$.other"},
		},
		{
			name:    "a less important location inside a more important one goes first",
			block:   `{"Strategy": "priority_based", "MaxTokens": 20, "Priority": ["$.doc", "$.doc.body"]}`,
			input:   `{"doc":{"title":` + str("t", 22) + `,"body":` + str("b", 100) + `},"other":` + str("o", 20) + `}`,
			want:    `{"doc":{"title":` + str("t", 22) + `}}`,
			dropped: []string{"$.doc.body", "$.other"},
		},
		{
			name:    "a location listed twice keeps its first rank",
			block:   `{"Strategy": "priority_based", "MaxTokens": 12, "Priority": ["$.a", "$.b", "$.a"]}`,
			input:   `{"a":` + str("a", 40) + `,"b":` + str("b", 40) + `}`,
			want:    `{"a":` + str("a", 40) + `}`,
			dropped: []string{"$.b"},
		},
		{
			name:    "Include beats priority",
			block:   `{"Strategy": "priority_based", "MaxTokens": 12, "Priority": ["$.a", "$.b"], "Include": ["$.b"]}`,
			input:   `{"a":` + str("a", 40) + `,"b":` + str("b", 40) + `}`,
			want:    `{"b":` + str("b", 40) + `}`,
			dropped: []string{"$.a"},
		},
		{
			name:    "a path that selects nothing",
			block:   `{"Strategy": "priority_based", "MaxTokens": 12, "Priority": ["$.none", "$.a"]}`,
			input:   `{"a":` + str("a", 40) + `,"b":` + str("b", 40) + `}`,
			want:    `{"a":` + str("a", 40) + `}`,
			dropped: []string{"$.b"},
		},
		{
			name:    "a root array",
			block:   `{"Strategy": "priority_based", "MaxTokens": 21, "Priority": ["$[0]"]}`,
			input:   `[` + strs("e", 5, 40) + `]`,
			want:    `[` + pick("e", 40, 0, 4) + `]`,
			dropped: []string{"$[1:4]"},
		},
		{
			name:    "excluded before priorities",
			block:   `{"Strategy": "priority_based", "MaxTokens": 12, "Priority": ["$.b", "$.a"], "Exclude": ["$.b"]}`,
			input:   `{"a":` + str("a", 40) + `,"b":` + str("b", 40) + `}`,
			want:    `{"a":` + str("a", 40) + `}`,
			dropped: []string{"$.b"},
		},
	})
}

func TestSummarize(t *testing.T) {
	// {"h":[10 strings of 40 runes],"q":…} is 462 runes, 116 tokens; the
	// array alone is 411 runes, 103 tokens.
	hq := `{"h":[` + strs("e", 10, 40) + `],"q":` + str("q", 40) + `}`
	h10 := `{"h":[` + strs("e", 10, 40) + `]}`
	runBuildCases(t, []buildCase{
		{
			name:  "under the limit there is no summary",
			block: `{"MaxTokens": 116, "Summarize": {"Using": "sum"}}`,
			input: hq,
			want:  hq,
		},
		{
			name:       "the whole content by default",
			block:      `{"MaxTokens": 50, "Summarize": {"Using": "sum"}}`,
			input:      h10,
			want:       `"S(50)"`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: h10, Target: 50}},
		},
		{
			name:       "a target gets MaxTokens minus the rest",
			block:      `{"MaxTokens": 50, "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      hq,
			want:       `{"h":"S(37)","q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 37}},
		},
		{
			name:       "Ratio sets the size",
			block:      `{"MaxTokens": 50, "Summarize": {"Using": "sum", "Target": "$.h", "Ratio": 0.25}}`,
			input:      hq,
			want:       `{"h":"S(26)","q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 26}},
		},
		{
			name:       "Always without a limit lets the summarizer decide",
			block:      `{"Summarize": {"When": "Always", "Using": "sum", "Target": "$.h"}}`,
			input:      hq,
			want:       `{"h":"S(0)","q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 0}},
		},
		{
			name:       "Always under the limit",
			block:      `{"MaxTokens": 1000, "Summarize": {"When": "Always", "Using": "sum", "Target": "$.h"}}`,
			input:      hq,
			want:       `{"h":"S(987)","q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 987}},
		},
		{
			name:    "Never drops instead",
			block:   `{"MaxTokens": 50, "Summarize": {"When": "Never"}}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 6, 7, 8, 9) + `]}`,
			dropped: []string{"$.h[0:6]"},
		},
		{
			name:    "a missing target is not summarized",
			block:   `{"MaxTokens": 50, "Summarize": {"Using": "sum", "Target": "$.nothing"}}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 6, 7, 8, 9) + `]}`,
			dropped: []string{"$.h[0:6]"},
		},
		{
			name:    "an excluded target is not summarized",
			block:   `{"MaxTokens": 12, "Exclude": ["$.h[0]"], "Summarize": {"Using": "sum", "Target": "$.h[0]"}}`,
			input:   h10,
			want:    `{"h":[` + pick("e", 40, 9) + `]}`,
			dropped: []string{"$.h[0:9]"},
		},
		{
			name:    "a target inside an included value is not summarized",
			block:   `{"MaxTokens": 23, "Include": ["$.h"], "Summarize": {"Using": "sum", "Target": "$.h[0]"}}`,
			input:   `{"h":[` + strs("e", 2, 40) + `],"q":` + str("q", 40) + `}`,
			want:    `{"h":[` + strs("e", 2, 40) + `]}`,
			dropped: []string{"$.q"},
		},
		{
			// Content 282 runes (71 tokens); history 42 tokens, notes 10;
			// the rest 19, so 11 to share: 9 and 3 rounded up.
			name:       "included values inside the target stay",
			block:      `{"MaxTokens": 30, "Include": ["$.question"], "Summarize": {"Using": "sum"}}`,
			input:      `{"question":` + str("q", 42) + `,"history":[` + strs("e", 4, 40) + `],"notes":` + str("n", 42) + `}`,
			want:       `{"question":` + str("q", 42) + `,"history":"S(9)","notes":"S(3)"}`,
			summarized: true,
			calls: []call{
				{Agent: "sum", Content: `[` + strs("e", 4, 40) + `]`, Target: 9},
				{Agent: "sum", Content: str("n", 42), Target: 3},
			},
		},
		{
			// [e0], [e2,e3]: 11 and 21 tokens of 53; the rest is 21, so 9
			// to share: 4 and 6.
			name:       "runs of array elements between included ones",
			block:      `{"MaxTokens": 30, "Include": ["$.h[1]", "$.h[-1]"], "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      `{"h":[` + strs("e", 5, 40) + `]}`,
			want:       `{"h":["S(4)",` + pick("e", 40, 1) + `,"S(6)",` + pick("e", 40, 4) + `]}`,
			summarized: true,
			calls: []call{
				{Agent: "sum", Content: `[` + pick("e", 40, 0) + `]`, Target: 4},
				{Agent: "sum", Content: `[` + pick("e", 40, 2, 3) + `]`, Target: 6},
			},
		},
		{
			name:       "the summarizer sees the target after Exclude",
			block:      `{"MaxTokens": 10, "Exclude": ["$.h[0:9]"], "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      h10,
			want:       `{"h":"S(9)"}`,
			dropped:    []string{"$.h[0:9]"},
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + pick("e", 40, 9) + `]`, Target: 9}},
		},
		{
			name:       "the strategy drops the rest after a summary, never the summary",
			block:      `{"MaxTokens": 30, "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      `{"h":[` + strs("e", 10, 40) + `],"q":` + str("q", 40) + `,"r":` + str("r", 40) + `}`,
			want:       `{"h":` + str("s", 102) + `}`,
			dropped:    []string{"$.q", "$.r"},
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 6}},
			reply:      func(any, int64) (any, error) { return text("s", 100), nil },
		},
		{
			name:    "an excluded root is not summarized",
			block:   `{"Exclude": ["$"], "Summarize": {"When": "Always", "Using": "sum"}}`,
			input:   hq,
			want:    `null`,
			dropped: []string{"$"},
		},
		{
			name:       "a summary of Go values is normalized",
			block:      `{"MaxTokens": 50, "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      hq,
			want:       `{"h":{"n":3,"x":0.5},"q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 37}},
			reply: func(any, int64) (any, error) {
				return map[string]any{"n": 3, "x": 0.5}, nil
			},
		},
		{
			name:       "a summary may be any JSON value",
			block:      `{"MaxTokens": 50, "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:      hq,
			want:       `{"h":{"gist":["a","b"]},"q":` + str("q", 40) + `}`,
			summarized: true,
			calls:      []call{{Agent: "sum", Content: `[` + strs("e", 10, 40) + `]`, Target: 37}},
			reply: func(any, int64) (any, error) {
				return map[string]any{"gist": []any{"a", "b"}}, nil
			},
		},
	})
}

func TestSummarizeErrors(t *testing.T) {
	h10 := mustDecode(t, `{"h":[`+strs("e", 10, 40)+`]}`)
	modelErr := asl.Errorf(asl.ErrAgentModelError, "the model is down")
	tests := []struct {
		name      string
		block     string
		summarize Summarizer
		wantName  asl.ErrorName // "" for a plain error
		wantErr   error         // found with errors.Is, when set
	}{
		{
			name:  "the summarizer's error keeps its name",
			block: `{"MaxTokens": 50, "Summarize": {"Using": "sum"}}`,
			summarize: func(context.Context, string, any, int64) (any, error) {
				return nil, modelErr
			},
			wantName: asl.ErrAgentModelError,
			wantErr:  modelErr,
		},
		{
			name:  "a summary outside the JSON model",
			block: `{"MaxTokens": 50, "Summarize": {"Using": "sum"}}`,
			summarize: func(context.Context, string, any, int64) (any, error) {
				return make(chan int), nil
			},
		},
		{
			name:  "no summarizer",
			block: `{"MaxTokens": 50, "Summarize": {"Using": "sum"}}`,
		},
		{
			name:  "a cancelled context",
			block: `{"MaxTokens": 50, "Summarize": {"Using": "sum"}}`,
			summarize: func(context.Context, string, any, int64) (any, error) {
				return "s", nil
			},
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.wantErr == context.Canceled {
				cancel()
			}
			w, err := Build(ctx, parseContext(t, tt.block), h10, tt.summarize)
			if err == nil {
				t.Fatalf("Build = %s, nil; want an error", compact(t, w.Content))
			}
			var ae *asl.Error
			switch {
			case tt.wantName == "" && errors.As(err, &ae):
				t.Errorf("Build error = %v, an *asl.Error named %s; want a plain error", err, ae.Name)
			case tt.wantName != "" && (!errors.As(err, &ae) || ae.Name != tt.wantName):
				t.Errorf("Build error = %v, want an *asl.Error named %s", err, tt.wantName)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Build error = %v, want one wrapping %v", err, tt.wantErr)
			}
		})
	}
}

func TestOverflow(t *testing.T) {
	tests := []struct {
		name      string
		block     string
		input     string
		reply     any
		wantCause string
	}{
		{
			name:      "Include alone is too large",
			block:     `{"MaxTokens": 10, "Include": ["$.big"]}`,
			input:     `{"big":` + str("b", 202) + `,"x":` + str("x", 40) + `}`,
			wantCause: "the context needs 53 tokens, more than MaxTokens 10, and what remains cannot be dropped: $.big (Include)",
		},
		{
			name:      "Include alone is too large, with priorities",
			block:     `{"Strategy": "priority_based", "MaxTokens": 5, "Priority": ["$.a"], "Include": ["$.b", "$.c"]}`,
			input:     `{"a":` + str("a", 40) + `,"b":` + str("b", 40) + `,"c":1}`,
			wantCause: "the context needs 13 tokens, more than MaxTokens 5, and what remains cannot be dropped: $.b (Include), $.c (Include)",
		},
		{
			name:      "a string cannot be shortened",
			block:     `{"MaxTokens": 10}`,
			input:     str("s", 202),
			wantCause: "the context needs 50 tokens, more than MaxTokens 10, and what remains cannot be dropped: $ (string, which no strategy shortens)",
		},
		{
			name:      "the summary is too large",
			block:     `{"MaxTokens": 10, "Summarize": {"Using": "sum"}}`,
			input:     `{"h":[` + strs("e", 10, 40) + `]}`,
			reply:     text("s", 200),
			wantCause: "the context needs 50 tokens, more than MaxTokens 10, and what remains cannot be dropped: $ (summary)",
		},
		{
			name:      "the summary and an included value",
			block:     `{"MaxTokens": 10, "Include": ["$.q"], "Summarize": {"Using": "sum", "Target": "$.h"}}`,
			input:     `{"h":[` + strs("e", 10, 40) + `],"q":` + str("q", 40) + `}`,
			reply:     text("s", 40),
			wantCause: "the context needs 24 tokens, more than MaxTokens 10, and what remains cannot be dropped: $.h (summary), $.q (Include)",
		},
		{
			name:      "many included values",
			block:     `{"MaxTokens": 10, "Include": ["$.h[*]"]}`,
			input:     `{"h":[` + strs("e", 12, 40) + `]}`,
			wantCause: "the context needs 125 tokens, more than MaxTokens 10, and what remains cannot be dropped: $.h[0] (Include), $.h[1] (Include), $.h[2] (Include), $.h[3] (Include), $.h[4] (Include), $.h[5] (Include), $.h[6] (Include), $.h[7] (Include), $.h[8] (Include), $.h[9] (Include) and 2 more",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSummarizer{reply: func(any, int64) (any, error) { return tt.reply, nil }}
			w, err := Build(context.Background(), parseContext(t, tt.block), mustDecode(t, tt.input), f.summarize)
			if err == nil {
				t.Fatalf("Build = %s, nil; want Agent.ContextOverflow", compact(t, w.Content))
			}
			var ae *asl.Error
			if !errors.As(err, &ae) || ae.Name != asl.ErrAgentContextOverflow {
				t.Fatalf("Build error = %v, want an *asl.Error named %s", err, asl.ErrAgentContextOverflow)
			}
			if ae.Cause != tt.wantCause {
				t.Errorf("Cause = %q\nwant    %q", ae.Cause, tt.wantCause)
			}
		})
	}
}
