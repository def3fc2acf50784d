package contextwin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Summarizer condenses content to about targetTokens tokens (as
// jsonpath.EstimateTokens counts them) with the agent named agent (the
// Summarize block's Using), and returns the summary.
//
// The engine implements it by calling that agent with the input
// {"content": content, "targetTokens": targetTokens} and taking the agent's
// result, any JSON value (usually a string), as the summary; Build passes
// it through jsonvalue.Normalize, so Go values are accepted. content is a
// JSON value that must not be modified. targetTokens is at least 1, or 0
// when nothing sets a size (When "Always" without MaxTokens or Ratio): the
// agent then decides. A summary larger than targetTokens is not refused,
// but it may leave the context too large (Agent.ContextOverflow). An error
// is returned by Build as it is, wrapped: an *asl.Error keeps its name, so
// Retry and Catch see what the summarizer raised.
//
// Build may call it several times in one window (see the package
// documentation), one call after the other; it must be safe for concurrent
// use when Build is called concurrently.
type Summarizer func(ctx context.Context, agent string, content any, targetTokens int64) (any, error)

// Window is the context window an agent receives. Build returns a new one
// each time and never touches it afterwards: it is safe for concurrent
// reads.
type Window struct {
	// Content is what the agent receives as its input. It shares what did
	// not change with the input of Build, and must not be modified.
	Content any
	// Tokens is jsonpath.EstimateTokens of Content.
	Tokens int64
	// Dropped lists the locations of the input left out of Content, by
	// Exclude or by the strategy, in JSONPath syntax and document order
	// ($.a, $.b[0], $['other name']); a run of consecutive array elements
	// is one slice, like $.messages[0:12]. Indexes are those of the input.
	// Locations replaced by a summary are not listed. Empty when nothing
	// was left out.
	Dropped []string
	// Summarized reports whether a summary replaced part of the content.
	Summarized bool
	// Picked lists the candidates Strategy "semantic" kept, best first
	// (equal scores in document order); empty, not nil, when it had none
	// to pick from, and nil with the other strategies. A pick may still be
	// dropped afterwards when the window did not fit MaxTokens; Dropped
	// then lists it.
	Picked []Pick
}

// JSON returns what the window's history event records: an object with
// "tokens" (a number), "dropped" (an array of strings) and "summarized" (a
// boolean), and, when Picked is not nil (Strategy "semantic"), "picked":
// an array of {"path": string, "score": number}, best first. The content
// itself is not in it: it is the agent's input, which the task's own
// events record.
func (w *Window) JSON() map[string]any {
	dropped := make([]any, len(w.Dropped))
	for i, d := range w.Dropped {
		dropped[i] = d
	}
	out := map[string]any{
		"tokens":     jsonvalue.IntNumber(w.Tokens),
		"dropped":    dropped,
		"summarized": w.Summarized,
	}
	if w.Picked != nil {
		picked := make([]any, len(w.Picked))
		for i, p := range w.Picked {
			picked[i] = map[string]any{"path": p.Path, "score": jsonvalue.FloatNumber(p.Score)}
		}
		out["picked"] = picked
	}
	return out
}

// Funcs holds what BuildWith calls out to, and the query. Its zero value
// serves the strategies that call nothing (sliding_window and
// priority_based without a Summarize block that applies).
type Funcs struct {
	// Summarize makes the summaries of a Summarize block (and of Strategy
	// "summarize"); nil when none applies.
	Summarize Summarizer
	// Embed embeds the query and the candidates of Strategy "semantic";
	// nil with the other strategies.
	Embed Embedder
	// Query is the text the candidates of Strategy "semantic" are compared
	// with: the Context's Query rendered, or the value of its Query.$,
	// computed by the caller on the state's input.
	Query string
}

// Build builds the context window of a Task from input, the state's
// effective input (after InputPath and the Memory inject, before
// Parameters), as cfg says; see the package documentation for the rules.
// summarize is called only when cfg has a Summarize block that applies,
// and may be nil otherwise. A nil cfg gives the input unchanged.
//
// A window that cannot be made to fit MaxTokens is an *asl.Error named
// Agent.ContextOverflow. A path of cfg that is not rooted at "$" or an
// input outside the JSON model is a plain error; an error of summarize is
// returned wrapped.
//
// Build never modifies input, and is safe for concurrent use when
// summarize is. It is BuildWith with only a summarizer, so it cannot
// build a window of Strategy "semantic" that has candidates.
func Build(ctx context.Context, cfg *states.ContextConfig, input any, summarize Summarizer) (*Window, error) {
	return BuildWith(ctx, cfg, input, Funcs{Summarize: summarize})
}

// BuildWith builds the context window of a Task from input, the state's
// effective input (after InputPath and the Memory inject, before
// Parameters), as cfg says, calling out to f; see the package
// documentation for the rules. f.Summarize is called only when a
// Summarize block applies (always with Strategy "summarize"), f.Embed
// only with Strategy "semantic" when some candidate is in the input; each
// may be nil otherwise. A nil cfg gives the input unchanged.
//
// A window that cannot be made to fit MaxTokens is an *asl.Error named
// Agent.ContextOverflow. A path of cfg that is not rooted at "$", an input
// outside the JSON model, or an embedder's answer that does not fit its
// texts (a missing vector, vectors of different lengths, a NaN) is a
// plain error; an error of f.Summarize or f.Embed is returned wrapped.
//
// BuildWith never modifies input, and is safe for concurrent use when the
// functions of f are.
func BuildWith(ctx context.Context, cfg *states.ContextConfig, input any, f Funcs) (*Window, error) {
	if cfg == nil {
		tokens, err := jsonpath.EstimateTokens(input)
		if err != nil {
			return nil, fmt.Errorf("context window: %w", err)
		}
		return &Window{Content: input, Tokens: tokens}, nil
	}
	b, err := newBuilder(cfg, input)
	if err != nil {
		return nil, fmt.Errorf("context window: %w", err)
	}
	if err := b.build(ctx, f); err != nil {
		return nil, err
	}
	// The running count is exactly EstimateTokens of the content (the
	// tests check it), and saves writing the content once more.
	return &Window{
		Content:    b.w.content(),
		Tokens:     b.w.tokens(),
		Dropped:    droppedPaths(b.w.dropped),
		Summarized: b.summarized,
		Picked:     b.picked,
	}, nil
}

// builder holds one Build call.
type builder struct {
	cfg *states.ContextConfig
	w   *work
	// protect holds the Include locations and, once made, the summaries:
	// what is never dropped.
	protect   *trie
	protected []protectedLoc
	// summarized reports whether a summary was made.
	summarized bool
	// picked is what Strategy "semantic" kept; nil with other strategies.
	picked []Pick
}

// protectedLoc is a location that cannot be dropped, and why.
type protectedLoc struct {
	at  loc
	why string // "Include" or "summary"
}

func newBuilder(cfg *states.ContextConfig, input any) (*builder, error) {
	switch cfg.Strategy {
	case "", "sliding_window", "priority_based":
	case "summarize":
		if cfg.Summarize == nil || cfg.Summarize.Using == "" {
			return nil, fmt.Errorf(`the strategy "summarize" needs Summarize.Using, the summarizing agent`)
		}
	case "semantic":
		if len(cfg.Candidates) == 0 {
			return nil, fmt.Errorf(`the strategy "semantic" needs Candidates`)
		}
		if cfg.TopK < 1 {
			return nil, fmt.Errorf(`the strategy "semantic" needs a TopK of at least 1, not %d`, cfg.TopK)
		}
	default:
		return nil, fmt.Errorf("unknown strategy %q", cfg.Strategy)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("MaxTokens %d is negative", cfg.MaxTokens)
	}
	runes, err := runesOf(input)
	if err != nil {
		return nil, err
	}
	b := &builder{cfg: cfg, w: newWork(input, runes), protect: &trie{}}
	for _, p := range cfg.Exclude {
		if err := b.w.exclude(p); err != nil {
			return nil, err
		}
	}
	for _, p := range cfg.Include {
		locs, err := locate(p, input)
		if err != nil {
			return nil, fmt.Errorf("include: %w", err)
		}
		for _, l := range locs {
			b.protectLoc(l, "Include")
		}
	}
	return b, b.w.err
}

func (b *builder) protectLoc(l loc, why string) {
	b.protect.add(l)
	b.protected = append(b.protected, protectedLoc{at: l, why: why})
}

// fits reports whether the content is within MaxTokens.
func (b *builder) fits() bool {
	return b.cfg.MaxTokens == 0 || b.w.tokens() <= b.cfg.MaxTokens
}

func (b *builder) build(ctx context.Context, f Funcs) error {
	if b.cfg.Strategy == "semantic" {
		if err := b.semantic(ctx, f); err != nil {
			return err
		}
	}
	if b.wantSummary() {
		if err := b.summarize(ctx, f.Summarize); err != nil {
			return err
		}
	}
	if !b.fits() {
		var err error
		if b.cfg.Strategy == "priority_based" {
			err = b.priority()
		} else {
			b.slidingWindow()
		}
		if err != nil {
			return fmt.Errorf("context window: %w", err)
		}
	}
	if b.w.err != nil {
		return fmt.Errorf("context window: %w", b.w.err)
	}
	if !b.fits() {
		return b.overflow()
	}
	return nil
}

// overflow returns the Agent.ContextOverflow error for the content as it
// is now, after the strategy dropped all it could.
func (b *builder) overflow() error {
	var kept []string
	slices.SortStableFunc(b.protected, func(x, y protectedLoc) int { return compareLoc(x.at, y.at) })
	seen := make(map[string]bool)
	for _, p := range b.protected {
		s := p.at.String()
		if seen[s] || !b.w.present(p.at) {
			continue
		}
		seen[s] = true
		kept = append(kept, s+" ("+p.why+")")
	}
	const most = 10
	what := strings.Join(kept, ", ")
	switch {
	case len(kept) > most:
		what = strings.Join(kept[:most], ", ") + fmt.Sprintf(" and %d more", len(kept)-most)
	case len(kept) == 0:
		v := b.w.content()
		what = "$ (" + jsonvalue.TypeName(v) + ", which no strategy shortens)"
	}
	return asl.Errorf(asl.ErrAgentContextOverflow,
		"the context needs %d tokens, more than MaxTokens %d, and what remains cannot be dropped: %s",
		b.w.tokens(), b.cfg.MaxTokens, what)
}

// droppedPaths writes the dropped locations in document order, leaving out
// those inside another and joining runs of consecutive array elements into
// slices.
func droppedPaths(locs []loc) []string {
	if len(locs) == 0 {
		return nil
	}
	sorted := slices.Clone(locs)
	slices.SortFunc(sorted, compareLoc)
	var out []string
	var prev loc // the last location written, to skip those inside it
	for i := 0; i < len(sorted); {
		l := sorted[i]
		i++
		if i > 1 && isInside(l, prev) {
			continue
		}
		prev = l
		if len(l) == 0 || !l[len(l)-1].isIndex {
			out = append(out, l.String())
			continue
		}
		parent, first := l[:len(l)-1], l[len(l)-1].index
		last := first
		for i < len(sorted) {
			n := sorted[i]
			switch {
			case isInside(n, prev):
				i++
				continue
			case len(n) == len(l) && n[len(n)-1].isIndex && n[len(n)-1].index == last+1 && compareLoc(n[:len(n)-1], parent) == 0:
				last++
				prev = n
				i++
				continue
			}
			break
		}
		if last == first {
			out = append(out, l.String())
		} else {
			out = append(out, parent.String()+"["+strconv.Itoa(first)+":"+strconv.Itoa(last+1)+"]")
		}
	}
	return out
}

// isInside reports whether l lies strictly inside outer.
func isInside(l, outer loc) bool {
	return len(l) > len(outer) && compareLoc(l[:len(outer)], outer) == 0
}
