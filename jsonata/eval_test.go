package jsonata

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// evalInput is the $states.input of TestLanguage.
const evalInput = `{"a":{"b":[{"c":1,"d":"x"},{"c":2,"d":"y"},{"c":3,"d":"x"}]},"s":"Hello World","n":[3,1,2],"o":{"k1":1,"k2":[1,2]},"e":[]}`

// TestLanguage evaluates the constructs of the language and its
// functions.
func TestLanguage(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		// Paths, predicates, grouping, ordering.
		{`$states.input.a.b.c`, `[1,2,3]`},
		{`$states.input.a.b[0]`, `{"c":1,"d":"x"}`},
		{`$states.input.a.b[-1].d`, `"x"`},
		{`$states.input.a.b[c>1].d`, `["y","x"]`},
		{`$states.input.a.b.d[0]`, `["x","y","x"]`},
		{`$states.input.n[[0,2]]`, `[3,2]`},
		{`$states.input.a.b{d: $sum(c)}`, `{"x":4,"y":2}`},
		{`$states.input.a.b[d="x"]{d: $count(c)}`, `{"x":2}`},
		{`$states.input.a.b^(>c).c`, `[3,2,1]`},
		{`$states.input.a.b^(d, >c).c`, `[3,1,2]`},
		{`$states.input.a.b[0].c[]`, `[1]`},
		{`$states.input.a.b.(c * 10)`, `[10,20,30]`},
		{`$states.input.**.c`, `[1,2,3]`},
		{`$states.input.o.*`, `[1,1,2]`},
		{`$states.input.s.$uppercase()`, `"HELLO WORLD"`},
		// Operators.
		{`1 in [1,2]`, `true`},
		{`"a" & 1 & true & null`, `"a1truenull"`},
		{`[1..5][$ > 2]`, `[3,4,5]`},
		{`10 % 3 + 7 / 2`, `4.5`},
		{`"b" > "a" and $not(false)`, `true`},
		{`$states.input.zz ? 1 : 2`, `2`},
		{`-$states.input.n[0]`, `-3`},
		{`$states.input.zz = 1 or $states.input.zz != 1`, `false`},
		{`false and $error("not evaluated")`, `false`},
		// Functions, partial application, chains, transforms.
		{`($x := 5; $y := function($a){$a * $x}; $y(3))`, `15`},
		{`$states.input.n ~> $sum()`, `6`},
		{`($f := $uppercase ~> $substring(?, 0, 2); $f("hello"))`, `"HE"`},
		{`function($x)<n:n>{$x*2}(4)`, `8`},
		{`$states.input.a ~> |b|{"e": c * 2}, ["d"]|`, `{"b":[{"c":1,"e":2},{"c":2,"e":4},{"c":3,"e":6}]}`},
		{`$map($states.input.n, function($v, $i){$v + $i})`, `[3,2,4]`},
		{`$filter($states.input.n, function($v){$v > 1})`, `[3,2]`},
		{`$reduce($states.input.n, function($a, $b){$a + $b}, 10)`, `16`},
		{`$single([1,2,3], function($v){$v=2})`, `2`},
		{`$sort($states.input.a.b, function($l,$r){$l.c < $r.c}).c`, `[3,2,1]`},
		{`$each($states.input.o, function($v,$k){$k})`, `["k1","k2"]`},
		{`$sift($states.input.o, function($v){$type($v)="number"})`, `{"k1":1}`},
		{`$replace($states.input.s, /(o)/, "[$1]")`, `"Hell[o] W[o]rld"`},
		{`$replace($states.input.s, /o/, function($m){$uppercase($m.match)})`, `"HellO WOrld"`},
		{`$match($states.input.s, /o/).index`, `[4,7]`},
		{`/W(or)/($states.input.s).groups`, `["or"]`},
		{`$split($states.input.s, " ", 1)`, `["Hello"]`},
		{`$join(["a","b"], "-") & $pad("x", -3, "*") & $trim("  a  b ")`, `"a-b**xa b"`},
		{`$substringAfter($states.input.s, " ") & $substringBefore($states.input.s, " ")`, `"WorldHello"`},
		{`[$round(2.567, 2), $abs(-3), $power(2, 10), $sqrt(16), $max($states.input.n), $average($states.input.n)]`, `[2.57,3,1024,4,3,2]`},
		{`$number("42") + $count($states.input.a.b) + $length("héllo")`, `50`},
		{`[$exists($states.input.zz), $boolean([0, ""]), $not(true)]`, `[false,false,false]`},
		{`[[$append([1,2],[3])], [$reverse($states.input.n)], [$zip([1,2],[3,4])]]`, `[[1,2,3],[2,1,3],[[1,3],[2,4]]]`},
		{`$merge([{"a":1},{"b":2}])`, `{"a":1,"b":2}`},
		{`$lookup($states.input.o, "k1")`, `1`},
		{`$formatNumber(1234.5, "#,##0.00")`, `"1,234.50"`},
		{`[$fromMillis(0), $toMillis("1970-01-01T00:00:01.000Z")]`, `["1970-01-01T00:00:00.000Z",1000]`},
		{`$now() = $now() and $millis() > 0`, `true`},
		{`[$type(null), $type($states.input.n), $type(function(){1})]`, `["null","array","function"]`},
		// As JSONata's JavaScript implementation, where the library was not.
		{`$string(0.1 + 0.2)`, `"0.3"`},
		{`$string({"a":"<&>","b":1.5})`, `"{\"a\":\"<&>\",\"b\":1.5}"`},
		{`{"a": $states.input.e}`, `{"a":[]}`},
		{`$map([1], function($v){$v})`, `1`},
		{`$distinct([1,2,2,"a","a",[1],[1]])`, `[1,2,"a",[1]]`},
		{`$keys({"b":1,"a":2,"c":3})`, `["a","b","c"]`},
		{`$spread({"b":1,"a":2})`, `[{"a":2},{"b":1}]`},
	} {
		tm, err := CompileTemplate("{% "+tc.src+" %}", "Output")
		if err != nil {
			t.Errorf("CompileTemplate(%q): %v", tc.src, err)
			continue
		}
		got, err := tm.Eval(t.Context(), scope(t, evalInput, nil), "Output")
		if err != nil || !jsonvalue.Equal(got, decode(t, tc.want)) {
			b, _ := jsonvalue.Marshal(got)
			t.Errorf("Eval(%s) = %s, %v; want %s", tc.src, b, err, tc.want)
		}
	}
}
