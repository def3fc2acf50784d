package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// PatchOp is one operation of an RFC 6902 JSON Patch: Op is "add",
// "remove", "replace", "move", "copy" or "test"; Path (and From, for move
// and copy) are RFC 6901 JSON Pointers; Value is the JSON value of add,
// replace and test.
type PatchOp struct {
	Op    string
	Path  string
	From  string
	Value any
}

// Patch is an RFC 6902 JSON Patch: operations applied in order, all or
// none. It is immutable once parsed and safe for concurrent use.
type Patch []PatchOp

// ErrPatchTest is wrapped by the *PatchError of a "test" operation whose
// value differs from the document's.
var ErrPatchTest = errors.New("test failed")

// PatchError is an operation of a patch that is malformed or cannot be
// applied: Index is the operation's index in the patch, Member the member
// at fault ("op", "path", "from", "value"; "" for the operation as a
// whole). Index is -1 when the patch as a whole is at fault (not an
// array).
type PatchError struct {
	Index  int
	Member string
	Msg    string
	Err    error
}

func (e *PatchError) Error() string {
	return fmt.Sprintf("patch %s: %s", e.Pointer(), e.Msg)
}

func (e *PatchError) Unwrap() error { return e.Err }

// Pointer is the JSON Pointer of the operation at fault within the patch
// ("/2"), of its member when one is at fault ("/2/path"); "" for the patch
// as a whole.
func (e *PatchError) Pointer() string {
	if e.Index < 0 {
		return ""
	}
	at := "/" + strconv.Itoa(e.Index)
	if e.Member != "" {
		at += "/" + e.Member
	}
	return at
}

// ParsePatch reads a decoded JSON Patch (a JSON array of operation
// objects, as jsonvalue.Decode returns it), checking every operation and
// pointer; the first problem is a *PatchError. Members an operation does
// not use are ignored, as RFC 6902 says.
func ParsePatch(v any) (Patch, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, &PatchError{Index: -1, Msg: fmt.Sprintf("a JSON Patch is an array of operations, not %s", jsonvalue.TypeName(v))}
	}
	p := make(Patch, 0, len(list))
	for i, item := range list {
		bad := func(member, format string, args ...any) error {
			return &PatchError{Index: i, Member: member, Msg: fmt.Sprintf(format, args...)}
		}
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, bad("", "an operation is an object, not %s", jsonvalue.TypeName(item))
		}
		str := func(member string) (string, error) {
			s, present := obj[member]
			if !present {
				return "", bad(member, "%q is missing", member)
			}
			text, ok := s.(string)
			if !ok {
				return "", bad(member, "%q must be a string, not %s", member, jsonvalue.TypeName(s))
			}
			return text, nil
		}
		var op PatchOp
		var err error
		if op.Op, err = str("op"); err != nil {
			return nil, err
		}
		if op.Path, err = str("path"); err != nil {
			return nil, err
		}
		switch op.Op {
		case "add", "replace", "test":
			val, present := obj["value"]
			if !present {
				return nil, bad("value", "%q needs a \"value\"", op.Op)
			}
			if op.Value, err = jsonvalue.Normalize(val); err != nil {
				return nil, bad("value", "%v", err)
			}
		case "move", "copy":
			if op.From, err = str("from"); err != nil {
				return nil, err
			}
			if _, err := parsePointer(op.From); err != nil {
				return nil, bad("from", "%v", err)
			}
		case "remove":
		default:
			return nil, bad("op", "unknown operation %q (want add, remove, replace, move, copy or test)", op.Op)
		}
		if _, err := parsePointer(op.Path); err != nil {
			return nil, bad("path", "%v", err)
		}
		p = append(p, op)
	}
	return p, nil
}

// Value is the patch as a JSON value (an array of operation objects), as
// history events record it.
func (p Patch) Value() any {
	out := make([]any, len(p))
	for i, op := range p {
		o := map[string]any{"op": op.Op, "path": op.Path}
		switch op.Op {
		case "add", "replace", "test":
			o["value"] = op.Value
		case "move", "copy":
			o["from"] = op.From
		}
		out[i] = o
	}
	return out
}

// Apply applies the patch to doc and returns the patched document; doc is
// not modified (the containers along each path are copied). The first
// operation that cannot be applied is a *PatchError, wrapping ErrPatchTest
// for a failed test, and nothing of the patch applies.
func (p Patch) Apply(doc any) (any, error) {
	// The operations walk arrays as []any: packed ones are decoded.
	doc, err := jsonvalue.Expand(doc)
	if err != nil {
		return nil, err
	}
	for i, op := range p {
		var err error
		doc, err = op.apply(doc)
		if err != nil {
			var pe *PatchError
			if errors.As(err, &pe) {
				pe.Index = i
				return nil, pe
			}
			return nil, &PatchError{Index: i, Member: "path", Msg: err.Error(), Err: err}
		}
	}
	return doc, nil
}

func (op PatchOp) apply(doc any) (any, error) {
	path, err := parsePointer(op.Path)
	if err != nil {
		return nil, &PatchError{Member: "path", Msg: err.Error()}
	}
	switch op.Op {
	case "add":
		return patchAdd(doc, path, op.Value)
	case "remove":
		if len(path) == 0 {
			return nil, &PatchError{Member: "path", Msg: "cannot remove the whole document"}
		}
		return patchRemove(doc, path)
	case "replace":
		if _, err := patchGet(doc, path); err != nil {
			return nil, err
		}
		return patchReplace(doc, path, op.Value)
	case "test":
		v, err := patchGet(doc, path)
		if err != nil {
			return nil, err
		}
		if !jsonvalue.Equal(v, op.Value) {
			return nil, &PatchError{Member: "value", Msg: fmt.Sprintf("the value at %q is not the one tested", op.Path), Err: ErrPatchTest}
		}
		return doc, nil
	case "move", "copy":
		from, err := parsePointer(op.From)
		if err != nil {
			return nil, &PatchError{Member: "from", Msg: err.Error()}
		}
		v, err := patchGet(doc, from)
		if err != nil {
			var pe *PatchError
			if errors.As(err, &pe) {
				pe.Member = "from"
			}
			return nil, err
		}
		if op.Op == "copy" {
			return patchAdd(doc, path, jsonvalue.Clone(v))
		}
		if op.Path == op.From {
			return doc, nil
		}
		if strings.HasPrefix(op.Path, op.From+"/") {
			return nil, &PatchError{Member: "path", Msg: fmt.Sprintf("cannot move %q into its own child %q", op.From, op.Path)}
		}
		if doc, err = patchRemove(doc, from); err != nil {
			return nil, err
		}
		return patchAdd(doc, path, v)
	}
	return nil, &PatchError{Member: "op", Msg: fmt.Sprintf("unknown operation %q", op.Op)}
}

// parsePointer splits an RFC 6901 JSON Pointer into its reference tokens,
// unescaping ~1 and ~0.
func parsePointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("JSON Pointer %q must be empty or start with /", ptr)
	}
	tokens := strings.Split(ptr[1:], "/")
	for i, t := range tokens {
		if !strings.Contains(t, "~") {
			continue
		}
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || t[j+1] != '0' && t[j+1] != '1') {
				return nil, fmt.Errorf("JSON Pointer %q: ~ must be followed by 0 or 1", ptr)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// notFound is a pointer that names nothing in the document.
func patchNotFound(path []string, i int, why string) error {
	return &PatchError{Member: "path", Msg: fmt.Sprintf("%s: %s", patchPointerOf(path[:i+1]), why)}
}

// pointerOf writes tokens as a JSON Pointer.
func patchPointerOf(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(jsonvalue.EscapePointer(t))
	}
	return b.String()
}

// arrayIndex reads an array index token: digits without a leading zero,
// below n (at most n when end is allowed). "-" is n when end is allowed.
func patchArrayIndex(t string, n int, end bool) (int, string) {
	if t == "-" {
		if end {
			return n, ""
		}
		return 0, `"-" (past the end) names no element here`
	}
	if t == "" || len(t) > 1 && t[0] == '0' || strings.Trim(t, "0123456789") != "" {
		return 0, fmt.Sprintf("%q is not an array index", t)
	}
	i, err := strconv.Atoi(t)
	if err != nil || i > n || i == n && !end {
		return 0, fmt.Sprintf("index %s is out of range (the array has %d elements)", t, n)
	}
	return i, ""
}

// get returns the value path names in doc.
func patchGet(doc any, path []string) (any, error) {
	v := doc
	for i, t := range path {
		switch c := v.(type) {
		case map[string]any:
			m, ok := c[t]
			if !ok {
				return nil, patchNotFound(path, i, "no such member")
			}
			v = m
		case []any:
			k, why := patchArrayIndex(t, len(c), false)
			if why != "" {
				return nil, patchNotFound(path, i, why)
			}
			v = c[k]
		default:
			return nil, patchNotFound(path, i, fmt.Sprintf("the parent is %s, not an object or array", jsonvalue.TypeName(v)))
		}
	}
	return v, nil
}

// edit returns a copy of doc in which the parent of path's last token is
// replaced by f(parent): the containers along the way are copied, never
// modified.
func patchEdit(doc any, path []string, i int, f func(parent any, last string) (any, error)) (any, error) {
	if i == len(path)-1 {
		return f(doc, path[i])
	}
	t := path[i]
	switch c := doc.(type) {
	case map[string]any:
		child, ok := c[t]
		if !ok {
			return nil, patchNotFound(path, i, "no such member")
		}
		v, err := patchEdit(child, path, i+1, f)
		if err != nil {
			return nil, err
		}
		out := maps.Clone(c)
		out[t] = v
		return out, nil
	case []any:
		k, why := patchArrayIndex(t, len(c), false)
		if why != "" {
			return nil, patchNotFound(path, i, why)
		}
		v, err := patchEdit(c[k], path, i+1, f)
		if err != nil {
			return nil, err
		}
		out := slices.Clone(c)
		out[k] = v
		return out, nil
	}
	return nil, patchNotFound(path, i, fmt.Sprintf("the parent is %s, not an object or array", jsonvalue.TypeName(doc)))
}

func patchAdd(doc any, path []string, value any) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	return patchEdit(doc, path, 0, func(parent any, last string) (any, error) {
		switch c := parent.(type) {
		case map[string]any:
			out := maps.Clone(c)
			if out == nil {
				out = map[string]any{}
			}
			out[last] = value
			return out, nil
		case []any:
			k, why := patchArrayIndex(last, len(c), true)
			if why != "" {
				return nil, patchNotFound(path, len(path)-1, why)
			}
			return slices.Insert(slices.Clone(c), k, value), nil
		}
		return nil, patchNotFound(path, len(path)-1, fmt.Sprintf("the parent is %s, not an object or array", jsonvalue.TypeName(parent)))
	})
}

func patchRemove(doc any, path []string) (any, error) {
	return patchEdit(doc, path, 0, func(parent any, last string) (any, error) {
		switch c := parent.(type) {
		case map[string]any:
			if _, ok := c[last]; !ok {
				return nil, patchNotFound(path, len(path)-1, "no such member")
			}
			out := maps.Clone(c)
			delete(out, last)
			return out, nil
		case []any:
			k, why := patchArrayIndex(last, len(c), false)
			if why != "" {
				return nil, patchNotFound(path, len(path)-1, why)
			}
			return slices.Delete(slices.Clone(c), k, k+1), nil
		}
		return nil, patchNotFound(path, len(path)-1, fmt.Sprintf("the parent is %s, not an object or array", jsonvalue.TypeName(parent)))
	})
}

func patchReplace(doc any, path []string, value any) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	return patchEdit(doc, path, 0, func(parent any, last string) (any, error) {
		switch c := parent.(type) {
		case map[string]any:
			out := maps.Clone(c)
			out[last] = value
			return out, nil
		case []any:
			k, why := patchArrayIndex(last, len(c), false)
			if why != "" {
				return nil, patchNotFound(path, len(path)-1, why)
			}
			out := slices.Clone(c)
			out[k] = value
			return out, nil
		}
		return nil, patchNotFound(path, len(path)-1, "not an object or array")
	})
}
