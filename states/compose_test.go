package states

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/states/include"
)

// memSource serves template files from memory, relative to the importing
// file; it has no registry.
type memSource map[string]string

func (s memSource) Open(from, p string) ([]byte, string, error) {
	name := path.Join(path.Dir(from), p)
	d, ok := s[name]
	if !ok {
		return nil, "", fmt.Errorf("%s: no such file", name)
	}
	return []byte(d), name, nil
}

func (s memSource) Registry(_ context.Context, name, constraint string) ([]byte, string, error) {
	return nil, "", fmt.Errorf("registry://%s@%s: no registry here", name, constraint)
}

const composeReview = `{
  "Parameters": {"Who": {"Type": "string", "Required": true}},
  "StartAt": "Ask",
  "States": {
    "Ask": {"Type": "Pass", "Parameters": {"ask": "{{Who}}", "input.$": "$"}, "Next": "Done"},
    "Done": {"Type": "Succeed"}
  }
}`

// TestIncludeParseWith parses a definition with an Include: the machine
// holds the expanded Parallel, and its Definition parses again without
// the templates.
func TestIncludeParseWith(t *testing.T) {
	src := memSource{"review.json": composeReview}
	def := `{"Imports": {"review": "review.json"}, "StartAt": "Review", "States": {
  "Review": {"Type": "Include", "Template": "review", "Parameters": {"Who": "ops"}, "ResultPath": "$.r", "End": true}}}`
	m, err := ParseWith(context.Background(), []byte(def), ParseOptions{Imports: src})
	if err != nil {
		t.Fatalf("ParseWith: %v", err)
	}
	par, ok := m.States["Review"].(*Parallel)
	if !ok || len(par.Branches) != 1 {
		t.Fatalf("Review = %T %+v, want a Parallel with one branch", m.States["Review"], m.States["Review"])
	}
	if _, ok := par.Branches[0].States["Review.Ask"].(*Pass); !ok {
		t.Errorf("branch states = %v, want Review.Ask a Pass", par.Branches[0].States)
	}
	again, err := ParseValue(m.Definition)
	if err != nil {
		t.Fatalf("ParseValue(Definition) without templates: %v", err)
	}
	if len(again.States) != len(m.States) {
		t.Errorf("reparsed states = %d, want %d", len(again.States), len(m.States))
	}
	if _, err := Parse([]byte(def)); err == nil {
		t.Errorf("Parse without a resolver accepted Imports")
	}
}

// TestIncludeParseWithProblems reports problems the parser finds inside
// an expanded template at the include site, with the template's name and
// the pointer inside it, and problems of the definition where they are.
func TestIncludeParseWithProblems(t *testing.T) {
	src := memSource{
		"review.json": composeReview,
		"bad.json":    `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Seconds": 3, "Next": "Gone"}}}`,
	}
	def := `{"Imports": {"review": "review.json", "bad": "bad.json"}, "StartAt": "Review", "States": {
  "Review": {"Type": "Include", "Template": "review", "Next": "Bad"},
  "Bad": {"Type": "Include", "Template": "bad", "Next": "Missing"}}}`
	_, err := ParseWith(context.Background(), []byte(def), ParseOptions{Imports: src})
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("ParseWith = %v, want an ErrorList", err)
	}
	frame := func(alias, src, ptr string) string {
		return include.Problem{Frames: []include.Frame{{Alias: alias, Source: src, Pointer: ptr}}}.Where()
	}
	want := []struct{ ptr, state, where string }{
		{"/States/Review/Parameters", "Review", ""},
		{"/States/Bad", "Bad", frame("bad", "bad.json", "/States/A/Seconds")},
		{"/States/Bad", "Bad", frame("bad", "bad.json", "/States/A/Next")},
		{"/States/Bad", "Bad", frame("bad", "bad.json", "/States")},
		{"/States/Bad/Next", "Bad", ""},
		{"/States", "", ""},
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	if len(list) != len(want) {
		t.Fatalf("ParseWith problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		e := list[i]
		if e.Pointer != w.ptr || e.State != w.state || !strings.HasPrefix(e.Msg, w.where) {
			t.Errorf("problem %d = %s, want at %s (%s) %q…", i, e, w.ptr, w.state, w.where)
		}
	}
}

// TestIncludeParseTemplate validates templates on their own: problems at
// their pointers inside the template.
func TestIncludeParseTemplate(t *testing.T) {
	src := memSource{"lib/inner.json": `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Seconds": 1, "End": true}}}`}
	cases := []struct {
		name, tmpl string
		want       []string // "pointer (state)"
	}{
		{"valid", composeReview, nil},
		{"enum and default", `{"Parameters": {"L": {"Type": "string", "Enum": ["a", "b"]}, "D": {"Type": "number", "Default": 3}},
  "StartAt": "A", "States": {"A": {"Type": "Wait", "Seconds": "{{D}}", "Next": "B"}, "B": {"Type": "Pass", "Result": "{{L}}", "End": true}}}`, nil},
		{"bad state", `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Seconds": 1, "End": true}}}`, []string{"/States/A/Seconds (A)"}},
		{"unknown placeholder", `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "{{Q}}", "End": true}}}`, []string{"/States/A/Result (A)"}},
		{"bad declaration", `{"Parameters": {"N": {"Type": "integer"}}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`, []string{"/Parameters/N/Type"}},
		{"module", `{"Module": "m", "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`, []string{"/Module"}},
		{"nested problem", `{"Imports": {"in": "lib/inner.json"}, "StartAt": "I", "States": {"I": {"Type": "Include", "Template": "in", "End": true}}}`, []string{"/States/I (I)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ParseTemplate(context.Background(), []byte(c.tmpl), ParseOptions{Imports: src})
			var got []string
			var list ErrorList
			if errors.As(err, &list) {
				for _, e := range list {
					got = append(got, strings.TrimSuffix(e.Pointer+" ("+e.State+")", " ()"))
				}
			} else if err != nil {
				t.Fatalf("ParseTemplate = %v, want an ErrorList or nil", err)
			}
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("ParseTemplate problems at %v, want %v\n%v", got, c.want, err)
			}
		})
	}
}
