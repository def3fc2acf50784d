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
// of 8 each, whose outer items wait for their inner Maps).
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
				// An item gives its turn back while its agent works, and a
				// Map while its items run: the next goes at once, with no
				// quantum waited for (the bubble's clock did not move).
				if d := time.Since(start); d != 0 {
					t.Errorf("the items were all in flight after %v, want at once", d)
				}
			})
		})
	}
}
