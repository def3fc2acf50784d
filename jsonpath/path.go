package jsonpath

// TEMPORARY naive implementation (dotted paths only); replaced by the full
// JSONPath compiler.

import (
	"fmt"
	"strings"
)

// SyntaxError reports an expression (path or intrinsic call) that does not parse.
type SyntaxError struct {
	Expr   string
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid path %q at offset %d: %s", e.Expr, e.Offset, e.Msg)
}

// PathError reports a path that does not resolve in a document.
type PathError struct {
	Path string
	Msg  string
}

func (e *PathError) Error() string { return fmt.Sprintf("Invalid path '%s' : %s", e.Path, e.Msg) }

// Path is a compiled JSONPath expression.
type Path struct {
	src  string
	ctx  bool
	name string
	keys []string
}

// Compile compiles a path rooted at $, $$ or $name.
func Compile(expr string) (*Path, error) {
	p := &Path{src: expr}
	rest := expr
	switch {
	case strings.HasPrefix(rest, "$$"):
		p.ctx, rest = true, rest[2:]
	case strings.HasPrefix(rest, "$"):
		rest = rest[1:]
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			i = len(rest)
		}
		p.name, rest = rest[:i], rest[i:]
	default:
		return nil, &SyntaxError{Expr: expr, Msg: "must start with $"}
	}
	if rest != "" {
		if rest[0] != '.' {
			return nil, &SyntaxError{Expr: expr, Msg: "unsupported"}
		}
		p.keys = strings.Split(rest[1:], ".")
	}
	return p, nil
}

// String returns the source text of the path.
func (p *Path) String() string { return p.src }

// Get returns the value p selects.
func (p *Path) Get(input any, env Env) (any, error) {
	cur := input
	switch {
	case p.ctx:
		cur = env.Context()
	case p.name != "":
		v, ok := env.Variable(p.name)
		if !ok {
			return nil, &PathError{Path: p.src, Msg: "undefined variable"}
		}
		cur = v
	}
	for _, k := range p.keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, &PathError{Path: p.src, Msg: "missing"}
		}
		if cur, ok = m[k]; !ok {
			return nil, &PathError{Path: p.src, Msg: "missing"}
		}
	}
	return cur, nil
}
