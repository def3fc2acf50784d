package jsonata

import (
	"context"
	"math"
	"reflect"
	"slices"
	"sort"

	"github.com/blues/jsonata-go/jparse"
)

// The evaluator walks the syntax tree the library's parser (jparse) makes.
// Values inside it are:
//
//   - nil: undefined (no value at all);
//   - null (a nil *any): JSON null;
//   - float64, string, bool, []any, map[string]any: the JSON values;
//   - a function: *lambda, *native, *partial, *chain, *transform,
//     *regex, *match.
//
// A sequence (the result of a path step) is a []any inside one node's
// evaluation and leaves it as nothing (no items), its item (one item) or
// an array. Every value an evaluation builds is new; the values it reads
// (the input, the variables) are shared and never modified.

// frame is a scope of variables: a block, a function's parameters, or the
// root (the variables the expression reads, and "$" for the input).
type frame struct {
	parent *frame
	vars   map[string]any
}

func (f *frame) bind(name string, v any) {
	if f.vars == nil {
		f.vars = map[string]any{}
	}
	f.vars[name] = v
}

// lookup finds a variable in the frames, else a built-in function.
func (f *frame) lookup(name string) any {
	for s := f; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	if b, ok := stepFunctions[name]; ok {
		return b
	}
	if b, ok := builtins[name]; ok {
		return b
	}
	return nil
}

// eval evaluates node n with input in (the context item, "$") in scope
// env.
func (r *run) eval(ctx context.Context, n jparse.Node, in any, env *frame) (any, error) {
	if err := r.tick(ctx, 1); err != nil {
		return nil, err
	}
	if r.depth >= maxDepth {
		return nil, throw("U1001: Stack overflow error: the expression nests deeper than %d levels", maxDepth)
	}
	r.depth++
	v, err := r.evalNode(ctx, n, in, env)
	r.depth--
	return v, err
}

func (r *run) evalNode(ctx context.Context, n jparse.Node, in any, env *frame) (any, error) {
	switch n := n.(type) {
	case *jparse.StringNode:
		return n.Value, nil
	case *jparse.NumberNode:
		return n.Value, nil
	case *jparse.BooleanNode:
		return n.Value, nil
	case *jparse.NullNode:
		return null, nil
	case *jparse.RegexNode:
		return &regex{re: n.Value}, nil
	case *jparse.VariableNode:
		if n.Name == "" {
			return in, nil
		}
		return env.lookup(n.Name), nil
	case *jparse.NameNode:
		return r.name(ctx, n.Value, in)
	case *jparse.PathNode:
		return r.path(ctx, n, in, env)
	case *jparse.NegationNode:
		v, err := r.eval(ctx, n.RHS, in, env)
		if err != nil || v == nil {
			return nil, err
		}
		f, ok := v.(float64)
		if !ok {
			return nil, throw("D1002: Cannot negate a non-numeric value: %s", describe(v))
		}
		return -f, nil
	case *jparse.RangeNode:
		return r.rangeOf(ctx, n, in, env)
	case *jparse.ArrayNode:
		return r.array(ctx, n, in, env)
	case *jparse.ObjectNode:
		return r.object(ctx, n, in, env)
	case *jparse.BlockNode:
		env = &frame{parent: env}
		var v any
		for _, e := range n.Exprs {
			var err error
			if v, err = r.eval(ctx, e, in, env); err != nil {
				return nil, err
			}
		}
		return v, nil
	case *jparse.ConditionalNode:
		v, err := r.eval(ctx, n.If, in, env)
		if err != nil {
			return nil, err
		}
		cond, err := r.truthy(ctx, v)
		if err != nil {
			return nil, err
		}
		if cond {
			return r.eval(ctx, n.Then, in, env)
		}
		if n.Else != nil {
			return r.eval(ctx, n.Else, in, env)
		}
		return nil, nil
	case *jparse.AssignmentNode:
		v, err := r.eval(ctx, n.Value, in, env)
		if err != nil {
			return nil, err
		}
		env.bind(n.Name, v)
		return v, nil
	case *jparse.WildcardNode:
		var seq []any
		err := r.children(ctx, in, func(v any) error {
			if arr, ok := v.([]any); ok {
				return r.flatten(ctx, &seq, arr)
			}
			if v != nil {
				seq = append(seq, v)
				return r.allocItems(1)
			}
			return nil
		})
		return collapse(seq, false), err
	case *jparse.DescendentNode:
		var seq []any
		err := r.descendants(ctx, &seq, in)
		return collapse(seq, false), err
	case *jparse.GroupNode:
		v, err := r.eval(ctx, n.Expr, in, env)
		if err != nil {
			return nil, err
		}
		return r.object(ctx, n.ObjectNode, v, env)
	case *jparse.PredicateNode:
		return r.predicate(ctx, n, in, env)
	case *jparse.SortNode:
		return r.sort(ctx, n, in, env)
	case *jparse.LambdaNode:
		return &lambda{node: n, env: env, context: in}, nil
	case *jparse.TypedLambdaNode:
		return &lambda{node: n.LambdaNode, params: n.In, typed: true, env: env, context: in}, nil
	case *jparse.ObjectTransformationNode:
		return &transform{node: n, env: env}, nil
	case *jparse.PartialNode:
		v, err := r.eval(ctx, n.Func, in, env)
		if err != nil {
			return nil, err
		}
		f, ok := v.(function)
		if !ok {
			return nil, throw("T1007: Attempted to partially apply a non-function")
		}
		return &partial{fn: f, args: n.Args, env: env, context: in}, nil
	case *jparse.FunctionCallNode:
		return r.call(ctx, n.Func, n.Args, in, env)
	case *jparse.FunctionApplicationNode:
		if c, ok := n.RHS.(*jparse.FunctionCallNode); ok {
			// lhs ~> $f(args) is $f(lhs, args).
			return r.call(ctx, c.Func, append([]jparse.Node{n.LHS}, c.Args...), in, env)
		}
		lhs, err := r.eval(ctx, n.LHS, in, env)
		if err != nil {
			return nil, err
		}
		rhs, err := r.eval(ctx, n.RHS, in, env)
		if err != nil {
			return nil, err
		}
		f, ok := rhs.(function)
		if !ok {
			return nil, throw("T2006: The right side of the function application operator ~> must be a function")
		}
		if g, ok := lhs.(function); ok {
			return &chain{fns: []function{g, f}}, nil
		}
		return f.call(ctx, r, in, []any{lhs})
	case *jparse.NumericOperatorNode:
		return r.numeric(ctx, n, in, env)
	case *jparse.ComparisonOperatorNode:
		return r.compare(ctx, n, in, env)
	case *jparse.BooleanOperatorNode:
		lhs, err := r.eval(ctx, n.LHS, in, env)
		if err != nil {
			return nil, err
		}
		l, err := r.truthy(ctx, lhs)
		if err != nil {
			return nil, err
		}
		if n.Type == jparse.BooleanAnd && !l || n.Type == jparse.BooleanOr && l {
			return l, nil
		}
		rhs, err := r.eval(ctx, n.RHS, in, env)
		if err != nil {
			return nil, err
		}
		return r.truthy(ctx, rhs)
	case *jparse.StringConcatenationNode:
		lhs, err := r.eval(ctx, n.LHS, in, env)
		if err != nil {
			return nil, err
		}
		rhs, err := r.eval(ctx, n.RHS, in, env)
		if err != nil {
			return nil, err
		}
		var s [2]string
		for i, v := range []any{lhs, rhs} {
			if v == nil {
				continue
			}
			if s[i], err = r.stringify(ctx, v); err != nil {
				return nil, err
			}
		}
		if err := r.allocString(len(s[0]) + len(s[1])); err != nil {
			return nil, err
		}
		return s[0] + s[1], nil
	}
	return nil, throw("the expression holds a construct this evaluator does not know (%T)", n)
}

// collapse ends a sequence: no items is undefined, one item is that item
// (unless keep, for a path ending in "[]"), more is an array.
func collapse(seq []any, keep bool) any {
	switch {
	case len(seq) == 0:
		return nil
	case len(seq) == 1 && !keep:
		return seq[0]
	}
	return seq
}

// arrayOf is v as an array: an array is itself, undefined none, anything
// else an array of one.
func arrayOf(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case nil:
		return nil
	}
	return []any{v}
}

// name reads field name of an object, or of every object of an array.
func (r *run) name(ctx context.Context, name string, in any) (any, error) {
	switch t := in.(type) {
	case map[string]any:
		return t[name], nil
	case []any:
		var seq []any
		if err := r.names(ctx, &seq, name, t); err != nil {
			return nil, err
		}
		return collapse(seq, false), nil
	}
	return nil, nil
}

func (r *run) names(ctx context.Context, seq *[]any, name string, arr []any) error {
	if r.depth >= maxDepth {
		return throw("U1001: Stack overflow error: the data nests deeper than %d levels", maxDepth)
	}
	r.depth++
	defer func() { r.depth-- }()
	for _, e := range arr {
		if err := r.tick(ctx, 1); err != nil {
			return err
		}
		switch t := e.(type) {
		case map[string]any:
			if v, ok := t[name]; ok && v != nil {
				*seq = append(*seq, v)
				if err := r.allocItems(1); err != nil {
					return err
				}
			}
		case []any:
			if err := r.names(ctx, seq, name, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// path evaluates a path: each step on every item the step before gave.
func (r *run) path(ctx context.Context, n *jparse.PathNode, in any, env *frame) (any, error) {
	if len(n.Steps) == 0 {
		return nil, nil
	}
	first := n.Steps[0]
	isVar := false
	switch s := first.(type) {
	case *jparse.VariableNode:
		isVar = true
	case *jparse.PredicateNode:
		_, isVar = s.Expr.(*jparse.VariableNode)
	}
	items, isArr := in.([]any)
	if isVar || !isArr {
		items = []any{in}
	}
	last := len(n.Steps) - 1
	for i, step := range n.Steps {
		var (
			seq []any
			raw any // an array the last step gave whole
			err error
		)
		if c, ok := step.(*jparse.ArrayNode); ok && i == 0 {
			var v any
			if v, err = r.array(ctx, c, items, env); err == nil {
				seq = v.([]any)
			}
		} else {
			seq, raw, err = r.step(ctx, step, items, env, i == last)
		}
		if err != nil {
			return nil, err
		}
		if raw != nil {
			return raw, nil
		}
		if len(seq) == 0 {
			return nil, nil
		}
		items = seq
	}
	return collapse(items, n.KeepArrays), nil
}

// step evaluates one step of a path on each of items and flattens the
// arrays the step gives (not those an array constructor step makes). The
// last step, giving one array, gives it whole (raw), as it is in the data.
func (r *run) step(ctx context.Context, step jparse.Node, items []any, env *frame, last bool) (seq []any, raw any, err error) {
	results := make([]any, 0, len(items))
	if err := r.allocItems(len(items)); err != nil {
		return nil, nil, err
	}
	for _, item := range items {
		v, err := r.eval(ctx, step, item, env)
		if err != nil {
			return nil, nil, err
		}
		if v != nil {
			results = append(results, v)
		}
	}
	if last && len(results) == 1 {
		if arr, ok := results[0].([]any); ok {
			return nil, arr, nil
		}
	}
	_, isCons := step.(*jparse.ArrayNode)
	seq = make([]any, 0, len(results))
	for _, v := range results {
		arr, ok := v.([]any)
		if isCons || !ok {
			seq = append(seq, v)
			continue
		}
		if err := r.allocItems(len(arr)); err != nil {
			return nil, nil, err
		}
		for _, e := range arr {
			if e != nil {
				seq = append(seq, e)
			}
		}
	}
	if err := r.tick(ctx, int64(len(seq))); err != nil {
		return nil, nil, err
	}
	return seq, nil, nil
}

// children calls f on each value of an object, or each item of an array.
func (r *run) children(ctx context.Context, v any, f func(any) error) error {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			if err := f(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if err := r.tick(ctx, 1); err != nil {
				return err
			}
			if err := f(t[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// flatten appends the items of arr to seq, the items of nested arrays
// included.
func (r *run) flatten(ctx context.Context, seq *[]any, arr []any) error {
	if r.depth >= maxDepth {
		return throw("U1001: Stack overflow error: the data nests deeper than %d levels", maxDepth)
	}
	r.depth++
	defer func() { r.depth-- }()
	for _, e := range arr {
		if err := r.tick(ctx, 1); err != nil {
			return err
		}
		if a, ok := e.([]any); ok {
			if err := r.flatten(ctx, seq, a); err != nil {
				return err
			}
			continue
		}
		if e != nil {
			*seq = append(*seq, e)
			if err := r.allocItems(1); err != nil {
				return err
			}
		}
	}
	return nil
}

// descendants appends v and every value under it (arrays are walked, not
// kept).
func (r *run) descendants(ctx context.Context, seq *[]any, v any) error {
	if err := r.tick(ctx, 1); err != nil {
		return err
	}
	if r.depth >= maxDepth {
		return throw("U1001: Stack overflow error: the data nests deeper than %d levels", maxDepth)
	}
	if _, isArr := v.([]any); !isArr && v != nil {
		*seq = append(*seq, v)
		if err := r.allocItems(1); err != nil {
			return err
		}
	}
	r.depth++
	defer func() { r.depth-- }()
	return r.children(ctx, v, func(c any) error { return r.descendants(ctx, seq, c) })
}

// rangeOf is [lhs..rhs]: the integers from lhs to rhs.
func (r *run) rangeOf(ctx context.Context, n *jparse.RangeNode, in any, env *frame) (any, error) {
	lhs, err := r.eval(ctx, n.LHS, in, env)
	if err != nil {
		return nil, err
	}
	rhs, err := r.eval(ctx, n.RHS, in, env)
	if err != nil {
		return nil, err
	}
	lo, lok := lhs.(float64)
	if lhs != nil && (!lok || lo != math.Trunc(lo)) {
		return nil, throw("T2003: The left side of the range operator (..) must evaluate to an integer")
	}
	hi, hok := rhs.(float64)
	if rhs != nil && (!hok || hi != math.Trunc(hi)) {
		return nil, throw("T2004: The right side of the range operator (..) must evaluate to an integer")
	}
	if lhs == nil || rhs == nil || lo > hi {
		return nil, nil
	}
	if hi-lo >= maxRangeItems {
		return nil, throw("D2014: The size of the sequence allocated by the range operator (..) must not exceed 1e7.  Attempted to allocate %s.", FormatNumber(hi-lo+1))
	}
	size := int(hi-lo) + 1
	if err := r.allocItems(size); err != nil {
		return nil, err
	}
	out := make([]any, size)
	for i := range out {
		if i%checkEvery == 0 {
			if err := r.tick(ctx, int64(min(checkEvery, size-i))); err != nil {
				return nil, err
			}
		}
		out[i] = lo + float64(i)
	}
	return out, nil
}

// array is an array constructor: the values of its items, the arrays
// among them flattened unless written as arrays themselves.
func (r *run) array(ctx context.Context, n *jparse.ArrayNode, in any, env *frame) (any, error) {
	out := make([]any, 0, len(n.Items))
	if err := r.allocItems(len(n.Items)); err != nil {
		return nil, err
	}
	for _, item := range n.Items {
		v, err := r.eval(ctx, item, in, env)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		arr, isArr := v.([]any)
		if _, cons := item.(*jparse.ArrayNode); cons || !isArr {
			out = append(out, v)
			continue
		}
		if err := r.allocItems(len(arr)); err != nil {
			return nil, err
		}
		for _, e := range arr {
			if e != nil {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// object is an object constructor (or the grouping of in by it): each
// pair's key is evaluated on every item of in, and its value on the items
// that gave that key.
func (r *run) object(ctx context.Context, n *jparse.ObjectNode, in any, env *frame) (any, error) {
	items, ok := in.([]any)
	if !ok {
		items = []any{in}
	}
	type group struct {
		pair  int
		items []any
		all   bool
	}
	groups := map[string]*group{}
	var order []string
	for i, pair := range n.Pairs {
		if s, ok := pair[0].(*jparse.StringNode); ok {
			if _, dup := groups[s.Value]; dup {
				return nil, throw("D1009: Multiple key definitions evaluate to same key: %s", s.Value)
			}
			groups[s.Value] = &group{pair: i, all: true}
			order = append(order, s.Value)
			continue
		}
		for _, item := range items {
			k, err := r.eval(ctx, pair[0], item, env)
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				if k == nil {
					continue
				}
				return nil, throw("T1003: Key in object structure must evaluate to a string; got: %s", describe(k))
			}
			g, seen := groups[key]
			if !seen {
				g = &group{pair: i}
				groups[key] = g
				order = append(order, key)
			} else if g.pair != i {
				return nil, throw("D1009: Multiple key definitions evaluate to same key: %s", key)
			}
			g.items = append(g.items, item)
			if err := r.allocItems(1); err != nil {
				return nil, err
			}
		}
	}
	if err := r.allocObject(len(order)); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(order))
	for _, key := range order {
		g := groups[key]
		var context any
		switch {
		case g.all:
			context = in
			if len(items) == 1 {
				context = items[0]
			}
		case len(g.items) == 1:
			context = g.items[0]
		default:
			context = g.items
		}
		v, err := r.eval(ctx, n.Pairs[g.pair][1], context, env)
		if err != nil {
			return nil, err
		}
		if v != nil {
			if err := r.allocString(len(key)); err != nil {
				return nil, err
			}
			out[key] = v
		}
	}
	return out, nil
}

// predicate filters the items of an expression: a number (or numbers)
// picks items by position (negative from the end), anything else keeps
// the items for which it is true.
func (r *run) predicate(ctx context.Context, n *jparse.PredicateNode, in any, env *frame) (any, error) {
	v, err := r.eval(ctx, n.Expr, in, env)
	if err != nil || v == nil {
		return nil, err
	}
	items := arrayOf(v)
	for _, filter := range n.Filters {
		kept := []any{}
		for i, item := range items {
			res, err := r.eval(ctx, filter, item, env)
			if err != nil {
				return nil, err
			}
			if f, ok := res.(float64); ok {
				res = []any{f}
			}
			if idx, ok := numbers(res); ok {
				if err := r.tick(ctx, int64(len(idx))); err != nil {
					return nil, err
				}
				for _, x := range idx {
					j := int(math.Floor(x))
					if j < 0 {
						j += len(items)
					}
					if j == i {
						kept = append(kept, item)
					}
				}
			} else if keep, err := r.truthy(ctx, res); err != nil {
				return nil, err
			} else if keep {
				kept = append(kept, item)
			}
		}
		if err := r.allocItems(len(kept)); err != nil {
			return nil, err
		}
		if len(kept) == 0 {
			return nil, nil
		}
		items = kept
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return items, nil
}

// numbers returns the numbers of an array made only of numbers.
func numbers(v any) ([]float64, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]float64, len(arr))
	for i, e := range arr {
		f, ok := e.(float64)
		if !ok {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

// sort is expr^(terms): the items ordered by each term in turn, stable.
func (r *run) sort(ctx context.Context, n *jparse.SortNode, in any, env *frame) (any, error) {
	v, err := r.eval(ctx, n.Expr, in, env)
	if err != nil || v == nil {
		return nil, err
	}
	items := arrayOf(v)
	keys := make([][]any, len(items))
	isNum := make([]bool, len(n.Terms))
	isStr := make([]bool, len(n.Terms))
	if err := r.allocItems(len(items) * (len(n.Terms) + 2)); err != nil {
		return nil, err
	}
	for i, item := range items {
		keys[i] = make([]any, len(n.Terms))
		for j, term := range n.Terms {
			k, err := r.eval(ctx, term.Expr, item, env)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case nil:
				continue
			case float64:
				isNum[j] = true
			case string:
				isStr[j] = true
			default:
				return nil, throw("T2008: The expressions within an order-by clause must evaluate to numeric or string values")
			}
			if isNum[j] && isStr[j] {
				return nil, throw("T2007: Type mismatch when comparing values in order-by clause")
			}
			keys[i][j] = k
		}
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		for t, term := range n.Terms {
			x, y := keys[order[a]][t], keys[order[b]][t]
			switch {
			case x == nil && y == nil:
				continue
			case x == nil:
				return false
			case y == nil:
				return true
			case x == y:
				continue
			}
			if term.Dir == jparse.SortDescending {
				return less(y, x)
			}
			return less(x, y)
		}
		return false
	})
	if err := r.tick(ctx, int64(len(items))); err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, j := range order {
		out[i] = items[j]
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// less orders two numbers or two strings.
func less(x, y any) bool {
	if a, ok := x.(float64); ok {
		b, _ := y.(float64)
		return a < b
	}
	a, _ := x.(string)
	b, _ := y.(string)
	return a < b
}

// numeric evaluates + - * / %.
func (r *run) numeric(ctx context.Context, n *jparse.NumericOperatorNode, in any, env *frame) (any, error) {
	lhs, err := r.eval(ctx, n.LHS, in, env)
	if err != nil {
		return nil, err
	}
	rhs, err := r.eval(ctx, n.RHS, in, env)
	if err != nil {
		return nil, err
	}
	a, aok := lhs.(float64)
	if lhs != nil && !aok {
		return nil, throw("T2001: The left side of the %s operator must evaluate to a number", n.Type)
	}
	b, bok := rhs.(float64)
	if rhs != nil && !bok {
		return nil, throw("T2002: The right side of the %s operator must evaluate to a number", n.Type)
	}
	if lhs == nil || rhs == nil {
		return nil, nil
	}
	var x float64
	switch n.Type {
	case jparse.NumericAdd:
		x = a + b
	case jparse.NumericSubtract:
		x = a - b
	case jparse.NumericMultiply:
		x = a * b
	case jparse.NumericDivide:
		x = a / b
	case jparse.NumericModulo:
		x = math.Mod(a, b)
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil, throw("D1001: Number out of range: %s", formatNumberOrNaN(x))
	}
	return x, nil
}

// formatNumberOrNaN spells x as FormatNumber does, and the values that are
// not finite as JavaScript does.
func formatNumberOrNaN(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return FormatNumber(x)
}

// compare evaluates = != < <= > >= in.
func (r *run) compare(ctx context.Context, n *jparse.ComparisonOperatorNode, in any, env *frame) (any, error) {
	lhs, err := r.eval(ctx, n.LHS, in, env)
	if err != nil {
		return nil, err
	}
	rhs, err := r.eval(ctx, n.RHS, in, env)
	if err != nil {
		return nil, err
	}
	switch n.Type {
	case jparse.ComparisonEqual, jparse.ComparisonNotEqual:
		if lhs == nil || rhs == nil {
			return false, nil
		}
		eq, err := r.equal(ctx, lhs, rhs)
		return eq == (n.Type == jparse.ComparisonEqual), err
	case jparse.ComparisonIn:
		if lhs == nil || rhs == nil {
			return false, nil
		}
		for _, e := range arrayOf(rhs) {
			if eq, err := r.equal(ctx, lhs, e); eq || err != nil {
				return eq, err
			}
		}
		return false, nil
	}
	comparable := func(v any) bool {
		switch v.(type) {
		case nil, float64, string:
			return true
		}
		return false
	}
	if !comparable(lhs) || !comparable(rhs) {
		return nil, throw("T2010: The expressions either side of operator %s must evaluate to numeric or string values", n.Type)
	}
	if lhs == nil || rhs == nil {
		return false, nil
	}
	if reflect.TypeOf(lhs) != reflect.TypeOf(rhs) {
		return nil, throw("T2009: The values either side of operator %s must be of the same data type", n.Type)
	}
	switch n.Type {
	case jparse.ComparisonLess:
		return less(lhs, rhs), nil
	case jparse.ComparisonLessEqual:
		return less(lhs, rhs) || lhs == rhs, nil
	case jparse.ComparisonGreater:
		return less(rhs, lhs), nil
	default: // ComparisonGreaterEqual
		return less(rhs, lhs) || lhs == rhs, nil
	}
}

// equal compares two values, JSON values by value and functions by
// identity, counting a step for each value it compares. Values nested
// deeper than maxDepth are not equal.
func (r *run) equal(ctx context.Context, x, y any) (bool, error) {
	var n int64
	eq := equalAt(x, y, 0, &n)
	return eq, r.tick(ctx, n)
}

func equalAt(x, y any, depth int, n *int64) bool {
	*n++
	if depth > maxDepth {
		return false
	}
	switch a := x.(type) {
	case float64, string, bool:
		return x == y
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalAt(a[i], b[i], depth+1, n) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := y.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !equalAt(v, w, depth+1, n) {
				return false
			}
		}
		return true
	case *any:
		b, ok := y.(*any)
		return ok && a == nil && b == nil
	}
	return x == y
}

// truthy is JSONata's boolean value of v (false for arrays nested deeper
// than maxDepth). It counts a step for each value it reads.
func (r *run) truthy(ctx context.Context, v any) (bool, error) {
	var n int64
	b := truthyAt(v, 0, &n)
	return b, r.tick(ctx, n)
}

func truthyAt(v any, depth int, n *int64) bool {
	*n++
	switch t := v.(type) {
	case bool:
		return t
	case string:
		return t != ""
	case float64:
		return t != 0
	case []any:
		if depth > maxDepth {
			return false
		}
		for _, e := range t {
			if truthyAt(e, depth+1, n) {
				return true
			}
		}
		return false
	case map[string]any:
		return len(t) > 0
	}
	return false
}

// sortedKeys returns the keys of an object in order: the evaluation of
// an object's values is the same on every run.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
