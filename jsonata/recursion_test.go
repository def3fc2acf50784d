package jsonata

import (
	"strings"
	"testing"
)

// TestRecursionRefused: an expression whose functions could call
// themselves is refused when compiled (the library has no depth limit,
// and a stack overflow would end the process); ordinary functions pass.
func TestRecursionRefused(t *testing.T) {
	for _, tc := range []struct{ src, refused string }{
		{`($f := function($n){ $n <= 1 ? 1 : $n * $f($n - 1) }; $f(5))`, "recursion cannot be bounded"},
		{`($f := function($x){ $f($x) }; $f(1))`, "recursion cannot be bounded"},
		{`($g := function($x){ $h($x) }; $h := function($x){ $g($x) }; $g(1))`, "function defined in the expression"},
		{`(function($f){ $f($f) })(function($f){ $f($f) })`, "not $f"},
		{`($f := function($x){ $map([$x], $f) }; $f(1))`, "recursion cannot be bounded"},
		{`(function($g, $x){ $x ~> $g })`, "not $g"},
		{`$map([1,2,3], function($v){ $v * 2 })`, ""},
		{`($double := function($v){ $v * 2 }; $map([1,2], $double))`, ""},
		{`$reduce([1,2,3], function($a, $b){ $a + $b })`, ""},
		{`$sort($states.input.items, function($l, $r){ $l.n > $r.n })`, ""},
		{`{"a": [1,2][$ > 1], "b": $string($uppercase("x"))}`, ""},
		{`$filter([1,2,3], function($v){ $partition([$v], 1) })`, ""},
	} {
		_, err := Compile(tc.src)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.src, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v, want refused saying %q", tc.src, err, tc.refused)
		}
	}
}
