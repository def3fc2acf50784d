// Package workflowdiff compares two versions of a workflow definition:
// the states added, removed and changed (with the JSON Pointers of the
// changed fields and their values before and after), the top-level fields
// changed, and the transitions added and removed.
package workflowdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/api"
)

// Diff compares the definitions from and to (JSON objects with States).
// Its answer's Name, From and To are left for the caller; its lists are
// never nil. A definition that is not a JSON object is an error naming
// which.
func Diff(from, to []byte) (api.WorkflowDiff, error) {
	a, err := decode("from", from)
	if err != nil {
		return api.WorkflowDiff{}, err
	}
	b, err := decode("to", to)
	if err != nil {
		return api.WorkflowDiff{}, err
	}
	d := api.WorkflowDiff{Added: []string{}, Removed: []string{}, Changed: []api.StateChange{}, Fields: []api.FieldChange{},
		AddedEdges: []api.Edge{}, RemovedEdges: []api.Edge{}}
	sa, sb := statesOf(a), statesOf(b)
	for _, name := range slices.Sorted(maps.Keys(sb)) {
		if _, ok := sa[name]; !ok {
			d.Added = append(d.Added, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sa)) {
		bs, ok := sb[name]
		if !ok {
			d.Removed = append(d.Removed, name)
			continue
		}
		var changes []api.FieldChange
		compare("/States/"+escape(name), sa[name], bs, &changes)
		if len(changes) > 0 {
			d.Changed = append(d.Changed, api.StateChange{State: name, Changes: changes})
		}
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	delete(keys, "States")
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		compare("/"+escape(k), field(a, k), field(b, k), &d.Fields)
	}
	ea, eb := edgesOf(sa), edgesOf(sb)
	for _, e := range eb {
		if !slices.Contains(ea, e) {
			d.AddedEdges = append(d.AddedEdges, e)
		}
	}
	for _, e := range ea {
		if !slices.Contains(eb, e) {
			d.RemovedEdges = append(d.RemovedEdges, e)
		}
	}
	return d, nil
}

// absent marks a field one side does not have.
type absent struct{}

func field(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent{}
}

func decode(which string, def []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(def))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("diff: the %s definition is not a JSON object: %v", which, err)
	}
	return m, nil
}

func statesOf(def map[string]any) map[string]any {
	s, _ := def["States"].(map[string]any)
	if s == nil {
		return map[string]any{}
	}
	return s
}

// compare appends the changes from a to b under pointer p: objects field
// by field, arrays of the same length item by item, anything else whole.
func compare(p string, a, b any, out *[]api.FieldChange) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			keys := map[string]bool{}
			for k := range av {
				keys[k] = true
			}
			for k := range bv {
				keys[k] = true
			}
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				compare(p+"/"+escape(k), field(av, k), field(bv, k), out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok && len(av) == len(bv) {
			for i := range av {
				compare(p+"/"+strconv.Itoa(i), av[i], bv[i], out)
			}
			return
		}
	}
	ja, jb := text(a), text(b)
	if bytes.Equal(ja, jb) {
		return
	}
	*out = append(*out, api.FieldChange{Pointer: p, Before: ja, After: jb})
}

// text is v as compact JSON; nil when absent.
func text(v any) json.RawMessage {
	if _, ok := v.(absent); ok {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// escape escapes a JSON Pointer reference token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// edgesOf returns the transitions between top-level states, in order of
// their source's name.
func edgesOf(states map[string]any) []api.Edge {
	var out []api.Edge
	add := func(from string, v any, kind string) {
		if to, ok := v.(string); ok && to != "" {
			e := api.Edge{From: from, To: to, Kind: kind}
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(states)) {
		st, _ := states[name].(map[string]any)
		add(name, st["Next"], "next")
		add(name, st["Default"], "default")
		for _, list := range []string{"Choices", "Catch"} {
			kind := "choice"
			if list == "Catch" {
				kind = "catch"
			}
			items, _ := st[list].([]any)
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					add(name, m["Next"], kind)
				}
			}
		}
	}
	return out
}
