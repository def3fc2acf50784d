package states

import "slices"

// RealTime (ASL chapter 9) says how clients follow an execution live.
// The server's routes are fixed — a definition cannot name an Endpoint
// — so RealTime chooses among them: Transport "sse" is the execution's
// event stream (GET /v1/executions/{id}/events), "websocket" the same
// events over GET /v1/executions/{id}/ws, "polling" GET
// /v1/executions/{id} and its history, and "callback" the webhook
// channel of the workflow's Events that Channel names. Events narrows the
// kinds of events a subscriber gets by default. Subscribers authenticate
// as every API client does (the server's tokens, or the page's session):
// a viewer may follow what it may read.

// RealTime transports.
const (
	TransportSSE       = "sse"
	TransportWebSocket = "websocket"
	TransportPolling   = "polling"
	TransportCallback  = "callback"
)

// RealTimeEventKinds are the kinds of events a subscriber may choose:
// "history" (every history event), "state" (states entered and exited),
// "chunk" (streamed text, with its stream's start, restart and end) and
// "end" (the execution's end, always sent).
var RealTimeEventKinds = []string{"history", "state", "chunk", "end"}

// RealTimeConfig is the top-level RealTime block.
type RealTimeConfig struct {
	// Enabled is true unless the block says false: a definition that
	// turns RealTime off keeps its executions' streams to the end event
	// and their history (no streamed text).
	Enabled bool
	// Transport is one of the Transport constants; "sse" by default.
	Transport string
	// Channel is the webhook channel of the workflow's Events a
	// "callback" transport sends to.
	Channel string
	// Events are the kinds a subscriber gets by default (all when
	// empty).
	Events []string
}

// realTime reads the top-level RealTime block; nil when absent.
func (p *parser) realTime(o *object) *RealTimeConfig {
	const key = "RealTime"
	ro, _ := o.child(key, key)
	if ro == nil {
		return nil
	}
	defer ro.done(key)
	rt := &RealTimeConfig{Enabled: true, Transport: TransportSSE}
	if b, ok := ro.boolean("Enabled"); ok {
		rt.Enabled = b
	}
	if s, ok := ro.enum("Transport", []string{TransportSSE, TransportWebSocket, TransportPolling, TransportCallback}, nil); ok {
		rt.Transport = s
	}
	rt.Channel, _ = ro.name("Channel", false)
	switch {
	case rt.Transport == TransportCallback && rt.Channel == "" && !ro.has("Channel"):
		ro.errorf("", `Transport "callback" needs Channel: the webhook channel of the workflow's Events to send to`)
	case rt.Transport != TransportCallback && rt.Channel != "":
		ro.errorf("Channel", `Channel is for Transport "callback" only`)
	}
	if ro.has("Endpoint") {
		ro.errorf("Endpoint", "the server's endpoints are fixed: Transport chooses among them (sse, websocket, polling, or callback to a webhook channel)")
	}
	if ao, _ := ro.child("Authentication", "Authentication"); ao != nil {
		if t, ok := ao.str("Type"); ok && t != "token" {
			ao.errorf("Type", `subscribers authenticate with the server's tokens (or the page's session): Type is "token", not %q`, t)
		}
		if ao.has("TokenPath") {
			ao.errorf("TokenPath", "a subscriber's token is the server's, never one from the execution's document")
		}
		ao.done("Authentication")
	}
	if names, ok := ro.names("Events", true); ok {
		for i, n := range names {
			switch {
			case !slices.Contains(RealTimeEventKinds, n):
				ro.errorf("Events", "Events[%d] %q is not a kind of event (%v)", i, n, RealTimeEventKinds)
			case rt.Transport == TransportCallback && (n == "chunk" || n == "history"):
				ro.errorf("Events", `Events[%d] %q is not sent to a callback: it gets "state" and "end"`, i, n)
			}
		}
		rt.Events = names
	}
	return rt
}

// checkRealTime checks, once the top level is read, that a callback's
// Channel is a webhook channel of the workflow's Events.
func (p *parser) checkRealTime(m *Machine) {
	if m.Extensions == nil || m.Extensions.RealTime == nil || m.Extensions.RealTime.Transport != TransportCallback || m.Extensions.RealTime.Channel == "" {
		return
	}
	rt := m.Extensions.RealTime
	var c *EventChannel
	if m.Extensions.Events != nil {
		c = m.Extensions.Events.Channels[rt.Channel]
	}
	if c == nil || c.Type != ChannelWebhook {
		p.errorf("/RealTime/Channel", "", "Channel %q is not a webhook channel of the workflow's Events", rt.Channel)
	}
}
