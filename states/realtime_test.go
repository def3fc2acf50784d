package states_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/states"
)

func TestRealTime(t *testing.T) {
	top := func(rt string) string {
		return `{"StartAt": "P", "Events": {"Channels": {"hooks": {"Type": "webhook", "Url": "https://h.example.com/x"}, "log": {"Type": "stdout"}}},
		  "RealTime": ` + rt + `, "States": {"P": {"Type": "Pass", "End": true}}}`
	}
	for _, tc := range []struct{ rt, want string }{
		{`{}`, "true sse  []"},
		{`{"Enabled": false, "Transport": "websocket", "Events": ["state", "chunk"]}`, "false websocket  [state chunk]"},
		{`{"Transport": "polling", "Authentication": {"Type": "token"}}`, "true polling  []"},
		{`{"Transport": "callback", "Channel": "hooks", "Events": ["state", "end"]}`, "true callback hooks [state end]"},
	} {
		m, err := states.Parse([]byte(top(tc.rt)))
		if err != nil {
			t.Fatalf("%s: %v", tc.rt, err)
		}
		rt := m.Extensions.RealTime
		if got := strings.Join([]string{boolText(rt.Enabled), rt.Transport, rt.Channel, "[" + strings.Join(rt.Events, " ") + "]"}, " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.rt, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, rt, ptr, msg string }{
		{"an unknown transport", `{"Transport": "mqtt"}`, "/RealTime/Transport", ""},
		{"an Endpoint", `{"Endpoint": "wss://x/y"}`, "/RealTime/Endpoint", "endpoints are fixed"},
		{"a callback without Channel", `{"Transport": "callback"}`, "/RealTime", "needs Channel"},
		{"a Channel without callback", `{"Channel": "hooks"}`, "/RealTime/Channel", `for Transport "callback" only`},
		{"a callback to stdout", `{"Transport": "callback", "Channel": "log"}`, "/RealTime/Channel", "not a webhook channel"},
		{"a callback to nothing", `{"Transport": "callback", "Channel": "nope"}`, "/RealTime/Channel", "not a webhook channel"},
		{"chunks to a callback", `{"Transport": "callback", "Channel": "hooks", "Events": ["chunk"]}`, "/RealTime/Events", "not sent to a callback"},
		{"an unknown kind", `{"Events": ["progress"]}`, "/RealTime/Events", "not a kind of event"},
		{"a token path", `{"Authentication": {"Type": "token", "TokenPath": "$.token"}}`, "/RealTime/Authentication/TokenPath", "never one from the execution's document"},
		{"another auth", `{"Authentication": {"Type": "jwt"}}`, "/RealTime/Authentication/Type", `Type is "token"`},
		{"an unknown field", `{"Retry": 3}`, "/RealTime/Retry", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := states.Parse([]byte(top(tc.rt)))
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

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
