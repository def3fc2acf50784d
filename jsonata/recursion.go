package jsonata

import (
	"fmt"
	"reflect"

	"github.com/blues/jsonata-go/jparse"
)

// isBuiltin reports whether name is a built-in function: calling one
// inside a function definition cannot recurse.
func isBuiltin(name string) bool {
	_, ok := builtins[name]
	_, step := stepFunctions[name]
	return ok || step
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
		if v, ok := called.(*jparse.VariableNode); ok && !isBuiltin(v.Name) {
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
