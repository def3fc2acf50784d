package jsonvalue_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/aslrun/aslrun/jsonvalue"
)

func ExampleDecode() {
	v, err := jsonvalue.Decode([]byte(`{"total": 64.240, "big": 12345678901234567890123, "tags": ["a"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := jsonvalue.Marshal(v)
	fmt.Println(string(out))

	_, err = jsonvalue.Decode([]byte(`{"a":[1,2,{"b":1,"b":2}]}`))
	var je *jsonvalue.JSONError
	if errors.As(err, &je) {
		fmt.Println(je.Offset, je.Path)
	}
	fmt.Println(err)
	// Output:
	// {"big":12345678901234567890123,"tags":["a"],"total":64.240}
	// 17 $.a[2]
	// invalid JSON at byte 17 ($.a[2]): duplicate key "b"
}

func ExampleCanonical() {
	a, _ := jsonvalue.Decode([]byte(`{"n": 2.0, "s": "A\u030a", "x": 0.10}`))
	b, _ := jsonvalue.Decode([]byte(`{"x": 1e-1, "s": "Å", "n": 20e-1}`))
	ca, _ := jsonvalue.Canonical(a)
	cb, _ := jsonvalue.Canonical(b)
	fmt.Println(string(ca))
	fmt.Println(string(cb))
	// Output:
	// {"n":2,"s":"Å","x":0.1}
	// {"n":2,"s":"Å","x":0.1}
}

func ExampleNormalize() {
	type result struct {
		Score float64 `json:"score"`
		Label string  `json:"label"`
	}
	v, _ := jsonvalue.Normalize(map[string]any{"count": 3, "result": result{Score: 0.25, Label: "ok"}})
	out, _ := jsonvalue.Marshal(v)
	fmt.Println(string(out))

	_, err := jsonvalue.Normalize(map[string]any{"score": math.NaN()})
	fmt.Println(err)
	// Output:
	// {"count":3,"result":{"label":"ok","score":0.25}}
	// invalid JSON value at $.score: non-finite number NaN
}

func ExampleCompareNumbers() {
	fmt.Println(jsonvalue.CompareNumbers("1", "1.0"))
	fmt.Println(jsonvalue.CompareNumbers("0.1", "0.10000000000000001"))
	fmt.Println(jsonvalue.CompareNumbers("1e400", "99999999999999999999"))
	// Output:
	// 0
	// -1
	// 1
}
