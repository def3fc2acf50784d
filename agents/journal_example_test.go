package agents_test

import (
	"context"
	"fmt"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// ExampleRequest_RunStep: an agent whose lookup is a durable step. Run
// again after a crash, it gets the lookup's recorded answer instead of
// asking again.
func ExampleRequest_RunStep() {
	lookups := 0
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		order, err := req.RunStep(ctx, "lookup order", func(ctx context.Context) (any, error) {
			lookups++
			return map[string]any{"id": "A-17", "status": "shipped"}, nil
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"answer": "your order is " + order.(map[string]any)["status"].(string)}, nil
	})
	reg := agents.NewRegistry()
	_ = reg.Register("Support", a)
	x := engine.New(engine.Config{Agents: reg, Store: store.NewMemory()})
	m, _ := states.Parse([]byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Support","End":true}}}`))
	res, _ := x.Run(context.Background(), m, map[string]any{}, engine.StartOptions{})
	out, _ := jsonvalue.Marshal(res.Output)
	fmt.Println(string(out), lookups)
	// Output: {"answer":"your order is shipped"} 1
}
