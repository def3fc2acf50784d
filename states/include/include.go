// Package include expands a definition's templates at parse time: the
// top-level Imports, template files with declared Parameters and {{param}}
// substitution, and Include states, each replaced by a Parallel state with
// one branch holding the template's states and a Pass state that unwraps
// the branch's output to the Include's ResultPath. The expanded definition
// is plain ASL: it parses, stores and resumes without the template files.
//
// Expand reads templates only through the Source its caller gives, so the
// caller decides what an import may reach (files relative to the
// definition on the command line, only the registry on a server).
package include

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// Source reads the templates a definition imports. The implementations
// are the caller's: the command line's (files, and the --db registry) and
// the server's (the registry only, RegistryFunc). One expansion calls it
// from one goroutine, in document order, at most once per Include state;
// a Source shared by concurrent expansions must be safe for concurrent
// use.
type Source interface {
	// Open returns the template file path names, imported by the file
	// from ("" for the definition itself), and a name that identifies the
	// file (used as from for the template's own imports, in messages and
	// to find cycles). Resolving path relative to from, and refusing
	// absolute paths or paths that escape what the caller allows, is
	// Open's.
	Open(from, path string) (definition []byte, name string, err error)
	// Registry returns the highest registered version of the workflow
	// name that satisfies constraint ("latest", "1.2.0", "^1.0.0", …),
	// and its reference "name@N" for the lock.
	Registry(ctx context.Context, name, constraint string) (definition []byte, ref string, err error)
}

// Frame is one template a problem is inside: its alias, where it came
// from, and the pointer inside it.
type Frame struct {
	// Alias is the template's alias in the Imports that named it.
	Alias string
	// Source is the file or registry reference it was read from.
	Source string
	// Pointer is the JSON Pointer inside the template.
	Pointer string
}

// Problem is one problem found expanding a definition: the pointer in the
// importing definition (the Include state, for a problem inside a
// template) and, for a problem inside a template, the chain of templates
// down to it, each with the pointer inside it.
type Problem struct {
	// Pointer is the JSON Pointer in the definition.
	Pointer string
	// Frames are the templates the problem is inside, outermost first;
	// empty for a problem in the definition itself.
	Frames []Frame
	// Msg says what is wrong.
	Msg string
}

// Error returns "/States/Review: template review (./review.json)
// /States/Ask/Prompt: msg".
func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(orRoot(p.Pointer))
	b.WriteString(": ")
	b.WriteString(p.Where())
	b.WriteString(p.Msg)
	return b.String()
}

// Where returns the templates part of the message, "template review
// (./review.json) /States/Ask/Prompt: ", or "" outside templates.
func (p Problem) Where() string {
	var b strings.Builder
	for _, f := range p.Frames {
		fmt.Fprintf(&b, "template %s (%s) %s: ", f.Alias, f.Source, orRoot(f.Pointer))
	}
	return b.String()
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// Result is an expanded definition. It is not modified after
// ExpandResult returns, and is safe for concurrent reads.
type Result struct {
	// Definition is the definition with every Include state expanded and
	// without Imports.
	Definition map[string]any
	// Lock maps each registry import, as written (registry://name@^1.0.0),
	// to the version it resolved to (name@3); nil when there is none.
	Lock map[string]string

	sites []*site
}

// A site is one expanded Include, to map pointers of the expanded
// definition back to the include site and the template.
type site struct {
	pointer  string // the Include state's pointer (the Parallel's)
	output   string // the unwrapping Pass state's pointer, "" when none
	prefix   string // what the template's state names were prefixed with
	alias    string
	source   string
	children []*site
}

// Expand expands def's Imports and Include states (see ExpandResult). It
// returns the expanded definition and the lock, or the problems found.
func Expand(ctx context.Context, def map[string]any, src Source) (expanded map[string]any, lock map[string]string, errs []Problem) {
	r, errs := ExpandResult(ctx, def, src)
	return r.Definition, r.Lock, errs
}

// ExpandResult expands def without modifying it: every Include state
// becomes a Parallel state (same name) with one branch holding the
// template's states, each renamed "Include.State", followed, unless the
// ResultPath is null or the machine is JSONata, by a Pass state
// "Include#output" that moves the branch's output out of the Parallel's
// one-element array to the ResultPath. A definition with problems still
// returns a Result, with each failed Include replaced by a Pass state
// keeping its transition, so that the rest can be validated.
func ExpandResult(ctx context.Context, def map[string]any, src Source) (*Result, []Problem) {
	e := &expander{ctx: ctx, src: src}
	out, _ := jsonvalue.Clone(def).(map[string]any)
	d := &doc{}
	d.imports = e.imports(d, out, true)
	delete(out, "Imports")
	ql, _ := out["QueryLanguage"].(string)
	r := &Result{Definition: out}
	r.sites = e.machine(d, out, "", ql)
	if len(e.lock) > 0 {
		r.Lock = e.lock
	}
	return r, e.probs
}

// Locate maps a pointer of the expanded definition back to the importing
// definition: the pointer there and, inside a template, the templates'
// frames.
func (r *Result) Locate(ptr string) (string, []Frame) {
	return locate(r.sites, ptr)
}

func locate(sites []*site, ptr string) (string, []Frame) {
	for _, s := range sites {
		if s.output != "" && under(ptr, s.output) {
			return s.pointer + ptr[len(s.output):], nil
		}
		branch := s.pointer + "/Branches/0"
		if under(ptr, branch) {
			inner, frames := locate(s.children, unprefix(ptr[len(branch):], s.prefix))
			return s.pointer, append([]Frame{{Alias: s.alias, Source: s.source, Pointer: inner}}, frames...)
		}
	}
	return ptr, nil
}

func under(ptr, prefix string) bool {
	return ptr == prefix || strings.HasPrefix(ptr, prefix+"/")
}

// unprefix removes prefix from the state names in ptr (the tokens after
// a "States" token).
func unprefix(ptr, prefix string) string {
	if ptr == "" {
		return ""
	}
	toks := strings.Split(ptr[1:], "/")
	esc := jsonvalue.EscapePointer(prefix)
	for i := 1; i < len(toks); i++ {
		if toks[i-1] == "States" {
			toks[i] = strings.TrimPrefix(toks[i], esc)
		}
	}
	return "/" + strings.Join(toks, "/")
}

// A doc is the definition or one template being expanded.
type doc struct {
	name     string // Open's name; "" for the definition
	registry bool   // read from the registry: no file imports
	chain    []string
	top      string  // the include site in the definition
	frames   []Frame // templates down to this one, the last one's Pointer unset
	imports  map[string]imported
}

type imported struct {
	ref  importRef
	text string
}

// report records a problem at ptr inside d.
func (e *expander) report(d *doc, ptr, format string, args ...any) {
	p := Problem{Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
	if len(d.frames) > 0 {
		p.Pointer = d.top
		p.Frames = slices.Clone(d.frames)
		p.Frames[len(p.Frames)-1].Pointer = ptr
	}
	e.probs = append(e.probs, p)
}

// expander is one expansion. It keeps the caller's context for the
// Source's registry look-ups, for the length of one ExpandResult call.
type expander struct {
	ctx   context.Context
	src   Source
	lock  map[string]string
	probs []Problem
	count int // Include states expanded
	// resolved are the registry imports resolved so far, by their text,
	// so that one expansion includes one version of each.
	resolved map[string]resolved
}

type resolved struct {
	data []byte
	ref  string
}

// MaxIncludes bounds the Include states one definition expands, its
// templates' included (a template included twice that includes another
// twice expands four times).
const MaxIncludes = 1000

// imports reads a document's Imports.
func (e *expander) imports(d *doc, m map[string]any, top bool) map[string]imported {
	raw, ok := m["Imports"]
	if !ok {
		return nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		e.report(d, "/Imports", "Imports must be an object of alias: path or registry://name@constraint, got %s", jsonvalue.TypeName(raw))
		return nil
	}
	out := make(map[string]imported, len(obj))
	for _, alias := range sortedKeys(obj) {
		ptr := "/Imports/" + jsonvalue.EscapePointer(alias)
		if alias == "_lock" {
			e.report(d, ptr, "_lock is not written in a definition: the registry keeps the versions a published workflow resolved to")
			continue
		}
		s, ok := obj[alias].(string)
		if !ok {
			e.report(d, ptr, "an import must be a string (a path or registry://name@constraint), got %s", jsonvalue.TypeName(obj[alias]))
			continue
		}
		ref, err := parseImport(s)
		if err != nil {
			e.report(d, ptr, "%v", err)
			continue
		}
		if !ref.registry() && d.registry {
			e.report(d, ptr, "a template read from the registry imports files: it may import only registry://name@constraint")
			continue
		}
		out[alias] = imported{ref: ref, text: s}
	}
	return out
}

// machine expands the Include states of the machine m (at ptr in d), its
// nested Parallel branches and Map processors included, in place, and
// returns the sites expanded.
func (e *expander) machine(d *doc, m map[string]any, ptr, ql string) []*site {
	if q, ok := m["QueryLanguage"].(string); ok {
		ql = q
	}
	sts, ok := m["States"].(map[string]any)
	if !ok {
		return nil
	}
	var sites []*site
	for _, name := range sortedKeys(sts) {
		st, ok := sts[name].(map[string]any)
		if !ok {
			continue
		}
		sptr := ptr + "/States/" + jsonvalue.EscapePointer(name)
		sql := ql
		if q, ok := st["QueryLanguage"].(string); ok {
			sql = q
		}
		if st["Type"] == "Include" {
			repl, s := e.include(d, st, name, sptr, sql)
			if s == nil {
				repl = map[string]any{name: failed(st)}
			} else {
				sites = append(sites, s)
			}
			delete(sts, name)
			for k, v := range repl {
				if _, dup := sts[k]; dup {
					e.report(d, sptr, "the expanded state %q has the name of another state: rename one", k)
					continue
				}
				sts[k] = v
			}
			continue
		}
		if bs, ok := st["Branches"].([]any); ok {
			for i, b := range bs {
				if bm, ok := b.(map[string]any); ok {
					sites = append(sites, e.machine(d, bm, fmt.Sprintf("%s/Branches/%d", sptr, i), sql)...)
				}
			}
		}
		for _, k := range []string{"ItemProcessor", "Iterator"} {
			if pm, ok := st[k].(map[string]any); ok {
				sites = append(sites, e.machine(d, pm, sptr+"/"+k, sql)...)
			}
		}
	}
	return sites
}

// failed is what stands for an Include that could not be expanded, so
// that the rest of the definition validates: a Pass state with its
// transition.
func failed(st map[string]any) map[string]any {
	p := map[string]any{"Type": "Pass"}
	for _, k := range []string{"Next", "End"} {
		if v, ok := st[k]; ok {
			p[k] = v
		}
	}
	if _, ok := p["Next"]; !ok {
		p["End"] = true
	}
	return p
}

// includeFields are the fields of an Include state.
var includeFields = []string{"Type", "Comment", "QueryLanguage", "Template", "Parameters", "EntryPoint", "ExitPoint", "Override", "ResultPath", "Next", "End"}

// include expands one Include state st named name at ptr in d. It returns
// the states that replace it, or a nil site when it could not.
func (e *expander) include(d *doc, st map[string]any, name, ptr, ql string) (map[string]any, *site) {
	bad := len(e.probs)
	if e.count++; e.count > MaxIncludes {
		if e.count == MaxIncludes+1 {
			e.report(d, ptr, "more than %d Include states to expand, templates' included: the definition is too large", MaxIncludes)
		}
		return nil, nil
	}
	for _, k := range sortedKeys(st) {
		if !slices.Contains(includeFields, k) {
			e.report(d, ptr+"/"+jsonvalue.EscapePointer(k), "unknown field %q in an Include state (it has %s)", k, strings.Join(includeFields[1:], ", "))
		}
	}
	alias, ok := st["Template"].(string)
	if !ok {
		e.report(d, ptr+"/Template", "an Include state needs Template, the alias of a template in Imports")
		return nil, nil
	}
	imp, ok := d.imports[alias]
	if !ok {
		e.report(d, ptr+"/Template", "template %q is not in Imports", alias)
		return nil, nil
	}
	t, tm := e.load(d, imp, alias, ptr)
	if tm == nil {
		return nil, nil
	}
	decls := e.declarations(t, tm)
	values := e.arguments(d, st, ptr, decls, alias)
	if len(e.probs) > bad {
		return nil, nil
	}
	lookup := func(n string) (any, bool, bool) {
		decl, ok := decls[n]
		if !ok {
			return nil, false, false
		}
		if v, ok := values[n]; ok {
			return v, true, true
		}
		return decl.def, true, decl.hasDef
	}
	// Override, EntryPoint and ExitPoint apply first, so that what they
	// replace or drop is not substituted, and what they bring is.
	tstates, _ := tm["States"].(map[string]any)
	start, _ := tm["StartAt"].(string)
	start = e.override(d, st, ptr, tstates, start)
	if len(e.probs) > bad {
		return nil, nil
	}
	prune(tstates, start)
	if v, ok := e.substitute(t, tstates, "/States", lookup).(map[string]any); ok {
		tstates = v
		tm["States"] = v
	}
	if len(e.probs) > bad {
		return nil, nil
	}
	tql := ql
	if q, ok := tm["QueryLanguage"].(string); ok {
		tql = q
	}
	children := e.machine(t, tm, "", tql)
	tstates, _ = tm["States"].(map[string]any)
	prefix := name + "."
	branch := map[string]any{"StartAt": prefix + start, "States": renameStates(tstates, prefix)}
	if q, ok := tm["QueryLanguage"].(string); ok {
		branch["QueryLanguage"] = q
	}
	par := map[string]any{"Type": "Parallel", "Branches": []any{branch}}
	s := &site{pointer: ptr, prefix: prefix, alias: alias, source: t.frames[len(t.frames)-1].Source, children: children}
	for _, k := range []string{"Comment", "QueryLanguage"} {
		if v, ok := st[k]; ok {
			par[k] = v
		}
	}
	out := map[string]any{name: par}
	rp, hasRP := st["ResultPath"]
	if ql == "JSONata" || (hasRP && rp == nil) {
		// A JSONata Parallel unwraps in its Output; a null ResultPath
		// keeps the input and needs no unwrapping.
		if ql == "JSONata" {
			par["Output"] = "{% $states.result[0] %}"
		}
		for _, k := range []string{"ResultPath", "Next", "End"} {
			if v, ok := st[k]; ok {
				par[k] = v
			}
		}
		return out, s
	}
	path, ok := rp.(string)
	if !hasRP {
		path, ok = "$", true
	}
	if !ok {
		e.report(d, ptr+"/ResultPath", "ResultPath must be a reference path or null, got %s", jsonvalue.TypeName(rp))
		return nil, nil
	}
	unwrap := name + "#output"
	par["ResultPath"] = path
	par["Next"] = unwrap
	pass := map[string]any{"Type": "Pass", "InputPath": path + "[0]", "ResultPath": path}
	for _, k := range []string{"Next", "End"} {
		if v, ok := st[k]; ok {
			pass[k] = v
		}
	}
	out[unwrap] = pass
	s.output = ptr[:len(ptr)-len(jsonvalue.EscapePointer(name))] + jsonvalue.EscapePointer(unwrap)
	return out, s
}

// load reads and checks the template imp (alias) an Include at ptr in d
// names, and returns its document and its decoded top level.
func (e *expander) load(d *doc, imp imported, alias, ptr string) (*doc, map[string]any) {
	var (
		data []byte
		name string
		err  error
	)
	source := imp.text
	if imp.ref.registry() {
		if r, ok := e.resolved[imp.text]; ok {
			data, name = r.data, r.ref
		} else {
			data, name, err = e.src.Registry(e.ctx, imp.ref.name, imp.ref.constraint)
		}
		if err == nil {
			if e.resolved == nil {
				e.resolved = make(map[string]resolved)
			}
			e.resolved[imp.text] = resolved{data: data, ref: name}
			if e.lock == nil {
				e.lock = make(map[string]string)
			}
			e.lock[imp.text] = name
			source = imp.text + " = " + name
		}
	} else {
		data, name, err = e.src.Open(d.name, imp.ref.path)
	}
	if err != nil {
		e.report(d, ptr+"/Template", "template %s (%s): %v", alias, imp.text, err)
		return nil, nil
	}
	chain := append(slices.Clone(d.chain), name)
	if slices.Contains(d.chain, name) || name == d.name && d.name != "" {
		e.report(d, ptr+"/Template", "import cycle: %s", strings.Join(chain, " → "))
		return nil, nil
	}
	t := &doc{name: name, registry: imp.ref.registry(), chain: chain, top: d.top}
	t.frames = slices.Clone(d.frames)
	if len(t.frames) > 0 {
		t.frames[len(t.frames)-1].Pointer = ptr
	} else {
		t.top = ptr
	}
	t.frames = append(t.frames, Frame{Alias: alias, Source: source})
	v, err := jsonvalue.Decode(data)
	if err != nil {
		e.report(t, "", "the template is not strict JSON: %v", err)
		return nil, nil
	}
	tm, ok := v.(map[string]any)
	if !ok {
		e.report(t, "", "a template must be an object with StartAt and States, got %s", jsonvalue.TypeName(v))
		return nil, nil
	}
	bad := len(e.probs)
	for _, k := range sortedKeys(tm) {
		switch k {
		case "Comment", "Parameters", "Imports", "StartAt", "States", "QueryLanguage":
		case "Module", "Exports":
			e.report(t, "/"+k, "%s", moduleMsg)
		default:
			e.report(t, "/"+jsonvalue.EscapePointer(k), "unknown field %q in a template (it has Comment, Parameters, Imports, StartAt, States and QueryLanguage)", k)
		}
	}
	if s, ok := tm["StartAt"].(string); !ok || s == "" {
		e.report(t, "/StartAt", "a template needs StartAt, the name of its first state")
	}
	if sts, ok := tm["States"].(map[string]any); !ok || len(sts) == 0 {
		e.report(t, "/States", "a template needs States, an object of at least one state")
	}
	t.imports = e.imports(t, tm, false)
	if len(e.probs) > bad {
		return nil, nil
	}
	return t, tm
}

// moduleMsg refuses the composition modules of the ASL documents.
const moduleMsg = "composition modules (Module, Exports) are not supported: include a template with an Include state, or call a workflow with a Workflow state"

// ModuleMessage is the message refusing Module and Exports, for the
// parser to give the same one.
func ModuleMessage() string { return moduleMsg }

// substitute replaces the placeholders in the string values under v (at
// ptr in t).
func (e *expander) substitute(t *doc, v any, ptr string, lookup func(string) (any, bool, bool)) any {
	switch x := v.(type) {
	case string:
		out, err := substitute(x, lookup)
		if err != nil {
			e.report(t, ptr, "%v", err)
			return x
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = e.substitute(t, el, fmt.Sprintf("%s/%d", ptr, i), lookup)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			kptr := ptr + "/" + jsonvalue.EscapePointer(k)
			if phs, err := placeholders(k); err != nil || len(phs) > 0 {
				e.report(t, kptr, "{{…}} is substituted in string values, not in keys")
			}
			out[k] = e.substitute(t, x[k], kptr, lookup)
		}
		return out
	}
	return v
}

// override applies the Include's Override, EntryPoint and ExitPoint to
// the template's states, and returns the branch's first state.
func (e *expander) override(d *doc, st map[string]any, ptr string, sts map[string]any, start string) string {
	if raw, ok := st["Override"]; ok {
		o, ok := raw.(map[string]any)
		if !ok {
			e.report(d, ptr+"/Override", "Override must be an object with States, got %s", jsonvalue.TypeName(raw))
		}
		for _, k := range sortedKeys(o) {
			if k != "States" {
				e.report(d, ptr+"/Override/"+jsonvalue.EscapePointer(k), "unknown field %q in Override (it has States)", k)
			}
		}
		if raw, ok := o["States"]; ok {
			os, ok := raw.(map[string]any)
			if !ok {
				e.report(d, ptr+"/Override/States", "Override States must be an object of state name: partial state, got %s", jsonvalue.TypeName(raw))
			}
			for _, n := range sortedKeys(os) {
				nptr := ptr + "/Override/States/" + jsonvalue.EscapePointer(n)
				target, ok := sts[n].(map[string]any)
				if !ok {
					e.report(d, nptr, "the template has no state %q to override (it has %s)", n, strings.Join(sortedKeys(sts), ", "))
					continue
				}
				part, ok := os[n].(map[string]any)
				if !ok {
					e.report(d, nptr, "an override is a partial state (an object), got %s", jsonvalue.TypeName(os[n]))
					continue
				}
				for _, f := range sortedKeys(part) {
					if part[f] == nil {
						delete(target, f)
					} else {
						target[f] = jsonvalue.Clone(part[f])
					}
				}
			}
		}
	}
	if raw, ok := st["EntryPoint"]; ok {
		n, ok := raw.(string)
		if _, exists := sts[n]; !ok || !exists {
			e.report(d, ptr+"/EntryPoint", "EntryPoint must name a state of the template (it has %s)", strings.Join(sortedKeys(sts), ", "))
		} else {
			start = n
		}
	}
	if raw, ok := st["ExitPoint"]; ok {
		n, ok := raw.(string)
		x, exists := sts[n].(map[string]any)
		switch {
		case !ok || !exists:
			e.report(d, ptr+"/ExitPoint", "ExitPoint must name a state of the template (it has %s)", strings.Join(sortedKeys(sts), ", "))
		case x["Type"] == "Choice":
			e.report(d, ptr+"/ExitPoint", "ExitPoint %q is a Choice state, which cannot end a branch", n)
		case x["Type"] != "Succeed" && x["Type"] != "Fail":
			delete(x, "Next")
			x["End"] = true
		}
	}
	return start
}

// prune removes the states not reachable from start (those before an
// EntryPoint or after an ExitPoint).
func prune(sts map[string]any, start string) {
	seen := map[string]bool{}
	queue := []string{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		st, _ := sts[n].(map[string]any)
		queue = append(queue, targets(st)...)
	}
	for n := range sts {
		if !seen[n] {
			delete(sts, n)
		}
	}
}

// targets returns the state names st may go to.
func targets(st map[string]any) []string {
	var out []string
	add := func(v any) {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	add(st["Next"])
	add(st["Default"])
	for _, k := range []string{"Choices", "Catch"} {
		if l, ok := st[k].([]any); ok {
			for _, r := range l {
				if rm, ok := r.(map[string]any); ok {
					add(rm["Next"])
				}
			}
		}
	}
	return out
}

// renameStates returns sts with every state name, and every transition,
// prefixed, nested machines included.
func renameStates(sts map[string]any, prefix string) map[string]any {
	out := make(map[string]any, len(sts))
	for n, v := range sts {
		st, ok := v.(map[string]any)
		if !ok {
			out[prefix+n] = v
			continue
		}
		for _, k := range []string{"Next", "Default"} {
			if s, ok := st[k].(string); ok {
				st[k] = prefix + s
			}
		}
		for _, k := range []string{"Choices", "Catch"} {
			if l, ok := st[k].([]any); ok {
				for _, r := range l {
					if rm, ok := r.(map[string]any); ok {
						if s, ok := rm["Next"].(string); ok {
							rm["Next"] = prefix + s
						}
					}
				}
			}
		}
		if bs, ok := st["Branches"].([]any); ok {
			for _, b := range bs {
				if bm, ok := b.(map[string]any); ok {
					renameMachine(bm, prefix)
				}
			}
		}
		for _, k := range []string{"ItemProcessor", "Iterator"} {
			if pm, ok := st[k].(map[string]any); ok {
				renameMachine(pm, prefix)
			}
		}
		out[prefix+n] = st
	}
	return out
}

func renameMachine(m map[string]any, prefix string) {
	if s, ok := m["StartAt"].(string); ok {
		m["StartAt"] = prefix + s
	}
	if sts, ok := m["States"].(map[string]any); ok {
		m["States"] = renameStates(sts, prefix)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RegistryFunc is a Source with a registry and no files, for callers that
// must not read files on a definition's say (a server): Open refuses
// every file import, and Registry calls f.
type RegistryFunc func(ctx context.Context, name, constraint string) (definition []byte, ref string, err error)

var _ Source = RegistryFunc(nil)

// ErrFileImport is what RegistryFunc's Open returns.
var ErrFileImport = errors.New("file imports are not accepted here: import a registered workflow as registry://name@constraint")

// Open refuses the file import.
func (f RegistryFunc) Open(from, path string) ([]byte, string, error) {
	return nil, "", fmt.Errorf("%q: %w", path, ErrFileImport)
}

// Registry calls f.
func (f RegistryFunc) Registry(ctx context.Context, name, constraint string) ([]byte, string, error) {
	return f(ctx, name, constraint)
}
