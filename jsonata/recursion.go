package jsonata

import (
	"fmt"
	"reflect"

	"github.com/blues/jsonata-go/jparse"
)

// builtins are the functions the library and our layer define: calling one
// inside a function definition cannot recurse.
var builtins = map[string]bool{
	"string": true, "length": true, "substring": true, "substringBefore": true, "substringAfter": true,
	"uppercase": true, "lowercase": true, "pad": true, "trim": true, "contains": true, "split": true,
	"join": true, "match": true, "replace": true, "formatNumber": true, "formatBase": true,
	"decodeUrl": true, "decodeUrlComponent": true, "encodeUrl": true, "encodeUrlComponent": true,
	"number": true, "abs": true, "floor": true, "ceil": true, "round": true, "power": true, "sqrt": true,
	"random": true, "sum": true, "max": true, "min": true, "average": true, "boolean": true, "not": true,
	"exists": true, "distinct": true, "count": true, "reverse": true, "sort": true, "shuffle": true,
	"zip": true, "append": true, "map": true, "filter": true, "reduce": true, "single": true, "each": true,
	"sift": true, "keys": true, "lookup": true, "spread": true, "merge": true, "fromMillis": true,
	"toMillis": true, "type": true, "error": true, "now": true, "millis": true,
}

// refuseRecursion refuses an expression whose evaluation could recurse
// without end: the library has no depth limit, and a Go stack overflow
// ends the whole process. Inside a function definition it refuses a call
// of anything but a built-in function (a parameter, a variable), and any
// reference to a variable the expression binds to a function (its own
// name, or another's that could call it back).
func refuseRecursion(root jparse.Node) error {
	funcs := map[string]bool{}
	walk(reflect.ValueOf(root), false, func(n jparse.Node, _ bool) error {
		if a, ok := n.(*jparse.AssignmentNode); ok && isFunction(a.Value) {
			funcs[a.Name] = true
		}
		return nil
	})
	return walk(reflect.ValueOf(root), false, func(n jparse.Node, inLambda bool) error {
		if !inLambda {
			return nil
		}
		var called jparse.Node
		switch n := n.(type) {
		case *jparse.FunctionCallNode:
			called = n.Func
		case *jparse.PartialNode:
			called = n.Func
		case *jparse.FunctionApplicationNode:
			called = n.RHS
		case *jparse.VariableNode:
			if funcs[n.Name] {
				return fmt.Errorf("$%s is a function defined in the expression, and a function may not refer to one (recursion cannot be bounded)", n.Name)
			}
			return nil
		}
		if v, ok := called.(*jparse.VariableNode); ok && !builtins[v.Name] && stepFunctions[v.Name].Func == nil {
			return fmt.Errorf("a function defined in the expression may call built-in functions only, not $%s (recursion cannot be bounded)", v.Name)
		}
		return nil
	})
}

func isFunction(n jparse.Node) bool {
	switch n.(type) {
	case *jparse.LambdaNode, *jparse.TypedLambdaNode, *jparse.PartialNode:
		return true
	}
	return false
}

var nodeType = reflect.TypeFor[jparse.Node]()

// walk calls f on every node under v (a node, or a struct, slice or array
// holding nodes), saying whether it is inside a function definition.
func walk(v reflect.Value, inLambda bool, f func(jparse.Node, bool) error) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return walk(v.Elem(), inLambda, f)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if v.Type().Implements(nodeType) && v.CanInterface() {
			n := v.Interface().(jparse.Node)
			if err := f(n, inLambda); err != nil {
				return err
			}
			switch n.(type) {
			case *jparse.LambdaNode, *jparse.TypedLambdaNode:
				inLambda = true
			}
		}
		return walk(v.Elem(), inLambda, f)
	case reflect.Struct:
		for i := range v.NumField() {
			if err := walk(v.Field(i), inLambda, f); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := walk(v.Index(i), inLambda, f); err != nil {
				return err
			}
		}
	}
	return nil
}
