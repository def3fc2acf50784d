// Package schemaword words JSON Schema validation failures (of
// github.com/santhosh-tekuri/jsonschema/v6) the way aslrun's messages
// word them — "must be a string or null", "must be at least 3" — for the
// workflow guard (package governance) and tools' schemas (package tools)
// alike.
package schemaword

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/aslrun/aslrun/jsonvalue"
)

// Kind words one failed keyword as what the value must be ("must be
// a string", "must be at least 3"); a keyword it has no words for is
// named by its path in the schema.
func Kind(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be " + TypeList(k.Want)
	case *kind.Enum:
		return "must be " + OneOf(k.Want)
	case *kind.Const:
		return "must be " + Show(k.Want)
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.Not:
		return "must not match the schema of not"
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + Show(k.Want)
	case *kind.Format:
		if k.Err != nil {
			return "must be a valid " + k.Want + " (" + oneLine(k.Err.Error()) + ")"
		}
		return "must be a valid " + k.Want
	case *kind.Minimum:
		return "must be at least " + Ratio(k.Want)
	case *kind.Maximum:
		return "must be at most " + Ratio(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + Ratio(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + Ratio(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + Ratio(k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties", k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("must not repeat items, but items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "must contain an item that matches the schema of contains"
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d items that match the schema of contains", k.Want)
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d items that match the schema of contains", k.Want)
	case *kind.PropertyNames:
		return "has the property name " + strconv.Quote(k.Property) + ", which propertyNames refuses"
	case *kind.AdditionalItems:
		return fmt.Sprintf("has %d items more than the schema allows", k.Count)
	case *kind.InvalidJsonValue:
		return fmt.Sprintf("is a Go %T, which is not a JSON value", k.Value)
	case *kind.RefCycle:
		return "cannot be checked: the schema's references loop (" + k.KeywordLocation1 + ", " + k.KeywordLocation2 + ")"
	}
	if kw := k.KeywordPath(); len(kw) > 0 {
		return "does not match the schema's " + strings.Join(kw, "/")
	}
	return "does not match the schema"
}

// TypeList words JSON Schema type names: "a string or null".
func TypeList(types []string) string {
	words := make([]string, 0, len(types))
	for _, t := range types {
		if w := Article(t); !contains(words, w) {
			words = append(words, w)
		}
	}
	return strings.Join(words, " or ")
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// Article words a type name with its article: "a string", "an object",
// "null".
func Article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return t
	}
	return "a " + t
}

// OneOf words the values of an enum: `"a"`, or `one of "a", "b", "c"`.
func OneOf(values []any) string {
	if len(values) == 1 {
		return Show(values[0])
	}
	shown := make([]string, len(values))
	for i, v := range values {
		shown[i] = Show(v)
	}
	return "one of " + strings.Join(shown, ", ")
}

// maxShown is the longest JSON text a message quotes before cutting it.
const maxShown = 80

// Show writes a value for a message: compact JSON, cut after maxShown
// bytes; a value outside the model is described by its Go type.
func Show(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprintf("a Go %T", v)
	}
	if len(b) > maxShown {
		cut := maxShown
		for cut > 0 && b[cut]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

// Ratio writes a schema bound: exactly when it is an integer, else as the
// nearest float64.
func Ratio(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return string(jsonvalue.FloatNumber(f))
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
