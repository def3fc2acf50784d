package contextwin_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/contextwin"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// A Context of Strategy "semantic" keeps the TopK candidates most similar
// to the query. This embedder knows two topics; the engine passes its own.
func ExampleBuildWith() {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "End": true,
		"Context": {"Strategy": "semantic", "Query.$": "$.question", "Candidates": ["$.docs[*]"], "TopK": 1}}}}`
	m, err := states.Parse([]byte(def))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := m.States["T"].(*states.Task).Context
	input, _ := jsonvalue.Decode([]byte(`{"question": "refund?", "docs": ["shipping takes 3 days", "refunds take 5 days"]}`))
	embed := func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = []float32{0, 1}
			if strings.Contains(t, "refund") {
				out[i] = []float32{1, 0}
			}
		}
		return out, nil
	}
	w, err := contextwin.BuildWith(context.Background(), cfg, input, contextwin.Funcs{Embed: embed, Query: "refund?"})
	if err != nil {
		fmt.Println(err)
		return
	}
	content, _ := jsonvalue.Marshal(w.Content)
	fmt.Println(string(content))
	fmt.Println(w.Dropped, w.Picked)
	// Output:
	// {"docs":["refunds take 5 days"],"question":"refund?"}
	// [$.docs[0]] [{$.docs[1] 1}]
}
