package server

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The request decoder's field names are exact. encoding/json matches an
// object's member names to a struct's fields case-insensitively ("Input"
// fills Input just as "input" does) and DisallowUnknownFields does not
// change that; checkFields runs first on the strictly decoded body and
// refuses every name that is not exactly one of the fields.

// unknownField is a member name the request's type does not have.
type unknownField struct {
	pointer string // the member's JSON Pointer in the body
	hint    string // the pointer of the field it differs from only in case; "" when none
}

func (u *unknownField) problem() *problem {
	if u.hint != "" {
		return badRequest(u.pointer, "unknown field %s; did you mean %s? (field names are case-sensitive)", u.pointer, u.hint)
	}
	return badRequest(u.pointer, "unknown field %s", u.pointer)
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkFields walks doc, a body as jsonvalue.Decode returns it, beside
// the Go type t it is to be decoded into, and returns the first member
// (in key order, depth first) whose name is not exactly the JSON name of
// one of its struct's fields. Values whose type decodes itself (a
// json.RawMessage document, a time.Time) are not looked into, nor is a
// value of the wrong JSON kind (the decoder refuses it, naming its type).
func checkFields(doc any, t reflect.Type, pointer string) *unknownField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := pointer + "/" + escapePointer(k)
			ft, ok := fields[k]
			if !ok {
				u := &unknownField{pointer: p}
				var like []string
				for name := range fields {
					if strings.EqualFold(name, k) {
						like = append(like, name)
					}
				}
				if len(like) > 0 {
					u.hint = pointer + "/" + escapePointer(slices.Min(like))
				}
				return u
			}
			if u := checkFields(obj[k], ft, p); u != nil {
				return u
			}
		}
	case reflect.Slice, reflect.Array:
		list, ok := doc.([]any)
		if !ok {
			return nil
		}
		for i, v := range list {
			if u := checkFields(v, t.Elem(), pointer+"/"+strconv.Itoa(i)); u != nil {
				return u
			}
		}
	case reflect.Map:
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if u := checkFields(obj[k], t.Elem(), pointer+"/"+escapePointer(k)); u != nil {
				return u
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of struct type t's fields, as
// encoding/json names them (the tag's name, else the Go name; embedded
// structs without a tag lend theirs), to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	depth := map[string]int{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		// A field promoted from an embedded struct gives way to a
		// shallower one of the same name.
		if d, taken := depth[name]; taken && d <= len(f.Index) {
			continue
		}
		out[name], depth[name] = f.Type, len(f.Index)
	}
	return out
}

// escapePointer escapes a member name for a JSON Pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// checkBody is checkFields for the value v a body is decoded into.
func checkBody(doc any, v any) error {
	if u := checkFields(doc, reflect.TypeOf(v), ""); u != nil {
		return u.problem()
	}
	return nil
}
