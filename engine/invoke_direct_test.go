package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
)

// TestInvokeDirect: an agent that honours its context (agents.DirectFunc,
// a mock) is called on the state's goroutine, with the state's
// TimeoutSeconds as its context's deadline (States.Timeout), a panic as
// States.TaskFailed, and HeartbeatSeconds still watched.
func TestInvokeDirect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		waits := agents.DirectFunc(func(ctx context.Context, req *agents.Request) (any, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Hour):
				return "late", nil
			}
		})
		panics := agents.DirectFunc(func(context.Context, *agents.Request) (any, error) { panic("boom") })
		quick := agents.DirectFunc(func(context.Context, *agents.Request) (any, error) { return "ok", nil })
		reg := registry(t, waits, "Waits")
		_ = reg.Register("Panics", panics)
		_ = reg.Register("Quick", quick)
		x := engine.New(engine.Config{Agents: reg})
		for _, tc := range []struct {
			fields    string
			wantErr   asl.ErrorName
			wantCause string
		}{
			{`"Agent":"Waits","TimeoutSeconds":2`, "States.Timeout", ""},
			{`"Agent":"Waits","TimeoutSeconds":10,"HeartbeatSeconds":1`, "States.HeartbeatTimeout", ""},
			{`"Agent":"Panics"`, "States.TaskFailed", `agent "Panics" panicked: boom`},
		} {
			start := time.Now()
			res := runOn(t, x, `{"StartAt":"T","States":{"T":{"Type":"Task",`+tc.fields+`,"End":true}}}`, `{}`)
			wantError(t, res, tc.wantErr, tc.wantCause)
			if tc.wantErr == "States.Timeout" && time.Since(start) != 2*time.Second {
				t.Errorf("timed out after %s, want 2s", time.Since(start))
			}
		}
		wantOutput(t, runOn(t, x, `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Quick","TimeoutSeconds":5,"End":true}}}`, `{}`), `"ok"`)
	})
	if _, ok := any(agents.DirectFunc(nil)).(agents.ContextHonouring); !ok {
		t.Error("DirectFunc does not say it honours its context")
	}
	var m agents.Agent = &agents.Mock{}
	if h, ok := m.(agents.ContextHonouring); !ok || !h.HonoursContext() {
		t.Error("a mock does not say it honours its context")
	}
	if _, ok := any(agents.Func(nil)).(agents.ContextHonouring); ok {
		t.Error("Func claims to honour its context")
	}
}
