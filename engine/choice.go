package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// choice runs a Choice state: the first rule that holds on the effective
// input decides the next state (and its Assign); otherwise Default (with
// the state's Assign); otherwise States.NoChoiceMatched.
func (h *stateRun) choice(ctx context.Context, s *states.Choice, raw any) (stepResult, error) {
	if s.JSONata() {
		return h.jsonataChoice(ctx, s, raw)
	}
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	next, assign := "", s.Assign
	for i := range s.Choices {
		rule := &s.Choices[i]
		ok, err := h.holds(&rule.Condition, input)
		if err != nil {
			return stepResult{}, err
		}
		if ok {
			next, assign = rule.Next, rule.Assign
			break
		}
	}
	if next == "" {
		if s.Default == "" {
			return stepResult{}, asl.Errorf(asl.ErrNoChoiceMatched, "No Matches!")
		}
		next = s.Default
	}
	out, err := h.outputPath(input)
	if err != nil {
		return stepResult{}, err
	}
	if err := h.evalAssign(assign, input); err != nil {
		return stepResult{}, err
	}
	return stepResult{output: out, proposed: input, next: next, size: h.inSize}, nil
}

// holds evaluates a condition on the effective input. A comparison whose
// Variable does not resolve is States.Runtime, except for IsPresent.
func (h *stateRun) holds(c *states.Condition, input any) (bool, error) {
	switch {
	case c.Not != nil:
		ok, err := h.holds(c.Not, input)
		return !ok, err
	case c.And != nil:
		for i := range c.And {
			ok, err := h.holds(&c.And[i], input)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case c.Or != nil:
		for i := range c.Or {
			ok, err := h.holds(&c.Or[i], input)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	v, err := c.Variable.Eval(input, h.env)
	if err != nil {
		var pe *jsonpath.PathError
		if !errors.As(err, &pe) {
			return false, h.pathError(err)
		}
		if c.Operator == "IsPresent" {
			return !c.Value.(bool), nil
		}
		// AWS's wording for a condition path that selects nothing.
		return false, h.runtimeError(fmt.Sprintf("Invalid path '%s': The choice state's condition path references an invalid value.", c.Variable))
	}
	if c.Operator == "IsPresent" {
		return c.Value.(bool), nil
	}
	operand := c.Value
	op := c.Operator
	if c.ValuePath != nil {
		operand, err = h.get(c.ValuePath, input)
		if err != nil {
			return false, err
		}
		op = strings.TrimSuffix(op, "Path")
	}
	return compare(op, v, operand, c), nil
}

// compare applies a data-test operator (without its Path suffix) to the
// variable's value v and the operand. Values of the wrong type make the
// test false, as in AWS.
func compare(op string, v, operand any, c *states.Condition) bool {
	switch op {
	case "IsNull":
		return (v == nil) == operand.(bool)
	case "IsNumeric":
		_, ok := v.(json.Number)
		return ok == operand.(bool)
	case "IsString":
		_, ok := v.(string)
		return ok == operand.(bool)
	case "IsBoolean":
		_, ok := v.(bool)
		return ok == operand.(bool)
	case "IsTimestamp":
		s, ok := v.(string)
		if ok {
			_, ok = states.ParseTimestamp(s)
		}
		return ok == operand.(bool)
	case "BooleanEquals":
		a, ok1 := v.(bool)
		b, ok2 := operand.(bool)
		return ok1 && ok2 && a == b
	case "StringMatches":
		a, ok1 := v.(string)
		b, ok2 := operand.(string)
		return ok1 && ok2 && globMatch(b, a)
	}
	switch {
	case strings.HasPrefix(op, "String"):
		a, ok1 := v.(string)
		b, ok2 := operand.(string)
		return ok1 && ok2 && ordered(op[len("String"):], strings.Compare(a, b))
	case strings.HasPrefix(op, "Numeric"):
		a, ok1 := v.(json.Number)
		b, ok2 := operand.(json.Number)
		return ok1 && ok2 && ordered(op[len("Numeric"):], jsonvalue.CompareNumbers(a, b))
	case strings.HasPrefix(op, "Timestamp"):
		a, ok1 := v.(string)
		if !ok1 {
			return false
		}
		ta, ok1 := states.ParseTimestamp(a)
		tb := c.Timestamp
		if c.ValuePath != nil {
			b, ok2 := operand.(string)
			if !ok2 {
				return false
			}
			var valid bool
			if tb, valid = states.ParseTimestamp(b); !valid {
				return false
			}
		}
		return ok1 && ordered(op[len("Timestamp"):], ta.Compare(tb))
	}
	return false
}

// ordered reports whether a comparison result cmp satisfies the relation
// named by rel ("Equals", "LessThan", …).
func ordered(rel string, cmp int) bool {
	switch rel {
	case "Equals":
		return cmp == 0
	case "LessThan":
		return cmp < 0
	case "GreaterThan":
		return cmp > 0
	case "LessThanEquals":
		return cmp <= 0
	case "GreaterThanEquals":
		return cmp >= 0
	}
	return false
}

// globMatch matches s against an ASL StringMatches pattern: "*" matches any
// run of characters, "\*" a literal star and "\\" a literal backslash.
func globMatch(pattern, s string) bool {
	// Split the pattern into literal segments separated by unescaped stars.
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(pattern); i++ {
		ch := pattern[i]
		switch {
		case ch == '\\' && i+1 < len(pattern) && (pattern[i+1] == '*' || pattern[i+1] == '\\'):
			cur.WriteByte(pattern[i+1])
			i++
		case ch == '*':
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(ch)
		}
	}
	segs = append(segs, cur.String())
	if len(segs) == 1 {
		return s == segs[0]
	}
	if !strings.HasPrefix(s, segs[0]) {
		return false
	}
	s = s[len(segs[0]):]
	last := segs[len(segs)-1]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
