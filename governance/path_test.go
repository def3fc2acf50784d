package governance

import (
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		src       string
		wildcards bool
		want      string // formatPath of the result; "" when refused
		err       string // part of the message when refused
	}{
		{src: "$.a", want: "$.a"},
		{src: "$.a.b[2].c", want: "$.a.b[2].c"},
		{src: "$['a b']", want: "$['a b']"},
		{src: `$["a"]`, want: "$.a"},
		{src: `$['it\'s']`, want: `$['it\'s']`},
		{src: `$['\u00e9']`, want: "$['é']"},
		{src: "$.detail-type", want: "$['detail-type']"},
		{src: "$[0]", want: "$[0]"},
		{src: "$.a[ 3 ]", want: "$.a[3]"},
		{src: "$.a.[0].b", want: "$.a[0].b"},
		{src: "$.['a b']", want: "$['a b']"},
		{src: "$.a.[*]", wildcards: true, want: "$.a[*]"},
		{src: "$.a.[*]", err: "wildcards are not allowed"},
		{src: "$.a.[", err: "unterminated"},
		{src: "$.tasks[*].id", wildcards: true, want: "$.tasks[*].id"},
		{src: "$.a.*", wildcards: true, want: "$.a.*"},
		{src: "$.*.b", wildcards: true, want: "$.*.b"},
		{src: "$['*']", wildcards: true, want: "$['*']"},
		{src: "$", err: "must name a value below $"},
		{src: "a.b", err: "must start with $"},
		{src: "", err: "must start with $"},
		{src: "$$.Execution", err: "context object"},
		{src: "$var.a", err: "variable"},
		{src: "$..a", err: "deep scan"},
		{src: "$..a", wildcards: true, err: "deep scan"},
		{src: "$.a.*", err: "wildcards are not allowed"},
		{src: "$.a[*]", err: "wildcards are not allowed"},
		{src: "$.a[-1]", wildcards: true, err: "negative indexes are not allowed (names, indexes, * and [*] only)"},
		{src: "$.a[-1]", err: "negative indexes are not allowed (names and indexes only)"},
		{src: "$.a[0,1]", wildcards: true, err: "only a quoted name, an index or * may stand in brackets"},
		{src: "$.a[0,1]", err: "only a quoted name or an index may stand in brackets"},
		{src: "$.a[1:2]", wildcards: true, err: "names, indexes, * and [*] only"},
		{src: "$.a[?(@.b)]", wildcards: true, err: "names, indexes, * and [*] only"},
		{src: "$['a','b']", wildcards: true, err: "names, indexes, * and [*] only"},
		{src: "$.a[", err: "unterminated"},
		{src: "$.", err: "name must follow"},
		{src: "$.a[01]", err: "plain non-negative integer"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			segs, msg := parsePath(tt.src, tt.wildcards)
			if tt.want != "" {
				if msg != "" {
					t.Fatalf("parsePath(%q) failed: %s, want %s", tt.src, msg, tt.want)
				}
				if got := formatPath(segs); got != tt.want {
					t.Errorf("formatPath(parsePath(%q)) = %s, want %s", tt.src, got, tt.want)
				}
				return
			}
			if msg == "" || !strings.Contains(msg, tt.err) {
				t.Errorf("parsePath(%q) = %s, %q; want a message containing %q", tt.src, formatPath(segs), msg, tt.err)
			}
		})
	}
}

// TestRulePathsAgreeWithJSONPath checks that a rule path reaches the value
// jsonpath's reference path reaches, and that a formatted path parses back
// to itself.
func TestRulePathsAgreeWithJSONPath(t *testing.T) {
	doc := decode(t, `{"a": {"b": [10, {"c d": "x", "it's": true}]}, "é": null, "detail-type": 1}`)
	for _, src := range []string{"$.a", "$.a.b", "$.a.b[0]", "$.a.b[1]['c d']", `$.a.b[1]['it\'s']`, "$['é']", "$.detail-type", "$.a.b[5]", "$.missing.x", "$.a.b.[1]['c d']"} {
		t.Run(src, func(t *testing.T) {
			segs, msg := parsePath(src, false)
			if msg != "" {
				t.Fatalf("parsePath(%q): %s", src, msg)
			}
			ref, err := jsonpath.CompileReference(src)
			if err != nil {
				t.Fatalf("CompileReference(%q): %v", src, err)
			}
			want, werr := ref.Get(doc, nil)
			got, ok := lookup(doc, segs)
			if ok != (werr == nil) || (ok && !jsonvalue.Equal(got, want)) {
				t.Errorf("lookup(%q) = %v, %v; jsonpath Get = %v, %v", src, got, ok, want, werr)
			}
			again, msg := parsePath(formatPath(segs), false)
			if msg != "" || comparePaths(again, segs) != 0 {
				t.Errorf("parsePath(formatPath(%q) = %s) = %v, %q; want the same path", src, formatPath(segs), again, msg)
			}
		})
	}
}

func TestFormatPathQuotes(t *testing.T) {
	tests := []struct {
		segs []segment
		want string
	}{
		{nil, "$"},
		{[]segment{keySeg("a"), indexSeg(3), keySeg("_b9")}, "$.a[3]._b9"},
		{[]segment{keySeg("9a")}, "$['9a']"},
		{[]segment{keySeg("")}, "$['']"},
		{[]segment{keySeg(`a'b\c`)}, `$['a\'b\\c']`},
		{[]segment{keySeg("a\nb")}, `$['a\u000ab']`},
		{[]segment{keySeg("\xff")}, "$['\uFFFD']"},
		{[]segment{{kind: segAnyKey}, {kind: segAnyIndex}}, "$.*[*]"},
	}
	for _, tt := range tests {
		if got := formatPath(tt.segs); got != tt.want {
			t.Errorf("formatPath(%v) = %s, want %s", tt.segs, got, tt.want)
		}
	}
}

func TestComparePaths(t *testing.T) {
	ordered := []string{"$", "$.a", "$.a.b", "$.a[2]", "$.a[10]", "$.b", "$['b c']"}
	for i := range ordered {
		for j := range ordered {
			a, _ := parsePath(ordered[i], false)
			b, _ := parsePath(ordered[j], false)
			if ordered[i] == "$" {
				a = nil
			}
			if ordered[j] == "$" {
				b = nil
			}
			got := comparePaths(a, b)
			want := i - j
			if (got < 0) != (want < 0) || (got == 0) != (want == 0) {
				t.Errorf("comparePaths(%s, %s) = %d, want the sign of %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}
