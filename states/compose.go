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
	r, probs := include.ExpandResult(ctx, top, opts.Imports)
	var list ErrorList
	seen := map[string]bool{}
	add := func(e *ValidationError) {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			list = append(list, e)
		}
	}
	for _, p := range probs {
		add(&ValidationError{Pointer: p.Pointer, State: stateAt(p.Pointer), Msg: p.Where() + p.Msg})
	}
	m, err := ParseValue(r.Definition)
	if err != nil {
		var pl ErrorList
		if !errors.As(err, &pl) {
			return nil, err
		}
		for _, e := range pl {
			ptr, frames := r.Locate(e.Pointer)
			if ptr == e.Pointer && frames == nil {
				add(e)
				continue
			}
			add(&ValidationError{Pointer: ptr, State: stateAt(ptr), Msg: include.Problem{Frames: frames}.Where() + e.Msg})
		}
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	m.Lock = r.Lock
	return m, nil
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
