package jsonpath

// TEMPORARY declarations so dependants compile until templates land.

import (
	"encoding/json"
	"strconv"
)

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

// SizeExceeds is TEMPORARY.
func SizeExceeds(v any, limit int) bool { b, _ := Marshal(v); return len(b) > limit }

// IsInteger is TEMPORARY.
func IsInteger(n json.Number) bool { _, ok := Int64(n); return ok }

// ValidNumber is TEMPORARY.
func ValidNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }


// Eval is TEMPORARY.
func (t *Template) Eval(input any, env Env) (any, error) { return t.v, nil }

// Eval is TEMPORARY.
func (e *Expr) Eval(input any, env Env) (any, error) { return e.p.Get(input, env) }

// String is TEMPORARY.
func (e *Expr) String() string { return e.p.String() }

// Set is TEMPORARY.
func (p *Path) Set(doc, v any) (any, error) { return v, nil }

// MarshalIndent is TEMPORARY.
func MarshalIndent(v any, indent string) ([]byte, error) { return Marshal(v) }
