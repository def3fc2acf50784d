package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
)

// counting is an agent that counts its calls and answers with its input's
// text and the call's number.
func counting(n *atomic.Int64) agents.Agent {
	return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		k := n.Add(1)
		in, _ := req.Input.(map[string]any)
		return map[string]any{"label": fmt.Sprint("label of ", in["text"]), "call": k}, nil
	})
}

const classify = `{"StartAt":"Classify","States":{"Classify":{"Type":"Task","Agent":"Classifier",
	"Parameters":{"text.$":"$.text"},%s,"End":true}}}`

// TestTaskCacheCallsOnce: two executions of a workflow with the same key
// call the agent once, the second getting the first's result; another key
// calls it again; Scope execution shares nothing between executions; an
// Enabled false block caches nothing.
func TestTaskCacheCallsOnce(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		inputs      []string
		calls       int64
	}{
		{"same input", `"Cache":{"TTL":"1h"}`, []string{`{"text":"a"}`, `{"text":"a"}`}, 1},
		{"another input", `"Cache":{}`, []string{`{"text":"a"}`, `{"text":"b"}`}, 2},
		{"key from a path", `"Cache":{"Key.$":"$.id"}`, []string{`{"text":"a","id":1}`, `{"text":"b","id":1}`}, 1},
		{"key text", `"Cache":{"Key":"ticket-{{$.id}}"}`, []string{`{"text":"a","id":1}`, `{"text":"a","id":2}`}, 2},
		{"execution scope", `"Cache":{"Scope":"execution"}`, []string{`{"text":"a"}`, `{"text":"a"}`}, 2},
		{"disabled", `"Cache":{"Enabled":false}`, []string{`{"text":"a"}`, `{"text":"a"}`}, 2},
		{"idempotent", `"Idempotent":true,"IdempotencyKey.$":"$.id","CacheTTL":"10m"`, []string{`{"text":"a","id":"x"}`, `{"text":"zzz","id":"x"}`}, 1},
		{"cache result", `"CacheResult":true`, []string{`{"text":"a"}`, `{"text":"a"}`}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier")})
			def := fmt.Sprintf(classify, tc.block)
			var outs []string
			for _, in := range tc.inputs {
				res := runOn(t, x, def, in)
				outs = append(outs, fmt.Sprint(res.Output))
			}
			if got := n.Load(); got != tc.calls {
				t.Errorf("%d calls, want %d (outputs %v)", got, tc.calls, outs)
			}
			if tc.calls == 1 && outs[0] != outs[1] {
				t.Errorf("a cache hit gave %s, the first call %s", outs[1], outs[0])
			}
		})
	}
}

// TestTaskCacheTTL: an entry past its TTL is not returned: the agent is
// called again.
func TestTaskCacheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier")})
		def := fmt.Sprintf(classify, `"Cache":{"TTL":"30m"}`)
		runOn(t, x, def, `{"text":"a"}`)
		runOn(t, x, def, `{"text":"a"}`)
		time.Sleep(31 * time.Minute)
		runOn(t, x, def, `{"text":"a"}`)
		if got := n.Load(); got != 2 {
			t.Errorf("%d calls, want 2 (once more after the TTL)", got)
		}
	})
}

// TestTaskCacheFailureNotCached: a failed call stores nothing, and its
// claim is released: the next execution calls the agent.
func TestTaskCacheFailureNotCached(t *testing.T) {
	var n atomic.Int64
	flaky := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		if n.Add(1) == 1 {
			return nil, fmt.Errorf("down")
		}
		return "ok", nil
	})
	x := engine.New(engine.Config{Agents: registry(t, flaky, "Classifier")})
	def := fmt.Sprintf(classify, `"Cache":{}`)
	if res := runOn(t, x, def, `{"text":"a"}`); res.Status != engine.StatusFailed {
		t.Fatalf("first: %s", res.Status)
	}
	runOn(t, x, def, `{"text":"a"}`)
	runOn(t, x, def, `{"text":"a"}`)
	if got := n.Load(); got != 2 {
		t.Errorf("%d calls, want 2", got)
	}
}

// TestTaskCacheSingleFlight: Map items with the same key, running at
// once, call the agent once; the others wait for its result.
func TestTaskCacheSingleFlight(t *testing.T) {
	var n atomic.Int64
	var mu sync.Mutex
	slow := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		n.Add(1)
		time.Sleep(50 * time.Millisecond)
		return "computed", nil
	})
	x := engine.New(engine.Config{Agents: registry(t, slow, "Classifier")})
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":4,"ItemProcessor":{"StartAt":"C","States":{
		"C":{"Type":"Task","Agent":"Classifier","Parameters":{"same":"key"},"Cache":{},"End":true}}},"End":true}}}`
	res := runOn(t, x, def, `{"items":[1,2,3,4]}`)
	if got := n.Load(); got != 1 || !strings.Contains(fmt.Sprint(res.Output), "computed computed computed computed") {
		t.Errorf("%d calls, output %v", got, res.Output)
	}
}

// TestTaskCacheHitStillGoverned: a cached result still passes the
// Task's output guardrails: a rule added to the state changes its hash,
// and so its key; the same state refusing a result it cached refuses it
// again.
func TestTaskCacheHitStillGoverned(t *testing.T) {
	var n atomic.Int64
	leaky := agents.Func(func(context.Context, *agents.Request) (any, error) {
		n.Add(1)
		return "write to bob@example.com", nil
	})
	x := engine.New(engine.Config{Agents: registry(t, leaky, "Classifier")})
	def := fmt.Sprintf(classify, `"Cache":{},"Guardrails":{"Output":{"Rules":[{"Type":"pii","Action":"block"}]}}`)
	for range 2 {
		res := runOn(t, x, def, `{"text":"a"}`)
		if res.Status != engine.StatusFailed || res.Error != "Agent.GuardrailViolation" {
			t.Errorf("%s %s", res.Status, res.Error)
		}
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d calls: a refused result must not be cached", got)
	}
}

// TestTaskCacheJSONata: a JSONata Task caches as a JSONPath one: by a
// "{% %}" Key on $states.input, by literal text, by its Arguments, or
// through Idempotent and IdempotencyKey.
func TestTaskCacheJSONata(t *testing.T) {
	const def = `{"QueryLanguage":"JSONata","StartAt":"Classify","States":{"Classify":{"Type":"Task","Agent":"Classifier",
		"Arguments":{"text":"{%% $states.input.text %%}"},%s,"End":true}}}`
	for _, tc := range []struct {
		name, block string
		inputs      []string
		calls       int64
	}{
		{"expression key", `"Cache":{"Key":"{% $lowercase($states.input.text) %}"}`, []string{`{"text":"Refund"}`, `{"text":"REFUND"}`}, 1},
		{"expression key differs", `"Cache":{"Key":"{% $states.input.id %}"}`, []string{`{"text":"a","id":1}`, `{"text":"a","id":2}`}, 2},
		{"literal key", `"Cache":{"Key":"always"}`, []string{`{"text":"a"}`, `{"text":"b"}`}, 1},
		{"arguments", `"Cache":{"TTL":"1h"}`, []string{`{"text":"a","noise":1}`, `{"text":"a","noise":2}`}, 1},
		{"idempotent", `"Idempotent":true,"IdempotencyKey":"{% $string($states.input.id) %}"`, []string{`{"text":"a","id":7}`, `{"text":"b","id":7}`}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			x := engine.New(engine.Config{Agents: registry(t, counting(&n), "Classifier")})
			for _, in := range tc.inputs {
				runOn(t, x, fmt.Sprintf(def, tc.block), in)
			}
			if got := n.Load(); got != tc.calls {
				t.Errorf("%d calls, want %d", got, tc.calls)
			}
		})
	}
}
