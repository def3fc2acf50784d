package states

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/aslrun/aslrun/jsonpath"
)

// Events (ASL chapter 9): a workflow names its channels and which
// changes go to them; a state may emit events of its own when it is
// entered, when it exits and when it fails. Every type here is
// immutable after Parse and safe for concurrent use.

// Channel types.
const (
	// ChannelWebhook POSTs each event to URL, signed, at least once
	// (the outbox: written with the commit, delivered by the server).
	ChannelWebhook = "webhook"
	// ChannelStdout writes each event to the process's standard output
	// when its step commits (not durable).
	ChannelStdout = "stdout"
	// ChannelPrometheus counts the events in the server's /metrics, by
	// workflow and event type.
	ChannelPrometheus = "prometheus"
)

// WorkflowEvents is the top-level Events block.
type WorkflowEvents struct {
	// Channels are the channels by name.
	Channels map[string]*EventChannel
	// OnStateChange is the channel every state's entering and exiting
	// goes to ("" when absent); OnProgress the channel of progress
	// updates (the execution's percentage, states' milestones reached);
	// OnComplete the channel of the execution's end.
	OnStateChange, OnProgress, OnComplete string
}

// EventChannel is one of the workflow's channels.
type EventChannel struct {
	Name string
	// Type is ChannelWebhook, ChannelStdout or ChannelPrometheus.
	Type string
	// URL is a webhook's http or https URL; its host must be one the
	// server's owner allows (checked when an execution starts and on
	// every delivery).
	URL string
	// SecretEnv names the environment variable holding a webhook's
	// signing secret (Standard Webhooks, "whsec_…" or raw); "" means the
	// server's default secret (the deliveries are signed either way).
	SecretEnv string
	// Format is a stdout channel's format: "json" (the default: one
	// object per line) or "text".
	Format string
	// Pointer locates the channel in the definition.
	Pointer string
}

// StateEvents is a state's Events block; each field is nil when absent.
type StateEvents struct {
	OnEnter, OnExit, OnError *StateEvent
}

// StateEvent is one event a state emits.
type StateEvent struct {
	// Type is the event's type ("order.received"); the default is
	// "state.entered", "state.exited" or "state.failed".
	Type string
	// Include are paths whose values the event carries, from the state's
	// input (OnEnter), output (OnExit) or error output {"Error", "Cause"}
	// (OnError), by their text; nothing else of the document is sent.
	Include []*jsonpath.Path
	// Channel is the channel it goes to: its own, or the workflow's
	// OnStateChange.
	Channel string
}

// eventType is the form of an event type: dotted words.
var eventType = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$`)

// maxIncludes bounds the paths an event carries.
const maxIncludes = 32

// workflowEvents reads the top-level Events block.
func (p *parser) workflowEvents(o *object) *WorkflowEvents {
	const key = "Events"
	eo, _ := o.child(key, key)
	if eo == nil {
		return nil
	}
	defer eo.done("Events")
	w := &WorkflowEvents{Channels: map[string]*EventChannel{}}
	co, _ := eo.child("Channels", "Channels")
	if co == nil {
		eo.errorf("", "Events needs Channels: the channels its events go to")
		return w
	}
	for _, name := range sortedKeys(co.m) {
		co.used[name] = true
		if !eventType.MatchString(name) || strings.Contains(name, ".") {
			p.errorf(co.at(name), co.state, "a channel name is letters, digits, '_' and '-', starting with a letter")
			continue
		}
		cho := p.newObject(co.m[name], co.at(name), co.state, "a channel")
		if cho == nil {
			continue
		}
		c := &EventChannel{Name: name, Pointer: cho.ptr}
		c.Type, _ = cho.enum("Type", []string{ChannelWebhook, ChannelStdout, ChannelPrometheus}, nil)
		if !cho.has("Type") {
			cho.errorf("", "a channel needs a Type: webhook, stdout or prometheus")
		}
		switch c.Type {
		case ChannelWebhook:
			if u, ok := cho.str("Url"); ok {
				if msg := webhookURLProblem(u); msg != "" {
					cho.errorf("Url", "%s", msg)
				}
				c.URL = u
			} else if !cho.has("Url") {
				cho.errorf("", "a webhook channel needs a Url")
			}
			if s, ok := cho.str("SecretEnv"); ok {
				if !envName.MatchString(s) {
					cho.errorf("SecretEnv", "SecretEnv names an environment variable (letters, digits and '_'), not %q: the secret itself never goes in a definition", s)
				}
				c.SecretEnv = s
			}
		case ChannelStdout:
			c.Format = "json"
			if f, ok := cho.enum("Format", []string{"json", "text"}, nil); ok {
				c.Format = f
			}
		}
		if cho.has("Endpoint") {
			cho.errorf("Endpoint", "the server's endpoints are fixed (its /metrics for prometheus): a definition cannot choose one")
		}
		cho.done("a " + c.Type + " channel")
		w.Channels[name] = c
	}
	co.done("Channels")
	route := func(key string) string {
		ro, _ := eo.child(key, key)
		if ro == nil {
			return ""
		}
		defer ro.done(key)
		ch, _ := ro.name("Channel", true)
		if ch != "" && w.Channels[ch] == nil {
			ro.errorf("Channel", "no channel %q in Events.Channels", ch)
		}
		return ch
	}
	w.OnStateChange = route("OnStateChange")
	w.OnProgress = route("OnProgress")
	w.OnComplete = route("OnComplete")
	return w
}

// envName is the form of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// webhookURLProblem says what is wrong with a webhook URL, or "".
func webhookURLProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("Url is not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("Url %q is not an http or https URL", s)
	case u.Host == "":
		return fmt.Sprintf("Url %q has no host", s)
	case u.User != nil:
		return "Url must not hold credentials: the deliveries are signed (SecretEnv)"
	}
	return ""
}

// stateEvents reads a state's Events block; nil when absent.
func (p *parser) stateEvents(o *object) *StateEvents {
	const key = "Events"
	eo, _ := o.child(key, key)
	if eo == nil {
		return nil
	}
	defer eo.done("Events")
	s := &StateEvents{}
	for _, f := range []struct {
		key string
		dst **StateEvent
	}{{"OnEnter", &s.OnEnter}, {"OnExit", &s.OnExit}, {"OnError", &s.OnError}} {
		vo, _ := eo.child(f.key, f.key)
		if vo == nil {
			continue
		}
		ev := &StateEvent{}
		if t, ok := vo.str("Type"); ok {
			if !eventType.MatchString(t) || len(t) > 128 {
				vo.errorf("Type", "an event Type is dotted words of letters, digits, '_' and '-' (at most 128 characters), like \"order.received\", not %q", t)
			}
			ev.Type = t
		}
		ev.Channel, _ = vo.name("Channel", false)
		if v, ok := vo.get("Include"); ok {
			list, isArr := v.([]any)
			if !isArr || len(list) == 0 || len(list) > maxIncludes {
				vo.errorf("Include", "Include must be an array of 1 to %d JSONPath paths", maxIncludes)
			}
			for i, e := range list {
				at := fmt.Sprintf("%s/%d", vo.at("Include"), i)
				text, isStr := e.(string)
				if !isStr {
					p.errorf(at, vo.state, "an Include entry must be a JSONPath string")
					continue
				}
				path, err := jsonpath.CompileReference(text)
				if err != nil || !strings.HasPrefix(text, "$.") && text != "$" {
					msg := "it must start with $ (the state's input, output or error output)"
					if err != nil {
						msg = errText(err)
					}
					p.errorf(at, vo.state, "Include %q is not a valid reference path: %s", text, msg)
					continue
				}
				ev.Include = append(ev.Include, path)
			}
		}
		vo.done("an event")
		*f.dst = ev
	}
	if s.OnEnter == nil && s.OnExit == nil && s.OnError == nil {
		eo.errorf("", "Events needs OnEnter, OnExit or OnError")
	}
	return s
}

// checkEvents checks, once the whole definition is read, that each
// state's events go to a channel of the workflow's Events.
func (p *parser) checkEvents(m *Machine) {
	var w *WorkflowEvents
	if m.Extensions != nil {
		w = m.Extensions.Events
	}
	m.Each(func(_, name string, st State) bool {
		se := st.Base().Events
		if se == nil {
			return true
		}
		for _, f := range []struct {
			key string
			ev  *StateEvent
		}{{"OnEnter", se.OnEnter}, {"OnExit", se.OnExit}, {"OnError", se.OnError}} {
			if f.ev == nil {
				continue
			}
			ch := f.ev.Channel
			switch {
			case w == nil:
				p.errorf(st.Base().eventsPtr+"/"+f.key, name, "the state emits events, and the workflow has no top-level Events block with Channels for them")
			case ch == "" && w.OnStateChange == "":
				p.errorf(st.Base().eventsPtr+"/"+f.key, name, "the event names no Channel, and the workflow's Events has no OnStateChange channel to send it to")
			case ch != "" && w.Channels[ch] == nil:
				p.errorf(st.Base().eventsPtr+"/"+f.key+"/Channel", name, "no channel %q in the workflow's Events.Channels", ch)
			}
		}
		return true
	})
}
