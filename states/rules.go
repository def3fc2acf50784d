package states

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// errorAll is the ErrorEquals name that matches every error.
const errorAll = "States.ALL"

// errorEquals reads the ErrorEquals of a retrier or catcher.
func (p *parser) errorEquals(o *object) []string {
	if _, ok := o.m["ErrorEquals"]; !ok {
		o.errorf("", "missing required field ErrorEquals")
		return nil
	}
	names, ok := o.strings("ErrorEquals")
	if !ok {
		return nil
	}
	if len(names) == 0 {
		o.errorf("ErrorEquals", "ErrorEquals must not be empty")
	}
	for i, n := range names {
		if n == "" {
			p.errorf(fmt.Sprintf("%s/%d", o.at("ErrorEquals"), i), o.state, "an error name must not be empty")
		}
		if n == errorAll && len(names) > 1 {
			o.errorf("ErrorEquals", "States.ALL must appear alone in ErrorEquals")
		}
	}
	return names
}

// checkAllLast reports States.ALL in any but the last retrier or catcher;
// lists holds each entry's ErrorEquals by its index in the array.
func checkAllLast(p *parser, o *object, key string, lists [][]string) {
	for i, names := range lists {
		if i == len(lists)-1 {
			break
		}
		for _, n := range names {
			if n == errorAll {
				p.errorf(fmt.Sprintf("%s/%d/ErrorEquals", o.at(key), i), o.state, "States.ALL must appear only in the last entry of %s", key)
			}
		}
	}
}

func (p *parser) array(o *object, key string) ([]any, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	arr, isArr := v.([]any)
	if !isArr {
		o.errorf(key, "%s must be an array, not %s", key, jsonvalue.TypeName(v))
		return nil, false
	}
	return arr, true
}

func (p *parser) retry(o *object) []Retrier {
	arr, ok := p.array(o, "Retry")
	if !ok {
		return nil
	}
	out := make([]Retrier, 0, len(arr))
	lists := make([][]string, len(arr)) // by array index, nil where the entry is not an object
	for i, v := range arr {
		ro := p.newObject(v, fmt.Sprintf("%s/%d", o.at("Retry"), i), o.state, "a retrier")
		if ro == nil {
			continue
		}
		r := Retrier{IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2, JitterStrategy: "NONE"}
		r.ErrorEquals = p.errorEquals(ro)
		lists[i] = r.ErrorEquals
		if n, ok := ro.integer("IntervalSeconds", 1, MaxTimeoutSeconds); ok {
			r.IntervalSeconds = n
		}
		if n, ok := ro.integer("MaxAttempts", 0, MaxTimeoutSeconds); ok {
			r.MaxAttempts = n
		}
		if f, ok := ro.number("BackoffRate", 1, math.Inf(1)); ok {
			r.BackoffRate = f
		}
		if n, ok := ro.integer("MaxDelaySeconds", 1, MaxTimeoutSeconds); ok {
			r.MaxDelaySeconds = n
		}
		if js, ok := ro.oneOf("JitterStrategy", "FULL", "NONE"); ok {
			r.JitterStrategy = js
		}
		ro.has("Comment")
		ro.done("a retrier")
		out = append(out, r)
	}
	checkAllLast(p, o, "Retry", lists)
	return out
}

// catch reads a Catch array; a JSONata state's catchers have Output and
// Assign in place of ResultPath.
func (p *parser) catch(o *object, jsonata bool) []Catcher {
	arr, ok := p.array(o, "Catch")
	if !ok {
		return nil
	}
	out := make([]Catcher, 0, len(arr))
	lists := make([][]string, len(arr)) // by array index, nil where the entry is not an object
	for i, v := range arr {
		co := p.newObject(v, fmt.Sprintf("%s/%d", o.at("Catch"), i), o.state, "a catcher")
		if co == nil {
			continue
		}
		c := Catcher{}
		c.ErrorEquals = p.errorEquals(co)
		lists[i] = c.ErrorEquals
		c.Next, _ = co.requiredStr("Next")
		if jsonata {
			c.Output = p.jsonataTemplate(co, "Output")
			c.AssignJSONata = p.jsonataAssign(co, "Assign")
			for _, k := range []string{"ResultPath"} {
				if co.has(k) {
					co.errorf(k, "%s", otherLanguage(JSONata, k))
				}
			}
		} else {
			c.ResultPath = p.resultPath(co, "ResultPath")
			c.Assign = p.assign(co, "Assign")
			if co.has("Output") {
				co.errorf("Output", "%s", otherLanguage(JSONPath, "Output"))
			}
		}
		co.has("Comment")
		co.done("a catcher")
		out = append(out, c)
	}
	checkAllLast(p, o, "Catch", lists)
	return out
}

// operandKind is the type of a comparison operator's literal operand.
type operandKind int

const (
	operandString operandKind = iota
	operandNumber
	operandBool
	operandTimestamp
)

// comparisonOperators maps every data-test operator (without the Path
// suffix) to the type of its literal operand.
var comparisonOperators = map[string]operandKind{
	"StringEquals":               operandString,
	"StringLessThan":             operandString,
	"StringGreaterThan":          operandString,
	"StringLessThanEquals":       operandString,
	"StringGreaterThanEquals":    operandString,
	"StringMatches":              operandString,
	"NumericEquals":              operandNumber,
	"NumericLessThan":            operandNumber,
	"NumericGreaterThan":         operandNumber,
	"NumericLessThanEquals":      operandNumber,
	"NumericGreaterThanEquals":   operandNumber,
	"BooleanEquals":              operandBool,
	"TimestampEquals":            operandTimestamp,
	"TimestampLessThan":          operandTimestamp,
	"TimestampGreaterThan":       operandTimestamp,
	"TimestampLessThanEquals":    operandTimestamp,
	"TimestampGreaterThanEquals": operandTimestamp,
	"IsNull":                     operandBool,
	"IsPresent":                  operandBool,
	"IsNumeric":                  operandBool,
	"IsString":                   operandBool,
	"IsBoolean":                  operandBool,
	"IsTimestamp":                operandBool,
}

// isOperator reports whether key is a comparison operator, with or without
// the Path suffix (StringMatches and the Is* tests have no Path form).
func isOperator(key string) bool {
	if _, ok := comparisonOperators[key]; ok {
		return true
	}
	base, found := strings.CutSuffix(key, "Path")
	if !found || base == "StringMatches" || strings.HasPrefix(base, "Is") {
		return false
	}
	_, ok := comparisonOperators[base]
	return ok
}

// choices returns a Choice state's Choices, refusing a missing or empty
// list.
func (p *parser) choices(o *object) []any {
	arr, ok := p.array(o, "Choices")
	switch {
	case !ok:
		if _, present := o.m["Choices"]; !present {
			o.errorf("", "missing required field Choices")
		}
	case len(arr) == 0:
		o.errorf("Choices", "Choices must contain at least one rule")
	}
	return arr
}

func (p *parser) choice(o *object, c Common) *Choice {
	s := &Choice{Common: c}
	s.Choices = p.choiceRules(o, p.choices(o), "Choices")
	s.Default, _ = o.str("Default")
	return s
}

// choiceRules reads top-level Choice rules (used by Choice and Approval).
func (p *parser) choiceRules(o *object, arr []any, key string) []ChoiceRule {
	out := make([]ChoiceRule, 0, len(arr))
	for i, v := range arr {
		ro := p.newObject(v, fmt.Sprintf("%s/%d", o.at(key), i), o.state, "a choice rule")
		if ro == nil {
			continue
		}
		r := ChoiceRule{}
		r.Next, _ = ro.requiredStr("Next")
		r.Assign = p.assign(ro, "Assign")
		if ro.has("Condition") {
			ro.errorf("Condition", "%s", otherLanguage(JSONPath, "Condition"))
		}
		r.Condition = p.condition(ro)
		ro.done("a choice rule")
		out = append(out, r)
	}
	return out
}

// condition reads a Boolean expression from ro (fields other than Next and
// Assign, which the caller handles).
func (p *parser) condition(ro *object) Condition {
	var c Condition
	ro.has("Comment")
	n := 0
	for _, k := range []string{"And", "Or", "Not"} {
		if _, ok := ro.m[k]; ok {
			n++
		}
	}
	var ops []string
	for k := range ro.m {
		if isOperator(k) {
			ops = append(ops, k)
		}
	}
	_, hasVar := ro.m["Variable"]
	_, hasVarExpr := ro.m["Variable.$"]
	// These are all known fields: whatever is wrong with them is reported
	// below, never as "unknown field".
	for _, k := range ops {
		ro.used[k] = true
	}
	for _, k := range []string{"And", "Or", "Not", "Variable", "Variable.$"} {
		ro.has(k)
	}
	switch {
	case n+len(ops) == 0:
		ro.errorf("", "a choice rule needs a comparison operator (with Variable) or And, Or or Not")
		return c
	case n+len(ops) > 1:
		ro.errorf("", "a choice rule must have exactly one comparison operator or one of And, Or, Not")
		return c
	}
	if n == 1 {
		if hasVar || hasVarExpr {
			ro.errorf("Variable", "Variable is not allowed with And, Or or Not")
		}
		if v, ok := ro.get("Not"); ok {
			no := p.newObject(v, ro.at("Not"), ro.state, "Not")
			if no != nil {
				inner := p.condition(no)
				no.done("a Not rule")
				c.Not = &inner
			}
		}
		for _, k := range []string{"And", "Or"} {
			arr, ok := p.array(ro, k)
			if !ok {
				continue
			}
			if len(arr) == 0 {
				ro.errorf(k, "%s must contain at least one rule", k)
			}
			list := make([]Condition, 0, len(arr))
			for i, v := range arr {
				no := p.newObject(v, fmt.Sprintf("%s/%d", ro.at(k), i), ro.state, "a nested choice rule")
				if no == nil {
					continue
				}
				list = append(list, p.condition(no))
				no.done("a nested choice rule")
			}
			if k == "And" {
				c.And = list
			} else {
				c.Or = list
			}
		}
		return c
	}
	// A comparison.
	switch {
	case hasVar && hasVarExpr:
		ro.errorf("Variable.$", "Variable and Variable.$ cannot both be set")
	case hasVarExpr:
		c.Variable = p.expr(ro, "Variable.$")
	case hasVar:
		v, _ := ro.get("Variable")
		if s, ok := v.(string); ok && strings.HasPrefix(s, "States.") {
			c.Variable = p.expr(ro, "Variable")
		} else if path := p.path(ro, "Variable", v); path != nil {
			c.Variable, _ = jsonpath.CompileExpr(path.String())
		}
	default:
		ro.errorf("", "a comparison needs a Variable")
	}
	op := ops[0]
	c.Operator = op
	v, _ := ro.get(op)
	if _, literal := comparisonOperators[op]; !literal {
		c.ValuePath = p.path(ro, op, v)
		return c
	}
	switch comparisonOperators[op] {
	case operandString:
		if _, ok := v.(string); !ok {
			ro.errorf(op, "%s needs a string, not %s", op, jsonvalue.TypeName(v))
		}
	case operandNumber:
		if _, ok := v.(json.Number); !ok {
			ro.errorf(op, "%s needs a number, not %s", op, jsonvalue.TypeName(v))
		}
	case operandBool:
		if _, ok := v.(bool); !ok {
			ro.errorf(op, "%s needs a boolean, not %s", op, jsonvalue.TypeName(v))
		}
	case operandTimestamp:
		s, ok := v.(string)
		if !ok {
			ro.errorf(op, "%s needs a timestamp string, not %s", op, jsonvalue.TypeName(v))
			break
		}
		t, valid := ParseTimestamp(s)
		if !valid {
			ro.errorf(op, "String does not match RFC3339 timestamp: %q", s)
		}
		c.Timestamp = t
	}
	c.Value = v
	return c
}
