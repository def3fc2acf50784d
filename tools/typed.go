package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Typed makes a tool of a Go function. The input schema is derived from
// In, which must be a struct (or a map with string keys), and the output
// schema from Out, with jsonschema.For: exported fields by their JSON
// names, fields without omitempty or omitzero required, no other
// properties allowed, a field's `jsonschema:"…"` tag its description; a
// json.Number is a number, a json.RawMessage any value, a []byte a base64
// string. The
// arguments are decoded into In through their JSON text, refusing unknown
// fields and numbers that do not fit (Agent.InvalidInput naming the
// field); the Out returned is normalised with jsonvalue.Normalize. A
// plain error of fn becomes Agent.ToolError naming the tool.
func Typed[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) (Tool, error) {
	if fn == nil {
		return Tool{}, &CheckError{Tool: name, Field: "Call", Msg: "no function to call"}
	}
	inSchema, err := jsonschema.For[In](forOptions())
	if err != nil {
		return Tool{}, &CheckError{Tool: name, Field: "Input", Msg: fmt.Sprintf("no JSON Schema for %s: %v", reflect.TypeFor[In](), err)}
	}
	if inSchema.Type != "object" {
		return Tool{}, &CheckError{Tool: name, Field: "Input", Msg: fmt.Sprintf("the arguments are an object: %s is not a struct or a map with string keys", reflect.TypeFor[In]())}
	}
	outSchema, err := jsonschema.For[Out](forOptions())
	if err != nil {
		return Tool{}, &CheckError{Tool: name, Field: "Output", Msg: fmt.Sprintf("no JSON Schema for %s: %v", reflect.TypeFor[Out](), err)}
	}
	in, err := json.Marshal(inSchema)
	if err != nil {
		return Tool{}, &CheckError{Tool: name, Field: "Input", Msg: fmt.Sprintf("the schema of %s does not encode: %v", reflect.TypeFor[In](), err)}
	}
	out, err := json.Marshal(outSchema)
	if err != nil {
		return Tool{}, &CheckError{Tool: name, Field: "Output", Msg: fmt.Sprintf("the schema of %s does not encode: %v", reflect.TypeFor[Out](), err)}
	}
	t := Tool{
		Name:        name,
		Description: description,
		Input:       in,
		Output:      out,
		Call: func(ctx context.Context, _ *agents.Request, args map[string]any) (any, error) {
			v, err := decodeArgs[In](name, args)
			if err != nil {
				return nil, err
			}
			res, err := fn(ctx, v)
			if err != nil {
				return nil, callError(ctx, name, err)
			}
			norm, err := jsonvalue.Normalize(res)
			if err != nil {
				return nil, notJSON(name, err)
			}
			return norm, nil
		},
	}
	if err := t.Check(); err != nil {
		return Tool{}, err
	}
	return t, nil
}

// forOptions gives the schemas of the types whose JSON form is not what
// their Go kind suggests: a json.Number is a number, a json.RawMessage any
// JSON value, a []byte a base64 string.
func forOptions() *jsonschema.ForOptions {
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.Number]():     {Type: "number"},
		reflect.TypeFor[json.RawMessage](): {Types: []string{"null", "boolean", "object", "array", "number", "string"}},
		reflect.TypeFor[[]byte]():          {Types: []string{"null", "string"}, ContentEncoding: "base64"},
	}}
}

// decodeArgs decodes a tool's arguments into In through their JSON text.
func decodeArgs[In any](name string, args map[string]any) (In, error) {
	var in In
	data := []byte("{}")
	if args != nil {
		var err error
		if data, err = jsonvalue.Marshal(args); err != nil {
			return in, &asl.Error{Name: asl.ErrAgentInvalidInput, Cause: fmt.Sprintf("tool %q: the arguments are not JSON: %v", name, err), Err: err}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return in, &asl.Error{Name: asl.ErrAgentInvalidInput, Cause: fmt.Sprintf("tool %q: the arguments do not fit %s: %s must be %s, not %s", name, reflect.TypeFor[In](), fieldPointer(te.Field), te.Type, te.Value), Err: err}
		}
		return in, &asl.Error{Name: asl.ErrAgentInvalidInput, Cause: fmt.Sprintf("tool %q: the arguments do not fit %s: %v", name, reflect.TypeFor[In](), err), Err: err}
	}
	return in, nil
}

// fieldPointer turns encoding/json's dotted field path into a JSON
// Pointer.
func fieldPointer(field string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(field, ".") {
		b.WriteByte('/')
		b.WriteString(jsonvalue.EscapePointer(part))
	}
	return b.String()
}

// FromAgent makes a tool of an agent: calling it invokes a with the
// arguments as its input. The agent's Request is the calling request's
// (nil: an empty one) with Agent set to name, Input to the arguments and
// Step extended with "/tool:"+name; its Violation (a refusal of the
// caller's answer) is cleared, and so are its Steps: the agent's own steps
// run without the journal, since the tool call as a whole is the caller's
// durable step and a step name of the agent's could collide with the
// caller's. schema is the tool's input schema (nil: any object). A plain
// error of the agent becomes Agent.ToolError naming the tool.
func FromAgent(name, description string, schema json.RawMessage, a agents.Agent) (Tool, error) {
	if a == nil {
		return Tool{}, &CheckError{Tool: name, Field: "Call", Msg: "no agent to call"}
	}
	t := Tool{
		Name:        name,
		Description: description,
		Input:       schema,
		Call: func(ctx context.Context, req *agents.Request, args map[string]any) (any, error) {
			var sub agents.Request
			if req != nil {
				sub = *req
			}
			if args == nil {
				args = map[string]any{}
			}
			sub.Agent, sub.Input, sub.Step = name, args, sub.Step+"/tool:"+name
			sub.Violation, sub.Steps = nil, nil
			out, err := a.Invoke(ctx, &sub)
			if err != nil {
				return nil, callError(ctx, name, err)
			}
			return out, nil
		},
	}
	if err := t.Check(); err != nil {
		return Tool{}, err
	}
	return t, nil
}
