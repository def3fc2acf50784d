package engine_test

import (
	"context"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// TestCallEventsCarryUsage: the event of a call's outcome (succeeded, or
// failed over a budget) holds the usage its agent reported; a call that
// reported none, and the scheduled event, hold none.
func TestCallEventsCarryUsage(t *testing.T) {
	st := store.NewMemory()
	reg := registry(t, spender(agents.Usage{InputTokens: 30, OutputTokens: 12, Cost: 0.25}), "Paid")
	if err := reg.Register("Free", spender(agents.Usage{})); err != nil {
		t.Fatal(err)
	}
	x := engine.New(engine.Config{Agents: reg, Store: st})
	def := `{"StartAt":"A","Budget":{"MaxCost":0.4,"Currency":"EUR"},"States":{
		"A":{"Type":"Task","Agent":"Paid","Next":"B"},
		"B":{"Type":"Task","Agent":"Free","Next":"C"},
		"C":{"Type":"Task","Agent":"Paid","End":true}}}`
	if _, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "u"}); err != nil {
		t.Fatal(err)
	}
	hist, _ := eventsOf(t, st, "u")
	want := `{"cost":0.25,"inputTokens":30,"outputTokens":12,"tokens":42}`
	var got []string
	for _, ev := range hist {
		if ev.Type != engine.EventTaskSucceeded && ev.Type != engine.EventTaskFailed && ev.Type != engine.EventTaskScheduled {
			continue
		}
		usage := "none"
		if d, ok := ev.Detail.(map[string]any); ok && d["usage"] != nil {
			b, err := jsonvalue.Marshal(d["usage"])
			if err != nil {
				t.Fatal(err)
			}
			usage = string(b)
		}
		got = append(got, ev.State+" "+ev.Type+" "+usage)
	}
	wantEvents := []string{
		"A TaskScheduled none", "A TaskSucceeded " + want,
		"B TaskScheduled none", "B TaskSucceeded none",
		// The second paid call passes the workflow's MaxCost: it fails,
		// and its event still says what it spent.
		"C TaskScheduled none", "C TaskFailed " + want,
	}
	if len(got) != len(wantEvents) {
		t.Fatalf("call events %q, want %q", got, wantEvents)
	}
	for i := range got {
		if got[i] != wantEvents[i] {
			t.Errorf("call event %d = %q, want %q", i, got[i], wantEvents[i])
		}
	}
}
