package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestAuditLogLevel: a state's Audit.LogLevel decides its lines: minimal
// logs a failure only, standard one line when it ends, full adds its input
// and output, debug a line when it starts too; a state without Audit logs
// nothing; a failure logs at WARN.
func TestAuditLogLevel(t *testing.T) {
	spender := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		if in, _ := req.Input.(map[string]any); in["fail"] == true {
			return nil, errors.New("the checker is down")
		}
		req.ReportUsage(agents.Usage{InputTokens: 30, OutputTokens: 12, Cost: 0.25})
		return map[string]any{"ok": true}, nil
	})
	for _, tc := range []struct {
		name, audit, input string
		want, absent       []string
	}{
		{"none", ``, `{"a":1}`, nil, []string{"state ended", "state entered"}},
		{"minimal ok", `,"Audit":{"LogLevel":"minimal"}`, `{"a":1}`, nil, []string{"state ended"}},
		{"minimal failed", `,"Audit":{"LogLevel":"minimal"}`, `{"fail":true}`,
			[]string{`level=WARN msg="state ended"`, "status=failed", "error=States.TaskFailed", `cause="the checker is down"`}, []string{"input="}},
		{"standard", `,"Audit":{}`, `{"a":1}`,
			[]string{`level=INFO msg="state ended"`, "state=T", "status=succeeded", "tokens=42", "cost=0.25", "took="}, []string{"input=", "state entered"}},
		{"full", `,"Audit":{"LogLevel":"full"}`, `{"a":1}`,
			[]string{`msg="state ended"`, `input="{\"a\":1}"`, `output="{\"ok\":true}"`}, []string{"state entered"}},
		{"debug", `,"Audit":{"LogLevel":"debug"}`, `{"a":1}`,
			[]string{`level=DEBUG msg="state entered"`, `level=DEBUG msg="state ended"`, `input="{\"a\":1}"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			x := engine.New(engine.Config{Agents: registry(t, spender, "Checker"), Logger: log})
			def := fmt.Sprintf(`{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Checker"%s,"End":true}}}`, tc.audit)
			runOn(t, x, def, tc.input)
			got := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the log lacks %s:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("the log holds %s:\n%s", a, got)
				}
			}
		})
	}
}

// TestAuditMetricsAndTrace: StateAudited tells what a state with an Audit
// block measured and which measures it exports; Trace false gives it no
// span (StateEntered and StateEnded are not called for it).
func TestAuditMetricsAndTrace(t *testing.T) {
	var mu sync.Mutex
	var audited []engine.AuditRecord
	var spans []string
	hooks := engine.Hooks{
		StateAudited: func(_ context.Context, a engine.AuditRecord) {
			mu.Lock()
			audited = append(audited, a)
			mu.Unlock()
		},
		StateEntered: func(ctx context.Context, _, _, _, state string) context.Context {
			mu.Lock()
			spans = append(spans, state)
			mu.Unlock()
			return ctx
		},
	}
	spender := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		req.ReportUsage(agents.Usage{InputTokens: 5, OutputTokens: 5, Cost: 0.5})
		return 1, nil
	})
	x := engine.New(engine.Config{Agents: registry(t, spender, "A"), Hooks: hooks})
	runOn(t, x, `{"StartAt":"Measured","States":{
		"Measured":{"Type":"Task","Agent":"A","ResultPath":"$.m","Audit":{"Metrics":["cost","latency"]},"Next":"Hidden"},
		"Hidden":{"Type":"Task","Agent":"A","ResultPath":"$.h","Audit":{"Trace":false,"Metrics":[]},"Next":"Plain"},
		"Plain":{"Type":"Task","Agent":"A","ResultPath":"$.p","End":true}}}`, `{}`)
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(spans, ","); got != "Measured,Plain" {
		t.Errorf("spans for %s, want Measured,Plain", got)
	}
	if len(audited) != 2 {
		t.Fatalf("%d audit records, want 2 (the states with Audit): %+v", len(audited), audited)
	}
	m, h := audited[0], audited[1]
	if m.State != "Measured" || m.Status != "succeeded" || !m.Cost || !m.Latency || m.Tokens || m.Usage.Tokens != 10 || m.Usage.Cost != 0.5 || m.Duration <= 0 {
		t.Errorf("Measured: %+v", m)
	}
	if h.State != "Hidden" || h.Cost || h.Latency || h.Tokens {
		t.Errorf("Hidden: %+v", h)
	}
}

// TestTaskMetadataRecorded: a Task's Metadata, JSONPath or JSONata, is
// evaluated on its input and recorded as a StateMetadata event.
func TestTaskMetadataRecorded(t *testing.T) {
	ctx := context.Background()
	for name, def := range map[string]string{
		"jsonpath": `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Metadata":{"team":"support","priority.$":"States.Format('P-{}', $.p)"},"End":true}}}`,
		"jsonata":  `{"QueryLanguage":"JSONata","StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Metadata":{"team":"support","priority":"{% 'P-' & $states.input.p %}"},"End":true}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			st := store.NewMemory()
			x := engine.New(engine.Config{Agents: registry(t, agents.Func(func(context.Context, *agents.Request) (any, error) { return 1, nil }), "A"), Store: st})
			res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"p":"high"}`), engine.StartOptions{ID: "m"})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("run = %+v, %v", res, err)
			}
			hist, err := st.History(ctx, "m")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range hist {
				if ev.Type == engine.EventStateMetadata {
					got = append(got, fmt.Sprint(ev.State, " ", ev.Detail))
				}
			}
			if want := "T map[priority:P-high team:support]"; len(got) != 1 || got[0] != want {
				t.Errorf("StateMetadata events %q, want [%s]", got, want)
			}
		})
	}
}
