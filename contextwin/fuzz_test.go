package contextwin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// FuzzBuild builds windows from arbitrary inputs and configurations and
// checks what must always hold: no panic, the input untouched, the result
// within MaxTokens and its Tokens exact, included values kept, the same
// window twice, and no error but Agent.ContextOverflow.
func FuzzBuild(f *testing.F) {
	conv := `{"system":"be brief","messages":[{"role":"user","text":"hello there"},{"role":"assistant","text":"hi, how can I help?"},{"role":"user","text":"summarize the thread"}],"notes":["n1","n2"],"q":"why?"}`
	f.Add(conv, "$.system", "$.messages[*].role", "$.q", "$.messages", uint16(20), uint8(0))
	f.Add(conv, "$.messages[-1]", "$..text", "$.messages[*]", "", uint16(12), uint8(1))
	f.Add(conv, "$.q", "", "$.notes", "$.messages", uint16(15), uint8(2|4))
	f.Add(conv, "$.messages[0].text", "$.nothing", "$.system", "$.messages[1]", uint16(9), uint8(2|8|16))
	f.Add(`[1,[2,3],{"a":[4,5,6]},"xyzzy"]`, "$[1]", "$[3]", "$[2].a[*]", "$", uint16(3), uint8(1|4|16))
	f.Add(`"just a string that is long enough"`, "", "", "", "", uint16(2), uint8(0))
	f.Add(conv, "$.q", "$.system", "$.messages[*]", "", uint16(14), uint8(32))
	f.Add(conv, "$.messages[0]", "", "$..text", "", uint16(0), uint8(32))
	f.Add(conv, "", "", "$.notes[*]", "$.messages", uint16(10), uint8(64|4))
	f.Fuzz(func(t *testing.T, text, include, exclude, priority, target string, maxTokens uint16, flags uint8) {
		input, err := jsonvalue.Decode([]byte(text))
		if err != nil {
			return
		}
		cfg := &states.ContextConfig{Strategy: "sliding_window", MaxTokens: int64(maxTokens)}
		if flags&1 != 0 {
			cfg.Strategy = "priority_based"
		}
		var ok bool
		if cfg.Include, ok = fuzzPaths(include); !ok {
			return
		}
		if cfg.Exclude, ok = fuzzPaths(exclude); !ok {
			return
		}
		if cfg.Priority, ok = fuzzPaths(priority); !ok {
			return
		}
		if when := flags >> 1 & 3; when != 0 {
			s := &states.SummarizeConfig{When: []string{"", "TokensExceed", "Always", "Never"}[when], Using: "sum"}
			if target != "" {
				if s.Target, err = jsonpath.CompileReference(target); err != nil {
					return
				}
			}
			if flags&8 != 0 {
				s.Ratio = 0.3
			}
			cfg.Summarize = s
			if flags&64 != 0 {
				cfg.Strategy = "summarize"
			}
		}
		if flags&32 != 0 && cfg.Priority != nil {
			cfg.Strategy, cfg.Candidates, cfg.Priority = "semantic", cfg.Priority, nil
			cfg.TopK = int64(maxTokens%3) + 1
		}
		summarize := func(_ context.Context, _ string, content any, goal int64) (any, error) {
			if flags&16 != 0 {
				return map[string]any{"gist": content}, nil
			}
			return strings.Repeat("s", int(min(max(goal, 1), 50))), nil
		}

		fns := Funcs{Summarize: summarize, Embed: fuzzEmbed, Query: include + " query"}
		before := compact(t, input)
		w, err := BuildWith(context.Background(), cfg, input, fns)
		if after := compact(t, input); after != before {
			t.Fatalf("Build changed its input to %s, was %s", after, before)
		}
		again, err2 := BuildWith(context.Background(), cfg, input, fns)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Build gave %v, then %v", err, err2)
		}
		if err != nil {
			var ae *asl.Error
			if !errors.As(err, &ae) || ae.Name != asl.ErrAgentContextOverflow {
				t.Fatalf("Build error = %v, want Agent.ContextOverflow", err)
			}
			if err.Error() != err2.Error() {
				t.Fatalf("Build error = %v, then %v", err, err2)
			}
			return
		}
		checkWindow(t, cfg.MaxTokens, w)
		if a, b := compact(t, w.Content), compact(t, again.Content); a != b || strings.Join(w.Dropped, " ") != strings.Join(again.Dropped, " ") {
			t.Fatalf("Build gave %s %q, then %s %q", a, w.Dropped, b, again.Dropped)
		}
		for _, d := range w.Dropped {
			if _, err := jsonpath.Compile(d); err != nil {
				t.Fatalf("Dropped holds %q, not a path: %v", d, err)
			}
		}
		if a, b := fmt.Sprint(w.Picked), fmt.Sprint(again.Picked); a != b {
			t.Fatalf("Build picked %s, then %s", a, b)
		}
		if k := int64(len(w.Picked)); cfg.Strategy == "semantic" && k > cfg.TopK {
			t.Fatalf("Build picked %d candidates, more than TopK %d", k, cfg.TopK)
		}
		checkIncluded(t, cfg, input, fns)
	})
}

// fuzzEmbed gives each text a vector made of its bytes, so that similar
// texts score alike and equal texts tie.
func fuzzEmbed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 8)
		for j := 0; j < len(t); j++ {
			v[(int(t[j])+j)%8] += float32(t[j]%13) - 6
		}
		out[i] = v
	}
	return out, nil
}

// fuzzPaths compiles a path of the fuzzer, or none from "", refusing those
// not rooted at "$".
func fuzzPaths(src string) ([]*jsonpath.Path, bool) {
	if src == "" {
		return nil, true
	}
	p, err := jsonpath.Compile(src)
	if err != nil || p.IsContext() || p.Variable() != "" {
		return nil, false
	}
	return []*jsonpath.Path{p}, true
}

// checkIncluded checks that every Include location not excluded is still
// in the window.
func checkIncluded(t *testing.T, cfg *states.ContextConfig, input any, fns Funcs) {
	t.Helper()
	b, err := newBuilder(cfg, input)
	if err != nil {
		t.Fatalf("newBuilder: %v", err)
	}
	if err := b.build(context.Background(), fns); err != nil {
		t.Fatalf("build: %v", err)
	}
	excluded := &trie{}
	for _, p := range cfg.Exclude {
		locs, _ := locate(p, input)
		for _, l := range locs {
			excluded.add(l)
		}
	}
	for _, p := range cfg.Include {
		locs, _ := locate(p, input)
		for _, l := range locs {
			if !excluded.covers(l) && !b.w.present(l) {
				t.Fatalf("Include %s: %s is not in the window %s", p, l, compact(t, b.w.content()))
			}
		}
	}
}
