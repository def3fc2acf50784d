package governance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Mode is what the engine does when governance refuses a state's writes.
type Mode uint8

// The modes of OnViolation.
const (
	// FailFast raises the violation as the state's error (the default).
	FailFast Mode = iota
	// RetryOnce runs the state once more and raises the violation if it
	// stands.
	RetryOnce
	// SkipNode drops the state's writes and goes on with its input.
	SkipNode
)

var modeNames = [...]string{FailFast: "FAIL_FAST", RetryOnce: "RETRY_ONCE", SkipNode: "SKIP_NODE"}

// String returns the mode as OnViolation spells it, like "FAIL_FAST".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Rules is a compiled Governance block: the guard (a JSON Schema and
// transition rules), the workflow's write policy and OnViolation. It is
// immutable and safe for concurrent use. A nil *Rules checks nothing.
type Rules struct {
	schema *jsonschema.Schema
	trans  transitions
	policy *Policy
	mode   Mode
}

// Policy returns the workflow's write policy, or nil when the block has
// none.
func (r *Rules) Policy() *Policy {
	if r == nil {
		return nil
	}
	return r.policy
}

// OnViolation returns what the engine does on a violation (FailFast when
// the block does not say).
func (r *Rules) OnViolation() Mode {
	if r == nil {
		return FailFast
	}
	return r.mode
}

// HasGuard reports whether the block has a schema or at least one
// transition rule.
func (r *Rules) HasGuard() bool {
	return r != nil && (r.schema != nil || !r.trans.empty())
}

// CheckDocument checks doc against the schema alone: the execution input
// when it starts, or the document a rollback or a fork starts from. It
// returns nil when there is no schema or doc matches it; a document that
// holds a value outside the JSON model is Governance.InvalidJSON.
func (r *Rules) CheckDocument(doc any) *Violation {
	if r == nil || r.schema == nil {
		return nil
	}
	doc = expanded(doc)
	var bad *badValue
	checkValue(doc, nil, true, &bad)
	if bad != nil {
		return bad.violation()
	}
	return validateSchema(r.schema, doc)
}

// Check checks the transition from prev to proposed made by the state
// named state, in this order: the parts of proposed that differ from prev
// must be JSON values (Governance.InvalidJSON); proposed must match the
// schema (Governance.SchemaViolation, listing every problem); the
// transition rules, immutable, then monotonic, then ordered enums, then
// keyed arrays (Governance.TransitionViolation); then the workflow's write
// policy (Governance.WriteDenied, see Policy.Check). It returns the first
// failure, or nil when everything passes. The written set is computed once.
//
// A state's own WritePolicy is checked apart, with its Policy's Check: both
// must allow the writes.
func (r *Rules) Check(prev, proposed any, state string) *Violation {
	if r == nil || (r.schema == nil && r.trans.empty() && r.policy.empty()) {
		return nil
	}
	prev, proposed = expanded(prev), expanded(proposed)
	d := differ{check: true, bigNumbers: r.schema != nil}
	d.diff(prev, proposed)
	if d.bad != nil {
		return d.bad.violation()
	}
	if r.schema != nil {
		if v := validateSchema(r.schema, proposed); v != nil {
			return v
		}
	}
	if v := r.trans.check(prev, proposed); v != nil {
		return v
	}
	if r.policy.empty() {
		return nil
	}
	d.sort()
	return r.policy.check(d.writes, prev, proposed, state)
}

// Compile compiles a definition's Governance block, the decoded object
//
//	{"Guard": {"Schema": …, "Transitions": {…}}, "WritePolicy": {…}, "OnViolation": "…"}
//
// (every member optional). The schema is JSON Schema 2020-12 (a $schema
// naming another dialect is refused) and must be self-contained: it is
// never loaded from anywhere, nor does it load anything. Rule paths are
// $-rooted paths of names and indexes; patterns may also use "*" (one
// object key) and "[*]" (one array index). The error, when the block does
// not compile, is Problems listing every problem with its JSON Pointer
// inside the block.
func Compile(v any) (*Rules, error) {
	c := &compiler{}
	r := &Rules{}
	m, ok := c.object(v, "", "Governance")
	if ok {
		c.fields(m, "", "Governance", "Guard", "WritePolicy", "OnViolation")
		if g, ok := m["Guard"]; ok {
			c.guard(g, "/Guard", r)
		}
		if wp, ok := m["WritePolicy"]; ok {
			r.policy = c.policy(wp, "/WritePolicy")
		}
		if ov, ok := m["OnViolation"]; ok {
			r.mode = c.mode(ov, "/OnViolation")
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return r, nil
}

// CompilePolicy compiles a WritePolicy block alone (a state's own policy):
// {"Allow": [patterns], "Deny": [patterns], "Rules": [{"Deny": "<expr>",
// "Reason": "…"}]}. Problems point inside the block.
func CompilePolicy(v any) (*Policy, error) {
	c := &compiler{}
	p := c.policy(v, "")
	if err := c.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// compiler collects the problems of a block.
type compiler struct {
	problems Problems
}

func (c *compiler) add(ptr, format string, args ...any) {
	c.problems = append(c.problems, &Problem{Pointer: ptr, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	slices.SortStableFunc(c.problems, func(a, b *Problem) int { return comparePointers(a.Pointer, b.Pointer) })
	return c.problems
}

// comparePointers orders JSON Pointers token by token, array indexes by
// value, so that /a/2 comes before /a/10 and /a before /a/0.
func comparePointers(a, b string) int {
	at, bt := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(at) && i < len(bt); i++ {
		x, errX := strconv.Atoi(at[i])
		y, errY := strconv.Atoi(bt[i])
		switch {
		case errX == nil && errY == nil && x != y:
			return x - y
		case errX != nil || errY != nil:
			if c := strings.Compare(at[i], bt[i]); c != 0 {
				return c
			}
		}
	}
	return len(at) - len(bt)
}

func join(ptr, tok string) string { return ptr + "/" + jsonvalue.EscapePointer(tok) }

func (c *compiler) object(v any, ptr, name string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(ptr, "%s must be an object, not %s", name, jsonvalue.TypeName(v))
	}
	return m, ok
}

// fields reports the members of m that are not among known.
func (c *compiler) fields(m map[string]any, ptr, name string, known ...string) {
	for k := range m {
		if !slices.Contains(known, k) {
			c.add(join(ptr, k), "unknown field %q in %s (known: %s)", k, name, strings.Join(known, ", "))
		}
	}
}

func (c *compiler) guard(v any, ptr string, r *Rules) {
	m, ok := c.object(v, ptr, "Guard")
	if !ok {
		return
	}
	c.fields(m, ptr, "Guard", "Schema", "Transitions")
	if s, ok := m["Schema"]; ok {
		r.schema = c.schema(s, ptr+"/Schema")
	}
	if t, ok := m["Transitions"]; ok {
		r.trans = c.transitions(t, ptr+"/Transitions")
	}
}

func (c *compiler) transitions(v any, ptr string) transitions {
	var t transitions
	m, ok := c.object(v, ptr, "Transitions")
	if !ok {
		return t
	}
	c.fields(m, ptr, "Transitions", "ImmutablePaths", "MonotonicIntegerPaths", "OrderedEnumPaths", "KeyedObjectArrayPaths")
	if l, ok := m["ImmutablePaths"]; ok {
		t.immutable = c.pathList(l, ptr+"/ImmutablePaths", "ImmutablePaths")
	}
	if l, ok := m["MonotonicIntegerPaths"]; ok {
		t.monotonic = c.pathList(l, ptr+"/MonotonicIntegerPaths", "MonotonicIntegerPaths")
	}
	if o, ok := m["OrderedEnumPaths"]; ok {
		t.enums = c.enums(o, ptr+"/OrderedEnumPaths")
	}
	if o, ok := m["KeyedObjectArrayPaths"]; ok {
		t.keyed = c.keyed(o, ptr+"/KeyedObjectArrayPaths")
	}
	return t
}

// rulePath parses the path of a rule; name says which, for messages.
func (c *compiler) rulePath(src, ptr, name string) (rulePath, bool) {
	segs, msg := parsePath(src, false)
	if msg != "" {
		c.add(ptr, "%s %q is not a path of names and indexes rooted at $: %s", name, src, msg)
		return rulePath{}, false
	}
	return rulePath{segs: segs, text: formatPath(segs)}, true
}

func (c *compiler) pathList(v any, ptr, name string) []rulePath {
	l, ok := v.([]any)
	if !ok {
		c.add(ptr, "%s must be an array of paths, not %s", name, jsonvalue.TypeName(v))
		return nil
	}
	out := make([]rulePath, 0, len(l))
	for i, item := range l {
		iptr := ptr + "/" + strconv.Itoa(i)
		iname := name + "[" + strconv.Itoa(i) + "]"
		s, ok := item.(string)
		if !ok {
			c.add(iptr, "%s must be a path string, not %s", iname, jsonvalue.TypeName(item))
			continue
		}
		rp, ok := c.rulePath(s, iptr, iname)
		if !ok {
			continue
		}
		if j := slices.IndexFunc(out, func(o rulePath) bool { return o.text == rp.text }); j >= 0 {
			c.add(iptr, "%s %q repeats a path already listed", iname, s)
			continue
		}
		out = append(out, rp)
	}
	return out
}

func (c *compiler) enums(v any, ptr string) []enumRule {
	m, ok := c.object(v, ptr, "OrderedEnumPaths")
	if !ok {
		return nil
	}
	var out []enumRule
	for _, src := range sortedKeys(m) {
		eptr := join(ptr, src)
		name := "OrderedEnumPaths " + strconv.Quote(src)
		rp, okPath := c.rulePath(src, eptr, "OrderedEnumPaths")
		l, ok := m[src].([]any)
		if !ok {
			c.add(eptr, "%s must be an array of the values in their order, not %s", name, jsonvalue.TypeName(m[src]))
			continue
		}
		if len(l) < 2 {
			c.add(eptr, "%s must list at least two values, not %d", name, len(l))
			continue
		}
		dup := false
		for i, item := range l {
			if j := slices.IndexFunc(l[:i], func(o any) bool { return jsonvalue.Equal(o, item) }); j >= 0 {
				c.add(eptr+"/"+strconv.Itoa(i), "%s lists %s twice (at %d and %d)", name, show(item), j, i)
				dup = true
			}
		}
		if okPath && !dup {
			out = append(out, enumRule{rulePath: rp, values: jsonvalue.Clone(l).([]any)})
		}
	}
	return out
}

func (c *compiler) keyed(v any, ptr string) []keyedRule {
	m, ok := c.object(v, ptr, "KeyedObjectArrayPaths")
	if !ok {
		return nil
	}
	var out []keyedRule
	for _, src := range sortedKeys(m) {
		kptr := join(ptr, src)
		name := "KeyedObjectArrayPaths " + strconv.Quote(src)
		rp, okPath := c.rulePath(src, kptr, "KeyedObjectArrayPaths")
		cfg, ok := c.object(m[src], kptr, name)
		if !ok {
			continue
		}
		c.fields(cfg, kptr, name, "Key", "MonotonicBooleanFields", "AllowNewItems")
		k := keyedRule{rulePath: rp, allowNew: true}
		good := okPath
		switch key, ok := cfg["Key"]; {
		case !ok:
			c.add(kptr, "%s needs a Key (the field that names each item)", name)
			good = false
		default:
			s, isStr := key.(string)
			if !isStr || s == "" {
				c.add(kptr+"/Key", "%s: Key must be a non-empty string, not %s", name, show(key))
				good = false
			}
			k.key = s
		}
		if l, ok := cfg["MonotonicBooleanFields"]; ok {
			fields, isArr := l.([]any)
			if !isArr {
				c.add(kptr+"/MonotonicBooleanFields", "%s: MonotonicBooleanFields must be an array of field names, not %s", name, jsonvalue.TypeName(l))
				good = false
			}
			for i, f := range fields {
				fptr := kptr + "/MonotonicBooleanFields/" + strconv.Itoa(i)
				s, isStr := f.(string)
				switch {
				case !isStr || s == "":
					c.add(fptr, "%s: MonotonicBooleanFields[%d] must be a non-empty field name, not %s", name, i, show(f))
					good = false
				case s == k.key:
					c.add(fptr, "%s: MonotonicBooleanFields[%d] %q is the Key, which never changes", name, i, s)
					good = false
				case slices.Contains(k.monotonic, s):
					c.add(fptr, "%s: MonotonicBooleanFields[%d] %q is listed twice", name, i, s)
					good = false
				default:
					k.monotonic = append(k.monotonic, s)
				}
			}
		}
		if a, ok := cfg["AllowNewItems"]; ok {
			b, isBool := a.(bool)
			if !isBool {
				c.add(kptr+"/AllowNewItems", "%s: AllowNewItems must be a boolean, not %s", name, jsonvalue.TypeName(a))
				good = false
			}
			k.allowNew = b
		}
		if good {
			out = append(out, k)
		}
	}
	return out
}

// policy compiles a WritePolicy block found at ptr.
func (c *compiler) policy(v any, ptr string) *Policy {
	m, ok := c.object(v, ptr, "WritePolicy")
	if !ok {
		return nil
	}
	c.fields(m, ptr, "WritePolicy", "Allow", "Deny", "Rules")
	p := &Policy{}
	if l, ok := m["Allow"]; ok {
		p.allow = c.patterns(l, ptr+"/Allow", "Allow")
		if p.allow == nil {
			p.allow = []pattern{}
		}
	}
	if l, ok := m["Deny"]; ok {
		p.deny = c.patterns(l, ptr+"/Deny", "Deny")
	}
	if l, ok := m["Rules"]; ok {
		p.rules = c.rules(l, ptr+"/Rules")
	}
	for _, r := range p.rules {
		p.uses = p.uses.or(r.uses)
	}
	return p
}

func (c *compiler) patterns(v any, ptr, name string) []pattern {
	l, ok := v.([]any)
	if !ok {
		c.add(ptr, "%s must be an array of path patterns, not %s", name, jsonvalue.TypeName(v))
		return nil
	}
	var out []pattern
	for i, item := range l {
		iptr := ptr + "/" + strconv.Itoa(i)
		iname := name + "[" + strconv.Itoa(i) + "]"
		s, ok := item.(string)
		if !ok {
			c.add(iptr, "%s must be a path pattern string, not %s", iname, jsonvalue.TypeName(item))
			continue
		}
		segs, msg := parsePath(s, true)
		if msg != "" {
			c.add(iptr, "%s %q is not a pattern of names, indexes, * and [*] rooted at $: %s", iname, s, msg)
			continue
		}
		out = append(out, pattern{src: s, segs: segs})
	}
	return out
}

func (c *compiler) rules(v any, ptr string) []rule {
	l, ok := v.([]any)
	if !ok {
		c.add(ptr, "Rules must be an array of rules, not %s", jsonvalue.TypeName(v))
		return nil
	}
	var out []rule
	for i, item := range l {
		rptr := ptr + "/" + strconv.Itoa(i)
		name := "Rules[" + strconv.Itoa(i) + "]"
		m, ok := c.object(item, rptr, name)
		if !ok {
			continue
		}
		c.fields(m, rptr, name, "Deny", "Reason")
		var r rule
		good := true
		if reason, ok := m["Reason"]; ok {
			s, isStr := reason.(string)
			if !isStr {
				c.add(rptr+"/Reason", "%s: Reason must be a string, not %s", name, jsonvalue.TypeName(reason))
				good = false
			}
			r.reason = oneLine(s)
		}
		src, ok := m["Deny"]
		if !ok {
			c.add(rptr, "%s needs Deny, an expression that is true for a write to deny", name)
			continue
		}
		s, isStr := src.(string)
		if !isStr || strings.TrimSpace(s) == "" {
			c.add(rptr+"/Deny", "%s: Deny must be an expression string, not %s", name, show(src))
			continue
		}
		prog, u, err := compileRule(s)
		var limit *limitError
		switch {
		case errors.As(err, &limit):
			c.add(rptr+"/Deny", "%s: Deny %q is refused, because its cost could not be bounded: %s", name, s, limit.msg)
			continue
		case err != nil:
			c.add(rptr+"/Deny", "%s: Deny %q does not compile as a boolean expr expression: %s", name, s, exprMessage(err))
			continue
		}
		r.src, r.prog, r.uses = s, prog, u
		if good {
			out = append(out, r)
		}
	}
	return out
}

func (c *compiler) mode(v any, ptr string) Mode {
	s, _ := v.(string)
	for m, name := range modeNames {
		if s == name {
			return Mode(m)
		}
	}
	c.add(ptr, `OnViolation must be "FAIL_FAST", "RETRY_ONCE" or "SKIP_NODE", not %s`, show(v))
	return FailFast
}
