package jsonata

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/google/uuid"
)

// maxStepRange is the most items $range makes (the limit of
// States.ArrayRange).
const maxStepRange = 1000

// stepFunctions are the functions Step Functions adds to JSONata, with its
// $random taking a seed, and the JSONata 2 functions the library lacks.
// They replace the library's functions of the same name in the
// expressions that call them.
var stepFunctions = natives(map[string]spec{
	"partition": {fn: partition},
	"range":     {fn: rangeOf},
	"hash":      {fn: hashOf},
	"random":    {fn: random},
	"uuid":      {fn: newUUID},
	"parse":     {fn: parse},
	// JSONata 2 functions the library lacks.
	"base64encode": {fn: base64Encode, undefined: firstUndefined},
	"base64decode": {fn: base64Decode, undefined: firstUndefined},
})

// base64Encode is $base64encode(text): the base64 of text's UTF-8 bytes.
func base64Encode(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// base64Decode is $base64decode(text): the text whose UTF-8 bytes text
// encodes in base64.
func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("the text given to $base64decode is not base64: %v", err)
	}
	if !utf8.Valid(b) {
		return "", errors.New("the text given to $base64decode does not decode to UTF-8 text")
	}
	return string(b), nil
}

// arg converts an argument of a call into one of our values; undefined
// reads as absent.
func arg(v reflect.Value) (any, bool, error) {
	if !v.IsValid() {
		return nil, false, nil
	}
	x, err := fromJSONata(v.Interface())
	return x, true, err
}

// number reads an argument that must be a number.
func number(fn string, i int, v reflect.Value) (float64, error) {
	x, _, err := arg(v)
	n, ok := x.(json.Number)
	if err != nil || !ok {
		return 0, fmt.Errorf("T0410: Argument %d of function %s does not match function signature", i, fn)
	}
	f, _ := jsonvalue.Float64(n)
	return f, nil
}

// partition splits an array into chunks of a size: $partition(array, size).
func partition(a, size reflect.Value) (any, error) {
	x, _, err := arg(a)
	if err != nil {
		return nil, err
	}
	arr, ok := x.([]any)
	if !ok {
		return nil, errors.New("T0410: Argument 1 of function partition does not match function signature")
	}
	n, err := number("partition", 2, size)
	if err != nil {
		return nil, err
	}
	if n != math.Trunc(n) || n < 1 {
		return nil, fmt.Errorf("the chunk size of $partition must be a positive integer, not %s", FormatNumber(n))
	}
	chunk := int(math.Min(n, float64(len(arr)+1)))
	out := []any{}
	for i := 0; i < len(arr); i += chunk {
		out = append(out, arr[i:min(i+chunk, len(arr))])
	}
	return toJSONata(out), nil
}

// rangeOf makes the numbers from start to end, both included, by step:
// $range(start, end, step). One number alone is that number, as a JSONata
// sequence of one item is.
func rangeOf(start, end, step reflect.Value) (any, error) {
	var f [3]float64
	for i, v := range []reflect.Value{start, end, step} {
		n, err := number("range", i+1, v)
		if err != nil {
			return nil, err
		}
		f[i] = n
	}
	if f[2] == 0 {
		return nil, errors.New("the step of $range must not be 0")
	}
	count := math.Floor((f[1]-f[0])/f[2]) + 1
	if count > maxStepRange {
		return nil, fmt.Errorf("$range would make %s items, more than %d", FormatNumber(count), maxStepRange)
	}
	out := []any{}
	for i := 0; float64(i) < count; i++ {
		out = append(out, f[0]+float64(i)*f[2])
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// hashes are the algorithms $hash knows, by AWS's names.
var hashes = map[string]func() hash.Hash{
	"MD5":     md5.New,
	"SHA-1":   sha1.New,
	"SHA-256": sha256.New,
	"SHA-384": sha512.New384,
	"SHA-512": sha512.New,
}

// hashOf is the hex digest of a string: $hash(data, algorithm).
func hashOf(data, algorithm reflect.Value) (any, error) {
	d, _, _ := arg(data)
	s, ok := d.(string)
	if !ok {
		return nil, errors.New("T0410: Argument 1 of function hash does not match function signature")
	}
	a, _, _ := arg(algorithm)
	name, _ := a.(string)
	newHash, ok := hashes[name]
	if !ok {
		return nil, fmt.Errorf("the algorithm of $hash must be one of MD5, SHA-1, SHA-256, SHA-384 or SHA-512, not %s", compact(a))
	}
	h := newHash()
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// random is a number from 0 (included) to 1 (excluded): $random() draws
// one; $random(seed) always gives the same one for the same seed.
func random(seed ...reflect.Value) (any, error) {
	if len(seed) == 0 {
		return rand.Float64(), nil
	}
	if len(seed) > 1 {
		return nil, fmt.Errorf("T0410: Argument count of function random does not match function signature (%d given)", len(seed))
	}
	s, ok, err := arg(seed[0])
	if err != nil || !ok {
		return nil, errors.New("T0410: Argument 1 of function random does not match function signature")
	}
	h := fnv.New64a()
	h.Write([]byte(compact(s)))
	return rand.New(rand.NewPCG(h.Sum64(), 0)).Float64(), nil
}

// newUUID is a random version 4 UUID: $uuid().
func newUUID() string { return uuid.NewString() }

// parse reads a JSON text: $parse(text).
func parse(text reflect.Value) (any, error) {
	x, _, _ := arg(text)
	s, ok := x.(string)
	if !ok {
		return nil, errors.New("T0410: Argument 1 of function parse does not match function signature")
	}
	v, err := jsonvalue.Decode([]byte(strings.TrimSpace(s)))
	if err != nil {
		return nil, fmt.Errorf("the text given to $parse is not JSON: %v", err)
	}
	return toJSONata(v), nil
}
