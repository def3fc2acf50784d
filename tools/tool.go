// Package tools is the tool registry: the tools a model may call, each with
// a name, a description, a category, the JSON Schemas of its arguments and
// of its result, and the Go function that runs it.
//
// A Tool is made from a Go function over Go types (Typed, its schemas
// derived from the types), from a registered agent (FromAgent), or by
// hand. Check refuses a tool whose name or schemas are unusable; a
// Registry holds the checked tools of a server under unique names and
// swaps an MCP server's tools at once when its list changes (Replace).
//
// Run is the one way to call a tool: it checks the arguments against the
// input schema (Agent.InvalidInput naming the JSON Pointer and the rule),
// calls it, turns a plain Go error into Agent.ToolError naming the tool,
// and checks the result against the output schema (Agent.InvalidOutput).
// The model loop (agentloop) takes tools.Tool values as they are and
// calls them through Run.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// MaxNameLength is the longest tool name (and category) allowed.
const MaxNameLength = 64

// Tool is one tool a model may call. Check, Register and the
// constructors compile its schemas once; ValidateInput, ValidateOutput and
// Run are then safe for concurrent use. Don't change a Tool's fields after
// checking it: a changed schema is compiled again on every call.
type Tool struct {
	// Name is what the model calls the tool: 1 to 64 letters, digits, '_',
	// '-' and '.'. An MCP server's tools are named "server.tool".
	Name        string
	Description string
	// Category is optional ("files", "web"): a workflow's ToolCategories
	// may name it. Empty, or the same characters as a name.
	Category string
	// Input is the JSON Schema of the arguments: an object schema (its
	// "type", when given, is "object"). Nil means any object.
	Input json.RawMessage
	// Output is the JSON Schema of the result (an object or a boolean);
	// nil means any JSON value.
	Output json.RawMessage
	// Call runs the tool with the calling agent's request (nil outside an
	// agent call) and the arguments, a JSON value (see package jsonvalue)
	// the tool must not modify. Its result is normalised with
	// jsonvalue.Normalize. To fail with a named ASL error it returns an
	// *asl.Error; Run turns any other error into Agent.ToolError.
	Call func(ctx context.Context, req *agents.Request, input map[string]any) (any, error)

	schemas *compiled // set by Check
}

// compiled holds a tool's schemas as Check compiled them, with copies of
// the text they were compiled from.
type compiled struct {
	inRaw, outRaw []byte
	in, out       *jsonschema.Schema
}

// CheckError is a problem that makes Check refuse a tool.
type CheckError struct {
	// Tool is the tool's name as given.
	Tool string
	// Field is the field at fault: "Name", "Category", "Input", "Output"
	// or "Call".
	Field string
	// Pointer is the JSON Pointer of the problem within the schema of
	// Input or Output ("" for the whole schema, or for other fields).
	Pointer string
	// Msg says what is wrong.
	Msg string
}

// Error returns `tool "name": Field at /pointer: msg`.
func (e *CheckError) Error() string {
	where := e.Field
	if e.Pointer != "" {
		where += " at " + e.Pointer
	}
	return fmt.Sprintf("tool %q: %s: %s", e.Tool, where, e.Msg)
}

// Check reports what makes t unusable: a bad name or category, a missing
// Call, or a schema that is not JSON, not a JSON Schema, refers to another
// document, or (Input) does not describe an object. Each problem is a
// *CheckError; several are joined with errors.Join. A check that passes
// compiles the schemas into t, which is why Check must not run while
// another goroutine uses t.
func (t *Tool) Check() error {
	var errs []error
	bad := func(field, ptr, format string, args ...any) {
		errs = append(errs, &CheckError{Tool: t.Name, Field: field, Pointer: ptr, Msg: fmt.Sprintf(format, args...)})
	}
	if !validName(t.Name) {
		bad("Name", "", "a name is 1 to %d letters, digits, '_', '-' and '.', not %q", MaxNameLength, t.Name)
	}
	if t.Category != "" && !validName(t.Category) {
		bad("Category", "", "a category is empty or 1 to %d letters, digits, '_', '-' and '.', not %q", MaxNameLength, t.Category)
	}
	if t.Call == nil {
		bad("Call", "", "no function to call")
	}
	c := &compiled{inRaw: bytes.Clone(t.Input), outRaw: bytes.Clone(t.Output)}
	var problems []*CheckError
	c.in, problems = compileSchema(t.Input, true)
	for _, p := range problems {
		p.Tool, p.Field = t.Name, "Input"
		errs = append(errs, p)
	}
	c.out, problems = compileSchema(t.Output, false)
	for _, p := range problems {
		p.Tool, p.Field = t.Name, "Output"
		errs = append(errs, p)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	t.schemas = c
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > MaxNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// SchemaError is a value a tool's schema refuses: its arguments or its
// result. It is the Err of the *asl.Error ValidateInput and
// ValidateOutput return.
type SchemaError struct {
	// Tool is the tool's name.
	Tool string
	// Output is false for the arguments, true for the result.
	Output bool
	// Issues are the problems found, by pointer; at least one.
	Issues []Issue
}

// Issue is one place where a value breaks its schema.
type Issue struct {
	// Pointer is the JSON Pointer of the value within the arguments or the
	// result ("" for the whole of it).
	Pointer string
	// Rule is the schema keyword that refused it ("type", "required",
	// "additionalProperties", "minimum", …).
	Rule string
	// Msg says what the value must be ("must be an integer").
	Msg string
}

// Error lists the issues: `tool "t": the arguments do not match its input
// schema: /n must be an integer (type)`.
func (e *SchemaError) Error() string {
	what, whole := "the arguments do not match its input schema", "the arguments"
	if e.Output {
		what, whole = "the result does not match its output schema", "the result"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "tool %q: %s: ", e.Tool, what)
	for i, is := range e.Issues {
		if i > 0 {
			b.WriteString("; ")
		}
		where := is.Pointer
		if where == "" {
			where = whole
		}
		fmt.Fprintf(&b, "%s %s (%s)", where, is.Msg, is.Rule)
	}
	return b.String()
}

// ValidateInput checks arguments against t's input schema. A refusal is
// an *asl.Error named Agent.InvalidInput whose Err is a *SchemaError
// naming each offending value's JSON Pointer and the rule it breaks.
func (t *Tool) ValidateInput(input map[string]any) error {
	s, err := t.schema(false)
	if err != nil || s == nil {
		return err
	}
	var doc any = input
	if input == nil {
		doc = map[string]any{}
	}
	return t.validate(s, doc, false)
}

// ValidateOutput checks a result against t's output schema, when it has
// one. The result is normalised first (jsonvalue.Normalize). A refusal is
// an *asl.Error named Agent.InvalidOutput whose Err is a *SchemaError, or
// the normalisation's error.
func (t *Tool) ValidateOutput(v any) error {
	s, err := t.schema(true)
	if err != nil || s == nil {
		return err
	}
	doc, err := jsonvalue.Normalize(v)
	if err != nil {
		return notJSON(t.Name, err)
	}
	return t.validate(s, doc, true)
}

func notJSON(name string, err error) error {
	return &asl.Error{Name: asl.ErrAgentInvalidOutput, Cause: fmt.Sprintf("tool %q: its result is not a JSON value: %v", name, err), Err: err}
}

// schema returns the compiled input or output schema, nil when there is
// none, compiling it now when Check has not (or the field changed since).
func (t *Tool) schema(output bool) (*jsonschema.Schema, error) {
	raw, field := t.Input, "Input"
	if output {
		raw, field = t.Output, "Output"
	}
	if c := t.schemas; c != nil {
		if !output && bytes.Equal(c.inRaw, raw) {
			return c.in, nil
		}
		if output && bytes.Equal(c.outRaw, raw) {
			return c.out, nil
		}
	}
	s, problems := compileSchema(raw, !output)
	if len(problems) > 0 {
		p := problems[0]
		p.Tool, p.Field = t.Name, field
		return nil, &asl.Error{Name: asl.ErrAgentToolError, Cause: p.Error(), Err: p}
	}
	return s, nil
}

func (t *Tool) validate(s *jsonschema.Schema, doc any, output bool) error {
	err := s.Validate(doc)
	if err == nil {
		return nil
	}
	name := asl.ErrAgentInvalidInput
	if output {
		name = asl.ErrAgentInvalidOutput
	}
	se := &SchemaError{Tool: t.Name, Output: output, Issues: issues(err)}
	return &asl.Error{Name: name, Cause: se.Error(), Err: se}
}

// Run calls t as a model's tool call should be: it validates the
// arguments, calls t.Call, normalises the result and validates it. A
// plain Go error of the call becomes Agent.ToolError naming the tool (its
// Err the original); an *asl.Error, and the context's own error once ctx
// has ended, are returned as they are. Run is safe for concurrent use
// when t.Call is.
func (t *Tool) Run(ctx context.Context, req *agents.Request, input map[string]any) (any, error) {
	if t.Call == nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "tool %q has no function to call", t.Name)
	}
	if err := t.ValidateInput(input); err != nil {
		return nil, err
	}
	out, err := t.Call(ctx, req, input)
	if err != nil {
		return nil, callError(ctx, t.Name, err)
	}
	if out, err = jsonvalue.Normalize(out); err != nil {
		return nil, notJSON(t.Name, err)
	}
	s, err := t.schema(true)
	if err != nil {
		return nil, err
	}
	if s != nil {
		if err := t.validate(s, out, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// callError is a tool's failure as Run returns it.
func callError(ctx context.Context, name string, err error) error {
	var ae *asl.Error
	if errors.As(err, &ae) {
		return err
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	return &asl.Error{Name: asl.ErrAgentToolError, Cause: fmt.Sprintf("tool %q: %v", name, err), Err: err}
}
