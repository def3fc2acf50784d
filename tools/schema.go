package tools

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/aslrun/aslrun/internal/schemaword"
	"github.com/aslrun/aslrun/jsonvalue"
)

// schemaBase and schemaURL name a tool's schema inside the validator.
// Nothing is loaded from there: the schema is handed over as a value and
// noLoader refuses everything else, so a relative reference resolves to a
// URL that is refused too.
const (
	schemaBase = "https://aslrun.invalid/"
	schemaURL  = schemaBase + "tool.json"
)

// noLoader refuses to load anything: a tool's schema is self-contained
// (its own parts and the standard meta-schemas only), so checking a tool
// never reads a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("the schema must be self-contained")
}

// CompileSchema compiles a JSON Schema as a tool's are compiled (2020-12
// unless its $schema names another draft the validator knows, no
// reference to another document), for other schemas of a tool's world
// (a model loop's ResultSchema); the error names the JSON Pointer of the
// first problem.
func CompileSchema(raw []byte) (*jsonschema.Schema, error) {
	s, problems := compileSchema(raw, false)
	if len(problems) > 0 {
		p := problems[0]
		if p.Pointer != "" {
			return nil, fmt.Errorf("at %s: %s", p.Pointer, p.Msg)
		}
		return nil, errors.New(p.Msg)
	}
	return s, nil
}

// compileSchema compiles a tool's schema (JSON Schema 2020-12 unless its
// $schema names another draft the validator knows). Nil raw is no schema.
// An input schema must be an object whose type, if given, is "object".
// The problems come back with Pointer and Msg set.
func compileSchema(raw []byte, input bool) (*jsonschema.Schema, []*CheckError) {
	if raw == nil {
		return nil, nil
	}
	bad := func(ptr, format string, args ...any) []*CheckError {
		return []*CheckError{{Pointer: ptr, Msg: fmt.Sprintf(format, args...)}}
	}
	doc, err := jsonvalue.Decode(raw)
	if err != nil {
		return nil, bad("", "the schema is not JSON: %v", err)
	}
	switch x := doc.(type) {
	case map[string]any:
		if input {
			if typ, ok := x["type"]; ok && typ != "object" {
				return nil, bad("/type", "an input schema describes an object: its type must be \"object\", not %s", schemaword.Show(typ))
			}
		}
	case bool:
		if input {
			return nil, bad("", "an input schema must be an object schema, not %v", x)
		}
	default:
		return nil, bad("", "a JSON Schema is an object or a boolean, not %s", jsonvalue.TypeName(doc))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, bad("", "the schema does not compile: %s", urlName(err.Error()))
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, compileProblems(err)
	}
	return s, nil
}

// compileProblems says why a schema does not compile, at the pointer of
// the offending keyword when the validator says where.
func compileProblems(err error) []*CheckError {
	var meta *jsonschema.SchemaValidationError
	if errors.As(err, &meta) {
		var verr *jsonschema.ValidationError
		if errors.As(meta.Err, &verr) {
			var out []*CheckError
			for _, is := range issues(verr) {
				out = append(out, &CheckError{Pointer: is.Pointer, Msg: fmt.Sprintf("not a valid JSON Schema: %s (%s)", is.Msg, is.Rule)})
			}
			return out
		}
	}
	var regex *jsonschema.InvalidRegexError
	if errors.As(err, &regex) {
		return []*CheckError{{Pointer: fragment(regex.URL), Msg: fmt.Sprintf("%q is not a valid regular expression: %s", regex.Regex, oneLine(regex.Err.Error()))}}
	}
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		return []*CheckError{{Msg: fmt.Sprintf("the reference %q cannot be resolved: a schema must be self-contained (its own $defs and the JSON Schema meta-schemas only)", urlName(load.URL))}}
	}
	return []*CheckError{{Msg: "the schema does not compile: " + urlName(oneLine(err.Error()))}}
}

// urlName removes the made-up URL of the schema from a message.
func urlName(s string) string {
	s = strings.ReplaceAll(s, schemaURL+"#", "#")
	s = strings.ReplaceAll(s, schemaURL, "the schema")
	return strings.ReplaceAll(s, schemaBase, "")
}

// fragment returns the JSON Pointer in the fragment of a URL inside the
// schema, like …#/properties/a/pattern, or "".
func fragment(url string) string {
	_, frag, ok := strings.Cut(url, "#")
	if !ok || !strings.HasPrefix(frag, "/") {
		return ""
	}
	return frag
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// issues flattens a validation error into its issues, sorted by pointer
// then rule. Wrappers (the schema, a group, $ref, allOf) give their
// causes; an anyOf or oneOf that nothing matched is one issue.
func issues(err error) []Issue {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []Issue{{Rule: "schema", Msg: "cannot be checked: " + oneLine(err.Error())}}
	}
	var out []Issue
	collect(verr, &out)
	if len(out) == 0 {
		out = append(out, Issue{Pointer: pointer(verr.InstanceLocation), Rule: "schema", Msg: "does not match the schema"})
	}
	slices.SortFunc(out, func(a, b Issue) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return slices.Compact(out)
}

func collect(e *jsonschema.ValidationError, out *[]Issue) {
	at := func(rule, msg string) {
		*out = append(*out, Issue{Pointer: pointer(e.InstanceLocation), Rule: rule, Msg: msg})
	}
	below := func(key, rule, msg string) {
		*out = append(*out, Issue{Pointer: pointer(e.InstanceLocation) + "/" + jsonvalue.EscapePointer(key), Rule: rule, Msg: msg})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		if len(e.Causes) == 0 {
			at("schema", "does not match the schema")
		}
		for _, c := range e.Causes {
			collect(c, out)
		}
	case *kind.AnyOf:
		at("anyOf", alternatives(e, "must match a schema of anyOf"))
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			at("oneOf", alternatives(e, "must match one schema of oneOf, but matches none"))
		} else {
			at("oneOf", fmt.Sprintf("must match one schema of oneOf, but matches its schemas %d and %d", k.Subschemas[0], k.Subschemas[1]))
		}
	case *kind.Required:
		for _, m := range k.Missing {
			below(m, "required", "is required")
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			below(m, "dependentRequired", "is required when "+strconv.Quote(k.Prop)+" is present")
		}
	case *kind.Dependency:
		for _, m := range k.Missing {
			below(m, "dependencies", "is required when "+strconv.Quote(k.Prop)+" is present")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			below(p, "additionalProperties", "is not allowed")
		}
	case *kind.FalseSchema:
		at("false", "is not allowed")
	case *kind.Not:
		at("not", "must not match the schema of not")
	default:
		rule := strings.Join(e.ErrorKind.KeywordPath(), "/")
		if rule == "" {
			rule = "schema"
		}
		at(rule, wording(e.ErrorKind))
	}
}

// alternatives words an anyOf or oneOf that nothing matched: "must be a
// string or null" when every alternative is a type, "… or …" when each
// fails once where the value is, and otherwise none.
func alternatives(e *jsonschema.ValidationError, none string) string {
	var want, msgs []string
	types := true
	for _, c := range e.Causes {
		var sub []Issue
		collect(c, &sub)
		if len(sub) != 1 || sub[0].Pointer != pointer(e.InstanceLocation) {
			return none
		}
		msgs = append(msgs, sub[0].Msg)
		if t, ok := c.ErrorKind.(*kind.Type); ok {
			want = append(want, t.Want...)
		} else {
			types = false
		}
	}
	switch {
	case len(msgs) == 0:
		return none
	case types:
		return "must be " + schemaword.TypeList(want)
	}
	return strings.Join(msgs, " or ")
}

// pointer writes the validator's instance location as a JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(jsonvalue.EscapePointer(t))
	}
	return b.String()
}

// wording words one failed keyword as what the value must be, a type
// with the type found.
func wording(k jsonschema.ErrorKind) string {
	if k, ok := k.(*kind.Type); ok {
		return "must be " + schemaword.TypeList(k.Want) + ", not " + schemaword.Article(k.Got)
	}
	return schemaword.Kind(k)
}
