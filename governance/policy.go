package governance

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Policy is a compiled WritePolicy: Allow and Deny patterns and Deny rules
// written in expr-lang. It is immutable and safe for concurrent use. A nil
// *Policy allows every write.
type Policy struct {
	// allow is nil when the policy has no Allow list; an empty non-nil
	// list allows nothing.
	allow []pattern
	deny  []pattern
	rules []rule
	// uses says which variables of the rule environment some rule reads,
	// so that Check converts only those.
	uses uses
}

type pattern struct {
	src  string
	segs []segment
}

type rule struct {
	src    string
	reason string
	prog   *vm.Program
	uses   uses
}

// uses is a set of the rule variables that need converting for expr.
type uses struct{ value, old, doc, prev bool }

func (u uses) or(o uses) uses {
	return uses{u.value || o.value, u.old || o.old, u.doc || o.doc, u.prev || o.prev}
}

// ruleEnv is the environment a rule runs in.
type ruleEnv struct {
	Path  string `expr:"path"`
	Op    string `expr:"op"`
	Value any    `expr:"value"`
	Old   any    `expr:"old"`
	State string `expr:"state"`
	Doc   any    `expr:"doc"`
	Prev  any    `expr:"prev"`
	// Meter is the budget of the evaluation, for the calls that
	// compileRule adds (see budget.go); a rule cannot name it.
	Meter *meter `expr:"$meter"`
}

// outsideBuiltins are the expr built-in functions that reach outside the
// documents (the clock, the time zone database); rules cannot call them.
var outsideBuiltins = [...]string{"now", "date", "timezone"}

// limitError is a rule that compiles but that the evaluation budget could
// not bound (see ruleLimits).
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// compileRule compiles the expression of a Deny rule, with the meter's
// calls added (see budget.go). The error is a *limitError when the rule
// is refused for what the budget could not bound.
func compileRule(src string) (*vm.Program, uses, error) {
	opts := []expr.Option{expr.Env(ruleEnv{}), expr.AsBool(), expr.MaxNodes(maxRuleNodes)}
	for _, name := range outsideBuiltins {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	for name, f := range meterFuncs {
		opts = append(opts, meterFunc(name, f))
	}
	if err := ruleLimits(src); err != nil {
		return nil, uses{}, err
	}
	prog, err := expr.Compile(src, append(opts, expr.Patch(meterPatcher{}))...)
	if err != nil {
		return nil, uses{}, err
	}
	var u usesVisitor
	node := prog.Node()
	ast.Walk(&node, &u)
	return prog, u.uses, nil
}

type usesVisitor struct{ uses }

func (u *usesVisitor) Visit(node *ast.Node) {
	id, ok := (*node).(*ast.IdentifierNode)
	if !ok {
		return
	}
	switch id.Value {
	case "value":
		u.value = true
	case "old":
		u.old = true
	case "doc":
		u.doc = true
	case "prev":
		u.prev = true
	case "$env":
		u.uses = uses{true, true, true, true}
	}
}

// exprMessage returns the message of an expr error in one line.
func exprMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := fe.Message
		if fe.Column > 0 || fe.Line > 1 {
			msg += fmt.Sprintf(" (at line %d, column %d)", fe.Line, fe.Column+1)
		}
		return oneLine(msg)
	}
	return oneLine(err.Error())
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// Check checks the writes from prev to proposed, made by the state named
// state, against the policy alone. It returns nil when every write is
// allowed; otherwise the first denial, by path: Governance.WriteDenied, or
// Governance.InvalidJSON when a written value is not a JSON value.
//
// A pattern matches a written path or any of its ancestors ("*" one object
// key, "[*]" one array index); Deny wins over Allow; with an Allow list,
// every write it does not match is denied. A write of a whole object or
// array also writes every value inside it: Deny and Allow apply to each of
// them, and each Rule is evaluated on the write and then on every value
// inside, so a rule about $.payment.amount also sees $.payment = {"amount":
// 5000} being added.
//
// Writes are taken in path order; for each, Deny, then Allow, then the
// Rules in order; the first denial is returned. A rule that returns true
// denies the write; a rule that fails at run time or does not return a
// boolean denies it too (fail closed), with a reason that says so.
//
// A rule is an expr-lang expression over path (the written path, like
// $.payment.amount), op ("add", "replace" or "remove"), value (the proposed
// value, nil when removed), old (the previous value, nil when added), state
// (the state's name), doc (the proposed document) and prev (the previous
// document). Numbers are plain Go numbers: int64 when the value is an
// integer that fits, else float64 (±Inf beyond its range); objects and
// arrays are map[string]any and []any. The built-ins that reach outside the
// documents (now, date, timezone) are not available. A rule that reads doc
// or prev has them converted once per Check, which costs a walk of each.
//
// Rules are bounded: CompilePolicy and Compile refuse a rule with more
// than 1000 syntax nodes, a range whose bounds are not integer constants
// or that holds more than 1000 integers, closures (all, any, map, filter,
// reduce, …) nested more than 3 deep, repeat, or a matches whose pattern
// is not a string constant; and each evaluation is metered (see
// BudgetError). A rule that overruns RuleBudget, or whose evaluations in
// one Check overrun CheckBudget together, denies the write with a
// violation whose Err is a *BudgetError.
func (p *Policy) Check(prev, proposed any, state string) *Violation {
	if p.empty() {
		return nil
	}
	prev, proposed = expanded(prev), expanded(proposed)
	d := differ{check: true}
	d.diff(prev, proposed)
	if d.bad != nil {
		return d.bad.violation()
	}
	d.sort()
	return p.check(d.writes, prev, proposed, state)
}

func (p *Policy) empty() bool {
	return p == nil || (p.allow == nil && len(p.deny) == 0 && len(p.rules) == 0)
}

// policyRun is one Check: the environment shared by its rules, with the
// documents converted for expr at most once.
type policyRun struct {
	p        *Policy
	env      ruleEnv
	machine  vm.VM
	meter    meter
	prev     any
	proposed any
	haveDoc  bool
	havePrev bool
	pathBuf  []byte
}

func (p *Policy) check(writes []write, prev, proposed any, state string) *Violation {
	if p.empty() {
		return nil
	}
	r := policyRun{p: p, prev: prev, proposed: proposed}
	r.env.State = state
	r.meter.total = CheckBudget
	r.env.Meter = &r.meter
	// The VM's own count of the arrays it builds is a backstop: the meter
	// charges at least as much for each of them.
	r.machine.MemoryBudget = 4 * RuleBudget
	for i := range writes {
		if v := r.write(&writes[i]); v != nil {
			return v
		}
	}
	return nil
}

func (r *policyRun) write(w *write) *Violation {
	p := r.p
	if p.allow != nil || len(p.deny) > 0 {
		if v := r.patterns(w); v != nil {
			return v
		}
	}
	if len(p.rules) == 0 {
		return nil
	}
	// Old and new converted for expr once, only when a rule reads them;
	// the values inside are taken from these conversions.
	var oldX, newX any
	if p.uses.old {
		oldX = toExpr(w.old, len(w.path))
	}
	if p.uses.value {
		newX = toExpr(w.new, len(w.path))
	}
	if v := r.rules(w.path, w.op, w.old, w.new, oldX, newX); v != nil {
		return v
	}
	// Every value inside a container that is written as a whole.
	path := slices.Clip(w.path)
	if v := r.inner(path, OpRemove, w.old, oldX); v != nil {
		return v
	}
	return r.inner(path, OpAdd, w.new, newX)
}

// inner evaluates the rules on every value strictly inside v (x is v
// converted for expr, or nil), in document order (keys sorted).
func (r *policyRun) inner(path []segment, op string, v, x any) *Violation {
	if len(path) > jsonvalue.MaxDepth {
		return nil
	}
	visit := func(sub []segment, item, itemX any) *Violation {
		var viol *Violation
		if op == OpAdd {
			viol = r.rules(sub, op, nil, item, nil, itemX)
		} else {
			viol = r.rules(sub, op, item, nil, itemX, nil)
		}
		if viol == nil {
			viol = r.inner(sub[:len(sub):len(sub)], op, item, itemX)
		}
		return viol
	}
	switch c := v.(type) {
	case map[string]any:
		cx, _ := x.(map[string]any)
		for _, k := range sortedKeys(c) {
			if viol := visit(append(path, keySeg(k)), c[k], cx[k]); viol != nil {
				return viol
			}
		}
	case []any:
		cx, _ := x.([]any)
		for i, item := range c {
			var itemX any
			if i < len(cx) {
				itemX = cx[i]
			}
			if viol := visit(append(path, indexSeg(i)), item, itemX); viol != nil {
				return viol
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isContainer reports whether v is a non-empty object or array, whose
// values are written with it.
func isContainer(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return false
}

// patterns checks Deny and Allow on the paths a write touches: its own
// path when it replaces or removes a value that is not a non-empty
// container or puts one there, and every value inside the containers it
// adds or removes.
func (r *policyRun) patterns(w *write) *Violation {
	oldLeaf := w.op != OpAdd && !isContainer(w.old)
	newLeaf := w.op != OpRemove && !isContainer(w.new)
	if oldLeaf || newLeaf {
		if v := r.leaf(w.path, w.op, w.old, w.new); v != nil {
			return v
		}
	}
	path := slices.Clip(w.path)
	if w.op != OpAdd && !oldLeaf {
		if v := r.leaves(path, OpRemove, w.old); v != nil {
			return v
		}
	}
	if w.op != OpRemove && !newLeaf {
		return r.leaves(path, OpAdd, w.new)
	}
	return nil
}

// leaves checks the patterns on every value inside v that is not a
// non-empty container (in document order).
func (r *policyRun) leaves(path []segment, op string, v any) *Violation {
	if len(path) > jsonvalue.MaxDepth {
		return nil
	}
	visit := func(sub []segment, item any) *Violation {
		if isContainer(item) {
			return r.leaves(sub[:len(sub):len(sub)], op, item)
		}
		if op == OpAdd {
			return r.leaf(sub, op, nil, item)
		}
		return r.leaf(sub, op, item, nil)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if viol := visit(append(path, keySeg(k)), x[k]); viol != nil {
				return viol
			}
		}
	case []any:
		for i, item := range x {
			if viol := visit(append(path, indexSeg(i)), item); viol != nil {
				return viol
			}
		}
	}
	return nil
}

// covers reports whether the pattern matches path or one of its ancestors.
func (pt *pattern) covers(path []segment) bool {
	if len(pt.segs) > len(path) {
		return false
	}
	for i, s := range pt.segs {
		if !s.matches(path[i]) {
			return false
		}
	}
	return true
}

func (r *policyRun) leaf(path []segment, op string, old, new any) *Violation {
	for i := range r.p.deny {
		if d := &r.p.deny[i]; d.covers(path) {
			where := formatPath(path)
			return violation(ErrWriteDenied, Detail{
				Rule: "WritePolicy.Deny[" + strconv.Itoa(i) + "]", Path: where, Old: old, New: new,
				Reason: "write to " + where + " denied by WritePolicy.Deny " + strconv.Quote(d.src),
			})
		}
	}
	if r.p.allow == nil {
		return nil
	}
	for i := range r.p.allow {
		if r.p.allow[i].covers(path) {
			return nil
		}
	}
	where := formatPath(path)
	reason := "write to " + where + " denied: WritePolicy.Allow does not match it"
	if len(r.p.allow) == 0 {
		reason = "write to " + where + " denied: WritePolicy.Allow is empty, so nothing may be written"
	}
	return violation(ErrWriteDenied, Detail{Rule: "WritePolicy.Allow", Path: where, Old: old, New: new, Reason: reason})
}

// rules runs every rule on one write: old and new are the values, oldX
// and newX the same converted for expr (nil when no rule reads them).
func (r *policyRun) rules(path []segment, op string, old, new, oldX, newX any) *Violation {
	p := r.p
	r.pathBuf = appendPath(r.pathBuf[:0], path)
	r.env.Path = string(r.pathBuf)
	r.env.Op = op
	r.env.Value, r.env.Old = newX, oldX
	if p.uses.doc && !r.haveDoc {
		r.env.Doc, r.haveDoc = toExpr(r.proposed, 0), true
	}
	if p.uses.prev && !r.havePrev {
		r.env.Prev, r.havePrev = toExpr(r.prev, 0), true
	}
	for i := range p.rules {
		ru := &p.rules[i]
		r.meter.left = RuleBudget
		out, err := r.machine.Run(ru.prog, &r.env)
		name := "WritePolicy.Rules[" + strconv.Itoa(i) + "]"
		var reason string
		switch b, isBool := out.(bool); {
		case r.meter.over != 0:
			be := &BudgetError{Rule: name, Path: r.env.Path, Budget: r.meter.over}
			v := violation(ErrWriteDenied, Detail{Rule: name, Path: r.env.Path, Old: old, New: new,
				Reason: "write to " + r.env.Path + " denied: " + name + " overran " + budgetName(be.Budget) + ", and a rule that cannot finish denies"})
			v.Err = be
			return v
		case err != nil:
			reason = "write to " + r.env.Path + " denied: " + name + " failed, and a rule that fails denies: " + exprMessage(err)
		case !isBool:
			reason = "write to " + r.env.Path + " denied: " + name + " returned " + typeOf(out) + ", not a boolean, and such a rule denies"
		case !b:
			continue
		case ru.reason != "":
			reason = "write to " + r.env.Path + " denied: " + ru.reason
		default:
			reason = "write to " + r.env.Path + " denied by " + name + " " + strconv.Quote(ru.src)
		}
		return violation(ErrWriteDenied, Detail{Rule: name, Path: r.env.Path, Old: old, New: new, Reason: reason})
	}
	return nil
}

func typeOf(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}

// toExpr converts a document value into the plain Go values expr works
// with: json.Number becomes int64 when it is an integer that fits, else
// float64 (±Inf beyond float64's range); objects and arrays are copied.
func toExpr(v any, depth int) any {
	switch x := v.(type) {
	case json.Number:
		if i, ok := jsonvalue.Int64(x); ok {
			return i
		}
		if f, ok := jsonvalue.Float64(x); ok {
			return f
		}
		if strings.HasPrefix(string(x), "-") {
			return math.Inf(-1)
		}
		return math.Inf(1)
	case map[string]any:
		if depth > jsonvalue.MaxDepth {
			return nil
		}
		m := make(map[string]any, len(x))
		for k, item := range x {
			m[k] = toExpr(item, depth+1)
		}
		return m
	case []any:
		if depth > jsonvalue.MaxDepth {
			return nil
		}
		a := make([]any, len(x))
		for i, item := range x {
			a[i] = toExpr(item, depth+1)
		}
		return a
	}
	return v
}
