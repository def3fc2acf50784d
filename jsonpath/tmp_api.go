package jsonpath

// TEMPORARY declarations so dependants compile until templates land.

// Template is TEMPORARY.
type Template struct{ v any }

// TemplateError is TEMPORARY.
type TemplateError struct{ Pointer, Field, Msg string }

func (e *TemplateError) Error() string { return e.Msg }

// CompileTemplate is TEMPORARY.
func CompileTemplate(v any) (*Template, error) { return &Template{v: v}, nil }

// Expr is TEMPORARY.
type Expr struct{ p *Path }

// CompileExpr is TEMPORARY.
func CompileExpr(s string) (*Expr, error) {
	p, err := Compile(s)
	if err != nil {
		return nil, err
	}
	return &Expr{p: p}, nil
}

// CompileReference is TEMPORARY.
func CompileReference(s string) (*Path, error) { return Compile(s) }
