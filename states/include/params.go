package include

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// A decl is one declared template parameter.
type decl struct {
	typ      string
	required bool
	def      any
	hasDef   bool
	enum     []any
}

// paramTypes are the types a parameter may declare.
var paramTypes = []string{"string", "number", "boolean", "object", "array"}

// declarations reads a template's Parameters (errors inside the template).
func (e *expander) declarations(t *doc, tm map[string]any) map[string]decl {
	out := map[string]decl{}
	raw, ok := tm["Parameters"]
	if !ok {
		return out
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		e.report(t, "/Parameters", "Parameters must be an object of name: {Type, Description, Required, Default, Enum}, got %s", jsonvalue.TypeName(raw))
		return out
	}
	for _, name := range sortedKeys(obj) {
		ptr := "/Parameters/" + jsonvalue.EscapePointer(name)
		if !validName(name) {
			e.report(t, ptr, "parameter name %q must be letters, digits, _ and -, starting with a letter or _", name)
			continue
		}
		po, ok := obj[name].(map[string]any)
		if !ok {
			e.report(t, ptr, "a parameter is an object {Type, Description, Required, Default, Enum}, got %s", jsonvalue.TypeName(obj[name]))
			continue
		}
		var d decl
		for _, k := range sortedKeys(po) {
			kptr := ptr + "/" + jsonvalue.EscapePointer(k)
			switch k {
			case "Type":
				s, _ := po[k].(string)
				if !slices.Contains(paramTypes, s) {
					e.report(t, kptr, "Type must be one of %s", strings.Join(paramTypes, ", "))
					continue
				}
				d.typ = s
			case "Description":
				if _, ok := po[k].(string); !ok {
					e.report(t, kptr, "Description must be a string")
				}
			case "Required":
				b, ok := po[k].(bool)
				if !ok {
					e.report(t, kptr, "Required must be true or false")
				}
				d.required = b
			case "Default":
				d.def, d.hasDef = po[k], true
			case "Enum":
				l, ok := po[k].([]any)
				if !ok || len(l) == 0 {
					e.report(t, kptr, "Enum must be a non-empty array of the allowed values")
					continue
				}
				d.enum = l
			default:
				e.report(t, kptr, "unknown field %q in a parameter (it has Type, Description, Required, Default and Enum)", k)
			}
		}
		if _, ok := po["Type"]; !ok {
			e.report(t, ptr, "parameter %q needs a Type (%s)", name, strings.Join(paramTypes, ", "))
		}
		if d.typ != "" {
			for i, v := range d.enum {
				if msg := d.check(v, false); msg != "" {
					e.report(t, fmt.Sprintf("%s/Enum/%d", ptr, i), "%s", msg)
				}
			}
			if d.hasDef {
				if msg := d.check(d.def, true); msg != "" {
					e.report(t, ptr+"/Default", "%s", msg)
				}
			}
		}
		if d.required && d.hasDef {
			e.report(t, ptr+"/Default", "a Required parameter has no Default: drop one of them")
		}
		out[name] = d
	}
	return out
}

// check returns what is wrong with v as the parameter's value, or "".
func (d decl) check(v any, enum bool) string {
	if got := jsonvalue.TypeName(v); got != d.typ {
		return fmt.Sprintf("want a %s, got %s", d.typ, got)
	}
	if enum && len(d.enum) > 0 && !slices.ContainsFunc(d.enum, func(a any) bool { return jsonvalue.Equal(a, v) }) {
		texts := make([]string, len(d.enum))
		for i, a := range d.enum {
			b, _ := jsonvalue.Marshal(a)
			texts[i] = string(b)
		}
		return fmt.Sprintf("%s is not one of the Enum values %s", jsonText(v), strings.Join(texts, ", "))
	}
	return ""
}

func jsonText(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// arguments checks the Include's Parameters against the template's
// declarations (errors at the include site) and returns them.
func (e *expander) arguments(d *doc, st map[string]any, ptr string, decls map[string]decl, alias string) map[string]any {
	out := map[string]any{}
	raw, ok := st["Parameters"]
	obj, isObj := raw.(map[string]any)
	if ok {
		if !isObj {
			e.report(d, ptr+"/Parameters", "Parameters must be an object of the template's parameters, got %s", jsonvalue.TypeName(raw))
			return out
		}
		for _, name := range sortedKeys(obj) {
			pptr := ptr + "/Parameters/" + jsonvalue.EscapePointer(name)
			dc, ok := decls[name]
			if !ok {
				e.report(d, pptr, "unknown parameter %q: template %s declares %s", name, alias, declared(decls))
				continue
			}
			if dc.typ != "" {
				if msg := dc.check(obj[name], true); msg != "" {
					e.report(d, pptr, "parameter %q of template %s: %s", name, alias, msg)
					continue
				}
			}
			out[name] = obj[name]
		}
	}
	for _, name := range sortedKeys(anyMap(decls)) {
		if _, ok := out[name]; !ok && decls[name].required {
			if _, given := obj[name]; given {
				continue // reported above
			}
			e.report(d, ptr+"/Parameters", "missing required parameter %q of template %s", name, alias)
		}
	}
	return out
}

func declared(decls map[string]decl) string {
	if len(decls) == 0 {
		return "no parameters"
	}
	return strings.Join(sortedKeys(anyMap(decls)), ", ")
}

func anyMap(decls map[string]decl) map[string]any {
	m := make(map[string]any, len(decls))
	for k := range decls {
		m[k] = nil
	}
	return m
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}
