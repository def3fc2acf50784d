package states_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/states"
)

const eventsChannels = `"Events": {"Channels": {
	"hooks": {"Type": "webhook", "Url": "https://hooks.example.com/aslrun", "SecretEnv": "HOOK_SECRET"},
	"log": {"Type": "stdout", "Format": "text"},
	"metrics": {"Type": "prometheus"}},
	"OnStateChange": {"Channel": "log"}, "OnComplete": {"Channel": "hooks"}}`

func TestEventsAccepted(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt": "T", ` + eventsChannels + `, "States": {
	  "T": {"Type": "Task", "Agent": "A", "Next": "P", "Events": {
	    "OnEnter": {"Type": "order.received", "Include": ["$.order.id", "$.total"], "Channel": "hooks"},
	    "OnError": {"Include": ["$.Error"]}}},
	  "P": {"Type": "Pass", "End": true, "Events": {"OnExit": {}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := m.Extensions.Events
	if len(w.Channels) != 3 || w.OnStateChange != "log" || w.OnComplete != "hooks" {
		t.Fatalf("workflow events %+v", w)
	}
	if c := w.Channels["hooks"]; c.Type != "webhook" || c.URL != "https://hooks.example.com/aslrun" || c.SecretEnv != "HOOK_SECRET" {
		t.Errorf("hooks %+v", c)
	}
	if c := w.Channels["log"]; c.Format != "text" {
		t.Errorf("log %+v", c)
	}
	ev := m.States["T"].Base().Events
	if ev.OnEnter.Type != "order.received" || len(ev.OnEnter.Include) != 2 || ev.OnEnter.Include[0].String() != "$.order.id" || ev.OnEnter.Channel != "hooks" {
		t.Errorf("OnEnter %+v", ev.OnEnter)
	}
	if ev.OnError == nil || ev.OnExit != nil || m.States["P"].Base().Events.OnExit == nil {
		t.Errorf("events %+v / %+v", ev, m.States["P"].Base().Events)
	}
}

func TestEventsRefused(t *testing.T) {
	task := func(events string) string {
		return `{"StartAt": "T", ` + eventsChannels + `, "States": {"T": {"Type": "Task", "Agent": "A", "End": true, "Events": ` + events + `}}}`
	}
	top := func(events string) string {
		return `{"StartAt": "T", "Events": ` + events + `, "States": {"T": {"Type": "Pass", "End": true}}}`
	}
	for _, tc := range []struct{ name, def, ptr, msg string }{
		{"no channels", top(`{}`), "/Events", "Events needs Channels"},
		{"a channel without Type", top(`{"Channels": {"x": {}}}`), "/Events/Channels/x", "needs a Type"},
		{"an unknown type", top(`{"Channels": {"x": {"Type": "email"}}}`), "/Events/Channels/x/Type", ""},
		{"a webhook without Url", top(`{"Channels": {"x": {"Type": "webhook"}}}`), "/Events/Channels/x", "needs a Url"},
		{"a webhook to ftp", top(`{"Channels": {"x": {"Type": "webhook", "Url": "ftp://h/x"}}}`), "/Events/Channels/x/Url", "not an http or https URL"},
		{"a webhook with credentials", top(`{"Channels": {"x": {"Type": "webhook", "Url": "https://u:p@h/x"}}}`), "/Events/Channels/x/Url", "credentials"},
		{"a secret in SecretEnv", top(`{"Channels": {"x": {"Type": "webhook", "Url": "https://h/x", "SecretEnv": "whsec_abc+def"}}}`), "/Events/Channels/x/SecretEnv", "names an environment variable"},
		{"an Endpoint", top(`{"Channels": {"x": {"Type": "prometheus", "Endpoint": "/m"}}}`), "/Events/Channels/x/Endpoint", "endpoints are fixed"},
		{"a Format on a webhook", top(`{"Channels": {"x": {"Type": "webhook", "Url": "https://h/x", "Format": "json"}}}`), "/Events/Channels/x/Format", ""},
		{"a bad channel name", top(`{"Channels": {"a.b": {"Type": "stdout"}}}`), "/Events/Channels/a.b", "channel name"},
		{"a route to no channel", top(`{"Channels": {"x": {"Type": "stdout"}}, "OnComplete": {"Channel": "y"}}`), "/Events/OnComplete/Channel", `no channel "y"`},
		{"OnProgress to no channel", top(`{"Channels": {"x": {"Type": "stdout"}}, "OnProgress": {"Channel": "y"}}`), "/Events/OnProgress/Channel", `no channel "y"`},
		{"an empty state block", task(`{}`), "/States/T/Events", "needs OnEnter, OnExit or OnError"},
		{"a bad event type", task(`{"OnEnter": {"Type": "has space"}}`), "/States/T/Events/OnEnter/Type", "dotted words"},
		{"Include not an array", task(`{"OnEnter": {"Include": "$.a"}}`), "/States/T/Events/OnEnter/Include", "array of 1 to 32"},
		{"Include a context path", task(`{"OnEnter": {"Include": ["$$.Execution.Id"]}}`), "/States/T/Events/OnEnter/Include/0", "cannot refer to the context object"},
		{"Include a variable", task(`{"OnEnter": {"Include": ["$var.x"]}}`), "/States/T/Events/OnEnter/Include/0", ""},
		{"Include bad", task(`{"OnEnter": {"Include": ["$.a["]}}`), "/States/T/Events/OnEnter/Include/0", "not a valid reference path"},
		{"an unknown field", task(`{"OnEnter": {"Data": 1}}`), "/States/T/Events/OnEnter/Data", ""},
		{"a state channel that does not exist", task(`{"OnExit": {"Channel": "nope"}}`), "/States/T/Events/OnExit/Channel", `no channel "nope"`},
		{"no workflow Events", `{"StartAt": "T", "States": {"T": {"Type": "Pass", "End": true, "Events": {"OnExit": {}}}}}`, "/States/T/Events/OnExit", "no top-level Events block"},
		{"no channel and no OnStateChange", `{"StartAt": "T", "Events": {"Channels": {"x": {"Type": "stdout"}}}, "States": {"T": {"Type": "Pass", "End": true, "Events": {"OnExit": {}}}}}`, "/States/T/Events/OnExit", "no OnStateChange channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := states.Parse([]byte(tc.def))
			var list states.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse = %v, want problems", err)
			}
			for _, e := range list {
				if e.Pointer == tc.ptr && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("problems %v, want one at %s containing %q", err, tc.ptr, tc.msg)
		})
	}
}
