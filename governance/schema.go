package governance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/internal/schemaword"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaBase and schemaURL name the guard's schema inside the validator.
// Nothing is ever loaded from there (the schema is handed over as a value,
// and noLoader refuses everything else); the URL is hierarchical so that a
// relative reference resolves to another URL that noLoader then refuses.
const (
	schemaBase = "https://aslrun.invalid/"
	schemaURL  = schemaBase + "schema.json"
)

// draft2020 is the $schema of JSON Schema 2020-12, the only dialect the
// guard accepts.
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// noLoader refuses to load anything: a guard's schema is self-contained
// (references to its own parts and to the standard meta-schemas only), so
// compiling a definition never reads a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("the schema must be self-contained")
}

// compileSchema compiles Guard.Schema; ptr is its pointer.
func (c *compiler) schema(v any, ptr string) *jsonschema.Schema {
	switch x := v.(type) {
	case bool:
	case map[string]any:
		if s, ok := x["$schema"]; ok {
			str, isStr := s.(string)
			if !isStr || strings.TrimSuffix(str, "#") != draft2020 {
				c.add(ptr+"/$schema", "Schema must be JSON Schema 2020-12 ($schema %q), not %s", draft2020, show(s))
				return nil
			}
		}
	default:
		c.add(ptr, "Schema must be a JSON Schema (an object or a boolean), not %s", jsonvalue.TypeName(v))
		return nil
	}
	sc := jsonschema.NewCompiler()
	sc.DefaultDraft(jsonschema.Draft2020)
	sc.UseLoader(noLoader{})
	// The compiled schema keeps parts of its document (enum values, const):
	// a copy keeps it from changing with the caller's value.
	if err := sc.AddResource(schemaURL, jsonvalue.Clone(v)); err != nil {
		c.add(ptr, "Schema does not compile as JSON Schema 2020-12: %s", oneLine(err.Error()))
		return nil
	}
	s, err := sc.Compile(schemaURL)
	if err != nil {
		c.schemaError(err, ptr)
		return nil
	}
	return s
}

// schemaError reports why a schema does not compile, at the pointer of the
// offending keyword when the validator says where.
func (c *compiler) schemaError(err error, ptr string) {
	const prefix = "Schema does not compile as JSON Schema 2020-12: "
	var meta *jsonschema.SchemaValidationError
	if errors.As(err, &meta) {
		var verr *jsonschema.ValidationError
		if errors.As(meta.Err, &verr) {
			var issues []issue
			collect(verr, &issues)
			sortIssues(issues)
			for _, is := range issues {
				c.add(ptr+schemaPointer(is.tokens), prefix+"%s %s", pointerName(is.tokens), is.msg)
			}
			if len(issues) > 0 {
				return
			}
		}
	}
	var regex *jsonschema.InvalidRegexError
	if errors.As(err, &regex) {
		c.add(ptr+fragment(regex.URL), prefix+"%q is not a valid regular expression: %s", regex.Regex, oneLine(regex.Err.Error()))
		return
	}
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		c.add(ptr, prefix+"the reference %q cannot be resolved: a schema must be self-contained (its own $defs and the JSON Schema meta-schemas only)", urlName(load.URL))
		return
	}
	c.add(ptr, prefix+"%s", urlName(oneLine(err.Error())))
}

// urlName removes the made-up URLs of the schema from a message.
func urlName(s string) string {
	s = strings.ReplaceAll(s, schemaURL+"#", "#")
	s = strings.ReplaceAll(s, schemaURL, "the schema")
	return strings.ReplaceAll(s, schemaBase, "")
}

// fragment returns the JSON Pointer in the fragment of a URL inside the
// schema, like urn:…#/properties/a/pattern, or "".
func fragment(url string) string {
	_, frag, ok := strings.Cut(url, "#")
	if !ok || !strings.HasPrefix(frag, "/") {
		return ""
	}
	return frag
}

// schemaPointer writes validator tokens (already unescaped) as a JSON
// Pointer.
func schemaPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(jsonvalue.EscapePointer(t))
	}
	return b.String()
}

func pointerName(tokens []string) string {
	if len(tokens) == 0 {
		return "the schema"
	}
	return "schema" + schemaPointer(tokens)
}

// issue is one schema violation: where (the validator's tokens, and once
// resolved our path), what, and the value found there.
type issue struct {
	tokens []string
	path   []segment
	msg    string
}

func sortIssues(issues []issue) {
	slices.SortStableFunc(issues, func(a, b issue) int {
		if c := slices.Compare(a.tokens, b.tokens); c != 0 {
			return c
		}
		return strings.Compare(a.msg, b.msg)
	})
}

// validate checks doc against the schema and returns every problem.
func validateSchema(s *jsonschema.Schema, doc any) *Violation {
	err := s.Validate(doc)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return violation(ErrSchemaViolation, Detail{Rule: "Guard.Schema", Path: "$", Reason: "$ cannot be checked against the schema: " + oneLine(err.Error())})
	}
	var issues []issue
	collect(verr, &issues)
	if len(issues) == 0 {
		issues = append(issues, issue{msg: "does not match the schema"})
	}
	for i := range issues {
		issues[i].path = instancePath(doc, issues[i].tokens)
	}
	slices.SortStableFunc(issues, func(a, b issue) int {
		if c := comparePaths(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.msg, b.msg)
	})
	issues = slices.CompactFunc(issues, func(a, b issue) bool {
		return a.msg == b.msg && comparePaths(a.path, b.path) == 0
	})
	var cause strings.Builder
	for i, is := range issues {
		if i > 0 {
			cause.WriteString("; ")
		}
		cause.WriteString(formatPath(is.path))
		cause.WriteByte(' ')
		cause.WriteString(is.msg)
	}
	first := issues[0]
	where := formatPath(first.path)
	value, _ := lookup(doc, first.path)
	return &Violation{Name: ErrSchemaViolation, Cause: cause.String(), Detail: Detail{
		Rule: "Guard.Schema", Path: where, New: value, Reason: where + " " + first.msg,
	}}
}

// instancePath turns the validator's instance location into a path,
// reading doc to tell indexes from keys.
func instancePath(doc any, tokens []string) []segment {
	path := make([]segment, 0, len(tokens))
	v, found := doc, true
	for _, t := range tokens {
		if a, ok := v.([]any); ok && found {
			if i, err := strconv.Atoi(t); err == nil && i >= 0 {
				path = append(path, indexSeg(i))
				if i < len(a) {
					v = a[i]
				} else {
					found = false
				}
				continue
			}
		}
		path = append(path, keySeg(t))
		m, ok := v.(map[string]any)
		if !ok || !found {
			found = false
			continue
		}
		v, found = m[t]
	}
	return path
}

// collect flattens a validation error into its issues. Wrappers (a group,
// $ref, allOf, the schema itself) give their causes; anyOf and oneOf that
// nothing matched give one issue, naming the types they accept when every
// alternative is a type.
func collect(e *jsonschema.ValidationError, out *[]issue) {
	at := func(msg string) { *out = append(*out, issue{tokens: e.InstanceLocation, msg: msg}) }
	below := func(key, msg string) {
		*out = append(*out, issue{tokens: append(slices.Clip(e.InstanceLocation), key), msg: msg})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		if len(e.Causes) == 0 {
			at("does not match the schema")
		}
		for _, c := range e.Causes {
			collect(c, out)
		}
	case *kind.AnyOf:
		at(alternatives(e.InstanceLocation, e.Causes, "anyOf"))
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			at(alternatives(e.InstanceLocation, e.Causes, "oneOf"))
		} else {
			at(fmt.Sprintf("must match exactly one schema of oneOf, but matches %d and %d", k.Subschemas[0], k.Subschemas[1]))
		}
	case *kind.Required:
		for _, m := range k.Missing {
			below(m, "is required")
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			below(m, "is required when "+strconv.Quote(k.Prop)+" is present")
		}
	case *kind.Dependency:
		for _, m := range k.Missing {
			below(m, "is required when "+strconv.Quote(k.Prop)+" is present")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			below(p, "is not allowed")
		}
	default:
		at(schemaword.Kind(e.ErrorKind))
	}
}

// alternatives describes an anyOf or oneOf that nothing matched at the
// location at: "must be a string or null" when every alternative is a
// type, "must be … or must be …" when each fails once at that location,
// and otherwise that no alternative matches.
func alternatives(at []string, causes []*jsonschema.ValidationError, keyword string) string {
	none := "does not match any schema of " + keyword
	var want, msgs []string
	types := true
	for _, c := range causes {
		var sub []issue
		collect(c, &sub)
		if len(sub) != 1 || !slices.Equal(sub[0].tokens, at) {
			return none
		}
		msgs = append(msgs, sub[0].msg)
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
