package guardrails

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// maxFindings is how many findings one rule lists per Check; one more
// finding counts the rest.
const maxFindings = 50

// seg is one step of a path: an object key, or an array index.
type seg struct {
	key   string
	index int // -1 for a key
}

// span is a match in a string: the bytes [start, end), the kind of
// personal data (pii rules) and the index of the Block entry (pattern
// rules).
type span struct {
	start, end int
	kind       string
	term       int
}

// match is a span found in the string at path.
type match struct {
	path []seg
	span span
	text string
}

// scanner applies one pattern, regex or pii rule to every string of the
// content.
type scanner struct {
	rule *states.GuardrailRule
	// change is true when the rule redacts or masks its matches.
	change bool
	// pii is what a pii rule detects.
	pii     piiSet
	path    []seg
	spans   []span
	matches []match
}

// scan applies rule i, a pattern, regex or pii rule, to the content,
// replacing the content when the rule redacts or masks, and returns the
// number of matches.
func (c *checker) scan(i int, r *states.GuardrailRule) int {
	s := scanner{rule: r, change: r.Action == "redact" || r.Action == "mask", pii: newPIISet(r.Detect)}
	c.res.Content, _ = s.walk(c.res.Content, 0)
	if len(s.matches) == 0 {
		return 0
	}
	slices.SortStableFunc(s.matches, func(a, b match) int {
		if n := comparePaths(a.path, b.path); n != 0 {
			return n
		}
		return cmp.Compare(a.span.start, b.span.start)
	})
	for k, m := range s.matches {
		if k == maxFindings {
			c.res.Findings = append(c.res.Findings, Finding{
				Rule: i, Type: r.Type, Action: r.Action, Path: "$",
				Message: fmt.Sprintf("%d more matches not listed", len(s.matches)-maxFindings),
			})
			break
		}
		c.res.Findings = append(c.res.Findings, Finding{
			Rule:    i,
			Type:    r.Type,
			Action:  r.Action,
			Kind:    m.span.kind,
			Path:    formatPath(m.path),
			Excerpt: excerpt(m.span.kind, m.text),
			Message: s.message(m.span),
		})
	}
	return len(s.matches)
}

// message says what a match of the rule is.
func (s *scanner) message(sp span) string {
	switch s.rule.Type {
	case "pattern":
		return fmt.Sprintf("contains blocked substring %q", s.rule.Block[sp.term])
	case "regex":
		return fmt.Sprintf("matches Pattern %q", s.rule.Pattern.String())
	}
	return "contains " + piiName(sp.kind)
}

// walk visits every string in v and returns v with the strings the rule
// changed, copying only the objects and arrays on the way to them, and
// whether anything changed. Values nested deeper than jsonvalue.MaxDepth,
// which are outside the JSON model, are not visited.
func (s *scanner) walk(v any, depth int) (any, bool) {
	switch x := v.(type) {
	case string:
		if out, changed := s.visit(x); changed {
			return out, true
		}
	case []any:
		if depth >= jsonvalue.MaxDepth {
			return v, false
		}
		var out []any
		for i, e := range x {
			s.path = append(s.path, seg{index: i})
			e, changed := s.walk(e, depth+1)
			s.path = s.path[:len(s.path)-1]
			if changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = e
			}
		}
		if out != nil {
			return out, true
		}
	case map[string]any:
		if depth >= jsonvalue.MaxDepth {
			return v, false
		}
		var out map[string]any
		for k, e := range x {
			s.path = append(s.path, seg{key: k, index: -1})
			e, changed := s.walk(e, depth+1)
			s.path = s.path[:len(s.path)-1]
			if changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = e
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// visit finds the rule's matches in str, records them, and returns str
// with them redacted or masked when the rule says so.
func (s *scanner) visit(str string) (string, bool) {
	s.spans = s.find(str, s.spans[:0])
	if len(s.spans) == 0 {
		return str, false
	}
	for _, sp := range s.spans {
		s.matches = append(s.matches, match{path: slices.Clone(s.path), span: sp, text: str[sp.start:sp.end]})
	}
	if !s.change {
		return str, false
	}
	var b strings.Builder
	b.Grow(len(str))
	last := 0
	for _, sp := range s.spans {
		b.WriteString(str[last:sp.start])
		if s.rule.Action == "mask" {
			b.WriteString(mask(sp.kind, str[sp.start:sp.end]))
		} else {
			b.WriteString(redaction(sp.kind))
		}
		last = sp.end
	}
	b.WriteString(str[last:])
	return b.String(), true
}

// find appends the rule's matches in str to dst, in order, without overlaps.
func (s *scanner) find(str string, dst []span) []span {
	switch s.rule.Type {
	case "pattern":
		return findBlocked(str, s.rule.Block, dst)
	case "regex":
		if s.rule.Pattern == nil {
			return dst
		}
		for _, loc := range s.rule.Pattern.FindAllStringIndex(str, -1) {
			if loc[1] > loc[0] {
				dst = append(dst, span{start: loc[0], end: loc[1]})
			}
		}
		return dst
	case "pii":
		return s.pii.find(str, dst)
	}
	return dst
}

// findBlocked appends the occurrences in str of the Block entries terms,
// matched case-insensitively, to dst: in order, and where two overlap,
// the one that starts first, then the longer one.
func findBlocked(str string, terms []string, dst []span) []span {
	base := len(dst)
	for t, term := range terms {
		if term == "" {
			continue
		}
		for pos := 0; pos < len(str); {
			start, end := indexFold(str[pos:], term)
			if start < 0 {
				break
			}
			dst = append(dst, span{start: pos + start, end: pos + end, term: t})
			pos += end
		}
	}
	if len(terms) < 2 || len(dst)-base < 2 {
		return dst
	}
	found := dst[base:]
	slices.SortStableFunc(found, func(a, b span) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(b.end, a.end)
	})
	kept := found[:0]
	for _, sp := range found {
		if len(kept) == 0 || sp.start >= kept[len(kept)-1].end {
			kept = append(kept, sp)
		}
	}
	return dst[:base+len(kept)]
}

// indexFold returns where the first occurrence of sub in s starts and
// ends, under Unicode simple case folding, or -1, -1.
func indexFold(s, sub string) (int, int) {
	first, size := utf8.DecodeRuneInString(sub)
	rest := sub[size:]
	// Only K (Kelvin sign) and ſ (long s) fold to ASCII letters from
	// outside ASCII: for any other ASCII first rune, compare bytes.
	if first < utf8.RuneSelf && first != 'k' && first != 'K' && first != 's' && first != 'S' {
		lo, up := byte(unicode.ToLower(first)), byte(unicode.ToUpper(first))
		for i := 0; i < len(s); i++ {
			if b := s[i]; b == lo || b == up {
				if n, ok := prefixFold(s[i+1:], rest); ok {
					return i, i + 1 + n
				}
			}
		}
		return -1, -1
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if foldEqual(r, first) {
			if n, ok := prefixFold(s[i+w:], rest); ok {
				return i, i + w + n
			}
		}
		i += w
	}
	return -1, -1
}

// prefixFold reports whether s starts with prefix under simple case
// folding, and how many bytes of s that prefix takes.
func prefixFold(s, prefix string) (int, bool) {
	n := 0
	for _, want := range prefix {
		if n >= len(s) {
			return 0, false
		}
		r, w := utf8.DecodeRuneInString(s[n:])
		if !foldEqual(r, want) {
			return 0, false
		}
		n += w
	}
	return n, true
}

// foldEqual reports whether a and b are equal under simple case folding.
func foldEqual(a, b rune) bool {
	if a == b {
		return true
	}
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		return 'A' <= a && a <= 'Z' && a+'a'-'A' == b || 'A' <= b && b <= 'Z' && b+'a'-'A' == a
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

// comparePaths orders paths in document order: keys by their bytes,
// indexes by value, a path before the paths under it.
func comparePaths(a, b []seg) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.index >= 0 && y.index >= 0:
			if x.index != y.index {
				return cmp.Compare(x.index, y.index)
			}
		case x.index < 0 && y.index < 0:
			if x.key != y.key {
				return strings.Compare(x.key, y.key)
			}
		case x.index >= 0:
			return -1
		default:
			return 1
		}
	}
	return cmp.Compare(len(a), len(b))
}

// formatPath writes a path as $, then .key (['key'] for a key that is
// not a plain identifier) and [i] for each step.
func formatPath(path []seg) string {
	b := make([]byte, 0, 32)
	b = append(b, '$')
	for _, s := range path {
		if s.index >= 0 {
			b = jsonvalue.AppendIndex(b, s.index)
		} else {
			b = jsonvalue.AppendMember(b, s.key)
		}
	}
	return string(b)
}
