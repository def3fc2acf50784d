package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Events (ASL chapter 9): what a workflow's Events block and its states'
// Events emit, to its channels. A webhook channel's events go to the
// outbox, in the commit of the step that caused them (delivered at least
// once by the server, see OutboxStore); a stdout channel's are written
// when they happen, and a prometheus channel's counted (Hooks.Emitted) —
// neither of those is durable: a resumed step may emit them again.

// Event types the engine emits beside a state's own.
const (
	EmitStateEntered = "state.entered"
	EmitStateExited  = "state.exited"
	EmitStateFailed  = "state.failed"
	// The execution's end: "execution." and its status in lower case
	// ("execution.succeeded", "execution.failed", "execution.timed_out",
	// "execution.aborted").
	emitExecution = "execution."
)

// maxEmittedBody bounds an emitted event's JSON; an event whose included
// values pass it carries them cut ({"truncated": true}).
const maxEmittedBody = 64 << 10

// EmittedEvent is the JSON body of an emitted event.
type EmittedEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Time      time.Time      `json:"time"`
	Execution string         `json:"execution"`
	Workflow  string         `json:"workflow"`
	State     string         `json:"state,omitempty"`
	Scope     string         `json:"scope,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
}

// stdoutMu serializes the lines stdout channels write.
var stdoutMu sync.Mutex

// emitState emits what a state's entering ("entered", doc its input),
// exiting ("exited", doc its output) or failing ("failed", doc its error
// output) sends: the workflow's OnStateChange event, and the state's own
// Events event.
func (r *run) emitState(kind string, c *states.Common, scope string, doc any) {
	w := r.workflowEvents()
	if w == nil {
		return
	}
	typ := map[string]string{"entered": EmitStateEntered, "exited": EmitStateExited, "failed": EmitStateFailed}[kind]
	var own *states.StateEvent
	if se := c.Events; se != nil {
		own = map[string]*states.StateEvent{"entered": se.OnEnter, "exited": se.OnExit, "failed": se.OnError}[kind]
	}
	if own != nil {
		ev := EmittedEvent{Type: typ, State: c.Name, Scope: scope}
		if own.Type != "" {
			ev.Type = own.Type
		}
		ev.Data = included(own.Include, doc, kind == "failed")
		ch := own.Channel
		if ch == "" {
			ch = w.OnStateChange
		}
		r.emit(w.Channels[ch], ev)
		if ch == w.OnStateChange {
			return // the state's own event stands for the state change
		}
	}
	if w.OnStateChange != "" {
		ev := EmittedEvent{Type: typ, State: c.Name, Scope: scope}
		ev.Data = included(nil, doc, kind == "failed")
		r.emit(w.Channels[w.OnStateChange], ev)
	}
	if ch := r.realTimeCallback("state"); ch != "" && ch != w.OnStateChange {
		r.emit(w.Channels[ch], EmittedEvent{Type: typ, State: c.Name, Scope: scope, Data: included(nil, doc, kind == "failed")})
	}
}

// realTimeCallback is the webhook channel a RealTime "callback" sends
// events of kind ("state", "end") to, or "".
func (r *run) realTimeCallback(kind string) string {
	m := r.m
	if m == nil || m.Extensions == nil {
		return ""
	}
	rt := m.Extensions.RealTime
	if rt == nil || !rt.Enabled || rt.Transport != states.TransportCallback {
		return ""
	}
	if len(rt.Events) > 0 && !slices.Contains(rt.Events, kind) {
		return ""
	}
	return rt.Channel
}

// emitEnd emits the execution's end to the workflow's OnComplete channel.
func (r *run) emitEnd(res *Result) {
	w := r.workflowEvents()
	if w == nil {
		return
	}
	data := map[string]any{"status": string(res.Status)}
	if res.Error != "" {
		data["error"], data["cause"] = res.Error, res.Cause
	}
	typ := emitExecution + strings.ToLower(string(res.Status))
	if w.OnComplete != "" {
		r.emit(w.Channels[w.OnComplete], EmittedEvent{Type: typ, Data: data})
	}
	if ch := r.realTimeCallback("end"); ch != "" && ch != w.OnComplete {
		r.emit(w.Channels[ch], EmittedEvent{Type: typ, Data: data})
	}
}

func (r *run) workflowEvents() *states.WorkflowEvents {
	m := r.m
	if m == nil && r.exec != nil && len(r.exec.Definition) > 0 {
		// A run that only records the end (a stop of a waiting
		// execution): its definition, when it still parses.
		m, _ = r.x.machines.Parse(r.exec.Definition)
	}
	if m != nil && m.Extensions != nil {
		return m.Extensions.Events
	}
	return nil
}

// included is the data an event carries: the value of each path in doc,
// by its text (a path that selects nothing is left out); with no paths,
// a failure's Error and Cause and nothing of another document.
func included(paths []*jsonpath.Path, doc any, failure bool) map[string]any {
	if len(paths) == 0 {
		if m, ok := doc.(map[string]any); ok && failure {
			return map[string]any{"Error": m["Error"], "Cause": m["Cause"]}
		}
		return nil
	}
	out := make(map[string]any, len(paths))
	for _, p := range paths {
		if v, err := p.Get(doc, nil); err == nil {
			out[p.String()] = v
		}
	}
	return out
}

// emit sends ev to channel c.
func (r *run) emit(c *states.EventChannel, ev EmittedEvent) {
	if c == nil {
		return
	}
	id, err := uuid.NewV7()
	if err != nil {
		r.x.log.Warn("an event could not be numbered, and is dropped", "execution", r.exec.ID, "type", ev.Type, "error", err)
		return
	}
	ev.ID, ev.Time, ev.Execution, ev.Workflow = id.String(), time.Now().UTC(), r.exec.ID, r.exec.MachineName
	if r.secrets != nil && ev.Data != nil {
		// An emitted event leaves for other systems: its secrets go as
		// their hashes, not sealed.
		ev.Data, _ = r.secrets.view(ev.Data).(map[string]any)
	}
	body, err := json.Marshal(ev)
	if err == nil && len(body) > maxEmittedBody {
		ev.Data = map[string]any{"truncated": true}
		body, err = json.Marshal(ev)
	}
	if err != nil {
		r.x.log.Warn("an event could not be encoded, and is dropped", "execution", r.exec.ID, "type", ev.Type, "error", err)
		return
	}
	if f := r.x.hooks.Emitted; f != nil {
		f(r.exec.MachineName, c.Name, c.Type, ev.Type)
	}
	switch c.Type {
	case states.ChannelWebhook:
		r.mu.Lock()
		r.outbox = append(r.outbox, OutboxEntry{ID: ev.ID, Execution: r.exec.ID, Channel: c.Name, URL: c.URL, SecretEnv: c.SecretEnv, Type: ev.Type, Body: body, CreatedAt: ev.Time})
		r.mu.Unlock()
	case states.ChannelStdout:
		line := string(body)
		if c.Format == "text" {
			line = eventText(ev)
		}
		stdoutMu.Lock()
		fmt.Fprintln(r.x.eventsOut, line)
		stdoutMu.Unlock()
	}
}

// eventText is an event on one line of text.
func eventText(ev EmittedEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", ev.Time.Format(time.RFC3339Nano), ev.Execution, ev.Type)
	if ev.State != "" {
		fmt.Fprintf(&b, " %s%s", ev.Scope, ev.State)
	}
	if len(ev.Data) > 0 {
		data, _ := jsonvalue.Marshal(ev.Data)
		fmt.Fprintf(&b, " %s", data)
	}
	return b.String()
}

// checkChannels refuses to start m when a webhook channel of its Events
// cannot be delivered: the executor has no store, or one without an
// outbox (OutboxStore). One problem per channel, at its pointer.
func (x *Executor) checkChannels(m *states.Machine) error {
	if m.Extensions == nil || m.Extensions.Events == nil {
		return nil
	}
	_, outbox := x.store.(OutboxStore)
	var list states.ErrorList
	for _, name := range slices.Sorted(maps.Keys(m.Extensions.Events.Channels)) {
		c := m.Extensions.Events.Channels[name]
		if c.Type != states.ChannelWebhook || x.durable && outbox {
			continue
		}
		why := "the executor has no store to keep its deliveries in (run with a database)"
		if x.durable {
			why = fmt.Sprintf("the store (%T) keeps no outbox", x.store)
		}
		list = append(list, &states.ValidationError{Pointer: c.Pointer, Msg: fmt.Sprintf("the webhook channel %q cannot deliver: %s", name, why)})
	}
	if len(list) == 0 {
		return nil
	}
	return list
}
