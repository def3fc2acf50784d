package jsonpath

import (
	"errors"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func TestCompileExprPaths(t *testing.T) {
	input := decode(t, `{"items":[1,2,3],"cause":"boom"}`)
	env := testEnv{ctx: decode(t, `{"State":{"Name":"S"}}`), vars: map[string]any{"v": "var"}}
	tests := []struct {
		src  string
		want string
	}{
		{"$.items", `[1,2,3]`},
		{"$.cause", `"boom"`},
		{"$.items[1:]", `[2,3]`},
		{"$$.State.Name", `"S"`},
		{"$v", `"var"`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := CompileExpr(tt.src)
			if err != nil {
				t.Fatalf("CompileExpr(%q): %v", tt.src, err)
			}
			if e.String() != tt.src {
				t.Errorf("String() = %q, want %q", e.String(), tt.src)
			}
			if e.Path() == nil || e.Path().String() != tt.src {
				t.Errorf("Path() = %v, want the path %q", e.Path(), tt.src)
			}
			got, err := e.Eval(input, env)
			if err != nil {
				t.Fatalf("Eval(%q): %v", tt.src, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Eval(%q) = %s, want %s", tt.src, compact(t, got), tt.want)
			}
		})
	}
}

func TestCompileExprErrors(t *testing.T) {
	for _, src := range []string{"", "items", "{% $x %}", "$.a[", "States.", "states.Format('x')", " $.a"} {
		t.Run(src, func(t *testing.T) {
			e, err := CompileExpr(src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("CompileExpr(%q) = %v, %v; want a *SyntaxError", src, e, err)
			}
		})
	}
}

func TestExprEvalPathError(t *testing.T) {
	e, err := CompileExpr("$.missing")
	if err != nil {
		t.Fatalf("CompileExpr: %v", err)
	}
	_, err = e.Eval(decode(t, `{}`), nil)
	var pe *PathError
	if !errors.As(err, &pe) {
		t.Fatalf("Eval = %v, want a *PathError", err)
	}
	if want := `Invalid path '$.missing' : No results for path: $['missing']`; err.Error() != want {
		t.Errorf("Eval error = %s, want %s", err, want)
	}
}

func TestExprUses(t *testing.T) {
	tests := []struct {
		src       string
		ctx, vars bool
	}{
		{"$.a", false, false},
		{"$$.a", true, false},
		{"$a.b", false, true},
	}
	for _, tt := range tests {
		e, err := CompileExpr(tt.src)
		if err != nil {
			t.Fatalf("CompileExpr(%q): %v", tt.src, err)
		}
		if e.usesContext() != tt.ctx || e.usesVariables() != tt.vars {
			t.Errorf("CompileExpr(%q) uses context %v, variables %v; want %v, %v", tt.src, e.usesContext(), e.usesVariables(), tt.ctx, tt.vars)
		}
	}
	// Intrinsic calls are judged on their text.
	fn := &Expr{src: "States.Format('{}', $$.Execution.Id, $name)", fn: &intrinsic{}}
	if !fn.usesContext() || !fn.usesVariables() {
		t.Errorf("intrinsic %q: uses context %v, variables %v; want true, true", fn.src, fn.usesContext(), fn.usesVariables())
	}
	fn = &Expr{src: "States.Format('{}', $.a)", fn: &intrinsic{}}
	if fn.usesContext() || fn.usesVariables() {
		t.Errorf("intrinsic %q: uses context %v, variables %v; want false, false", fn.src, fn.usesContext(), fn.usesVariables())
	}
}
