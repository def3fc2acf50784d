package jsonpath

// The ASL extensions to the intrinsic functions. Their behaviour is
// documented on the intrinsic type.

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonvalue"
)

func evalArrayConcat(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.ArrayConcat"
	n := 0
	for i := range args {
		arr, err := arrayArg(fn, args, i)
		if err != nil {
			return nil, err
		}
		n += len(arr)
	}
	out := make([]any, 0, n)
	for _, a := range args {
		out = append(out, a.([]any)...)
	}
	return out, nil
}

func evalMathSubtract(_ *call, args []any, _ Env) (any, error) {
	return decimalOp("States.MathSubtract", args, decimalSub)
}

func evalMathMultiply(_ *call, args []any, _ Env) (any, error) {
	return decimalOp("States.MathMultiply", args, decimalMul)
}

func decimalOp(fn string, args []any, op func(a, b exactDecimal) exactDecimal) (any, error) {
	var d [2]exactDecimal
	for i := range d {
		n, err := numberArg(fn, args, i)
		if err != nil {
			return nil, err
		}
		var ok bool
		if d[i], ok = parseExactDecimal(string(n)); !ok || !d[i].arithmeticOK() {
			return nil, invalidArgs(fn, "argument %d (%s) is out of range", i+1, n)
		}
	}
	r := op(d[0], d[1])
	if !r.arithmeticOK() {
		return nil, invalidArgs(fn, "the result is out of range")
	}
	return json.Number(r.String()), nil
}

func evalMerge(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Merge"
	out, err := objectArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(args); i++ {
		m, err := objectArg(fn, args, i)
		if err != nil {
			return nil, err
		}
		out = deepMerge(out, m)
	}
	return out, nil
}

// deepMerge returns a new object with the keys of a and b; where both hold
// an object the two merge, otherwise b's value wins.
func deepMerge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, bv := range b {
		if am, ok := out[k].(map[string]any); ok {
			if bm, ok := bv.(map[string]any); ok {
				out[k] = deepMerge(am, bm)
				continue
			}
		}
		out[k] = bv
	}
	return out
}

// keyArgs returns the key names passed after the object.
func keyArgs(fn string, args []any) (map[string]bool, error) {
	keys := make(map[string]bool, len(args)-1)
	for i := 1; i < len(args); i++ {
		k, err := stringArg(fn, args, i)
		if err != nil {
			return nil, err
		}
		keys[k] = true
	}
	return keys, nil
}

func evalPick(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Pick"
	obj, err := objectArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	keys, err := keyArgs(fn, args)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(keys))
	for k := range keys {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

func evalOmit(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Omit"
	obj, err := objectArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	keys, err := keyArgs(fn, args)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if !keys[k] {
			out[k] = v
		}
	}
	return out, nil
}

func evalCoalesce(_ *call, args []any, _ Env) (any, error) {
	for _, a := range args {
		if a != nil {
			return a, nil
		}
	}
	return nil, nil
}

func evalTokenCount(_ *call, args []any, _ Env) (any, error) {
	n, err := EstimateTokens(args[0])
	if err != nil {
		return nil, invalidArgs("States.TokenCount", "%v", err)
	}
	return jsonvalue.IntNumber(n), nil
}

func evalTruncate(_ *call, args []any, _ Env) (any, error) {
	const fn = "States.Truncate"
	text, err := stringArg(fn, args, 0)
	if err != nil {
		return nil, err
	}
	maxTokens, err := intArg(fn, args, 1)
	if err != nil {
		return nil, err
	}
	if maxTokens < 0 {
		return nil, invalidArgs(fn, "maxTokens must not be negative, got %d", maxTokens)
	}
	if maxTokens >= int64(len(text)) { // 4*maxTokens runes or more: nothing to cut
		return text, nil
	}
	limit := 4 * int(maxTokens)
	n := 0
	for i := range text {
		if n == limit {
			return text[:i] + "...", nil
		}
		n++
	}
	return text, nil
}

func evalCurrentCost(_ *call, _ []any, env Env) (any, error) {
	return executionTotal(env, "Cost"), nil
}

func evalCurrentTokens(_ *call, _ []any, env Env) (any, error) {
	return executionTotal(env, "TokensUsed"), nil
}

// executionTotal reads $$.Execution.<field>, or 0 when it is absent or not a number.
func executionTotal(env Env, field string) json.Number {
	if ctx, ok := env.Context().(map[string]any); ok {
		if ex, ok := ctx["Execution"].(map[string]any); ok {
			if n, ok := ex[field].(json.Number); ok {
				return n
			}
		}
	}
	return "0"
}

// EstimateTokens is the engine's token estimate of a value, the one
// States.TokenCount and Context.MaxTokens use: a quarter of the characters (runes) of a string, or of the compact
// JSON text of any other value, rounded up. It fails only for a value
// outside the JSON model.
func EstimateTokens(v any) (int64, error) {
	text, ok := v.(string)
	if !ok {
		b, err := jsonvalue.Marshal(v)
		if err != nil {
			return 0, err
		}
		text = string(b)
	}
	return int64((utf8.RuneCountInString(text) + 3) / 4), nil
}
