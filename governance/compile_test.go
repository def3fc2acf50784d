package governance

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .errors files of testdata/compile/invalid")

// TestCompileInvalid compiles every block in testdata/compile/invalid and
// compares the problems with the golden NAME.errors file beside it (one
// "/pointer: message" line per problem); go test ./governance -update
// rewrites them.
func TestCompileInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/compile/invalid/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Compile(decode(t, string(data)))
			if err == nil {
				t.Fatalf("Compile(%s) = %v, nil; want problems", file, r)
			}
			if r != nil {
				t.Errorf("Compile(%s) returned rules with its error", file)
			}
			var problems Problems
			if !errors.As(err, &problems) {
				t.Fatalf("Compile(%s) error %T is not Problems", file, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".json") + ".errors"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./governance -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("Compile(%s) problems:\n%s\nwant (%s):\n%s", file, got, golden, want)
			}
		})
	}
}

func TestCompileValid(t *testing.T) {
	files, err := filepath.Glob("testdata/compile/valid/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Compile(decode(t, string(data))); err != nil {
				t.Errorf("Compile(%s): %v", file, err)
			}
		})
	}
}

func TestCompilePolicyPointers(t *testing.T) {
	tests := []struct {
		block    string
		pointers []string
	}{
		{`{"Allow": ["x"], "Rules": [{"Deny": 1}], "Other": true}`, []string{"/Allow/0", "/Other", "/Rules/0/Deny"}},
		{`[]`, []string{""}},
		{`{"Rules": [{"Deny": "true"}, {"Deny": "value +"}, {"Deny": "len(1..value) > 0"}]}`, []string{"/Rules/1/Deny", "/Rules/2/Deny"}},
	}
	for _, tt := range tests {
		p, err := CompilePolicy(decode(t, tt.block))
		var problems Problems
		if !errors.As(err, &problems) || p != nil {
			t.Errorf("CompilePolicy(%s) = %v, %v; want nil and Problems", tt.block, p, err)
			continue
		}
		var got []string
		for _, pr := range problems {
			got = append(got, pr.Pointer)
		}
		if !slices.Equal(got, tt.pointers) {
			t.Errorf("CompilePolicy(%s) problems at %q, want %q", tt.block, got, tt.pointers)
		}
	}
	if p, err := CompilePolicy(decode(t, `{}`)); err != nil || p == nil {
		t.Errorf("CompilePolicy({}) = %v, %v; want an empty policy", p, err)
	}
}

func TestCompileOptions(t *testing.T) {
	tests := []struct {
		block    string
		mode     Mode
		hasGuard bool
		policy   bool
	}{
		{`{}`, FailFast, false, false},
		{`{"OnViolation": "FAIL_FAST"}`, FailFast, false, false},
		{`{"OnViolation": "RETRY_ONCE", "Guard": {"Schema": true}}`, RetryOnce, true, false},
		{`{"OnViolation": "SKIP_NODE", "Guard": {"Transitions": {"ImmutablePaths": ["$.a"]}}, "WritePolicy": {}}`, SkipNode, true, true},
	}
	for _, tt := range tests {
		r := mustCompile(t, tt.block)
		if r.OnViolation() != tt.mode || r.HasGuard() != tt.hasGuard || (r.Policy() != nil) != tt.policy {
			t.Errorf("Compile(%s): OnViolation %v, HasGuard %v, Policy %v; want %v, %v, policy %v",
				tt.block, r.OnViolation(), r.HasGuard(), r.Policy(), tt.mode, tt.hasGuard, tt.policy)
		}
	}
	for m, want := range map[Mode]string{FailFast: "FAIL_FAST", RetryOnce: "RETRY_ONCE", SkipNode: "SKIP_NODE", Mode(9): "Mode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %s, want %s", m, got, want)
		}
	}
}

// TestCompileFreezes checks that changing the decoded block after Compile
// changes nothing in the rules.
func TestCompileFreezes(t *testing.T) {
	block := decode(t, `{"Guard": {"Schema": {"properties": {"s": {"enum": ["a", "b"]}}}, "Transitions": {"OrderedEnumPaths": {"$.s": ["a", "b"]}, "ImmutablePaths": ["$.id"]}}, "WritePolicy": {"Deny": ["$.x"]}}`)
	r, err := Compile(block)
	if err != nil {
		t.Fatal(err)
	}
	g := block.(map[string]any)["Guard"].(map[string]any)
	g["Schema"].(map[string]any)["properties"].(map[string]any)["s"].(map[string]any)["enum"].([]any)[1] = "c"
	g["Transitions"].(map[string]any)["OrderedEnumPaths"].(map[string]any)["$.s"].([]any)[0] = "b"
	g["Transitions"].(map[string]any)["OrderedEnumPaths"].(map[string]any)["$.s"].([]any)[1] = "a"
	g["Transitions"].(map[string]any)["ImmutablePaths"].([]any)[0] = "$.other"
	block.(map[string]any)["WritePolicy"].(map[string]any)["Deny"].([]any)[0] = "$.y"

	if v := r.Check(decode(t, `{"id": 1, "s": "a"}`), decode(t, `{"id": 1, "s": "b"}`), "S"); v != nil {
		t.Errorf("Check after changing the block = %v, want nil", v)
	}
	if v := r.Check(decode(t, `{"id": 1, "s": "a"}`), decode(t, `{"id": 2, "s": "a"}`), "S"); v == nil || v.Name != ErrTransitionViolation {
		t.Errorf("Check of $.id after changing the block = %v, want a transition violation", v)
	}
	if v := r.Check(decode(t, `{"id": 1, "s": "a"}`), decode(t, `{"id": 1, "s": "a", "x": 1}`), "S"); v == nil || v.Name != ErrWriteDenied {
		t.Errorf("Check of $.x after changing the block = %v, want a denial", v)
	}
}

// TestProblemError checks the format of the Error methods themselves.
func TestProblemError(t *testing.T) {
	p := &Problem{Pointer: "", Msg: "m"}
	if got := p.Error(); got != "/: m" {
		t.Errorf("Problem.Error() = %s, want /: m", got)
	}
	ps := Problems{{Pointer: "/a", Msg: "x"}, {Pointer: "/b", Msg: "y"}}
	if got := ps.Error(); got != "/a: x\n/b: y" {
		t.Errorf("Problems.Error() = %q", got)
	}
	v := &Violation{Name: ErrSchemaViolation, Cause: "c", Err: &BudgetError{}}
	if got := v.Error(); got != "Governance.SchemaViolation: c" {
		t.Errorf("Violation.Error() = %s, want Governance.SchemaViolation: c", got)
	}
	var be *BudgetError
	if !errors.As(v, &be) {
		t.Errorf("errors.As(Violation, *BudgetError) = false, want its Err")
	}
}
