package vector_test

import (
	"fmt"

	"github.com/aslrun/aslrun/memory/vector"
)

func ExampleIndex() {
	x := vector.NewIndex(vector.Config{})
	_ = x.Add("cat", []float32{0.9, 0.1, 0})
	_ = x.Add("dog", []float32{0.8, 0.3, 0.1})
	_ = x.Add("car", []float32{0, 0.2, 0.9})
	_ = x.Add("expired", []float32{0.9, 0.1, 0})

	live := func(id string) bool { return id != "expired" }
	hits, err := x.Search([]float32{1, 0.2, 0}, 2, 0.5, live)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hits {
		fmt.Printf("%s %.2f\n", h.ID, h.Score)
	}

	b := vector.Encode([]float32{0.5, -1})
	v, err := vector.Decode(b)
	fmt.Println(len(b), v, err)
	// Output:
	// cat 1.00
	// dog 0.98
	// 8 [0.5 -1] <nil>
}
