package states

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/jsonpath"
)

// This file reads the Memory block of a Task or Pass in its three types
// (key-value, semantic and episodic) and the query fields that semantic
// memory shares with a Context's Strategy "semantic".

// Memory types: the values of Memory.Type.
const (
	memoryKeyValue = "key_value"
	memorySemantic = "semantic"
	memoryEpisodic = "episodic"
)

// memoryTypes are the values Memory.Type accepts, the default first.
var memoryTypes = []string{memoryKeyValue, memorySemantic, memoryEpisodic}

// DefaultEventCollection is the collection episodic memory reads and
// writes when Collection is not set.
const DefaultEventCollection = "events"

// Defaults and bounds of the semantic and episodic read fields.
const (
	// DefaultMemoryTopK is a semantic Memory.Read's TopK when not set;
	// MaxTopK bounds TopK there and in a Context's Strategy "semantic".
	DefaultMemoryTopK = 5
	MaxTopK           = 100
	// DefaultMemoryLimit is an episodic Memory.Read's Limit when not set;
	// MaxMemoryLimit bounds it.
	DefaultMemoryLimit = 10
	MaxMemoryLimit     = 1000
)

// MemoryFilter is one field of an episodic Memory.Read's Filter: the
// events loaded are those whose Field equals the value given, either fixed
// ("field": value) or taken from the state's input ("field.$": path).
//
// It is immutable after Parse and safe for concurrent use.
type MemoryFilter struct {
	// Field names the field of the events compared; never empty.
	Field string
	// Expr computes the value from the effective input ("field.$", a path
	// or an intrinsic); nil for a fixed value.
	Expr *jsonpath.Expr
	// Value is the fixed value, valid when HasValue. Exactly one of Expr
	// and HasValue is set.
	Value    any
	HasValue bool
}

// memoryField is a field of Memory.Read or a memory write and the memory
// types that use it.
type memoryField struct {
	key   string
	types []string
}

// memoryReadFields are the fields of an object Memory.Read that only some
// memory types use (InjectAt serves all three).
var memoryReadFields = []memoryField{
	{"Keys", []string{memoryKeyValue}},
	{"Default", []string{memoryKeyValue}},
	{"Query", []string{memorySemantic}},
	{"Query.$", []string{memorySemantic}},
	{"Collection", []string{memorySemantic, memoryEpisodic}},
	{"TopK", []string{memorySemantic}},
	{"MinScore", []string{memorySemantic}},
	{"Filter", []string{memoryEpisodic}},
	{"Limit", []string{memoryEpisodic}},
	{"Order", []string{memoryEpisodic}},
}

// memoryWriteFields are the fields of a memory write that only some
// memory types use (Value, Value.$ and TTL serve all three).
var memoryWriteFields = []memoryField{
	{"Key", []string{memoryKeyValue, memorySemantic}},
	{"Merge", []string{memoryKeyValue}},
	{"Collection", []string{memorySemantic, memoryEpisodic}},
	{"Text", []string{memorySemantic}},
	{"Text.$", []string{memorySemantic}},
	{"Key.$", []string{memorySemantic}},
}

// misplacedMemoryFields are fields of Memory.Read or Memory.Write that a
// definition may put on the Memory block itself, with where they belong.
var misplacedMemoryFields = []struct{ key, where string }{
	{"Query", "Memory.Read"},
	{"Query.$", "Memory.Read"},
	{"Collection", "Memory.Read and each Memory.Write"},
	{"TopK", "Memory.Read"},
	{"MinScore", "Memory.Read"},
	{"Filter", "Memory.Read"},
	{"Limit", "Memory.Read"},
	{"Order", "Memory.Read"},
}

// otherTypeFields reports, and marks read, every present field of fields
// that memory of type typ does not use.
func otherTypeFields(o *object, typ string, fields []memoryField) {
	for _, f := range fields {
		if !slices.Contains(f.types, typ) && o.has(f.key) {
			o.errorf(f.key, "%s is only used with Memory.Type %s", f.key, orList(f.types))
		}
	}
}

func (p *parser) memory(o *object, key string) *MemoryConfig {
	mo, _ := o.child(key, key)
	if mo == nil {
		return nil
	}
	defer mo.done(key)
	m := &MemoryConfig{Type: memoryKeyValue}
	if mo.has("Type") {
		typ, ok := mo.enum("Type", memoryTypes, nil)
		if !ok {
			mo.skipRest()
			return nil
		}
		m.Type = typ
	}
	for _, f := range misplacedMemoryFields {
		if mo.has(f.key) {
			mo.errorf(f.key, "%s is not a field of %s; it belongs in %s", f.key, key, f.where)
		}
	}
	_, hasRead := mo.m["Read"]
	_, hasWrite := mo.m["Write"]
	if !hasRead && !hasWrite {
		mo.errorf("", "%s needs Read or Write", key)
	}
	m.Read = p.memoryRead(mo, m.Type)
	m.Write = p.memoryWrites(mo, m.Type)
	m.Namespace, m.NamespaceExpr = p.textOrExpr(mo, "Namespace")
	return m
}

// memoryRead reads Memory.Read for memory of type typ: an array of keys
// or an object (key-value), an object only (semantic, episodic).
func (p *parser) memoryRead(mo *object, typ string) *MemoryRead {
	v, ok := mo.get("Read")
	if !ok {
		return nil
	}
	r := &MemoryRead{}
	r.InjectAt, _ = jsonpath.CompileReference(DefaultInjectAt)
	if _, isArr := v.([]any); isArr {
		if typ != memoryKeyValue {
			mo.errorf("Read", "Read must be an object with Memory.Type %q (the array of keys is for key-value memory only)", typ)
			return nil
		}
		r.Keys, _ = mo.names("Read", true)
		if mo.isEmptyArray("Read") {
			mo.errorf("Read", "Read must list at least one key")
		}
		return r
	}
	what := "Read (an array of keys or an object)"
	if typ != memoryKeyValue {
		what = "Read"
	}
	ro := p.newObject(v, mo.at("Read"), mo.state, what)
	if ro == nil {
		return nil
	}
	defer ro.done("Memory.Read")
	otherTypeFields(ro, typ, memoryReadFields)
	switch typ {
	case memoryKeyValue:
		keys, present := ro.names("Keys", true)
		switch {
		case !present:
			ro.errorf("", "missing required field Keys")
		case ro.isEmptyArray("Keys"):
			ro.errorf("Keys", "Keys must list at least one key")
		}
		r.Keys = keys
		r.Default, r.HasDefault = ro.get("Default")
	case memorySemantic:
		r.Query, r.QueryExpr = p.query(ro)
		r.Collection, _ = ro.name("Collection", true)
		r.TopK = DefaultMemoryTopK
		if n, ok := ro.integer("TopK", 1, MaxTopK); ok {
			r.TopK = n
		}
		r.MinScore, r.HasMinScore = ro.number("MinScore", -1, 1)
	case memoryEpisodic:
		r.Collection = DefaultEventCollection
		if c, ok := ro.name("Collection", false); ok {
			r.Collection = c
		}
		r.Filter = p.memoryFilter(ro)
		r.Limit = DefaultMemoryLimit
		if n, ok := ro.integer("Limit", 1, MaxMemoryLimit); ok {
			r.Limit = n
		}
		r.Order = "desc"
		if s, ok := ro.enum("Order", []string{"desc", "asc"}, nil); ok {
			r.Order = s
		}
	}
	if path := p.refPath(ro, "InjectAt"); path != nil {
		r.InjectAt = path
	}
	return r
}

// query reads the query of a semantic Memory.Read or Context: exactly one
// of Query (text with placeholders) and Query.$ (a path or an intrinsic).
func (p *parser) query(o *object) (Text, *jsonpath.Expr) {
	_, hasText := o.m["Query"]
	_, hasExpr := o.m["Query.$"]
	if !hasText && !hasExpr {
		o.errorf("", "missing required field Query or Query.$")
	}
	return p.textOrExpr(o, "Query")
}

// memoryFilter reads an episodic Memory.Read's Filter: {"field": value}
// and {"field.$": path} entries, returned sorted by field.
func (p *parser) memoryFilter(ro *object) []MemoryFilter {
	fo, _ := ro.child("Filter", "Filter")
	if fo == nil {
		return nil
	}
	if len(fo.m) == 0 {
		fo.errorf("", "Filter must name at least one field")
		return nil
	}
	keyOf := make(map[string]string, len(fo.m))
	out := make([]MemoryFilter, 0, len(fo.m))
	for _, k := range sortedKeys(fo.m) {
		fo.used[k] = true
		field, isExpr := strings.CutSuffix(k, ".$")
		if field == "" {
			p.errorf(fo.at(k), fo.state, "a Filter key must name a field of the events, as %q (a fixed value) or %q (a path)", "field", "field.$")
			continue
		}
		if prev, dup := keyOf[field]; dup {
			p.errorf(fo.at(k), fo.state, "Filter has both %s and %s; keep one", prev, k)
			continue
		}
		keyOf[field] = k
		f := MemoryFilter{Field: field}
		if isExpr {
			if f.Expr = p.expr(fo, k); f.Expr == nil {
				continue
			}
		} else {
			f.Value, f.HasValue = fo.m[k], true
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b MemoryFilter) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// memoryWrites reads Memory.Write, one object or an array of them, for
// memory of type typ.
func (p *parser) memoryWrites(mo *object, typ string) []MemoryWrite {
	v, ok := mo.get("Write")
	if !ok {
		return nil
	}
	items := []any{v}
	ptrs := []string{mo.at("Write")}
	if arr, isArr := v.([]any); isArr {
		if len(arr) == 0 {
			mo.errorf("Write", "Write must not be an empty array")
		}
		items, ptrs = arr, make([]string, len(arr))
		for i := range arr {
			ptrs[i] = fmt.Sprintf("%s/%d", mo.at("Write"), i)
		}
	}
	out := make([]MemoryWrite, 0, len(items))
	for i, item := range items {
		wo := p.newObject(item, ptrs[i], mo.state, "a memory write")
		if wo == nil {
			continue
		}
		out = append(out, p.memoryWrite(wo, typ))
		wo.done("a memory write")
	}
	return out
}

// memoryWrite reads one memory write for memory of type typ.
func (p *parser) memoryWrite(wo *object, typ string) MemoryWrite {
	w := MemoryWrite{}
	otherTypeFields(wo, typ, memoryWriteFields)
	wo.exclusive("Value", "Value.$")
	w.Value, w.HasValue = wo.get("Value")
	w.ValueExpr = p.expr(wo, "Value.$")
	w.TTL, _ = wo.ttl("TTL")
	switch typ {
	case memoryKeyValue:
		w.Key, _ = wo.name("Key", true)
		w.Merge, _ = wo.boolean("Merge")
	case memorySemantic:
		wo.exclusive("Key", "Key.$")
		w.Key, _ = wo.name("Key", false)
		w.KeyExpr = p.expr(wo, "Key.$")
		w.Collection, _ = wo.name("Collection", true)
		w.Text, w.TextExpr = p.textOrExpr(wo, "Text")
	case memoryEpisodic:
		w.Collection = DefaultEventCollection
		if c, ok := wo.name("Collection", false); ok {
			w.Collection = c
		}
	}
	wo.unsupported("a memory write", "Overwrite")
	return w
}

// contextQuery reads the fields of a Context's Strategy "semantic" (Query
// or Query.$, Candidates, TopK) into c, or refuses them with another
// strategy.
func (p *parser) contextQuery(co *object, c *ContextConfig) {
	fields := []string{"Query", "Query.$", "Candidates", "TopK"}
	if c.Strategy != "semantic" {
		for _, k := range fields {
			if co.has(k) {
				co.errorf(k, `%s is only used with Strategy "semantic"`, k)
			}
		}
		return
	}
	c.Query, c.QueryExpr = p.query(co)
	_, hasCandidates := co.m["Candidates"]
	c.Candidates = p.paths(co, "Candidates")
	switch {
	case !hasCandidates:
		co.errorf("", "missing required field Candidates")
	case co.isEmptyArray("Candidates"):
		co.errorf("Candidates", "Candidates must list at least one path")
	}
	if _, ok := co.m["TopK"]; !ok {
		co.errorf("", "missing required field TopK")
	}
	c.TopK, _ = co.integer("TopK", 1, MaxTopK)
}
