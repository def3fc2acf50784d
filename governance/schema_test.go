package governance

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// guardSchema is the schema of the reference guard's examples.
const guardSchema = `{
  "type": "object",
  "properties": {
    "agent_id": {"type": "string"},
    "status": {"type": "string", "enum": ["pending", "running", "completed"]},
    "step_count": {"type": "integer"},
    "tasks": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "done": {"type": "boolean"}},
        "required": ["id", "done"],
        "additionalProperties": false
      }
    }
  },
  "required": ["agent_id", "status", "step_count", "tasks"],
  "additionalProperties": false
}`

func schemaRules(t *testing.T, schema string) *Rules {
	t.Helper()
	return mustCompile(t, `{"Guard": {"Schema": `+schema+`}}`)
}

func TestSchema(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		doc    string
		cause  string // "" when the document matches
	}{
		{"valid", guardSchema, `{"agent_id": "a1", "status": "pending", "step_count": 1, "tasks": [{"id": "task-1", "done": false}]}`, ""},
		{"missing key", guardSchema, `{"agent_id": "a1", "status": "pending", "tasks": []}`,
			"$.step_count is required"},
		{"unexpected field", guardSchema, `{"agent_id": "a1", "status": "pending", "step_count": 1, "tasks": [], "extra": 1}`,
			"$.extra is not allowed"},
		{"wrong type", guardSchema, `{"agent_id": 7, "status": "pending", "step_count": 1, "tasks": []}`,
			"$.agent_id must be a string"},
		{"enum", guardSchema, `{"agent_id": "a1", "status": "done", "step_count": 1, "tasks": []}`,
			`$.status must be one of "pending", "running", "completed"`},
		{"every violation with its path", guardSchema,
			`{"agent_id": "a1", "status": "paused", "step_count": 1.5, "tasks": [{"id": "task-1", "done": "yes"}, {"done": true, "x": 1}]}`,
			`$.status must be one of "pending", "running", "completed"; $.step_count must be an integer; $.tasks[0].done must be a boolean; $.tasks[1].id is required; $.tasks[1].x is not allowed`},
		{"true is not an integer", `{"type": "integer"}`, `true`, "$ must be an integer"},
		{"2.0 is an integer", `{"type": "integer"}`, `2.0`, ""},
		{"2e0 is an integer", `{"properties": {"n": {"type": "integer"}}}`, `{"n": 2e0}`, ""},
		{"a big integer", `{"type": "integer", "maximum": 12345678901234567890}`, `12345678901234567890`, ""},
		{"exact bounds", `{"type": "number", "maximum": 0.1}`, `0.10000000000000001`, "$ must be at most 0.1"},
		{"1e400 is a number", `{"type": "integer", "minimum": 0}`, `1e400`, ""},
		{"additionalProperties defaults to true", `{"type": "object", "properties": {"a": {"type": "string"}}}`, `{"a": "x", "b": 1}`, ""},
		{"nullable by type list", `{"properties": {"a": {"type": ["string", "null"]}}}`, `{"a": 1}`, "$.a must be null or a string"},
		{"nullable by anyOf", `{"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}`, `{"a": 1}`, "$.a must be a string or null"},
		{"anyOf of other keywords", `{"properties": {"a": {"anyOf": [{"type": "string"}, {"enum": [1, 2]}]}}}`, `{"a": 3}`, "$.a must be a string or must be one of 1, 2"},
		{"oneOf matching twice", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `3`, "$ must match exactly one schema of oneOf, but matches 0 and 1"},
		{"const", `{"properties": {"v": {"const": "x"}}}`, `{"v": "y"}`, `$.v must be "x"`},
		{"false schema", `{"properties": {"v": false}}`, `{"v": 1}`, "$.v is not allowed"},
		{"lengths and patterns", `{"properties": {"a": {"minLength": 3}, "b": {"maxLength": 1}, "c": {"pattern": "^[A-Z]{3}$"}}}`,
			`{"a": "xy", "b": "xy", "c": "eur"}`,
			`$.a must be at least 3 characters long; $.b must be at most 1 characters long; $.c must match the pattern "^[A-Z]{3}$"`},
		{"number bounds", `{"prefixItems": [{"minimum": 1}, {"exclusiveMinimum": 1}, {"maximum": 1}, {"exclusiveMaximum": 1}, {"multipleOf": 0.5}]}`,
			`[0, 1, 2, 1, 0.3]`,
			`$[0] must be at least 1; $[1] must be greater than 1; $[2] must be at most 1; $[3] must be less than 1; $[4] must be a multiple of 0.5`},
		{"array keywords", `{"properties": {"a": {"minItems": 2}, "b": {"maxItems": 0}, "c": {"uniqueItems": true}, "d": {"contains": {"const": 1}}}}`,
			`{"a": [1], "b": [1], "c": [1, 1], "d": [2]}`,
			`$.a must have at least 2 items; $.b must have at most 0 items; $.c must not repeat items, but items 0 and 1 are equal; $.d must contain an item that matches the schema of contains`},
		{"object keywords", `{"minProperties": 3, "dependentRequired": {"a": ["b"]}, "propertyNames": {"maxLength": 1}}`,
			`{"a": 1, "cc": 2}`,
			`$ has the property name "cc", which propertyNames refuses; $ must have at least 3 properties; $.b is required when "a" is present`},
		{"references", `{"$defs": {"id": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/id"}}}`, `{"a": 1}`, "$.a must be a string"},
		{"allOf", `{"allOf": [{"required": ["a"]}, {"required": ["b"]}]}`, `{}`, "$.a is required; $.b is required"},
		{"not", `{"not": {"type": "string"}}`, `"x"`, "$ must not match the schema of not"},
		{"if then", `{"if": {"properties": {"k": {"const": "card"}}}, "then": {"required": ["number"]}}`, `{"k": "card"}`, "$.number is required"},
		{"odd keys", `{"properties": {"a b": {"type": "string"}}}`, `{"a b": 1}`, "$['a b'] must be a string"},
		{"format is an annotation in 2020-12", `{"format": "email"}`, `"not an email"`, ""},
		{"boolean schema true", `true`, `{"anything": [1]}`, ""},
		{"boolean schema false", `false`, `{}`, "$ is not allowed"},
		{"explicit 2020-12", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}`, `[]`, "$ must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := schemaRules(t, tt.schema)
			doc := decode(t, tt.doc)
			v := r.CheckDocument(doc)
			if tt.cause == "" {
				if v != nil {
					t.Errorf("CheckDocument(%s) = %v, want nil", tt.doc, v)
				}
				return
			}
			if v == nil {
				t.Fatalf("CheckDocument(%s) = nil, want %s", tt.doc, tt.cause)
			}
			if v.Name != ErrSchemaViolation || v.Cause != tt.cause {
				t.Errorf("CheckDocument(%s) = %s: %s\nwant %s: %s", tt.doc, v.Name, v.Cause, ErrSchemaViolation, tt.cause)
			}
			// Check reports the same problems for the proposed document.
			if c := r.Check(decode(t, `{}`), doc, "S"); c == nil || c.Cause != tt.cause {
				t.Errorf("Check(_, %s) = %v, want the cause %s", tt.doc, c, tt.cause)
			}
		})
	}
}

func TestSchemaDetail(t *testing.T) {
	r := schemaRules(t, guardSchema)
	doc := decode(t, `{"agent_id": "a1", "status": "pending", "step_count": 1, "tasks": [{"id": "t", "done": "yes"}, {"id": "u"}]}`)
	v := r.CheckDocument(doc)
	if v == nil {
		t.Fatal("CheckDocument = nil, want a violation")
	}
	want := Detail{Rule: "Guard.Schema", Path: "$.tasks[0].done", New: "yes", Reason: "$.tasks[0].done must be a boolean"}
	if !detailEqual(v.Detail, want) {
		t.Errorf("Detail = %#v, want %#v", v.Detail, want)
	}
	if want := "$.tasks[0].done must be a boolean; $.tasks[1].done is required"; v.Cause != want {
		t.Errorf("Cause = %s, want %s", v.Cause, want)
	}
	if v.Name != ErrSchemaViolation {
		t.Errorf("Name = %s, want %s", v.Name, ErrSchemaViolation)
	}
}

func detailEqual(a, b Detail) bool {
	return a.Rule == b.Rule && a.Path == b.Path && a.Reason == b.Reason &&
		jsonvalue.Equal(a.Old, b.Old) && jsonvalue.Equal(a.New, b.New)
}

// TestSchemaBigExponent checks that numbers the validator would take
// milliseconds over are refused before it sees them, in new values only.
func TestSchemaBigExponent(t *testing.T) {
	r := schemaRules(t, `{"properties": {"n": {"type": "integer"}}}`)
	tests := []struct {
		doc   string
		cause string
	}{
		{`{"n": 1e1000}`, ""},
		{`{"n": 1E-1000}`, "$.n must be an integer"},
		{`{"n": 1e+0001000}`, ""},
		{`{"n": 1e1001}`, "$.n is the number 1e1001, written with an exponent beyond ±1000, which the schema check refuses"},
		{`{"n": 5, "m": [1.5e-999999]}`, "$.m[0] is the number 1.5e-999999, written with an exponent beyond ±1000, which the schema check refuses"},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			doc := decode(t, tt.doc)
			for name, v := range map[string]*Violation{
				"CheckDocument": r.CheckDocument(doc),
				"Check":         r.Check(decode(t, `{}`), doc, "S"),
			} {
				switch {
				case tt.cause == "" && v != nil:
					t.Errorf("%s(%s) = %v, want nil", name, tt.doc, v)
				case tt.cause != "" && (v == nil || v.Name != ErrSchemaViolation || v.Cause != tt.cause):
					t.Errorf("%s(%s) = %v, want %s: %s", name, tt.doc, v, ErrSchemaViolation, tt.cause)
				}
			}
		})
	}
	// Without a schema nothing limits exponents.
	plain := mustCompile(t, `{"Guard": {"Transitions": {"ImmutablePaths": ["$.id"]}}}`)
	if v := plain.Check(decode(t, `{"id": 1}`), decode(t, `{"id": 1, "n": 1e99999}`), "S"); v != nil {
		t.Errorf("Check without a schema = %v, want nil", v)
	}
}

func TestCheckDocumentWithoutSchema(t *testing.T) {
	var nilRules *Rules
	for name, r := range map[string]*Rules{
		"nil":        nilRules,
		"empty":      mustCompile(t, `{}`),
		"rules only": mustCompile(t, `{"Guard": {"Transitions": {"ImmutablePaths": ["$.a"]}}, "WritePolicy": {"Deny": ["$.a"]}}`),
	} {
		if v := r.CheckDocument(decode(t, `{"anything": 1}`)); v != nil {
			t.Errorf("%s: CheckDocument = %v, want nil", name, v)
		}
	}
}
