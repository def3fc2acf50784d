package states

import (
	"context"
	"errors"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states/include"
)

// ParseOptions configures ParseWith. Its zero value parses as Parse does.
type ParseOptions struct {
	// Imports reads the templates the top-level Imports name. Nil (the
	// default) refuses Imports, as Parse does, with a message saying a
	// resolver is needed.
	Imports include.Source
}

// ParseWith is Parse with templates: a definition with top-level Imports
// has them read through opts.Imports and its Include states expanded
// (package include) before it is validated. The Machine's Definition is
// the expanded definition, which parses again without the templates, and
// its Lock the versions registry imports resolved to. Every problem, in
// the definition or inside a template, is reported at the include site
// with the template's name and the pointer inside it. ctx bounds the
// registry look-ups.
func ParseWith(ctx context.Context, data []byte, opts ParseOptions) (*Machine, error) {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, err
	}
	return ParseValueWith(ctx, v, opts)
}

// ParseValueWith is ParseWith on an already decoded definition.
func ParseValueWith(ctx context.Context, v any, opts ParseOptions) (*Machine, error) {
	top, ok := v.(map[string]any)
	if opts.Imports == nil || !ok {
		return ParseValue(v)
	}
	if _, ok := top["Imports"]; !ok {
		return ParseValue(v)
	}
	m, probs, err := parseExpanded(ctx, top, opts.Imports)
	if err != nil {
		return nil, err
	}
	var list ErrorList
	seen := map[string]bool{}
	for _, p := range probs {
		e := &ValidationError{Pointer: p.Pointer, State: stateAt(p.Pointer), Msg: p.Where() + p.Msg}
		if k := e.Error(); !seen[k] {
			seen[k] = true
			list = append(list, e)
		}
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseExpanded expands top's templates and parses the result. The
// problems, of the expansion and of the expanded definition, are located
// in the definition and the templates.
func parseExpanded(ctx context.Context, top map[string]any, src include.Source) (*Machine, []include.Problem, error) {
	r, probs := include.ExpandResult(ctx, top, src)
	m, err := ParseValue(r.Definition)
	if err != nil {
		var list ErrorList
		if !errors.As(err, &list) {
			return nil, nil, err
		}
		for _, e := range list {
			ptr, frames := r.Locate(e.Pointer)
			probs = append(probs, include.Problem{Pointer: ptr, Frames: frames, Msg: e.Msg})
		}
		return nil, probs, nil
	}
	if len(probs) > 0 {
		return nil, probs, nil
	}
	m.Lock = r.Lock
	return m, nil, nil
}

// stateAt returns the name of the innermost state ptr is in, or "".
func stateAt(ptr string) string {
	toks := strings.Split(ptr, "/")
	name := ""
	for i := 1; i < len(toks); i++ {
		if toks[i-1] == "States" {
			name = strings.NewReplacer("~1", "/", "~0", "~").Replace(toks[i])
		}
	}
	return name
}

// ParseTemplate validates a template (a definition fragment with
// top-level Parameters, see package include) on its own, as an Include of
// it would validate it with every parameter given its Default, else its
// first Enum value, else a sample of its Type ("x", 1, true, {}, []). Its
// own Imports are read through opts.Imports, as those of a definition
// are; nil refuses them. Problems are reported at their pointers inside
// the template (a problem inside a template it includes keeps that
// template's frame in its message).
func ParseTemplate(ctx context.Context, data []byte, opts ParseOptions) error {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return err
	}
	tm, ok := v.(map[string]any)
	if !ok {
		return ErrorList{{Msg: "a template must be an object with StartAt and States, not " + jsonvalue.TypeName(v)}}
	}
	args := map[string]any{}
	decls, _ := tm["Parameters"].(map[string]any)
	samples := map[string]any{"string": "x", "number": jsonvalue.IntNumber(1), "boolean": true, "object": map[string]any{}, "array": []any{}}
	for name, d := range decls {
		dm, _ := d.(map[string]any)
		if _, ok := dm["Default"]; ok {
			continue
		}
		if enum, ok := dm["Enum"].([]any); ok && len(enum) > 0 {
			args[name] = enum[0]
			continue
		}
		typ, _ := dm["Type"].(string)
		if sample, ok := samples[typ]; ok {
			args[name] = sample
		}
	}
	const alias = "T"
	def := map[string]any{
		"Imports": map[string]any{alias: alias},
		"StartAt": alias,
		"States":  map[string]any{alias: map[string]any{"Type": "Include", "Template": alias, "Parameters": args, "End": true}},
	}
	_, probs, err := parseExpanded(ctx, def, templateSource{tmpl: data, next: opts.Imports})
	if err != nil {
		return err
	}
	var list ErrorList
	seen := map[string]bool{}
	for _, p := range probs {
		if len(p.Frames) == 0 {
			// The Include's own problems are the template's declarations'
			// (a sample the template refuses), already reported inside it.
			continue
		}
		in := p.Frames[0]
		e := &ValidationError{Pointer: in.Pointer, State: stateAt(in.Pointer), Msg: include.Problem{Frames: p.Frames[1:]}.Where() + p.Msg}
		if k := e.Error(); !seen[k] {
			seen[k] = true
			list = append(list, e)
		}
	}
	return list.Err()
}

// templateName is the name templateSource gives the template it serves.
const templateName = "\x00template"

// templateSource serves the template ParseTemplate checks, and the
// template's own imports through next (as the definition's: from "").
type templateSource struct {
	tmpl []byte
	next include.Source
}

func (s templateSource) Open(from, path string) ([]byte, string, error) {
	switch {
	case from == "":
		return s.tmpl, templateName, nil
	case s.next == nil:
		return nil, "", errors.New("a template's imports need a template resolver")
	case from == templateName:
		from = ""
	}
	return s.next.Open(from, path)
}

func (s templateSource) Registry(ctx context.Context, name, constraint string) ([]byte, string, error) {
	if s.next == nil {
		return nil, "", errors.New("a template's imports need a template resolver")
	}
	return s.next.Registry(ctx, name, constraint)
}
