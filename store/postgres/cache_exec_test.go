package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// TestTaskCacheAcrossServers: two servers on one database run, at the
// same time, executions whose Task has the same cache key: the agent is
// called once, every execution gets its result, and the later ones are
// cache hits.
func TestTaskCacheAcrossServers(t *testing.T) {
	url := testServer.Schema(t)
	ctx := context.Background()
	var calls atomic.Int64
	slow := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		calls.Add(1)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return "classified", nil
	})
	var xs []*engine.Executor
	for range 2 {
		db, err := Open(ctx, url, Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		reg := agents.NewRegistry()
		if err := reg.Register("Classifier", slow); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, engine.New(engine.Config{Store: db, Agents: reg}))
	}
	m, err := states.Parse([]byte(`{"StartAt":"C","States":{"C":{"Type":"Task","Agent":"Classifier","Parameters":{"text":"same"},"Cache":{},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([]string, 6)
	for i := range outs {
		wg.Go(func() {
			res, err := xs[i%2].Run(ctx, m, map[string]any{}, engine.StartOptions{ID: fmt.Sprintf("c%d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			outs[i] = fmt.Sprint(res.Status, " ", res.Output)
		})
	}
	wg.Wait()
	for i, o := range outs {
		if o != "SUCCEEDED classified" {
			t.Errorf("c%d: %s", i, o)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the agent was called %d times across two servers, want once", n)
	}
}
