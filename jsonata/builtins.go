package jsonata

import (
	"context"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blues/jsonata-go/jlib"
	"github.com/blues/jsonata-go/jtypes"
)

// native is a built-in function written in Go: JSONata's own (most from
// the library's jlib package, which holds pure functions) and those Step
// Functions adds. Its arguments are converted to the Go types of its
// parameters, as the library converts them. A native is immutable.
type native struct {
	name string
	fn   reflect.Value
	// in are the types of the parameters the expression gives; inject is
	// how many come first that it does not: none, the *run, or the
	// context and the *run.
	in       []reflect.Type
	inject   int
	variadic bool
	// undefined, when set, says that the arguments give undefined
	// without a call (typically: the first is undefined).
	undefined func(args []any) bool
	// context, when set, says that the call left out its first argument,
	// which is then the context item ("$").
	context func(args []any) bool
}

// spec describes a native: its Go function and the two rules.
type spec struct {
	fn        any
	undefined func(args []any) bool
	context   func(args []any) bool
}

var (
	typeValue    = reflect.TypeFor[reflect.Value]()
	typeAny      = reflect.TypeFor[any]()
	typeContext  = reflect.TypeFor[context.Context]()
	typeRun      = reflect.TypeFor[*run]()
	typeOptional = reflect.TypeFor[jtypes.Optional]()
	typeVariant  = reflect.TypeFor[jtypes.Variant]()
	typeError    = reflect.TypeFor[error]()
)

// natives builds the natives of specs.
func natives(specs map[string]spec) map[string]*native {
	out := make(map[string]*native, len(specs))
	for name, s := range specs {
		v := reflect.ValueOf(s.fn)
		t := v.Type()
		f := &native{name: name, fn: v, variadic: t.IsVariadic(), undefined: s.undefined, context: s.context}
		for i := range t.NumIn() {
			p := t.In(i)
			switch {
			case i == 0 && p == typeContext:
				f.inject++
				continue
			case i == f.inject && p == typeRun:
				f.inject++
				continue
			case f.variadic && i == t.NumIn()-1:
				p = p.Elem()
			}
			f.in = append(f.in, p)
		}
		if t.NumOut() < 1 || t.NumOut() > 2 || t.NumOut() == 2 && t.Out(1) != typeError {
			panic("jsonata: built-in " + name + " must return a value and maybe an error")
		}
		out[name] = f
	}
	return out
}

func (f *native) arity() int { return len(f.in) }

func (f *native) call(ctx context.Context, r *run, focus any, args []any) (any, error) {
	given := len(args)
	if f.context != nil && f.context(args) {
		args = append([]any{focus}, args...)
	}
	if f.undefined != nil && f.undefined(args) {
		return nil, nil
	}
	n := len(f.in)
	for len(args) < n && reflect.PointerTo(f.in[len(args)]).Implements(typeOptional) {
		args = append(args, nil)
	}
	if f.variadic && len(args) < n-1 || !f.variadic && len(args) != n {
		return nil, throw("T0410: Argument count of function %s does not match function signature (%d expected, %d given)", f.name, n, given)
	}
	// A built-in's work grows with its arguments, and it counts no steps
	// of its own: count them for it.
	if err := r.tick(ctx, workOf(args)); err != nil {
		return nil, err
	}
	vals := make([]reflect.Value, 0, f.inject+len(args))
	if f.inject == 2 {
		vals = append(vals, reflect.ValueOf(ctx))
	}
	if f.inject >= 1 {
		vals = append(vals, reflect.ValueOf(r))
	}
	for i, a := range args {
		v, ok := convertArg(a, f.in[min(i, n-1)])
		if !ok {
			return nil, throw("T0410: Argument %d of function %s does not match function signature", i+1, f.name)
		}
		vals = append(vals, v)
	}
	out := f.fn.Call(vals)
	if len(out) == 2 && !out[1].IsNil() {
		err := out[1].Interface().(error)
		if err == jtypes.ErrUndefined {
			return nil, nil
		}
		return nil, err
	}
	v := normalize(out[0])
	if err := r.alloc(sizeOf(v)); err != nil {
		return nil, err
	}
	return v, nil
}

// workOf is the steps counted for a call of a built-in with args: the
// items of its arrays, the entries of its objects, a step per 64 bytes of
// its strings.
func workOf(args []any) int64 {
	var n int64
	for _, a := range args {
		switch t := a.(type) {
		case []any:
			n += int64(len(t))
		case map[string]any:
			n += int64(len(t))
		case string:
			n += int64(len(t) / 64)
		}
	}
	return n
}

// convertArg converts argument a to a parameter of type t, as the
// library converts them; ok is false when it cannot.
func convertArg(a any, t reflect.Type) (reflect.Value, bool) {
	if a == nil {
		if t == typeAny || t == typeValue || reflect.PointerTo(t).Implements(typeOptional) {
			return reflect.Zero(t), true
		}
		return reflect.Value{}, false
	}
	switch {
	case t == typeValue:
		return reflect.ValueOf(reflect.ValueOf(a)), true
	case reflect.PointerTo(t).Implements(typeOptional):
		p := reflect.New(t)
		opt := p.Interface().(jtypes.Optional)
		v, ok := convertArg(a, opt.Type())
		if !ok {
			return reflect.Value{}, false
		}
		opt.Set(v)
		return p.Elem(), true
	case t.Implements(typeVariant):
		for _, vt := range reflect.Zero(t).Interface().(jtypes.Variant).ValidTypes() {
			if v, ok := convertArg(a, vt); ok {
				return reflect.ValueOf(v).Convert(t), true
			}
		}
		return reflect.Value{}, false
	}
	v := reflect.ValueOf(a)
	switch at := v.Type(); {
	case at.AssignableTo(t):
		return v, true
	case t.Kind() == reflect.String || at.Kind() == reflect.String:
		// Only strings are strings: no number becomes a string.
	case at.ConvertibleTo(t) && isNumberKind(at.Kind()) == isNumberKind(t.Kind()):
		return v.Convert(t), true
	}
	return reflect.Value{}, false
}

func isNumberKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Float64
}

// normalize turns a native's result into an evaluator value: numbers
// become float64, slices []any, maps map[string]any.
func normalize(rv reflect.Value) any {
	switch rv.Kind() {
	case reflect.Invalid:
		return nil
	case reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem())
	}
	if !rv.CanInterface() {
		return nil
	}
	switch v := rv.Interface().(type) {
	case float64, string, bool, []any, map[string]any, function:
		return v
	case *any:
		if v == nil {
			return null
		}
		return normalize(reflect.ValueOf(*v))
	case reflect.Value:
		return normalize(v)
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	case reflect.Float32:
		return rv.Float()
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i))
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			if v := normalize(it.Value()); v != nil {
				out[it.Key().String()] = v
			}
		}
		return out
	}
	return nil
}

// Rules for leaving an argument out or giving undefined.
func firstUndefined(args []any) bool { return len(args) > 0 && args[0] == nil }
func noArgs(args []any) bool         { return len(args) == 0 }
func oneArg(args []any) bool         { return len(args) == 1 }

func isNumber(v any) bool { _, ok := v.(float64); return ok }
func isString(v any) bool { _, ok := v.(string); return ok }
func isStringOrFunc(v any) bool {
	_, ok := v.(function)
	return ok || isString(v)
}

// builtins are JSONata's functions.
var builtins = natives(map[string]spec{
	// Strings.
	"string": {fn: stringFn, undefined: firstUndefined, context: noArgs},
	"length": {fn: utf8.RuneCountInString, undefined: firstUndefined, context: noArgs},
	"substring": {fn: jlib.Substring, undefined: firstUndefined, context: func(a []any) bool {
		return len(a) == 1 && isNumber(a[0]) || len(a) == 2 && isNumber(a[0]) && isNumber(a[1])
	}},
	"substringBefore": {fn: jlib.SubstringBefore, undefined: firstUndefined, context: func(a []any) bool { return len(a) == 1 && isString(a[0]) }},
	"substringAfter":  {fn: jlib.SubstringAfter, undefined: firstUndefined, context: func(a []any) bool { return len(a) == 1 && isString(a[0]) }},
	"uppercase":       {fn: strings.ToUpper, undefined: firstUndefined, context: noArgs},
	"lowercase":       {fn: strings.ToLower, undefined: firstUndefined, context: noArgs},
	"pad": {fn: pad, undefined: firstUndefined, context: func(a []any) bool {
		return len(a) == 1 && isNumber(a[0]) || len(a) == 2 && isNumber(a[0]) && isString(a[1])
	}},
	"trim":     {fn: jlib.Trim, undefined: firstUndefined, context: noArgs},
	"contains": {fn: contains, undefined: firstUndefined, context: oneArg},
	"split": {fn: split, undefined: firstUndefined, context: func(a []any) bool {
		return len(a) == 1 && isStringOrFunc(a[0]) || len(a) == 2 && isStringOrFunc(a[0]) && isNumber(a[1])
	}},
	"join": {fn: jlib.Join, undefined: firstUndefined},
	"match": {fn: matchFn, undefined: firstUndefined, context: func(a []any) bool {
		return len(a) == 1 && !isString(a[0]) || len(a) == 2 && !isString(a[0]) && isNumber(a[1])
	}},
	"replace": {fn: replace, undefined: firstUndefined, context: func(a []any) bool {
		return len(a) == 2 && isStringOrFunc(a[0]) && isStringOrFunc(a[1]) || len(a) == 3 && isStringOrFunc(a[0]) && isStringOrFunc(a[1]) && isNumber(a[2])
	}},
	"formatNumber":       {fn: jlib.FormatNumber, undefined: firstUndefined, context: func(a []any) bool { return (len(a) == 1 || len(a) == 2) && isString(a[0]) }},
	"formatBase":         {fn: jlib.FormatBase, undefined: firstUndefined, context: noArgs},
	"decodeUrl":          {fn: jlib.DecodeURL, undefined: firstUndefined, context: noArgs},
	"decodeUrlComponent": {fn: jlib.DecodeURL, undefined: firstUndefined, context: noArgs},
	"encodeUrl":          {fn: jlib.EncodeURL, undefined: firstUndefined, context: noArgs},
	"encodeUrlComponent": {fn: jlib.EncodeURLComponent, undefined: firstUndefined, context: noArgs},
	// Numbers.
	"number":  {fn: jlib.Number, undefined: firstUndefined, context: noArgs},
	"abs":     {fn: math.Abs, undefined: firstUndefined, context: noArgs},
	"floor":   {fn: math.Floor, undefined: firstUndefined, context: noArgs},
	"ceil":    {fn: math.Ceil, undefined: firstUndefined, context: noArgs},
	"round":   {fn: jlib.Round, undefined: firstUndefined, context: noArgs},
	"power":   {fn: jlib.Power, undefined: firstUndefined, context: oneArg},
	"sqrt":    {fn: jlib.Sqrt, undefined: firstUndefined, context: noArgs},
	"sum":     {fn: jlib.Sum, undefined: firstUndefined},
	"max":     {fn: jlib.Max, undefined: firstUndefined},
	"min":     {fn: jlib.Min, undefined: firstUndefined},
	"average": {fn: jlib.Average, undefined: firstUndefined},
	// Booleans.
	"boolean": {fn: func(ctx context.Context, r *run, v any) (bool, error) { return r.truthy(ctx, v) }, undefined: firstUndefined, context: noArgs},
	"not": {fn: func(ctx context.Context, r *run, v any) (bool, error) {
		b, err := r.truthy(ctx, v)
		return !b, err
	}, undefined: firstUndefined, context: noArgs},
	"exists": {fn: func(v any) bool { return v != nil }},
	// Arrays.
	"count":    {fn: count},
	"distinct": {fn: distinct, undefined: firstUndefined},
	"reverse":  {fn: reverse, undefined: firstUndefined},
	"sort":     {fn: sortFn, undefined: firstUndefined},
	"shuffle":  {fn: jlib.Shuffle, undefined: firstUndefined},
	"zip":      {fn: jlib.Zip},
	"append":   {fn: appendFn, undefined: func(a []any) bool { return len(a) == 2 && a[0] == nil && a[1] == nil }},
	"map":      {fn: mapFn, undefined: firstUndefined},
	"filter":   {fn: filterFn, undefined: firstUndefined},
	"reduce":   {fn: reduceFn, undefined: firstUndefined},
	"single":   {fn: single, undefined: firstUndefined},
	// Objects.
	"each":   {fn: each, undefined: firstUndefined, context: oneArg},
	"sift":   {fn: sift, undefined: firstUndefined, context: oneArg},
	"keys":   {fn: keys, undefined: firstUndefined, context: noArgs},
	"lookup": {fn: lookup, undefined: firstUndefined},
	"spread": {fn: spread, undefined: firstUndefined, context: noArgs},
	"merge":  {fn: jlib.Merge, undefined: firstUndefined},
	"type":   {fn: typeOf, undefined: firstUndefined, context: noArgs},
	"error":  {fn: errorFn},
	// Dates.
	"fromMillis": {fn: jlib.FromMillis, undefined: firstUndefined, context: noArgs},
	"toMillis":   {fn: jlib.ToMillis, undefined: firstUndefined, context: noArgs},
	"now":        {fn: now},
	"millis":     {fn: func(r *run) float64 { return float64(r.now.UnixMilli()) }},
})

// stringFn is $string(value).
func stringFn(ctx context.Context, r *run, v any) (string, error) { return r.stringify(ctx, v) }

// stringify writes a value as $string does: a string as it is, a number
// with at most 15 significant digits, anything else as compact JSON.
// It counts a step for each value it writes.
func (r *run) stringify(ctx context.Context, v any) (string, error) {
	var n int64
	s, err := stringOf(v, &n)
	if err != nil {
		return "", err
	}
	return s, r.tick(ctx, n)
}

// stringOf writes v as $string does, adding to *n the number of values it
// wrote.
func stringOf(v any, n *int64) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case function:
		return "", nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return "", throw("D3001: Attempting to invoke string function on Infinity or NaN")
		}
	}
	var b strings.Builder
	if err := writeJSON(&b, v, 0, n); err != nil {
		return "", err
	}
	return b.String(), nil
}

// writeJSON writes v as compact JSON, numbers with 15 significant digits
// and functions as "", as JSONata's $string writes them.
func writeJSON(b *strings.Builder, v any, depth int, n *int64) error {
	*n++
	if depth > maxDepth {
		return errTooDeep
	}
	switch t := v.(type) {
	case nil, *any:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			b.WriteString("null")
			return nil
		}
		p, _ := strconv.ParseFloat(strconv.FormatFloat(t, 'g', 15, 64), 64)
		b.WriteString(FormatNumber(p))
	case string:
		writeQuoted(b, t)
	case function:
		b.WriteString(`""`)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, e, depth+1, n); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(t) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeQuoted(b, k)
			b.WriteByte(':')
			if err := writeJSON(b, t[k], depth+1, n); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		b.WriteString("null")
	}
	return nil
}

// writeQuoted writes s as a JSON string, as JSON.stringify does.
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&0xf])
				continue
			}
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
}

// pad is $pad(text, width, chars), refused before it is made when it
// would pass the memory budget.
func pad(r *run, s string, width int, chars jtypes.OptionalString) (string, error) {
	n := max(width, -width) - utf8.RuneCountInString(s)
	if n > 0 {
		if err := r.allocString(n * max(1, utf8.UTFMax)); err != nil {
			return "", err
		}
	}
	return jlib.Pad(s, width, chars), nil
}

// pattern reads a string-or-regex argument.
func pattern(fn string, i int, p any) (string, *regexp.Regexp, error) {
	switch t := p.(type) {
	case string:
		return t, nil, nil
	case *regex:
		return "", t.re, nil
	}
	return "", nil, throw("T0410: Argument %d of function %s does not match function signature", i, fn)
}

// contains is $contains(text, pattern).
func contains(s string, p any) (bool, error) {
	str, re, err := pattern("contains", 2, p)
	if err != nil {
		return false, err
	}
	if re != nil {
		return re.MatchString(s), nil
	}
	return strings.Contains(s, str), nil
}

// split is $split(text, separator, limit).
func split(r *run, s string, sep any, limit jtypes.OptionalInt) (any, error) {
	str, re, err := pattern("split", 2, sep)
	if err != nil {
		return nil, err
	}
	if limit.IsSet() && limit.Int < 0 {
		return nil, throw("D3020: Third argument of split function must evaluate to a positive number")
	}
	var parts []string
	if re != nil {
		parts = re.Split(s, -1)
	} else {
		parts = strings.Split(s, str)
	}
	if limit.IsSet() && limit.Int < len(parts) {
		parts = parts[:limit.Int]
	}
	if err := r.allocItems(len(parts)); err != nil {
		return nil, err
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// matchFn is $match(text, pattern, limit): the matches, each an object
// with the match, its index and its groups.
func matchFn(r *run, s string, p any, limit jtypes.OptionalInt) (any, error) {
	rx, ok := p.(*regex)
	if !ok {
		return nil, throw("T0410: Argument 2 of function match does not match function signature")
	}
	if limit.IsSet() && limit.Int < 0 {
		return nil, throw("D3040: Third argument of match function must evaluate to a positive number")
	}
	n := -1
	if limit.IsSet() {
		n = limit.Int
	}
	locs := rx.re.FindAllStringSubmatchIndex(s, n)
	if err := r.allocObject(4 * len(locs)); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(locs))
	for _, loc := range locs {
		groups := []any{}
		for i := 2; i < len(loc); i += 2 {
			g := ""
			if loc[i] >= 0 {
				g = s[loc[i]:loc[i+1]]
			}
			groups = append(groups, g)
		}
		out = append(out, map[string]any{"match": s[loc[0]:loc[1]], "index": float64(loc[0]), "groups": groups})
	}
	return collapse(out, false), nil
}

// replace is $replace(text, pattern, replacement, limit): the
// replacement is a string ("$1" is the first group) or a function of the
// match object. Its result is counted before it is made.
func replace(ctx context.Context, r *run, s string, p any, repl any, limit jtypes.OptionalInt) (any, error) {
	str, re, err := pattern("replace", 2, p)
	if err != nil {
		return nil, err
	}
	if re == nil && str == "" {
		return nil, throw("D3010: Second argument of replace function cannot be an empty string")
	}
	if limit.IsSet() && limit.Int < 0 {
		return nil, throw("D3011: Fourth argument of replace function must evaluate to a positive number")
	}
	n := -1
	if limit.IsSet() {
		n = limit.Int
	}
	var locs [][]int
	if re != nil {
		locs = re.FindAllStringSubmatchIndex(s, n)
	} else {
		for from := 0; n < 0 || len(locs) < n; {
			i := strings.Index(s[from:], str)
			if i < 0 {
				break
			}
			locs = append(locs, []int{from + i, from + i + len(str)})
			from += i + len(str)
		}
	}
	fn, isFn := repl.(function)
	text, isText := repl.(string)
	if !isFn && !isText {
		return nil, throw("T0410: Argument 3 of function replace does not match function signature")
	}
	if isText {
		if err := r.allocString(len(s) + len(locs)*len(text)); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		if err := r.tick(ctx, 1); err != nil {
			return nil, err
		}
		b.WriteString(s[last:loc[0]])
		last = loc[1]
		if isText {
			b.WriteString(expandGroups(text, s, loc))
			continue
		}
		groups := []any{}
		for i := 2; i < len(loc); i += 2 {
			g := ""
			if loc[i] >= 0 {
				g = s[loc[i]:loc[i+1]]
			}
			groups = append(groups, g)
		}
		m := map[string]any{"match": s[loc[0]:loc[1]], "index": float64(loc[0]), "groups": groups}
		v, err := r.apply(ctx, fn, nil, []any{m})
		if err != nil {
			return nil, err
		}
		out, ok := v.(string)
		if !ok {
			return nil, throw("D3012: Attempted to replace a matched string with a non-string value")
		}
		if err := r.allocString(len(out)); err != nil {
			return nil, err
		}
		b.WriteString(out)
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// expandGroups writes a replacement text: "$0" is the match, "$1" its
// first group, "$$" a "$".
func expandGroups(text, s string, loc []int) string {
	if !strings.Contains(text, "$") {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '$' || i+1 >= len(text) {
			b.WriteByte(c)
			continue
		}
		if text[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j == i+1 {
			b.WriteByte(c)
			continue
		}
		g, _ := strconv.Atoi(text[i+1 : j])
		if 2*g+1 < len(loc) {
			if loc[2*g] >= 0 {
				b.WriteString(s[loc[2*g]:loc[2*g+1]])
			}
		}
		i = j - 1
	}
	return b.String()
}

// count is $count(array).
func count(v any) float64 {
	if arr, ok := v.([]any); ok {
		return float64(len(arr))
	}
	if v == nil {
		return 0
	}
	return 1
}

// distinct is $distinct(array): its items without repeats.
func distinct(ctx context.Context, r *run, v any) (any, error) {
	arr, ok := v.([]any)
	if !ok {
		return v, nil
	}
	if err := r.allocItems(len(arr)); err != nil {
		return nil, err
	}
	out := []any{}
	seen := map[string]bool{}
	for _, e := range arr {
		if err := r.tick(ctx, 1); err != nil {
			return nil, err
		}
		k, err := r.stringify(ctx, e)
		if err != nil {
			return nil, err
		}
		if err := r.allocString(len(k)); err != nil {
			return nil, err
		}
		k = typeOf(e) + ":" + k
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out, nil
}

// reverse is $reverse(array).
func reverse(r *run, v any) (any, error) {
	arr := arrayOf(v)
	if err := r.allocItems(len(arr)); err != nil {
		return nil, err
	}
	out := make([]any, len(arr))
	for i, e := range arr {
		out[len(arr)-1-i] = e
	}
	return out, nil
}

// appendFn is $append(array1, array2).
func appendFn(r *run, a, b any) (any, error) {
	if b == nil {
		return a, nil
	}
	if a == nil {
		return b, nil
	}
	x, y := arrayOf(a), arrayOf(b)
	if err := r.allocItems(len(x) + len(y)); err != nil {
		return nil, err
	}
	return append(append(make([]any, 0, len(x)+len(y)), x...), y...), nil
}

// hofArgs are the arguments a higher-order function gives f: the value,
// then as many of the others as f takes.
func hofArgs(f function, args ...any) []any {
	return args[:min(max(f.arity(), 1), len(args))]
}

// callable reads a function argument.
func callable(fn string, i int, v any) (function, error) {
	f, ok := v.(function)
	if !ok {
		return nil, throw("T0410: Argument %d of function %s does not match function signature", i, fn)
	}
	return f, nil
}

// mapFn is $map(array, function).
func mapFn(ctx context.Context, r *run, v any, fv any) (any, error) {
	f, err := callable("map", 2, fv)
	if err != nil {
		return nil, err
	}
	arr := arrayOf(v)
	if err := r.allocItems(len(arr)); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(arr))
	for i, e := range arr {
		res, err := r.apply(ctx, f, nil, hofArgs(f, e, float64(i), arr))
		if err != nil {
			return nil, err
		}
		if res != nil {
			out = append(out, res)
		}
	}
	return collapse(out, false), nil
}

// filterFn is $filter(array, function).
func filterFn(ctx context.Context, r *run, v any, fv any) (any, error) {
	f, err := callable("filter", 2, fv)
	if err != nil {
		return nil, err
	}
	arr := arrayOf(v)
	if err := r.allocItems(len(arr)); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(arr))
	for i, e := range arr {
		res, err := r.apply(ctx, f, nil, hofArgs(f, e, float64(i), arr))
		if err != nil {
			return nil, err
		}
		keep, err := r.truthy(ctx, res)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, e)
		}
	}
	return collapse(out, false), nil
}

// reduceFn is $reduce(array, function, init).
func reduceFn(ctx context.Context, r *run, v any, fv any, init jtypes.OptionalValue) (any, error) {
	f, err := callable("reduce", 2, fv)
	if err != nil {
		return nil, err
	}
	if f.arity() < 2 {
		return nil, throw("D3050: The second argument of reduce function must be a function with at least two arguments")
	}
	arr := arrayOf(v)
	var acc any
	i := 0
	switch {
	case init.IsSet():
		acc = normalize(init.Value)
	case len(arr) > 0:
		acc, i = arr[0], 1
	}
	for ; i < len(arr); i++ {
		args := []any{acc, arr[i], float64(i), arr}
		if acc, err = r.apply(ctx, f, nil, args[:min(max(f.arity(), 2), 4)]); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// single is $single(array, function): the one item for which function is
// true.
func single(ctx context.Context, r *run, v any, fv jtypes.OptionalValue) (any, error) {
	var f function
	if fv.IsSet() {
		var err error
		if f, err = callable("single", 2, normalize(fv.Value)); err != nil {
			return nil, err
		}
	}
	var found any
	n := 0
	arr := arrayOf(v)
	for i, e := range arr {
		keep := true
		if f != nil {
			res, err := r.apply(ctx, f, nil, hofArgs(f, e, float64(i), arr))
			if err != nil {
				return nil, err
			}
			if keep, err = r.truthy(ctx, res); err != nil {
				return nil, err
			}
		}
		if keep {
			if n++; n > 1 {
				return nil, throw("D3138: The $single() function expected exactly 1 matching result.  Instead it matched more.")
			}
			found = e
		}
	}
	if n == 0 {
		return nil, throw("D3139: The $single() function expected exactly 1 matching result.  Instead it matched 0.")
	}
	return found, nil
}

// sortFn is $sort(array, function): numbers or strings in order, or in
// the order function gives (it is true when its first argument goes after
// its second).
func sortFn(ctx context.Context, r *run, v any, fv jtypes.OptionalValue) (any, error) {
	arr := arrayOf(v)
	if err := r.allocItems(2 * len(arr)); err != nil {
		return nil, err
	}
	if !fv.IsSet() {
		nums, strs := true, true
		for _, e := range arr {
			nums = nums && isNumber(e)
			strs = strs && isString(e)
		}
		if !nums && !strs {
			return nil, throw("D3070: The single argument form of the sort function can only be applied to an array of strings or an array of numbers.  Use the second argument to specify a comparison function")
		}
		out := append([]any{}, arr...)
		var err error
		out, err = mergeSort(ctx, r, out, func(a, b any) (bool, error) { return less(b, a), nil })
		return out, err
	}
	f, err := callable("sort", 2, normalize(fv.Value))
	if err != nil {
		return nil, err
	}
	out := append([]any{}, arr...)
	return mergeSort(ctx, r, out, func(a, b any) (bool, error) {
		res, err := r.apply(ctx, f, nil, []any{a, b})
		if err != nil {
			return false, err
		}
		return r.truthy(ctx, res)
	})
}

// mergeSort sorts items stably; after(a, b) is true when a goes after b.
func mergeSort(ctx context.Context, r *run, items []any, after func(a, b any) (bool, error)) ([]any, error) {
	if len(items) < 2 {
		return items, nil
	}
	mid := len(items) / 2
	left, err := mergeSort(ctx, r, items[:mid], after)
	if err != nil {
		return nil, err
	}
	right, err := mergeSort(ctx, r, items[mid:], after)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(items))
	for len(left) > 0 && len(right) > 0 {
		if err := r.tick(ctx, 1); err != nil {
			return nil, err
		}
		swap, err := after(left[0], right[0])
		if err != nil {
			return nil, err
		}
		if swap {
			out, right = append(out, right[0]), right[1:]
		} else {
			out, left = append(out, left[0]), left[1:]
		}
	}
	return append(append(out, left...), right...), nil
}

// each is $each(object, function): function of each value and key.
func each(ctx context.Context, r *run, v any, fv any) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, throw("T0410: Argument 1 of function each does not match function signature")
	}
	f, err := callable("each", 2, fv)
	if err != nil {
		return nil, err
	}
	if err := r.allocItems(len(obj)); err != nil {
		return nil, err
	}
	var out []any
	for _, k := range sortedKeys(obj) {
		res, err := r.apply(ctx, f, nil, hofArgs(f, obj[k], k, obj))
		if err != nil {
			return nil, err
		}
		if res != nil {
			out = append(out, res)
		}
	}
	return collapse(out, false), nil
}

// sift is $sift(object, function): the entries for which function is
// true.
func sift(ctx context.Context, r *run, v any, fv any) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, throw("T0410: Argument 1 of function sift does not match function signature")
	}
	f, err := callable("sift", 2, fv)
	if err != nil {
		return nil, err
	}
	if err := r.allocObject(len(obj)); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range sortedKeys(obj) {
		res, err := r.apply(ctx, f, nil, hofArgs(f, obj[k], k, obj))
		if err != nil {
			return nil, err
		}
		keep, err := r.truthy(ctx, res)
		if err != nil {
			return nil, err
		}
		if keep {
			out[k] = obj[k]
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// keys is $keys(object): its keys in order; of an array, the keys of its
// objects, each once.
func keys(r *run, v any) (any, error) {
	var out []any
	seen := map[string]bool{}
	for _, e := range arrayOf(v) {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range sortedKeys(m) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	if err := r.allocItems(len(out)); err != nil {
		return nil, err
	}
	return collapse(out, false), nil
}

// spread is $spread(object): an object of one entry for each of its
// entries, in key order; of an array, the spread of each of its items.
func spread(r *run, v any) (any, error) {
	var out []any
	for _, e := range arrayOf(v) {
		m, ok := e.(map[string]any)
		if !ok {
			out = append(out, e)
			continue
		}
		if err := r.allocObject(len(m)); err != nil {
			return nil, err
		}
		for _, k := range sortedKeys(m) {
			out = append(out, map[string]any{k: m[k]})
		}
	}
	return collapse(out, false), nil
}

// lookup is $lookup(object, key).
func lookup(ctx context.Context, r *run, v any, key string) (any, error) {
	return r.name(ctx, key, v)
}

// typeOf is $type(value).
func typeOf(v any) string {
	switch v.(type) {
	case *any:
		return "null"
	case function:
		return "function"
	case float64:
		return "number"
	}
	return typeName(v)
}

// errorFn is $error(message).
func errorFn(msg jtypes.OptionalString) (any, error) {
	if !msg.IsSet() {
		return nil, errors.New("$error() function evaluated")
	}
	return nil, errors.New(msg.String)
}

// now is $now(picture, timezone): the time of the evaluation.
func now(r *run, picture, tz jtypes.OptionalString) (string, error) {
	return jlib.FromMillis(r.now.UnixMilli(), picture, tz)
}
