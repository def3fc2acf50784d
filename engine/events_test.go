package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// TestEventsStdout: a workflow's OnStateChange and OnComplete events and a
// state's own events (with the values its Include paths select, and
// nothing else of the document) go to a stdout channel as they happen; a
// caught failure is a state.failed event with its Error and Cause (and
// the state then exits, as its history records).
func TestEventsStdout(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.Register("Charge", agents.Func(func(context.Context, *agents.Request) (any, error) {
		return nil, asl.Errorf("Card.Declined", "insufficient funds")
	})); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	x := engine.New(engine.Config{Agents: reg, EventsOut: &out})
	def := `{"StartAt": "Receive",
	  "Events": {"Channels": {"log": {"Type": "stdout"}}, "OnStateChange": {"Channel": "log"}, "OnComplete": {"Channel": "log"}},
	  "States": {
	    "Receive": {"Type": "Pass", "Next": "Charge", "Events": {"OnEnter": {"Type": "order.received", "Include": ["$.order.id", "$.missing"]}}},
	    "Charge": {"Type": "Task", "Agent": "Charge", "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Declined"}], "Next": "Declined"},
	    "Declined": {"Type": "Succeed"}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{"order": {"id": "A-1", "card": "4111 1111 1111 1111"}}`), engine.StartOptions{ID: "ev1", MachineName: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s %s", res.Status, res.Cause)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev engine.EmittedEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if ev.ID == "" || ev.Execution != "ev1" || ev.Workflow != "orders" || ev.Time.IsZero() {
			t.Errorf("event %+v", ev)
		}
		data, _ := json.Marshal(ev.Data)
		got = append(got, ev.Type+" "+ev.State+" "+string(data))
	}
	want := []string{
		`order.received Receive {"$.order.id":"A-1"}`,
		`state.exited Receive null`,
		`state.entered Charge null`,
		`state.failed Charge {"Cause":"insufficient funds","Error":"Card.Declined"}`,
		`state.exited Charge null`, // a caught state exits, as its history says
		`state.entered Declined null`,
		`state.exited Declined null`,
		`execution.succeeded  {"status":"SUCCEEDED"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(out.String(), "4111") {
		t.Error("an event carried a value its Include did not select")
	}
}

// TestEventsWebhookNeedsOutbox: a workflow with a webhook channel is
// refused at start by an executor without a store, at the channel.
func TestEventsWebhookNeedsOutbox(t *testing.T) {
	x := engine.New(engine.Config{})
	def := `{"StartAt": "P", "Events": {"Channels": {"hooks": {"Type": "webhook", "Url": "https://hooks.example.com/x"}}, "OnComplete": {"Channel": "hooks"}},
	  "States": {"P": {"Type": "Pass", "End": true}}}`
	_, err := x.Run(context.Background(), mustParse(t, def), nil, engine.StartOptions{})
	var list states.ErrorList
	if !errors.As(err, &list) || list[0].Pointer != "/Events/Channels/hooks" || !strings.Contains(list[0].Msg, "no store") {
		t.Fatalf("Run = %v, want a problem at the channel", err)
	}
}

// TestRealTimeCallback: a RealTime "callback" transport sends the state
// changes and the end (the kinds its Events keep) to its webhook channel,
// once per event even when OnStateChange names the same channel.
func TestRealTimeCallback(t *testing.T) {
	var out bytes.Buffer
	x := engine.New(engine.Config{EventsOut: &out})
	def := `{"StartAt": "P",
	  "Events": {"Channels": {"log": {"Type": "stdout", "Format": "text"}, "hooks": {"Type": "webhook", "Url": "https://hooks.example.com/x"}}},
	  "RealTime": {"Transport": "callback", "Channel": "hooks", "Events": ["end"]},
	  "States": {"P": {"Type": "Pass", "End": true}}}`
	m := mustParse(t, def)
	if rt := m.Extensions.RealTime; rt.Transport != "callback" || rt.Channel != "hooks" || !rt.Enabled {
		t.Fatalf("RealTime %+v", rt)
	}
	st := store.NewMemory()
	res, err := engine.New(engine.Config{Store: st, EventsOut: &out}).Run(context.Background(), m, nil, engine.StartOptions{ID: "rt"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	list, err := st.ListDeliveries(context.Background(), engine.DeliveryFilter{})
	if err != nil || len(list) != 1 || list[0].Type != "execution.succeeded" || list[0].Channel != "hooks" {
		t.Fatalf("deliveries %+v, %v; want the end only", list, err)
	}
	// Without a store the webhook channel is refused: the callback is one.
	if _, err := x.Run(context.Background(), m, nil, engine.StartOptions{}); err == nil || !strings.Contains(err.Error(), `webhook channel "hooks" cannot deliver`) {
		t.Fatalf("Run = %v", err)
	}
}
