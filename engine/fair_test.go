package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
)

// barrier is an agent that answers once n calls are in flight at once:
// a Map whose items it serves ends only if they all ran together.
func barrier(n int) agents.Agent {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return agents.Func(func(ctx context.Context, _ *agents.Request) (any, error) {
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return map[string]any{"ok": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// TestFanOutReachesMaxConcurrency: the fair share bounds how many items
// run at once only while they are busy; items that wait (for an agent's
// answer, or for nested items of their own) let the others in, so a Map
// of 64 items that all wait for each other ends, flat and nested (8 items
// of 8 each: the outer items hold their turns while their inner Maps run).
func TestFanOutReachesMaxConcurrency(t *testing.T) {
	for name, def := range map[string]string{
		"flat": `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":64,
			"ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Wait","End":true}}},"End":true}}}`,
		"nested": `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items[0:8]","MaxConcurrency":8,
			"ItemSelector":{"items.$":"$.items[0:8]"},
			"ItemProcessor":{"StartAt":"Inner","States":{"Inner":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":8,
				"ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Wait","End":true}}},"End":true}}},"End":true}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				items := make([]string, 64)
				for i := range items {
					items[i] = "1"
				}
				input := `{"items":[` + strings.Join(items, ",") + `]}`
				start := time.Now()
				res := execute(t, def, input, map[string]agents.Agent{"Wait": barrier(64)})
				if res.Status != "SUCCEEDED" {
					t.Fatalf("status %s (%s: %s)", res.Status, res.Error, res.Cause)
				}
				// Each waiting item lets the next in within a quantum
				// (5 ms): the bubble's clock moved by well under a second.
				if d := time.Since(start); d > time.Second {
					t.Errorf("the items were all in flight after %v, want well under a second", d)
				}
			})
		})
	}
}
