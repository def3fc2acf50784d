package jsonata

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/blues/jsonata-go/jtypes"
)

// null is how the library spells JSON null inside the values it
// evaluates: a nil interface would read as undefined (no value at all).
var null = (*any)(nil)

// toJSONata converts one of our JSON values (json.Number numbers, nil for
// null) into a value the library evaluates: numbers become IEEE doubles,
// as in AWS's JavaScript engine. A number past the double range becomes an
// infinity, as JSON.parse makes it; digits past a double's precision are
// lost (DESIGN: docs/jsonata.md, "Numbers").
func toJSONata(v any) any {
	switch t := v.(type) {
	case nil:
		return null
	case json.Number:
		f, _ := strconv.ParseFloat(string(t), 64)
		return f
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = toJSONata(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = toJSONata(e)
		}
		return out
	case *jsonvalue.Packed:
		// Decoded element by element; an element that does not decode
		// (it cannot: its text was written by jsonvalue) is null.
		out := make([]any, t.Len())
		for i := range out {
			e, err := t.At(i)
			if err != nil {
				out[i] = null
				continue
			}
			out[i] = toJSONata(e)
		}
		return out
	}
	// Strings and booleans are the same in both.
	return v
}

// errUnsupported is the failure of a result that is not JSON (a function,
// a regular expression, a number that is not finite).
var errUnsupported = fmt.Errorf("unsupported result type")

// errTooDeep is the failure of a result nested deeper than maxDepth.
var errTooDeep = &thrown{msg: fmt.Sprintf("U1001: Stack overflow error: the result nests deeper than %d levels", maxDepth)}

// errDeeperThanDocument is the failure of a result whose arrays and
// objects nest deeper than a document may (jsonvalue.MaxDepth): the store
// would refuse to record it, and a decoder to read it back.
var errDeeperThanDocument = &thrown{msg: fmt.Sprintf("the result nests arrays and objects deeper than %d levels, the most a JSON document may", jsonvalue.MaxDepth)}

// fromJSONata converts a result of an evaluation back into one of our
// JSON values: doubles become json.Number spelled as JavaScript spells
// them.
func fromJSONata(v any) (any, error) { return fromValue(v, 0) }

func fromValue(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	switch t := v.(type) {
	case nil:
		return nil, nil
	case *any:
		if t == nil {
			return nil, nil
		}
		return fromValue(*t, depth)
	case string, bool:
		return t, nil
	case float64:
		return numberOf(t)
	case int:
		return json.Number(strconv.Itoa(t)), nil
	case map[string]any:
		if depth >= jsonvalue.MaxDepth {
			return nil, errDeeperThanDocument
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := fromValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if depth >= jsonvalue.MaxDepth {
			return nil, errDeeperThanDocument
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, err := fromValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case jtypes.Callable:
		return nil, errUnsupported
	}
	return fromReflect(reflect.ValueOf(v), depth)
}

// fromReflect converts the other shapes the library's functions return
// ([]string from $keys and $split, int counts, typed maps).
func fromReflect(rv reflect.Value, depth int) (any, error) {
	switch rv.Kind() {
	case reflect.Invalid:
		return nil, nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return fromValue(rv.Elem().Interface(), depth)
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return json.Number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return json.Number(strconv.FormatUint(rv.Uint(), 10)), nil
	case reflect.Float32, reflect.Float64:
		return numberOf(rv.Float())
	case reflect.Slice, reflect.Array:
		if depth >= jsonvalue.MaxDepth {
			return nil, errDeeperThanDocument
		}
		out := make([]any, rv.Len())
		for i := range out {
			c, err := fromValue(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, errUnsupported
		}
		if depth >= jsonvalue.MaxDepth {
			return nil, errDeeperThanDocument
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			c, err := fromValue(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[it.Key().String()] = c
		}
		return out, nil
	}
	return nil, errUnsupported
}

// numberOf spells a double as JavaScript's Number.prototype.toString
// does, the spelling AWS's results have: integers without a fraction,
// the shortest digits that read back as the same double, and an exponent
// below 1e-6 and from 1e21 on.
func numberOf(f float64) (json.Number, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", errUnsupported
	}
	return json.Number(FormatNumber(f)), nil
}

// FormatNumber writes a finite double as JavaScript's
// Number.prototype.toString writes it.
func FormatNumber(f float64) string {
	if f == 0 {
		return "0" // -0 too, as in JavaScript
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// e-form with the shortest digits: d.ddde±x
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n := x + 1 // position of the decimal point after the first digit
	k := len(digits)
	var b strings.Builder
	b.WriteString(sign)
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteString(digits[:1])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String()
}

// typeName is JSONata's name of the type of one of our values ($type).
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "function"
}
