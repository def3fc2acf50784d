package jsonpath

import (
	"errors"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func TestTemplateEval(t *testing.T) {
	input := decode(t, `{"order":{"id":"o-1","lines":[{"sku":"A","qty":2},{"sku":"B","qty":3}]},"user":"ana"}`)
	env := testEnv{
		ctx:  decode(t, `{"Execution":{"Id":"exec-1","Input":{"k":"v"}},"Map":{"Item":{"Index":4}}}`),
		vars: map[string]any{"limit": decode(t, `5`), "cfg": decode(t, `{"mode":"fast"}`)},
	}
	tests := []struct {
		name     string
		template string
		want     string
	}{
		{"paths", `{"id.$":"$.order.id","who.$":"$.user","all.$":"$"}`,
			`{"id":"o-1","who":"ana","all":{"order":{"id":"o-1","lines":[{"sku":"A","qty":2},{"sku":"B","qty":3}]},"user":"ana"}}`},
		{"literals stay literal", `{"constant":"$.order.id","n":1,"b":false,"z":null,"list":["$.x",1],"o":{"p":"$$"}}`,
			`{"constant":"$.order.id","n":1,"b":false,"z":null,"list":["$.x",1],"o":{"p":"$$"}}`},
		{"nested objects and arrays", `{"outer":{"inner.$":"$.order.lines[0].sku","keep":"k"},"arr":[{"q.$":"$.order.lines[1].qty"},"lit",[{"u.$":"$.user"}]]}`,
			`{"outer":{"inner":"A","keep":"k"},"arr":[{"q":3},"lit",[{"u":"ana"}]]}`},
		{"indefinite paths give lists", `{"skus.$":"$.order.lines[*].sku","none.$":"$.order.nothing[*]","big.$":"$.order.lines[?(@.qty > 2)].sku"}`,
			`{"skus":["A","B"],"none":[],"big":["B"]}`},
		{"context object", `{"exec.$":"$$.Execution.Id","idx.$":"$$.Map.Item.Index","ctx.$":"$$.Execution.Input"}`,
			`{"exec":"exec-1","idx":4,"ctx":{"k":"v"}}`},
		{"variables", `{"limit.$":"$limit","mode.$":"$cfg.mode"}`,
			`{"limit":5,"mode":"fast"}`},
		{"array root", `[{"a.$":"$.user"},2]`, `[{"a":"ana"},2]`},
		{"scalar root", `"$.user"`, `"$.user"`},
		{"empty key", `{".$":"$.user"}`, `{"":"ana"}`},
		{"dot before brackets", `{"sku.$":"$.order.lines.[1].sku","skus.$":"$.order.lines.[*].sku"}`,
			`{"sku":"B","skus":["A","B"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(decode(t, tt.template))
			if err != nil {
				t.Fatalf("CompileTemplate(%s): %v", tt.template, err)
			}
			got, err := tmpl.Eval(input, env)
			if err != nil {
				t.Fatalf("Eval(%s): %v", tt.template, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Eval(%s) = %s, want %s", tt.template, compact(t, got), tt.want)
			}
		})
	}
}

func TestTemplateLiteralIsShared(t *testing.T) {
	lit := decode(t, `{"a":{"b":[1,2]},"c":"$.x"}`)
	tmpl, err := CompileTemplate(lit)
	if err != nil {
		t.Fatalf("CompileTemplate: %v", err)
	}
	got, err := tmpl.Eval(nil, nil)
	if err != nil {
		t.Fatalf("Eval: %v", err)
	}
	if !sameMap(got, lit) {
		t.Errorf("Eval of a template without .$ = a copy, want the literal itself")
	}
	mixed := decode(t, `{"static":{"deep":{"x":1}},"dyn.$":"$.v"}`).(map[string]any)
	tmpl, err = CompileTemplate(mixed)
	if err != nil {
		t.Fatalf("CompileTemplate: %v", err)
	}
	first, err := tmpl.Eval(map[string]any{"v": "one"}, nil)
	if err != nil {
		t.Fatalf("Eval: %v", err)
	}
	second, err := tmpl.Eval(map[string]any{"v": "two"}, nil)
	if err != nil {
		t.Fatalf("Eval: %v", err)
	}
	f, s := first.(map[string]any), second.(map[string]any)
	if sameMap(f, s) {
		t.Errorf("two Evals returned the same top-level map, want fresh ones")
	}
	if !sameMap(f["static"], mixed["static"]) || !sameMap(s["static"], mixed["static"]) {
		t.Errorf("Eval copied the literal subtree $.static, want it shared")
	}
	if f["dyn"] != "one" || s["dyn"] != "two" {
		t.Errorf("Eval gave dyn = %v and %v, want one and two", f["dyn"], s["dyn"])
	}
}

func TestTemplateCompileErrors(t *testing.T) {
	tests := []struct {
		name     string
		template string
		pointer  string
		field    string
		msg      string
	}{
		{"not a path", `{"parsed.$":"hello"}`, "/parsed.$", "parsed.$",
			"The value for the field 'parsed.$' must be a valid JSONPath or a valid intrinsic function call"},
		{"bad path", `{"args":[{"x.$":"$.a["}]}`, "/args/0/x.$", "x.$",
			"The value for the field 'x.$' must be a valid JSONPath or a valid intrinsic function call"},
		{"number", `{"n.$":5}`, "/n.$", "n.$",
			"The value for the field 'n.$' must be a valid JSONPath or a valid intrinsic function call"},
		{"object", `{"o":{"p.$":{"q":"$.a"}}}`, "/o/p.$", "p.$",
			"The value for the field 'p.$' must be a valid JSONPath or a valid intrinsic function call"},
		{"jsonata", `{"j.$":"{% $x %}"}`, "/j.$", "j.$",
			"The value for the field 'j.$' must be a valid JSONPath or a valid intrinsic function call"},
		{"escaped pointer", `{"a/b":{"c~d.$":"nope"}}`, "/a~1b/c~0d.$", "c~d.$",
			"The value for the field 'c~d.$' must be a valid JSONPath or a valid intrinsic function call"},
		{"duplicate output key", `{"a":1,"a.$":"$.x"}`, "/a.$", "a.$",
			"the fields 'a' and 'a.$' both produce the field 'a'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(decode(t, tt.template))
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("CompileTemplate(%s) = %v, %v; want a *TemplateError", tt.template, tmpl, err)
			}
			if te.Pointer != tt.pointer || te.Field != tt.field || te.Msg != tt.msg {
				t.Errorf("CompileTemplate(%s) error = {%q, %q, %q}, want {%q, %q, %q}",
					tt.template, te.Pointer, te.Field, te.Msg, tt.pointer, tt.field, tt.msg)
			}
			if want := tt.msg + " at " + tt.pointer; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestTemplateErrorUnwrapsSyntaxError(t *testing.T) {
	_, err := CompileTemplate(decode(t, `{"x.$":"$.a["}`))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("CompileTemplate error %v does not wrap a *SyntaxError", err)
	}
	if se.Expr != "$.a[" {
		t.Errorf("wrapped SyntaxError.Expr = %q, want %q", se.Expr, "$.a[")
	}
}

func TestTemplateFieldErrors(t *testing.T) {
	input := decode(t, `{"n":0,"s":"x"}`)
	env := testEnv{ctx: decode(t, `{"Execution":{"Input":{"n":0}}}`), vars: map[string]any{}}
	tests := []struct {
		name     string
		template string
		want     string
	}{
		{"missing input path", `{"value.$":"$.missing_key"}`,
			`The JSONPath '$.missing_key' specified for the field 'value.$' could not be found in the input '{"n":0,"s":"x"}'`},
		{"missing intermediate", `{"deep":{"value.$":"$.a.b.c"}}`,
			`The JSONPath '$.a.b.c' specified for the field 'value.$' could not be found in the input '{"n":0,"s":"x"}'`},
		{"missing context path", `{"value.$":"$$.Execution.Input.missing_key"}`,
			`The JSONPath '$$.Execution.Input.missing_key' specified for the field 'value.$' could not be found in the input '{"n":0,"s":"x"}'`},
		{"index out of range", `{"i.$":"$.list[3]"}`,
			`The JSONPath '$.list[3]' specified for the field 'i.$' could not be found in the input '{"n":0,"s":"x"}'`},
		{"name on a string", `{"i.$":"$.s.t"}`,
			`The JSONPath '$.s.t' specified for the field 'i.$' could not be found in the input '{"n":0,"s":"x"}'`},
		{"undefined variable", `{"v.$":"$nothing"}`,
			`The JSONPath '$nothing' specified for the field 'v.$' could not be found in the input '{"n":0,"s":"x"}'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(decode(t, tt.template))
			if err != nil {
				t.Fatalf("CompileTemplate(%s): %v", tt.template, err)
			}
			got, err := tmpl.Eval(input, env)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Eval(%s) = %v, %v; want a *FieldError", tt.template, got, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Eval(%s) error =\n  %s\nwant\n  %s", tt.template, err, tt.want)
			}
		})
	}
}

func TestTemplateUses(t *testing.T) {
	tests := []struct {
		template string
		ctx      bool
		vars     bool
		fns      bool
	}{
		{`{"a":"$$","b":"$x","c":"States.UUID()"}`, false, false, false},
		{`{"a.$":"$.x"}`, false, false, false},
		{`{"a.$":"$$.Execution.Id"}`, true, false, false},
		{`{"o":[{"a.$":"$name.x"}]}`, false, true, false},
		{`{"a.$":"$$","b.$":"$v"}`, true, true, false},
		{`{"o":{"a.$":"States.ArrayRange(1, 9, 1)"}}`, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			tmpl, err := CompileTemplate(decode(t, tt.template))
			if err != nil {
				t.Fatalf("CompileTemplate(%s): %v", tt.template, err)
			}
			if got := tmpl.UsesContext(); got != tt.ctx {
				t.Errorf("UsesContext() = %v, want %v", got, tt.ctx)
			}
			if got := tmpl.UsesVariables(); got != tt.vars {
				t.Errorf("UsesVariables() = %v, want %v", got, tt.vars)
			}
			if got := tmpl.UsesIntrinsics(); got != tt.fns {
				t.Errorf("UsesIntrinsics() = %v, want %v", got, tt.fns)
			}
		})
	}
}
