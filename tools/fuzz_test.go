package tools

import (
	"encoding/json"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// FuzzToolsValidateInput checks arbitrary JSON arguments against a schema
// that uses most keywords: ValidateInput never panics, and a refusal
// always names at least one issue with a rule.
func FuzzToolsValidateInput(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"query":"x"}`, `{"query":5,"limit":1e400}`, `{"tags":["bug","bug","x"]}`,
		`{"filter":{"a/b":null,"~0":1}}`, `{"page":-0.0,"sort":[]}`, `{"query":"\u0000","when":"1234"}`,
		`[]`, `"text"`, `{"query":{"query":{"query":[[[[]]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	tool := Tool{Name: "search", Input: json.RawMessage(searchSchema), Call: noop}
	if err := tool.Check(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonvalue.Decode(data)
		if err != nil {
			return
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		err = tool.ValidateInput(obj)
		if err == nil {
			return
		}
		var se *SchemaError
		if !asSchemaError(err, &se) || len(se.Issues) == 0 {
			t.Fatalf("ValidateInput(%s) = %v, want a *SchemaError with issues", data, err)
		}
		for _, is := range se.Issues {
			if is.Rule == "" || is.Msg == "" {
				t.Fatalf("ValidateInput(%s): issue %+v without a rule or message", data, is)
			}
		}
	})
}

// FuzzToolsCheck checks arbitrary text as a tool's input and output
// schemas, as an MCP server may send: Check never panics, refuses with
// *CheckError problems only, and a schema it accepts validates arguments
// without panicking.
func FuzzToolsCheck(f *testing.F) {
	for _, s := range []string{
		searchSchema, `{}`, `true`, `{"$ref":"#"}`, `{"$ref":"http://x/y"}`, `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"properties":{"a":{"pattern":"(?!x)"}}}`, `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
		`{"$id":"urn:x","$anchor":"a","items":{"$ref":"#a"}}`, `{"$dynamicRef":"#meta"}`, `{"format":"email","minimum":1e999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tool := Tool{Name: "fuzz", Input: data, Output: data, Call: noop}
		err := tool.Check()
		if err != nil {
			var problems []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				problems = j.Unwrap()
			} else {
				problems = []error{err}
			}
			for _, p := range problems {
				if _, ok := p.(*CheckError); !ok {
					t.Fatalf("Check(%s) = %v: %T is not a *CheckError", data, err, p)
				}
			}
			return
		}
		_ = tool.ValidateInput(map[string]any{"a": "x", "b": []any{json.Number("1"), nil, true}})
		_ = tool.ValidateOutput(map[string]any{"a": map[string]any{}})
	})
}

func asSchemaError(err error, se **SchemaError) bool {
	for err != nil {
		if s, ok := err.(*SchemaError); ok {
			*se = s
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
