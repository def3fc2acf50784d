package jsonpath

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// decode decodes JSON text for a test, failing it on bad text.
func decode(t testing.TB, text string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		t.Fatalf("jsonvalue.Decode(%s): %v", text, err)
	}
	return v
}

// compact writes v as compact JSON for messages and comparisons.
func compact(t testing.TB, v any) string {
	t.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		t.Fatalf("jsonvalue.Marshal(%#v): %v", v, err)
	}
	return string(b)
}

// testEnv is an Env backed by a context value and a variable map.
type testEnv struct {
	ctx  any
	vars map[string]any
}

func (e testEnv) Context() any { return e.ctx }

func (e testEnv) Variable(name string) (any, bool) {
	v, ok := e.vars[name]
	return v, ok
}

// orderDoc is a realistic execution input used by many tests.
const orderDoc = `{
  "detail-type": "Order Placed",
  "detail": {
    "orderId": "o-123",
    "customer": {"id": "c-9", "tier": "gold", "email": "ANA@example.com"},
    "items": [
      {"sku": "A1", "qty": 2, "price": 9.99, "tags": ["new"]},
      {"sku": "B2", "qty": 1, "price": 120, "tags": []},
      {"sku": "C3", "qty": 5, "price": 0.5, "tags": ["sale", "new"], "gift": true},
      {"sku": "D4", "qty": 0, "price": 15, "note": null}
    ],
    "total": 165.48
  },
  "matrix": [[1, 2, 3], [4, 5, 6]],
  "weird": {"a.b": 1, "it's": 2, "quote\"d": 3, "sp ace": 4, "ü": 5}
}`

func TestCompileAccepts(t *testing.T) {
	tests := []struct {
		expr     string
		definite bool
		context  bool
		variable string
	}{
		{"$", true, false, ""},
		{"$.a", true, false, ""},
		{"$.a.b[2].c", true, false, ""},
		{"$.detail-type", true, false, ""},
		{"$$.Execution.Input.input-values", true, true, ""},
		{"$$", true, true, ""},
		{"$name", true, false, "name"},
		{"$_x9.field[0]", true, false, "_x9"},
		{"$['a']", true, false, ""},
		{`$["a"]`, true, false, ""},
		{`$['it\'s']`, true, false, ""},
		{"$[-1]", true, false, ""},
		{"$[ 0 ]", true, false, ""},
		{"$[0,2]", false, false, ""},
		{"$['a','b']", false, false, ""},
		{"$[*]", false, false, ""},
		{"$.*", false, false, ""},
		{"$[1:5]", false, false, ""},
		{"$[:1]", false, false, ""},
		{"$[1:]", false, false, ""},
		{"$[::2]", false, false, ""},
		{"$[-2:]", false, false, ""},
		{"$..name", false, false, ""},
		{"$..*", false, false, ""},
		{"$..[0]", false, false, ""},
		{"$..['a']", false, false, ""},
		{"$[?(@.a)]", false, false, ""},
		{"$.x[?(@.a == 1 && (@.b != 'x' || !@.c))]", false, false, ""},
		{"$.x[?(@.s =~ /ab+c/i)]", false, false, ""},
		{"$.x[?(@.a in [1, 'two', null, true])]", false, false, ""},
		{"$.x[?(@.a nin [])]", false, false, ""},
		{"$.x[?(@.a <= $.max)]", false, false, ""},
		{"$.x[?(@ > -1.5e3)]", false, false, ""},
		{"$.x[?(@.tags[?(@ == 'new')])]", false, false, ""},
		{"$.名前", true, false, ""},
		{"$var[*]", false, false, "var"},
		// A dot before brackets, as AWS (Jayway) accepts it.
		{"$.Snapshots.[0].State", true, false, ""},
		{"$.[0]", true, false, ""},
		{"$.a.['b']", true, false, ""},
		{"$$.Execution.[0]", true, true, ""},
		{"$v.[0]", true, false, "v"},
		{"$.a.[*]", false, false, ""},
		{"$.a.[0,1]", false, false, ""},
		{"$.a.[1:]", false, false, ""},
		{"$.a.[?(@.b.[0] == 1)]", false, false, ""},
		{"$..a.[0]", false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			p, err := Compile(tt.expr)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.expr, err)
			}
			if got := p.String(); got != tt.expr {
				t.Errorf("String() = %q, want %q", got, tt.expr)
			}
			if got := p.Definite(); got != tt.definite {
				t.Errorf("Definite() = %v, want %v", got, tt.definite)
			}
			if got := p.IsContext(); got != tt.context {
				t.Errorf("IsContext() = %v, want %v", got, tt.context)
			}
			if got := p.Variable(); got != tt.variable {
				t.Errorf("Variable() = %q, want %q", got, tt.variable)
			}
		})
	}
}

func TestCompileSyntaxErrors(t *testing.T) {
	tests := []struct {
		expr   string
		offset int
	}{
		{"", 0},
		{"a.b", 0},
		{"@.a", 0},
		{"$.", 2},
		{"$..", 3},
		{"$...a", 3},
		{"$a-b", 2},
		{"$.a b", 3},
		{"$.a[", 4},
		{"$.a[0", 5},
		{"$.a[0]]", 6},
		{"$[a]", 2},
		{"$['a]", 2},
		{"$['a' 'b']", 6},
		{"$['a',]", 6},
		{`$['\x']`, 3},
		{`$['\u12']`, 3},
		{`$['\ud800']`, 3},
		{"$[0,]", 4},
		{"$[1:2:0]", 6},
		{"$[99999999999]", 2},
		{"$[-]", 2},
		{"$[?(@.a]", 7},
		{"$[?@.a]", 3},
		{"$[?()]", 4},
		{"$[?(@.a ==)]", 10},
		{"$[?(@.a == 'x)]", 11},
		{"$[?(1)]", 4},
		{"$[?('a' == 'b' &&)]", 17},
		{"$[?(@.a =~ 'x')]", 4},
		{"$[?(@.a == /x/)]", 11},
		{"$[?(@.a =~ /x/q)]", 14},
		{"$[?(@.a =~ /(/)]", 11},
		{"$[?(@.a =~ /x)]", 11},
		{"$[?(@.a == 01)]", 11},
		{"$[?(@.a == 1.)]", 11},
		{"$[?(@.a in [1,)]", 14},
		{"$[?($$.a)]", 4},
		{"$[?($x.a)]", 4},
		{"$[?(@.a == tru)]", 11},
		{"$$$", 2},
		{"$$x", 2},
		{"$.a(", 3},
		{"$.a)", 3},
		// What may follow a dot: a name, *, a bracket or a second dot.
		{"$.a.", 4},
		{"$.[", 3},
		{"$.[0", 4},
		{"$.[]", 3},
		{"$.a.[0].", 8},
		{"$. [0]", 2},
		{"$.[0]x", 5},
		{"$...[0]", 3},
		{"$.a.[?(@.[)]", 10},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			p, err := Compile(tt.expr)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Compile(%q) = %v, %v; want a *SyntaxError", tt.expr, p, err)
			}
			if se.Expr != tt.expr || se.Offset != tt.offset {
				t.Errorf("Compile(%q) error at %q offset %d (%s), want offset %d", tt.expr, se.Expr, se.Offset, se.Msg, tt.offset)
			}
		})
	}
}

func TestCompileNestingLimit(t *testing.T) {
	deep := "$[?(" + repeat("(", maxNesting+1) + "@.a" + repeat(")", maxNesting+1) + ")]"
	if _, err := Compile(deep); err == nil {
		t.Errorf("Compile(%d nested parentheses) succeeded, want an error", maxNesting+1)
	}
	ok := "$[?(" + repeat("(", maxNesting-2) + "@.a" + repeat(")", maxNesting-2) + ")]"
	if _, err := Compile(ok); err != nil {
		t.Errorf("Compile(%d nested parentheses): %v", maxNesting-2, err)
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestGetDefinite(t *testing.T) {
	doc := decode(t, orderDoc)
	tests := []struct {
		expr string
		want string
	}{
		{"$.detail.orderId", `"o-123"`},
		{"$.detail-type", `"Order Placed"`},
		{"$['detail-type']", `"Order Placed"`},
		{"$.detail.customer.tier", `"gold"`},
		{"$.detail.items[1].sku", `"B2"`},
		{"$.detail.items[-1].sku", `"D4"`},
		{"$.detail.items[-4].sku", `"A1"`},
		{"$.detail.items[3].note", `null`},
		{"$.detail.items[2].gift", `true`},
		{"$.detail.total", `165.48`},
		{"$.matrix[1][2]", `6`},
		{"$.matrix[-1][-3]", `4`},
		{"$['weird']['a.b']", `1`},
		{`$.weird['it\'s']`, `2`},
		{`$.weird["quote\"d"]`, `3`},
		{`$.weird['sp ace']`, `4`},
		{`$.weird.ü`, `5`},
		{`$.weird['\u00fc']`, `5`},
		{"$.detail.items[0].tags", `["new"]`},
		{"$.detail.customer", `{"id":"c-9","tier":"gold","email":"ANA@example.com"}`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			p, err := Compile(tt.expr)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.expr, err)
			}
			got, err := p.Get(doc, nil)
			if err != nil {
				t.Fatalf("Get(%q): %v", tt.expr, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Get(%q) = %s, want %s", tt.expr, compact(t, got), tt.want)
			}
		})
	}
}

// TestDotBeforeBracket checks that a dot before a bracketed segment, which
// AWS (Jayway) accepts, changes nothing: each path selects, fails, sets and
// locates exactly as the same path without that dot.
func TestDotBeforeBracket(t *testing.T) {
	doc := decode(t, orderDoc)
	tests := []struct{ dotted, plain string }{
		{"$.detail.items.[1].sku", "$.detail.items[1].sku"},
		{"$.detail.items.[-1]", "$.detail.items[-1]"},
		{"$.matrix.[1].[2]", "$.matrix[1][2]"},
		{"$.weird.['a.b']", "$.weird['a.b']"},
		{`$.weird.["quote\"d"]`, `$.weird["quote\"d"]`},
		{"$.detail.items.[*].sku", "$.detail.items[*].sku"},
		{"$.detail.items.[0,2].sku", "$.detail.items[0,2].sku"},
		{"$.detail.items.[1:3].sku", "$.detail.items[1:3].sku"},
		{"$.detail.items.[?(@.tags.[0] == 'new')].sku", "$.detail.items[?(@.tags[0] == 'new')].sku"},
		{"$.detail.customer.['tier','id']", "$.detail.customer['tier','id']"},
		{"$..items.[0].sku", "$..items[0].sku"},
		{"$.[0]", "$[0]"},
		// Failures carry the same normalized path.
		{"$.detail.items.[9].sku", "$.detail.items[9].sku"},
		{"$.detail.nope.[0]", "$.detail.nope[0]"},
		{"$.detail.orderId.[0]", "$.detail.orderId[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.dotted, func(t *testing.T) {
			dotted, plain := mustCompile(t, tt.dotted), mustCompile(t, tt.plain)
			if dotted.Definite() != plain.Definite() {
				t.Errorf("Definite() = %v, want %v as for %q", dotted.Definite(), plain.Definite(), tt.plain)
			}
			got, gotErr := dotted.Get(doc, nil)
			want, wantErr := plain.Get(doc, nil)
			var gotPE, wantPE *PathError
			switch {
			case errors.As(gotErr, &gotPE) && errors.As(wantErr, &wantPE):
				if gotPE.Msg != wantPE.Msg {
					t.Errorf("Get(%q) error Msg = %q, want %q as for %q", tt.dotted, gotPE.Msg, wantPE.Msg, tt.plain)
				}
			case gotErr != nil || wantErr != nil:
				t.Errorf("Get(%q) error = %v, want %v as for %q", tt.dotted, gotErr, wantErr, tt.plain)
			case !jsonvalue.Equal(got, want):
				t.Errorf("Get(%q) = %s, want %s as for %q", tt.dotted, compact(t, got), compact(t, want), tt.plain)
			}
			gotLocs, err := dotted.Locate(doc)
			if err != nil {
				t.Fatalf("Locate(%q): %v", tt.dotted, err)
			}
			wantLocs, err := plain.Locate(doc)
			if err != nil {
				t.Fatalf("Locate(%q): %v", tt.plain, err)
			}
			if g, w := fmt.Sprint(gotLocs), fmt.Sprint(wantLocs); g != w {
				t.Errorf("Locate(%q) = %s, want %s as for %q", tt.dotted, g, w, tt.plain)
			}
		})
	}
}

func TestGetRootIsInput(t *testing.T) {
	doc := decode(t, orderDoc)
	got, err := mustCompile(t, "$").Get(doc, nil)
	if err != nil {
		t.Fatalf("Get($): %v", err)
	}
	if !jsonvalue.Equal(got, doc) {
		t.Errorf("Get($) = %s, want the input", compact(t, got))
	}
}

func mustCompile(t testing.TB, expr string) *Path {
	t.Helper()
	p, err := Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return p
}

func TestGetDefiniteErrors(t *testing.T) {
	tests := []struct {
		doc  string
		expr string
		want string
	}{
		// Recorded from AWS: a missing last name, a missing name before it.
		{`{}`, "$.missingField", `Invalid path '$.missingField' : No results for path: $['missingField']`},
		{`{}`, "$.not.there.at.all", `Invalid path '$.not.there.at.all' : Missing property in path $['not']`},
		{`{"a":{}}`, "$.a.b.c", `Invalid path '$.a.b.c' : Missing property in path $['a']['b']`},
		{`{"a":{"b":{}}}`, "$.a['b'].c", `Invalid path '$.a['b'].c' : No results for path: $['a']['b']['c']`},
		// Index out of range: Jayway yields no result, reported for the whole path.
		{`{"xs":[1,2]}`, "$.xs[2]", `Invalid path '$.xs[2]' : No results for path: $['xs'][2]`},
		{`{"xs":[1,2]}`, "$.xs[-3]", `Invalid path '$.xs[-3]' : No results for path: $['xs'][-3]`},
		{`{"xs":[{"a":1}]}`, "$.xs[5].a", `Invalid path '$.xs[5].a' : No results for path: $['xs'][5]['a']`},
		{`{"xs":[]}`, "$.xs[0]", `Invalid path '$.xs[0]' : No results for path: $['xs'][0]`},
		// A name applied to something that is not an object.
		{`{"xs":[1]}`, "$.xs.a", `Invalid path '$.xs.a' : Expected to find an object with property ['a'] in path $['xs'] but found 'net.minidev.json.JSONArray'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
		{`{"s":"text"}`, "$.s.a", `Invalid path '$.s.a' : Expected to find an object with property ['a'] in path $['s'] but found 'java.lang.String'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
		{`{"n":null}`, "$.n.a", `Invalid path '$.n.a' : Expected to find an object with property ['a'] in path $['n'] but found 'null'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
		{`{"n":7}`, "$.n.a", `Invalid path '$.n.a' : Expected to find an object with property ['a'] in path $['n'] but found 'java.lang.Integer'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
		{`{"n":7.5}`, "$.n.a", `Invalid path '$.n.a' : Expected to find an object with property ['a'] in path $['n'] but found 'java.lang.Double'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
		{`[1]`, "$.a", `Invalid path '$.a' : Expected to find an object with property ['a'] in path $ but found 'net.minidev.json.JSONArray'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
		// An index applied to something that is not an array.
		{`{"o":{"k":1}}`, "$.o[0]", `Invalid path '$.o[0]' : Filter: [0] can only be applied to arrays. Current context is: {"k":1}`},
		{`{"s":"text"}`, "$.s[0].b", `Invalid path '$.s[0].b' : Filter: [0]['b'] can only be applied to arrays. Current context is: text`},
		{`{"n":null}`, "$.n[0]", `Invalid path '$.n[0]' : The path $['n'] is null`},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" on "+tt.doc, func(t *testing.T) {
			got, err := mustCompile(t, tt.expr).Get(decode(t, tt.doc), nil)
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Get(%q) = %v, %v; want a *PathError", tt.expr, got, err)
			}
			if pe.Path != tt.expr {
				t.Errorf("Get(%q) error Path = %q, want %q", tt.expr, pe.Path, tt.expr)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Get(%q) error =\n  %s\nwant\n  %s", tt.expr, got, tt.want)
			}
		})
	}
}

func TestGetIndefinite(t *testing.T) {
	doc := decode(t, orderDoc)
	tests := []struct {
		expr string
		want string
	}{
		{"$.detail.items[*].sku", `["A1","B2","C3","D4"]`},
		{"$.detail.items.*.qty", `[2,1,5,0]`},
		{"$.detail.customer.*", `["ANA@example.com","c-9","gold"]`},
		{"$.detail.items[0,2].sku", `["A1","C3"]`},
		{"$.detail.items[2,0,9,-1].sku", `["C3","A1","D4"]`},
		{"$.detail.customer['tier','id','nope']", `["gold","c-9"]`},
		{"$.detail.items[1:3].sku", `["B2","C3"]`},
		{"$.detail.items[:1].sku", `["A1"]`},
		{"$.detail.items[2:].sku", `["C3","D4"]`},
		{"$.detail.items[-2:].sku", `["C3","D4"]`},
		{"$.detail.items[:-3].sku", `["A1"]`},
		{"$.detail.items[::2].sku", `["A1","C3"]`},
		{"$.detail.items[1::2].sku", `["B2","D4"]`},
		{"$.detail.items[::-1].sku", `["D4","C3","B2","A1"]`},
		{"$.detail.items[-1:0:-2].sku", `["D4","B2"]`},
		{"$.detail.items[10:20]", `[]`},
		{"$.detail.items[3:1]", `[]`},
		{"$.detail.items[-100:1].sku", `["A1"]`},
		{"$..sku", `["A1","B2","C3","D4"]`},
		{"$.detail..tags[0]", `["new","sale"]`},
		// Pre-order, object members in key order: detail (items, then tags
		// inside items), then matrix and its rows.
		{"$..[1]", `[{"sku":"B2","qty":1,"price":120,"tags":[]},"new",[4,5,6],2,5]`},
		{"$.matrix..*", `[[1,2,3],[4,5,6],1,2,3,4,5,6]`},
		{"$.matrix[*][1]", `[2,5]`},
		{"$.detail.items[*].gift", `[true]`},
		{"$.detail.items[*].note", `[null]`},
		// Missing or mistyped containers select nothing.
		{"$.nothing[*]", `[]`},
		{"$.nothing[*].x", `[]`},
		{"$.nothing[1:5]", `[]`},
		{"$.nothing[1:5].itemValue", `[]`},
		{"$.no.thing[:1]", `[]`},
		{"$.detail.orderId[*]", `[]`},
		{"$.detail.orderId[0,1]", `[]`},
		{"$.detail.customer[0:2]", `[]`},
		{"$.detail.items[*].sku.x", `[]`},
		{"$..nowhere", `[]`},
		{"$.detail-type.*", `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := mustCompile(t, tt.expr).Get(doc, nil)
			if err != nil {
				t.Fatalf("Get(%q): %v", tt.expr, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Get(%q) = %s, want %s", tt.expr, compact(t, got), tt.want)
			}
		})
	}
}

func TestGetEmptyInput(t *testing.T) {
	// AWS: wildcards and slices over a missing array give [], never an error.
	for _, expr := range []string{"$.list[*]", "$.list[1:5].value", "$.box.list[:1]", "$.box.list[1:]", "$.list[*].value"} {
		t.Run(expr, func(t *testing.T) {
			got, err := mustCompile(t, expr).Get(map[string]any{}, nil)
			if err != nil {
				t.Fatalf("Get(%q): %v", expr, err)
			}
			list, ok := got.([]any)
			if !ok || list == nil || len(list) != 0 {
				t.Errorf("Get(%q) = %#v, want an empty, non-nil []any", expr, got)
			}
		})
	}
}

func TestGetRoots(t *testing.T) {
	input := decode(t, `{"a":1}`)
	env := testEnv{
		ctx: decode(t, `{"Execution":{"Input":{"input-values":[1,2]}},"Map":{"Item":{"Index":3}}}`),
		vars: map[string]any{
			"order": decode(t, `{"lines":[{"n":1},{"n":2}]}`),
			"flag":  false,
			"none":  nil,
		},
	}
	tests := []struct {
		expr string
		want string
	}{
		{"$$.Execution.Input.input-values", `[1,2]`},
		{"$$.Map.Item.Index", `3`},
		{"$$.Execution.Input.input-values[*]", `[1,2]`},
		{"$order.lines[1].n", `2`},
		{"$order.lines[*].n", `[1,2]`},
		{"$order", `{"lines":[{"n":1},{"n":2}]}`},
		{"$flag", `false`},
		{"$none", `null`},
		{"$order.lines[?(@.n > $.lines[0].n)].n", `[2]`},
		{"$.a", `1`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := mustCompile(t, tt.expr).Get(input, env)
			if err != nil {
				t.Fatalf("Get(%q): %v", tt.expr, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Get(%q) = %s, want %s", tt.expr, compact(t, got), tt.want)
			}
		})
	}
}

func TestGetRootErrors(t *testing.T) {
	env := testEnv{ctx: decode(t, `{"Execution":{"Input":{}}}`), vars: map[string]any{"v": decode(t, `{}`)}}
	tests := []struct {
		expr string
		env  Env
		want string
	}{
		{"$$.Execution.Input.nope", env, `Invalid path '$$.Execution.Input.nope' : No results for path: $['Execution']['Input']['nope']`},
		{"$$.Execution.Nope.x", env, `Invalid path '$$.Execution.Nope.x' : Missing property in path $['Execution']['Nope']`},
		{"$v.missing", env, `Invalid path '$v.missing' : No results for path: $['missing']`},
		{"$undefined", env, `Invalid path '$undefined' : undefined variable $undefined`},
		{"$undefined.x[*]", env, `Invalid path '$undefined.x[*]' : undefined variable $undefined`},
		{"$undefined", nil, `Invalid path '$undefined' : undefined variable $undefined`},
		{"$$.Execution", nil, `Invalid path '$$.Execution' : Expected to find an object with property ['Execution'] in path $ but found 'null'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := mustCompile(t, tt.expr).Get(map[string]any{}, tt.env)
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Get(%q) = %v, %v; want a *PathError", tt.expr, got, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Get(%q) error =\n  %s\nwant\n  %s", tt.expr, err, tt.want)
			}
		})
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		doc   string
		expr  string
		value string
		want  string
	}{
		{`{"a":1}`, "$", `{"r":true}`, `{"r":true}`},
		{`{"a":1}`, "$.result", `"ok"`, `{"a":1,"result":"ok"}`},
		{`{"a":1}`, "$.a", `[1,2]`, `{"a":[1,2]}`},
		{`{"a":1}`, "$.x.y.z", `0`, `{"a":1,"x":{"y":{"z":0}}}`},
		{`{"a":{"keep":true,"b":{"old":1}}}`, "$.a.b.new", `2`, `{"a":{"keep":true,"b":{"old":1,"new":2}}}`},
		{`{"list":[{"v":1},{"v":2}]}`, "$.list[1].v", `20`, `{"list":[{"v":1},{"v":20}]}`},
		{`{"list":[{"v":1},{"v":2}]}`, "$.list[0].w", `"n"`, `{"list":[{"v":1,"w":"n"},{"v":2}]}`},
		{`{"list":[1,2,3]}`, "$.list[2]", `null`, `{"list":[1,2,null]}`},
		{`{"list":[1,2,3]}`, "$.list[-1]", `9`, `{"list":[1,2,9]}`},
		{`{"weird":{}}`, "$.weird['a.b']", `1`, `{"weird":{"a.b":1}}`},
		// A dot before brackets, as AWS accepts it: $.a.[0] is $.a[0].
		{`{"list":[{"v":1},{"v":2}]}`, "$.list.[1].v", `20`, `{"list":[{"v":1},{"v":20}]}`},
		{`{"list":[1,2,3]}`, "$.list.[0]", `9`, `{"list":[9,2,3]}`},
		{`[1,2]`, "$.[1]", `9`, `[1,9]`},
		{`{"weird":{}}`, "$.weird.['a.b']", `1`, `{"weird":{"a.b":1}}`},
		{`"scalar"`, "$", `1`, `1`},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" on "+tt.doc, func(t *testing.T) {
			doc := decode(t, tt.doc)
			before := compact(t, doc)
			got, err := mustCompile(t, tt.expr).Set(doc, decode(t, tt.value))
			if err != nil {
				t.Fatalf("Set(%q): %v", tt.expr, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Set(%q) = %s, want %s", tt.expr, compact(t, got), tt.want)
			}
			if after := compact(t, doc); after != before {
				t.Errorf("Set(%q) changed the original document to %s, want it unchanged (%s)", tt.expr, after, before)
			}
		})
	}
}

func TestSetSharesUntouchedValues(t *testing.T) {
	doc := decode(t, `{"big":{"x":[1,2,3]},"path":{"to":{}},"list":[{"a":1},{"b":2}]}`).(map[string]any)
	got, err := mustCompile(t, "$.path.to.value").Set(doc, "v")
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	m := got.(map[string]any)
	if !sameMap(m["big"], doc["big"]) {
		t.Errorf("Set copied $.big, which is off the path; want it shared")
	}
	if sameMap(m["path"], doc["path"]) {
		t.Errorf("Set shared $.path, which is on the path; want a copy")
	}
	got, err = mustCompile(t, "$.list[1].c").Set(doc, "v")
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	list, orig := got.(map[string]any)["list"].([]any), doc["list"].([]any)
	if !sameMap(list[0], orig[0]) {
		t.Errorf("Set copied $.list[0], which is off the path; want it shared")
	}
	if _, ok := orig[1].(map[string]any)["c"]; ok {
		t.Errorf("Set modified the original $.list[1]")
	}
}

// sameMap reports whether a and b are the same map object.
func sameMap(a, b any) bool {
	x, ok1 := a.(map[string]any)
	y, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	x["\x00probe"] = true
	_, same := y["\x00probe"]
	delete(x, "\x00probe")
	return same
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		doc  string
		expr string
		want string
	}{
		{`"text"`, "$.result", `Unable to apply ReferencePath $.result to input "text"`},
		{`{"a":"text"}`, "$.a.b", `Unable to apply step "b" to input {"a":"text"}`},
		{`{"a":[1]}`, "$.a.b", `Unable to apply step "b" to input {"a":[1]}`},
		{`{"a":null}`, "$.a.b", `Unable to apply step "b" to input {"a":null}`},
		{`[1,2]`, "$.agg", `Unable to apply step "agg" to input [1,2]`},
		{`{"a":[1]}`, "$.a[1]", `Unable to apply ReferencePath $.a[1] to input {"a":[1]}`},
		{`{"a":{}}`, "$.a[0]", `Unable to apply ReferencePath $.a[0] to input {"a":{}}`},
		{`{}`, "$.a[0]", `Unable to apply ReferencePath $.a[0] to input {}`},
		{`[1,2]`, "$.a", `Unable to apply step "a" to input [1,2]`},
		{`{"a":[1]}`, "$.a.[1]", `Unable to apply ReferencePath $.a.[1] to input {"a":[1]}`},
		{`{}`, "$.a.[0]", `Unable to apply ReferencePath $.a.[0] to input {}`},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" on "+tt.doc, func(t *testing.T) {
			doc := decode(t, tt.doc)
			got, err := mustCompile(t, tt.expr).Set(doc, "v")
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Set(%q) = %v, %v; want a *PathError", tt.expr, got, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Set(%q) error = %s, want %s", tt.expr, err, tt.want)
			}
			if pe.Msg == "" || pe.Input == nil && tt.doc != "null" {
				t.Errorf("Set(%q) error = %#v, want a Msg and the Input", tt.expr, pe)
			}
		})
	}
}

func TestSetRejectsIndefiniteAndOtherRoots(t *testing.T) {
	for _, expr := range []string{"$.a[*]", "$$.a", "$v.a", "$..a"} {
		t.Run(expr, func(t *testing.T) {
			if got, err := mustCompile(t, expr).Set(map[string]any{}, 1); err == nil {
				t.Errorf("Set(%q) = %v, want an error", expr, got)
			}
		})
	}
}

func TestCompileReference(t *testing.T) {
	for _, expr := range []string{"$", "$.a", "$.a.b[0].c", "$['a b'][2]", "$.detail-type", "$.a.[0]", "$.[0].b", "$.a.['b']"} {
		t.Run(expr, func(t *testing.T) {
			if _, err := CompileReference(expr); err != nil {
				t.Errorf("CompileReference(%q): %v", expr, err)
			}
		})
	}
	for _, expr := range []string{"$$.a", "$var", "$var.a", "$.a[*]", "$.*", "$.a[-1]", "$.a[0,1]", "$['a','b']", "$.a[1:]", "$..a", "$..[0]", "$.a[?(@.b)]", "a", "$.a[", "$.a.[*]", "$.a.[-1]", "$.a.[0,1]", "$.a.["} {
		t.Run(expr, func(t *testing.T) {
			p, err := CompileReference(expr)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("CompileReference(%q) = %v, %v; want a *SyntaxError", expr, p, err)
			}
			if se.Msg == "" {
				t.Errorf("CompileReference(%q) error has no message", expr)
			}
		})
	}
}

// TestSyntaxErrorText checks how a *SyntaxError prints its fields.
func TestSyntaxErrorText(t *testing.T) {
	err := &SyntaxError{Expr: "$.a[", Offset: 4, Msg: "unterminated bracket"}
	want := `invalid expression "$.a[" at offset 4: unterminated bracket`
	if got := err.Error(); got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
}

func TestQuotedNames(t *testing.T) {
	tests := []struct {
		expr string
		name string
	}{
		{`$['plain']`, "plain"},
		{`$["dq"]`, "dq"},
		{`$['a\'b']`, "a'b"},
		{`$["a\"b"]`, `a"b`},
		{`$['a"b']`, `a"b`},
		{`$["a'b"]`, "a'b"},
		{`$['\\\/\b\f\n\r\t']`, "\\/\b\f\n\r\t"},
		{`$['\u00e9\u20AC']`, "é€"},
		{`$['\ud83d\ude00']`, "😀"},
		{`$['']`, ""},
		{`$['a.b[0]']`, "a.b[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			doc := map[string]any{tt.name: "found"}
			got, err := mustCompile(t, tt.expr).Get(doc, nil)
			if err != nil || got != "found" {
				t.Errorf("Get(%q) on {%q: found} = %v, %v; want found", tt.expr, tt.name, got, err)
			}
		})
	}
}
