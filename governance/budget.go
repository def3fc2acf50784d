package governance

import (
	"fmt"
	"reflect"
	"regexp/syntax"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm/runtime"
)

// Rules run at the engine's commit point on every write, so each
// evaluation must end soon whatever the rule says. expr-lang's VM cannot
// be interrupted, so the rule language is cut down at compile time to what
// a budget can bound, and every evaluation is metered:
//
//   - at compile time a rule may have at most maxRuleNodes syntax nodes,
//     its ranges a..b must have integer constant bounds and hold at most
//     maxRangeSize integers, closures (all, any, map, filter, reduce, …)
//     nest at most maxClosureDepth deep, the pattern of matches is a string
//     constant, and repeat is not available;
//   - at run time each operation whose cost grows with the size of its
//     values is charged, in cost units, before or as it runs: a closure
//     charges the length of its collection times the size of its body, a
//     string + the length of the result, replace and join the length of
//     theirs before building it, every array, object or string that a
//     builtin or a literal builds its size (one unit per value and per
//     byte, counted no further than the budget), matches the length of its
//     input times the size of its pattern, and, inside a closure,
//     comparisons and builtins the size of their operands. An evaluation
//     may spend RuleBudget units, and all the evaluations of one Check
//     together CheckBudget.
//
// A unit is about a step of the VM or a byte, so an evaluation that
// spends all of RuleBudget ends within about a tenth of a second and holds
// some tens of MiB at most, and a Check that spends CheckBudget within
// about a second, whatever the rules.

// The budgets of rule evaluation, in cost units (see BudgetError).
const (
	// RuleBudget is the cost one evaluation of a rule, on one write, may
	// spend.
	RuleBudget = 1 << 20
	// CheckBudget is the cost all the rule evaluations of one Check may
	// spend together.
	CheckBudget = 1 << 22
)

// The limits a rule must keep to compile.
const (
	maxRuleNodes    = 1000
	maxRangeSize    = 1000
	maxClosureDepth = 3
	// maxSizeDepth is the deepest nesting the size of a value is counted
	// through; a value nested deeper is over budget.
	maxSizeDepth = 10000
)

// BudgetError is a rule that overran its evaluation budget: the Err of the
// Governance.WriteDenied violation that Check returns then (a rule that
// cannot finish denies, like one that fails).
type BudgetError struct {
	// Rule names the rule, like "WritePolicy.Rules[1]".
	Rule string
	// Path is the written path it was evaluated on.
	Path string
	// Budget is the budget it overran: RuleBudget, or CheckBudget when the
	// evaluations of the Check had spent it together.
	Budget int
}

// Error says which rule overran which budget.
func (e *BudgetError) Error() string {
	return e.Rule + " overran " + budgetName(e.Budget) + " on " + e.Path
}

func budgetName(budget int) string {
	if budget == CheckBudget {
		return "the evaluation budget of one write check (" + strconv.Itoa(CheckBudget) + " cost units for all rule evaluations)"
	}
	return "its evaluation budget (" + strconv.Itoa(RuleBudget) + " cost units)"
}

// errOverBudget is returned by the meter functions to stop the VM; Check
// reports the overrun from the meter itself.
var errOverBudget = fmt.Errorf("evaluation budget exceeded")

// meter counts the cost of rule evaluations.
type meter struct {
	left  int // what the current evaluation may still spend
	total int // what the Check may still spend
	over  int // the budget overrun, or 0
}

func (m *meter) charge(n int) error {
	switch {
	case m.over != 0:
		return errOverBudget
	case n > m.left || n < 0:
		m.over = RuleBudget
		return errOverBudget
	case n > m.total:
		m.over = CheckBudget
		return errOverBudget
	}
	m.left -= n
	m.total -= n
	return nil
}

// chargeTimes charges n*k units without overflowing.
func (m *meter) chargeTimes(n, k int) error {
	if k < 1 {
		k = 1
	}
	if n > RuleBudget/k+1 {
		return m.charge(RuleBudget + 1)
	}
	return m.charge(n * k)
}

// meterFuncs are the functions that meterPatcher adds calls to. Each
// takes the meter (the rule environment's $meter) first, charges it, and
// returns its argument or the value it computes. A rule cannot name them
// nor $meter itself (see ruleLimits).
var meterFuncs = map[string]func(m *meter, args []any) (any, error){
	// MeterIter(x, k) charges for a closure over x whose body costs k.
	"MeterIter": func(m *meter, args []any) (any, error) {
		return args[0], m.chargeTimes(length(args[0]), intArg(args[1]))
	},
	// MeterSize(x, k) charges k units per unit of the size of x.
	"MeterSize": func(m *meter, args []any) (any, error) {
		return args[0], m.chargeTimes(sizeOf(args[0], m.left+1), intArg(args[1]))
	},
	// MeterBuilt(x) charges for a value a builtin or a literal has built.
	"MeterBuilt": func(m *meter, args []any) (any, error) {
		return args[0], m.charge(sizeOf(args[0], m.left+1))
	},
	// MeterAdd(a, b) is a + b, charging the length of a string it builds.
	"MeterAdd": func(m *meter, args []any) (any, error) {
		if s, ok := args[0].(string); ok {
			if t, ok := args[1].(string); ok {
				if err := m.charge(len(s) + len(t)); err != nil {
					return nil, err
				}
				return s + t, nil
			}
		}
		return runtime.Add(args[0], args[1]), nil
	},
	"MeterReplace": meterReplace,
	"MeterJoin":    meterJoin,
}

// meterFunc adapts a meter function to expr's functions. Only
// meterPatcher writes calls of them, with the right arguments.
func meterFunc(name string, f func(m *meter, args []any) (any, error)) expr.Option {
	return expr.Function(name, func(args ...any) (any, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("%s: no meter", name)
		}
		m, ok := args[0].(*meter)
		if !ok || m == nil {
			return nil, fmt.Errorf("%s: no meter", name)
		}
		return f(m, args[1:])
	})
}

func intArg(v any) int {
	k, _ := v.(int)
	return k
}

// meterReplace is the replace builtin, charging for its result before
// building it.
func meterReplace(m *meter, args []any) (any, error) {
	if len(args) != 3 && len(args) != 4 {
		return nil, fmt.Errorf("invalid number of arguments for replace (expected 3 or 4, got %d)", len(args))
	}
	var str [3]string
	for i := range str {
		s, ok := args[i].(string)
		if !ok {
			return nil, fmt.Errorf("invalid argument %d for replace (type %s, want string)", i+1, typeOf(args[i]))
		}
		str[i] = s
	}
	s, old, new := str[0], str[1], str[2]
	if err := m.charge(len(s)); err != nil {
		return nil, err
	}
	n := strings.Count(s, old)
	if len(args) == 4 {
		if limit := runtime.ToInt(args[3]); limit >= 0 && limit < n {
			n = limit
		}
	}
	if grow := len(new) - len(old); grow > 0 {
		if err := m.chargeTimes(n, grow); err != nil {
			return nil, err
		}
	}
	if err := m.charge(len(s)); err != nil {
		return nil, err
	}
	return strings.Replace(s, old, new, n), nil
}

// meterJoin is the join builtin, charging for its result before building
// it.
func meterJoin(m *meter, args []any) (any, error) {
	if len(args) != 1 && len(args) != 2 {
		return nil, fmt.Errorf("invalid number of arguments for join (expected 1 or 2, got %d)", len(args))
	}
	glue := ""
	if len(args) == 2 {
		s, ok := args[1].(string)
		if !ok {
			return nil, fmt.Errorf("invalid argument for join (type %s, want string)", typeOf(args[1]))
		}
		glue = s
	}
	var items []string
	switch l := args[0].(type) {
	case []string:
		items = l
	case []any:
		items = make([]string, len(l))
		for i, item := range l {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("invalid argument for join (item %d is %s, not a string)", i, typeOf(item))
			}
			items[i] = s
		}
	default:
		return nil, fmt.Errorf("invalid argument for join (type %s)", typeOf(args[0]))
	}
	if len(items) > 1 {
		if err := m.chargeTimes(len(items)-1, len(glue)); err != nil {
			return nil, err
		}
	}
	for _, s := range items {
		if err := m.charge(len(s) + 1); err != nil {
			return nil, err
		}
	}
	return strings.Join(items, glue), nil
}

// length is the number of items a closure over x visits.
func length(x any) int {
	switch v := x.(type) {
	case []any:
		return len(v)
	case map[string]any:
		return len(v)
	case []int:
		return len(v)
	case string:
		return len(v)
	case nil:
		return 0
	}
	switch rv := reflect.ValueOf(x); rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return rv.Len()
	}
	return 1
}

// sizeOf is the size of x in cost units: one per value, plus one per byte
// of a string, counting a value that appears twice twice. It stops
// counting past limit, and a value nested deeper than maxSizeDepth is over
// any limit.
func sizeOf(x any, limit int) int {
	s := sizer{limit: limit}
	s.add(x, 0)
	return s.n
}

type sizer struct{ n, limit int }

func (s *sizer) add(x any, depth int) {
	if s.n > s.limit {
		return
	}
	if depth > maxSizeDepth {
		s.n = s.limit + 1
		return
	}
	s.n++
	switch v := x.(type) {
	case nil, bool, int, int64, float64:
	case string:
		s.n += len(v)
	case []any:
		for _, item := range v {
			if s.add(item, depth+1); s.n > s.limit {
				return
			}
		}
	case map[string]any:
		for k, item := range v {
			s.n += len(k)
			if s.add(item, depth+1); s.n > s.limit {
				return
			}
		}
	case []int:
		s.n += len(v)
	case []string:
		for _, item := range v {
			s.n += 1 + len(item)
		}
	default:
		s.reflected(reflect.ValueOf(x), depth)
	}
}

func (s *sizer) reflected(rv reflect.Value, depth int) {
	switch rv.Kind() {
	case reflect.String:
		s.n += rv.Len()
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len() && s.n <= s.limit; i++ {
			s.add(rv.Index(i).Interface(), depth+1)
		}
	case reflect.Map:
		it := rv.MapRange()
		for it.Next() && s.n <= s.limit {
			s.add(it.Key().Interface(), depth+1)
			s.add(it.Value().Interface(), depth+1)
		}
	case reflect.Pointer, reflect.Interface:
		if !rv.IsNil() && rv.Elem().CanInterface() {
			s.add(rv.Elem().Interface(), depth+1)
		}
	}
}

// The builtins by what they cost.
var (
	// closureBuiltins run their predicate once per item of their first
	// argument; those marked true build an array or object of the items.
	closureBuiltins = map[string]bool{
		"all": false, "none": false, "any": false, "one": false, "filter": true, "map": true,
		"find": false, "findIndex": false, "findLast": false, "findLastIndex": false,
		"count": false, "sum": false, "groupBy": true, "sortBy": true, "reduce": false,
	}
	// constantBuiltins cost the same whatever the size of their arguments
	// (or little more than the length of a string) and build nothing.
	constantBuiltins = map[string]bool{
		"len": true, "type": true, "abs": true, "ceil": true, "floor": true, "round": true,
		"int": true, "float": true, "first": true, "last": true, "get": true, "duration": true,
		"bitand": true, "bitor": true, "bitxor": true, "bitnand": true, "bitnot": true,
		"bitshl": true, "bitshr": true, "bitushr": true,
	}
	// scanningBuiltins read their arguments in time that grows with their
	// size and build nothing large.
	scanningBuiltins = map[string]bool{
		"indexOf": true, "lastIndexOf": true, "hasPrefix": true, "hasSuffix": true,
		"max": true, "min": true, "mean": true, "median": true,
	}
	// buildingBuiltins build a string, an array or an object at most a
	// few times the size of their arguments.
	buildingBuiltins = map[string]bool{
		"string": true, "trim": true, "trimPrefix": true, "trimSuffix": true, "upper": true, "lower": true,
		"split": true, "splitAfter": true, "toJSON": true, "fromJSON": true, "toBase64": true, "fromBase64": true,
		"take": true, "keys": true, "values": true, "toPairs": true, "fromPairs": true, "reverse": true,
		"uniq": true, "concat": true, "flatten": true, "sort": true,
	}
	// meteredBuiltins are replaced by a method of ruleEnv that charges for
	// the result before building it.
	meteredBuiltins = map[string]string{"replace": "MeterReplace", "join": "MeterJoin"}
)

// knownBuiltin reports whether the budget knows what the builtin costs;
// the others (a newer expr's) are refused.
func knownBuiltin(name string) bool {
	_, closure := closureBuiltins[name]
	_, metered := meteredBuiltins[name]
	return closure || metered || constantBuiltins[name] || scanningBuiltins[name] || buildingBuiltins[name]
}

// meterVar is the name of the meter in the rule environment.
const meterVar = "$meter"

// isMeterName reports whether a rule names the meter or one of its
// functions, which only meterPatcher may do.
func isMeterName(name string) bool {
	_, ok := meterFuncs[name]
	return ok || name == meterVar
}

// ruleLimits returns what keeps a rule from being bounded by the budget,
// a *limitError saying where, or an error naming the meter, which a rule
// cannot use; nil when there is neither. A rule that does not parse
// returns nil too: compiling it reports why.
func ruleLimits(src string) error {
	config := conf.CreateNew()
	config.MaxNodes = maxRuleNodes
	for _, name := range outsideBuiltins {
		config.Disabled[name] = true
	}
	tree, err := parser.ParseWithConfig(src, config)
	if err != nil {
		return nil
	}
	l := limiter{}
	l.walk(tree.Node, 0)
	if l.msg == "" {
		return nil
	}
	e := (&file.Error{Location: l.at, Message: l.msg}).Bind(file.NewSource(src))
	if l.unknown {
		return e
	}
	return &limitError{exprMessage(e)}
}

type limiter struct {
	msg     string
	at      file.Location
	unknown bool // msg is about a name of the meter's
}

func (l *limiter) fail(n ast.Node, format string, args ...any) {
	if l.msg == "" {
		l.msg, l.at = fmt.Sprintf(format, args...), n.Location()
	}
}

func (l *limiter) unknownName(n ast.Node, name string) {
	if l.msg == "" {
		l.fail(n, "unknown name %s", name)
		l.unknown = true
	}
}

func (l *limiter) walk(n ast.Node, depth int) {
	if n == nil || l.msg != "" {
		return
	}
	switch n := n.(type) {
	case *ast.IdentifierNode:
		if isMeterName(n.Value) {
			l.unknownName(n, n.Value)
		}
	case *ast.MemberNode:
		if s, ok := n.Property.(*ast.StringNode); ok && isMeterName(s.Value) {
			l.unknownName(n, s.Value)
		}
	case *ast.BuiltinNode:
		if n.Name == "repeat" {
			l.fail(n, "repeat is not available in rules: it builds strings of any length")
		} else if !knownBuiltin(n.Name) {
			l.fail(n, "%s is not available in rules", n.Name)
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "..":
			from, okFrom := intConstant(n.Left)
			to, okTo := intConstant(n.Right)
			switch {
			case !okFrom || !okTo:
				l.fail(n, "the bounds of a range must be integer constants")
			case to >= from && (to-from < 0 || to-from >= maxRangeSize):
				l.fail(n, "the range %d..%d holds more than %d integers", from, to, maxRangeSize)
			}
		case "matches":
			if _, ok := n.Right.(*ast.StringNode); !ok {
				l.fail(n, "the pattern of matches must be a string constant")
			}
		}
	case *ast.PredicateNode:
		depth++
		if depth > maxClosureDepth {
			l.fail(n, "closures (all, any, map, filter, reduce, …) nest more than %d deep", maxClosureDepth)
		}
	}
	for _, c := range children(n) {
		l.walk(*c, depth)
	}
}

// intConstant returns the value of an integer literal, negated or not.
func intConstant(n ast.Node) (int, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return n.Value, true
	case *ast.UnaryNode:
		if v, ok := intConstant(n.Node); ok && (n.Operator == "-" || n.Operator == "+") {
			if n.Operator == "-" {
				v = -v
			}
			return v, true
		}
	}
	return 0, false
}

// children returns the places of n's child nodes.
func children(n ast.Node) []*ast.Node {
	switch n := n.(type) {
	case *ast.UnaryNode:
		return []*ast.Node{&n.Node}
	case *ast.BinaryNode:
		return []*ast.Node{&n.Left, &n.Right}
	case *ast.ChainNode:
		return []*ast.Node{&n.Node}
	case *ast.MemberNode:
		return []*ast.Node{&n.Node, &n.Property}
	case *ast.SliceNode:
		out := []*ast.Node{&n.Node}
		if n.From != nil {
			out = append(out, &n.From)
		}
		if n.To != nil {
			out = append(out, &n.To)
		}
		return out
	case *ast.CallNode:
		out := []*ast.Node{&n.Callee}
		for i := range n.Arguments {
			out = append(out, &n.Arguments[i])
		}
		return out
	case *ast.BuiltinNode:
		out := make([]*ast.Node, len(n.Arguments))
		for i := range n.Arguments {
			out[i] = &n.Arguments[i]
		}
		return out
	case *ast.PredicateNode:
		return []*ast.Node{&n.Node}
	case *ast.VariableDeclaratorNode:
		return []*ast.Node{&n.Value, &n.Expr}
	case *ast.SequenceNode:
		out := make([]*ast.Node, len(n.Nodes))
		for i := range n.Nodes {
			out[i] = &n.Nodes[i]
		}
		return out
	case *ast.ConditionalNode:
		return []*ast.Node{&n.Cond, &n.Exp1, &n.Exp2}
	case *ast.ArrayNode:
		out := make([]*ast.Node, len(n.Nodes))
		for i := range n.Nodes {
			out[i] = &n.Nodes[i]
		}
		return out
	case *ast.MapNode:
		out := make([]*ast.Node, len(n.Pairs))
		for i := range n.Pairs {
			out[i] = &n.Pairs[i]
		}
		return out
	case *ast.PairNode:
		return []*ast.Node{&n.Key, &n.Value}
	}
	return nil
}

// meterPatcher adds the meter's calls to a rule (see the top of this
// file). expr runs it once over the checked tree, children first.
type meterPatcher struct{}

func (meterPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "+":
			if maybeString(n.Left) && maybeString(n.Right) {
				ast.Patch(node, meterCall(n, "MeterAdd", n.Left, n.Right))
			}
		case "matches":
			if pattern, ok := n.Right.(*ast.StringNode); ok && !isMeterCall(n.Left) {
				n.Left = meterCall(n.Left, "MeterSize", n.Left, intNode(patternCost(pattern.Value), n.Left))
			}
		}
	case *ast.ArrayNode, *ast.MapNode:
		if !isLiteral(n) {
			ast.Patch(node, meterCall(n, "MeterBuilt", n))
		}
	case *ast.BuiltinNode:
		if method, ok := meteredBuiltins[n.Name]; ok {
			ast.Patch(node, meterCall(n, method, n.Arguments...))
			return
		}
		if builds, ok := closureBuiltins[n.Name]; ok && len(n.Arguments) > 0 {
			for _, arg := range n.Arguments[1:] {
				if p, ok := arg.(*ast.PredicateNode); ok {
					meterLoopBody(&p.Node)
				}
			}
			weight := 1
			for _, arg := range n.Arguments[1:] {
				if p, ok := arg.(*ast.PredicateNode); ok {
					weight += cost(p.Node)
				}
			}
			n.Arguments[0] = meterCall(n.Arguments[0], "MeterIter", n.Arguments[0], intNode(weight, n.Arguments[0]))
			if builds {
				ast.Patch(node, meterCall(n, "MeterBuilt", n))
			}
			return
		}
		if buildingBuiltins[n.Name] {
			ast.Patch(node, meterCall(n, "MeterBuilt", n))
		}
	}
}

// meterLoopBody charges, in the body of a closure, for the operations
// whose cost grows with the size of their operands. Bodies of closures
// nested in it were done when their builtin was visited.
func meterLoopBody(node *ast.Node) {
	orig := *node
	switch n := orig.(type) {
	case *ast.PredicateNode:
		return
	case *ast.CallNode:
		if isMeterCall(n) {
			// Its arguments are charged by the call; the items of a
			// closure's collection are charged by the closure's body.
			for i := range n.Arguments {
				meterLoopBody(&n.Arguments[i])
			}
			return
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "==", "!=", "<", ">", "<=", ">=", "contains", "startsWith", "endsWith":
			meterOperand(&n.Left)
			meterOperand(&n.Right)
		case "in":
			meterOperand(&n.Left)
			if r, ok := n.Right.(*ast.BinaryNode); ok && r.Operator == ".." {
				// x in a..b is a comparison of x with the bounds.
				meterLoopBody(&n.Left)
				return
			}
			if !isLiteral(n.Right) && !isMeterCall(n.Right) {
				n.Right = meterCall(n.Right, "MeterIter", n.Right, intNode(1, n.Right))
			}
		case "..":
			ast.Patch(node, meterCall(n, "MeterBuilt", n))
		}
	case *ast.BuiltinNode:
		if scanningBuiltins[n.Name] || buildingBuiltins[n.Name] {
			for i := range n.Arguments {
				meterOperand(&n.Arguments[i])
			}
		}
	}
	for _, c := range children(orig) {
		meterLoopBody(c)
	}
}

// meterOperand charges for the size of an operand that is not a literal.
func meterOperand(node *ast.Node) {
	if isLiteral(*node) || isMeterCall(*node) {
		return
	}
	*node = meterCall(*node, "MeterSize", *node, intNode(1, *node))
}

// maybeString reports whether a + operand may be a string: its type is a
// string or unknown.
func maybeString(n ast.Node) bool {
	t := n.Type()
	return t == nil || t.Kind() == reflect.String || t.Kind() == reflect.Interface
}

// isLiteral reports whether n is a literal, or an array or object of
// literals: its size is bounded by the rule's.
func isLiteral(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode, *ast.ConstantNode:
		return true
	case *ast.ArrayNode:
		for _, item := range n.Nodes {
			if !isLiteral(item) {
				return false
			}
		}
		return true
	case *ast.MapNode:
		for _, pair := range n.Pairs {
			if p, ok := pair.(*ast.PairNode); !ok || !isLiteral(p.Key) || !isLiteral(p.Value) {
				return false
			}
		}
		return true
	}
	return false
}

func isMeterCall(n ast.Node) bool {
	c, ok := n.(*ast.CallNode)
	if !ok {
		return false
	}
	id, ok := c.Callee.(*ast.IdentifierNode)
	return ok && isMeterName(id.Value)
}

// cost is the static cost of running a closure's body once: its nodes and
// the bytes of its string literals.
func cost(n ast.Node) int {
	c := 1
	if s, ok := n.(*ast.StringNode); ok {
		c += len(s.Value)
	}
	for _, child := range children(n) {
		c += cost(*child)
	}
	return c
}

// patternCost is the cost per byte of input of matching a regular
// expression: Go's regexp takes time proportional to the input times the
// size of the compiled pattern in the worst case.
func patternCost(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 1
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return 1 + len(prog.Inst)/8
}

// meterCall returns a call of the meter function name on the meter and
// args, at the place of node.
func meterCall(node ast.Node, name string, args ...ast.Node) ast.Node {
	at := node.Location()
	m := &ast.IdentifierNode{Value: meterVar}
	m.SetLocation(at)
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: append([]ast.Node{m}, args...)}
	call.SetLocation(at)
	call.Callee.SetLocation(at)
	return call
}

func intNode(v int, at ast.Node) ast.Node {
	n := &ast.IntegerNode{Value: v}
	n.SetLocation(at.Location())
	return n
}
