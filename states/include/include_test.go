package include

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/aslrun/aslrun/jsonvalue"
)

// fakeSource serves templates from memory: files by cleaned path, and
// registry workflows by name and semver label.
type fakeSource struct {
	files    map[string]string
	registry map[string]map[string]string // name → label → definition
	calls    *int                         // Registry calls, when not nil
}

var errMissing = errors.New("no such template")

func (f fakeSource) Open(from, p string) ([]byte, string, error) {
	name := path.Join(path.Dir(from), p)
	if from == "" {
		name = path.Clean(p)
	}
	s, ok := f.files[name]
	if !ok {
		return nil, "", fmt.Errorf("%s: %w", name, errMissing)
	}
	return []byte(s), name, nil
}

func (f fakeSource) Registry(_ context.Context, name, constraint string) ([]byte, string, error) {
	if f.calls != nil {
		*f.calls++
	}
	var best *semver.Version
	var def string
	for label, d := range f.registry[name] {
		v := semver.MustParse(label)
		if constraint != "latest" {
			c, err := semver.NewConstraint(constraint)
			if err != nil {
				return nil, "", err
			}
			if !c.Check(v) {
				continue
			}
		}
		if best == nil || v.GreaterThan(best) {
			best, def = v, d
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("no version of %s satisfies %s: %w", name, constraint, errMissing)
	}
	return []byte(def), name + "@" + best.String(), nil
}

const reviewTemplate = `{
  "Parameters": {
    "Question": {"Type": "string", "Required": true, "Description": "what to ask"},
    "Level": {"Type": "string", "Enum": ["low", "high"], "Default": "low"},
    "Limit": {"Type": "number", "Default": 3},
    "Tags": {"Type": "array"}
  },
  "StartAt": "Ask",
  "States": {
    "Ask": {"Type": "Pass", "Parameters": {"q": "{{Question | upper}}", "level": "Level {{Level}}", "limit": "{{Limit}}", "tags": "{{Tags | json}}", "who.$": "$.who"}, "Next": "Decide"},
    "Decide": {"Type": "Choice", "Choices": [{"Variable": "$.limit", "NumericGreaterThan": 2, "Next": "Big"}], "Default": "Small"},
    "Big": {"Type": "Pass", "Result": "big {{Question}}", "End": true},
    "Small": {"Type": "Succeed"}
  }
}`

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func get(t *testing.T, v any, ptr string) any {
	t.Helper()
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			var i int
			fmt.Sscan(tok, &i)
			v = x[i]
		default:
			t.Fatalf("%s: no %q in %v", ptr, tok, v)
		}
	}
	return v
}

// TestIncludeParameters expands an Include: the template's states renamed
// into one Parallel branch, parameters substituted (filters, defaults,
// non-string values whole), the unwrapping Pass at ResultPath, and the
// runtime's {{$…}} left alone.
func TestIncludeParameters(t *testing.T) {
	src := fakeSource{files: map[string]string{"review.json": reviewTemplate}}
	def := decode(t, `{
  "Imports": {"review": "./review.json"},
  "StartAt": "Review",
  "States": {
    "Review": {"Type": "Include", "Template": "review", "Parameters": {"Question": "ship it?", "Limit": 5, "Tags": ["a", 1]}, "ResultPath": "$.review", "Next": "Done"},
    "Done": {"Type": "Pass", "Parameters": {"note": "{{$.review}}"}, "End": true}
  }
}`)
	got, lock, errs := Expand(context.Background(), def, src)
	if len(errs) > 0 {
		t.Fatalf("Expand: %v", errs)
	}
	if lock != nil {
		t.Errorf("lock = %v, want nil without registry imports", lock)
	}
	if _, ok := def["States"].(map[string]any)["Review"].(map[string]any)["Template"]; !ok {
		t.Errorf("Expand modified its input")
	}
	if _, ok := got["Imports"]; ok {
		t.Errorf("the expanded definition keeps Imports")
	}
	checks := []struct {
		ptr  string
		want string
	}{
		{"/States/Review/Type", `"Parallel"`},
		{"/States/Review/ResultPath", `"$.review"`},
		{"/States/Review/Next", `"Review#output"`},
		{"/States/Review/Branches/0/StartAt", `"Review.Ask"`},
		{"/States/Review/Branches/0/States/Review.Ask/Parameters", `{"level":"Level low","limit":5,"q":"SHIP IT?","tags":["a",1],"who.$":"$.who"}`},
		{"/States/Review/Branches/0/States/Review.Ask/Next", `"Review.Decide"`},
		{"/States/Review/Branches/0/States/Review.Decide/Choices/0/Next", `"Review.Big"`},
		{"/States/Review/Branches/0/States/Review.Decide/Default", `"Review.Small"`},
		{"/States/Review/Branches/0/States/Review.Big/Result", `"big ship it?"`},
		{"/States/Review#output", `{"InputPath":"$.review[0]","Next":"Done","ResultPath":"$.review","Type":"Pass"}`},
		{"/States/Done/Parameters/note", `"{{$.review}}"`},
	}
	for _, c := range checks {
		b, err := jsonvalue.Marshal(get(t, got, c.ptr))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s = %s, want %s", c.ptr, b, c.want)
		}
	}
}

// TestIncludeOverride merges Override's partial states (a null removes a
// field), starts at EntryPoint, ends at ExitPoint and drops the states
// that are then unreachable.
func TestIncludeOverride(t *testing.T) {
	src := fakeSource{files: map[string]string{"review.json": reviewTemplate}}
	def := decode(t, `{
  "Imports": {"review": "review.json"},
  "StartAt": "Review",
  "States": {
    "Review": {"Type": "Include", "Template": "review", "Parameters": {"Question": "q"},
      "EntryPoint": "Ask", "ExitPoint": "Ask",
      "Override": {"States": {"Ask": {"Result": {"fixed": true}, "Parameters": null}}},
      "End": true}
  }
}`)
	got, _, errs := Expand(context.Background(), def, src)
	if len(errs) > 0 {
		t.Fatalf("Expand: %v", errs)
	}
	b, _ := jsonvalue.Marshal(get(t, got, "/States/Review/Branches/0/States"))
	if want := `{"Review.Ask":{"End":true,"Result":{"fixed":true},"Type":"Pass"}}`; string(b) != want {
		t.Errorf("branch States = %s, want %s", b, want)
	}
	if end := get(t, got, "/States/Review#output/End"); end != true {
		t.Errorf("unwrap End = %v, want true", end)
	}
}

// TestImportsRegistry resolves a registry import through the Source and
// records the version in the lock.
func TestImportsRegistry(t *testing.T) {
	tmpl := `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "%s", "End": true}}}`
	src := fakeSource{registry: map[string]map[string]string{"review": {
		"1.2.0": fmt.Sprintf(tmpl, "1.2.0"),
		"1.4.1": fmt.Sprintf(tmpl, "1.4.1"),
		"2.0.0": fmt.Sprintf(tmpl, "2.0.0"),
	}}}
	var calls int
	src.calls = &calls
	def := decode(t, `{"Imports": {"r": "registry://review@^1.0.0"}, "StartAt": "R",
  "States": {"R": {"Type": "Include", "Template": "r", "ResultPath": null, "Next": "R2"},
    "R2": {"Type": "Include", "Template": "r", "End": true}}}`)
	got, lock, errs := Expand(context.Background(), def, src)
	if calls != 1 {
		t.Errorf("Registry called %d times for one import included twice, want 1", calls)
	}
	if len(errs) > 0 {
		t.Fatalf("Expand: %v", errs)
	}
	if want := "review@1.4.1"; lock["registry://review@^1.0.0"] != want {
		t.Errorf("lock = %v, want registry://review@^1.0.0 → %s", lock, want)
	}
	if r := get(t, got, "/States/R/Branches/0/States/R.A/Result"); r != "1.4.1" {
		t.Errorf("included version's Result = %v, want 1.4.1", r)
	}
	if _, ok := got["States"].(map[string]any)["R#output"]; ok {
		t.Errorf("a null ResultPath has an unwrapping state")
	}
}

// TestIncludeRefusals reports each problem at the include site and, inside
// a template, with the template and the pointer in it.
func TestIncludeRefusals(t *testing.T) {
	files := map[string]string{
		"review.json":           reviewTemplate,
		"a/cycle1.json":         `{"Imports": {"two": "cycle2.json"}, "StartAt": "X", "States": {"X": {"Type": "Include", "Template": "two", "End": true}}}`,
		"a/cycle2.json":         `{"Imports": {"one": "cycle1.json"}, "StartAt": "Y", "States": {"Y": {"Type": "Include", "Template": "one", "End": true}}}`,
		"bad-subst.json":        `{"Parameters": {"P": {"Type": "string", "Default": "x"}}, "StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "{{Nope}}", "End": true}}}`,
		"bad-filter.json":       `{"Parameters": {"P": {"Type": "string", "Default": "x"}}, "StartAt": "A", "States": {"A": {"Type": "Pass", "Result": {"r": "{{P | exec: 'rm'}}"}, "End": true}}}`,
		"module.json":           `{"Module": "m", "Exports": ["A"], "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`,
		"bad-decl.json":         `{"Parameters": {"N": {"Type": "integer"}, "E": {"Type": "string", "Enum": ["a"], "Default": "b"}}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`,
		"key-subst.json":        `{"Parameters": {"P": {"Type": "string", "Default": "x"}}, "StartAt": "A", "States": {"A": {"Type": "Pass", "Result": {"{{P}}": 1}, "End": true}}}`,
		"nested/outer.json":     `{"Imports": {"in": "inner.json"}, "StartAt": "Sub", "States": {"Sub": {"Type": "Include", "Template": "in", "Parameters": {"Z": 1}, "End": true}}}`,
		"nested/inner.json":     `{"Parameters": {"Z": {"Type": "string"}}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`,
		"notjson.json":          `{"StartAt": `,
		"nested/outer2.json":    `{"Imports": {"in": "inner-bad.json"}, "StartAt": "Sub", "States": {"Sub": {"Type": "Include", "Template": "in", "End": true}}}`,
		"nested/inner-bad.json": `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "{{Q}}", "End": true}}}`,
	}
	src := fakeSource{files: files, registry: map[string]map[string]string{
		"review":  {"1.0.0": reviewTemplate},
		"fileimp": {"1.0.0": `{"Imports": {"x": "review.json"}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`},
	}}
	type want struct {
		ptr    string
		frames []string // "alias pointer" of each frame
	}
	cases := []struct {
		name    string
		imports string
		include string
		want    []want
	}{
		{"missing required parameter", `{"t": "review.json"}`, `"Template": "t"`,
			[]want{{"/States/S/Parameters", nil}}},
		{"unknown parameter", `{"t": "review.json"}`, `"Template": "t", "Parameters": {"Question": "q", "Colour": "red"}`,
			[]want{{"/States/S/Parameters/Colour", nil}}},
		{"wrong type", `{"t": "review.json"}`, `"Template": "t", "Parameters": {"Question": 7}`,
			[]want{{"/States/S/Parameters/Question", nil}}},
		{"not in enum", `{"t": "review.json"}`, `"Template": "t", "Parameters": {"Question": "q", "Level": "mid"}`,
			[]want{{"/States/S/Parameters/Level", nil}}},
		{"template not imported", `{"t": "review.json"}`, `"Template": "other"`,
			[]want{{"/States/S/Template", nil}}},
		{"missing file", `{"t": "gone.json"}`, `"Template": "t"`,
			[]want{{"/States/S/Template", nil}}},
		{"URL import", `{"t": "https://example.com/review.json"}`, `"Template": "t"`,
			[]want{{"/Imports/t", nil}, {"/States/S/Template", nil}}},
		{"bad constraint", `{"t": "registry://review@banana"}`, `"Template": "t"`,
			[]want{{"/Imports/t", nil}, {"/States/S/Template", nil}}},
		{"no constraint", `{"t": "registry://review"}`, `"Template": "t"`,
			[]want{{"/Imports/t", nil}, {"/States/S/Template", nil}}},
		{"no version satisfies", `{"t": "registry://review@^2.0.0"}`, `"Template": "t"`,
			[]want{{"/States/S/Template", nil}}},
		{"registry template importing a file", `{"t": "registry://fileimp@latest"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /Imports/x"}}}},
		{"lock in definition", `{"_lock": {}}`, `"Template": "t"`,
			[]want{{"/Imports/_lock", nil}, {"/States/S/Template", nil}}},
		{"cyclic imports", `{"one": "a/cycle1.json"}`, `"Template": "one"`,
			[]want{{"/States/S", []string{"one /States/X", "two /States/Y/Template"}}}},
		{"unknown parameter in template", `{"t": "bad-subst.json"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /States/A/Result"}}}},
		{"unknown filter", `{"t": "bad-filter.json"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /States/A/Result/r"}}}},
		{"placeholder in key", `{"t": "key-subst.json"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /States/A/Result/{{P}}"}}}},
		{"module", `{"t": "module.json"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /Exports"}}, {"/States/S", []string{"t /Module"}}}},
		{"bad declarations", `{"t": "bad-decl.json"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /Parameters/E/Default"}}, {"/States/S", []string{"t /Parameters/N/Type"}}}},
		{"nested wrong type", `{"o": "nested/outer.json"}`, `"Template": "o"`,
			[]want{{"/States/S", []string{"o /States/Sub/Parameters/Z"}}}},
		{"problem inside a nested template", `{"o": "nested/outer2.json"}`, `"Template": "o"`,
			[]want{{"/States/S", []string{"o /States/Sub", "in /States/A/Result"}}}},
		{"not JSON", `{"t": "notjson.json"}`, `"Template": "t"`,
			[]want{{"/States/S", []string{"t /"}}}},
		{"override of a missing state", `{"t": "review.json"}`, `"Template": "t", "Parameters": {"Question": "q"}, "Override": {"States": {"Nope": {"Result": 1}}}`,
			[]want{{"/States/S/Override/States/Nope", nil}}},
		{"bad exit point", `{"t": "review.json"}`, `"Template": "t", "Parameters": {"Question": "q"}, "ExitPoint": "Decide"`,
			[]want{{"/States/S/ExitPoint", nil}}},
		{"unknown Include field", `{"t": "review.json"}`, `"Template": "t", "Parameters": {"Question": "q"}, "Retry": []`,
			[]want{{"/States/S/Retry", nil}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			def := decode(t, `{"Imports": `+c.imports+`, "StartAt": "S", "States": {"S": {"Type": "Include", `+c.include+`, "End": true}}}`)
			_, _, errs := Expand(context.Background(), def, src)
			var got []want
			for _, p := range errs {
				w := want{ptr: p.Pointer}
				for _, f := range p.Frames {
					w.frames = append(w.frames, f.Alias+" "+orRoot(f.Pointer))
				}
				got = append(got, w)
			}
			if !slices.EqualFunc(got, c.want, func(a, b want) bool { return a.ptr == b.ptr && slices.Equal(a.frames, b.frames) }) {
				t.Errorf("problems at %v, want %v\n%v", got, c.want, errs)
			}
		})
	}
}

// TestLocate maps pointers of the expanded definition back to the include
// site and the template.
func TestLocate(t *testing.T) {
	src := fakeSource{files: map[string]string{
		"outer.json": `{"Imports": {"in": "inner.json"}, "StartAt": "Sub", "States": {"Sub": {"Type": "Include", "Template": "in", "End": true}}}`,
		"inner.json": `{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}`,
	}}
	def := decode(t, `{"Imports": {"o": "outer.json"}, "StartAt": "R", "States": {"R": {"Type": "Include", "Template": "o", "Next": "Z"}, "Z": {"Type": "Succeed"}}}`)
	r, errs := ExpandResult(context.Background(), def, src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		in, ptr, frames string
	}{
		{"/States/Z/Type", "/States/Z/Type", ""},
		{"/States/R#output/Next", "/States/R/Next", ""},
		{"/States/R/Branches/0/States/R.Sub/Branches/0/States/R.Sub.A/Result", "/States/R", "o /States/Sub; in /States/A/Result"},
		{"/States/R/Branches/0/States/R.Sub#output/End", "/States/R", "o /States/Sub/End"},
	}
	for _, c := range cases {
		if _, err := jsonvalue.Marshal(r.Definition); err != nil {
			t.Fatal(err)
		}
		ptr, frames := r.Locate(c.in)
		var fs []string
		for _, f := range frames {
			fs = append(fs, f.Alias+" "+f.Pointer)
		}
		if ptr != c.ptr || strings.Join(fs, "; ") != c.frames {
			t.Errorf("Locate(%s) = %s, %q, want %s, %q", c.in, ptr, strings.Join(fs, "; "), c.ptr, c.frames)
		}
	}
}

// FuzzExpand never panics on any definition, with templates of its own
// making (the definition's Imports may name any of them).
func FuzzExpand(f *testing.F) {
	f.Add(`{"Imports": {"t": "review.json"}, "StartAt": "S", "States": {"S": {"Type": "Include", "Template": "t", "Parameters": {"Question": "q"}, "End": true}}}`, reviewTemplate)
	f.Add(`{"Imports": {"t": "x.json", "r": "registry://x@^1.0.0"}, "StartAt": "S", "States": {"S": {"Type": "Parallel", "Branches": [{"StartAt": "I", "States": {"I": {"Type": "Include", "Template": "r", "ExitPoint": "A", "End": true}}}], "End": true}}}`,
		`{"Imports": {"self": "x.json"}, "Parameters": {"p": {"Type": "object", "Default": {}}}, "StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "{{p | json}}", "End": true}}}`)
	f.Fuzz(func(t *testing.T, def, tmpl string) {
		v, err := jsonvalue.Decode([]byte(def))
		if err != nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		src := fakeSource{
			files:    map[string]string{"review.json": reviewTemplate, "x.json": tmpl},
			registry: map[string]map[string]string{"x": {"1.0.0": tmpl}},
		}
		r, _ := ExpandResult(context.Background(), m, src)
		if r.Definition == nil {
			t.Fatalf("no definition returned")
		}
		if _, err := jsonvalue.Marshal(r.Definition); err != nil {
			t.Fatalf("the expanded definition is not JSON: %v", err)
		}
	})
}

// TestIncludeLimit refuses a definition whose templates expand to more
// than MaxIncludes Include states, once.
func TestIncludeLimit(t *testing.T) {
	files := map[string]string{"0.json": `{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`}
	for i := 1; i <= 10; i++ { // 2¹⁰ = 1024 expansions
		files[fmt.Sprintf("%d.json", i)] = fmt.Sprintf(`{"Imports": {"d": "%d.json"}, "StartAt": "A", "States": {
  "A": {"Type": "Include", "Template": "d", "Next": "B"}, "B": {"Type": "Include", "Template": "d", "End": true}}}`, i-1)
	}
	def := decode(t, `{"Imports": {"t": "10.json"}, "StartAt": "S", "States": {"S": {"Type": "Include", "Template": "t", "End": true}}}`)
	_, _, errs := Expand(context.Background(), def, fakeSource{files: files})
	if len(errs) != 1 || errs[0].Pointer != "/States/S" || len(errs[0].Frames) == 0 {
		t.Errorf("Expand = %v, want one problem at /States/S, inside the templates", errs)
	}
	delete(files, "10.json")
	def = decode(t, `{"Imports": {"t": "8.json"}, "StartAt": "S", "States": {"S": {"Type": "Include", "Template": "t", "End": true}}}`)
	if _, _, errs := Expand(context.Background(), def, fakeSource{files: files}); len(errs) != 0 {
		t.Errorf("Expand of 511 includes: %v", errs)
	}
}

// TestImportsRegistryFunc: a registry-only Source refuses file imports
// at the include site and resolves registry ones.
func TestImportsRegistryFunc(t *testing.T) {
	src := RegistryFunc(func(_ context.Context, name, constraint string) ([]byte, string, error) {
		return []byte(`{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`), name + "@2", nil
	})
	def := decode(t, `{"Imports": {"f": "review.json", "r": "registry://review@latest"}, "StartAt": "F", "States": {
  "F": {"Type": "Include", "Template": "f", "Next": "R"}, "R": {"Type": "Include", "Template": "r", "End": true}}}`)
	_, lock, errs := Expand(context.Background(), def, src)
	if len(errs) != 1 || errs[0].Pointer != "/States/F/Template" {
		t.Errorf("Expand = %v, want one problem at /States/F/Template", errs)
	}
	if lock["registry://review@latest"] != "review@2" {
		t.Errorf("lock = %v, want registry://review@latest → review@2", lock)
	}
	if _, _, err := src.Open("", "x.json"); !errors.Is(err, ErrFileImport) {
		t.Errorf("Open = %v, want ErrFileImport", err)
	}
}
