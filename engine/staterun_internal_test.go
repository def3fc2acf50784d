package engine

import (
	"context"
	"reflect"
	"testing"
	"unsafe"

	"github.com/aslrun/aslrun/states"
)

// TestStateRunClear fills every field of a stateRun (its env's too) with
// a value that is not zero, clears it, and checks that every field is
// zero again: a field added to stateRun and left out of clear fails it.
func TestStateRunClear(t *testing.T) {
	h := new(stateRun)
	fill(t, reflect.ValueOf(h).Elem(), "stateRun")
	if reflect.ValueOf(h).Elem().IsZero() {
		t.Fatalf("fill left the stateRun zero")
	}
	h.clear()
	v := reflect.ValueOf(h).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsZero() {
			t.Errorf("after clear, stateRun.%s = %v, want its zero value", v.Type().Field(i).Name, settable(f))
		}
	}
}

// fill sets every field of v, through nested structs, to a value that is
// not zero.
func fill(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	v = settable(v)
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), name+"."+v.Type().Field(i).Name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Interface:
		for _, c := range []any{context.Background(), states.State(&states.Pass{}), "x"} {
			if cv := reflect.ValueOf(c); cv.Type().AssignableTo(v.Type()) {
				v.Set(cv)
				return
			}
		}
		t.Fatalf("fill: no value for %s of type %s", name, v.Type())
	default:
		t.Fatalf("fill: %s has kind %s, which the test cannot fill", name, v.Kind())
	}
}

// settable returns v, made settable when it is an unexported field.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}
