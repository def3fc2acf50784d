package server

// An execution's stream with its live chunks: the history events as they
// are committed and, interleaved as they happen, the chunks its agents
// stream (engine.Executor.Live), over Server-Sent Events (streamHistory)
// or a WebSocket (streamHistoryWS). One loop, followExecution, produces
// the events of both to an emitter.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// Events of an execution's stream that come from its live feed, by
// engine.Chunk Kind, and the one that says chunks were missed.
const (
	eventChunk        = "chunk"
	eventStreamStart  = "stream-start"
	eventRestart      = "restart"
	eventStreamEnd    = "stream-end"
	eventChunksMissed = "chunks-missed"
	// eventProgress carries a progress report (engine.ChunkProgress):
	// an agent's, a milestone reached, a Map's item counts.
	eventProgress = "progress"
)

// chunkEvent names the event of a chunk of kind.
func chunkEvent(kind string) string {
	switch kind {
	case engine.ChunkStart:
		return eventStreamStart
	case engine.ChunkRestart:
		return eventRestart
	case engine.ChunkEnd:
		return eventStreamEnd
	case engine.ChunkProgress:
		return eventProgress
	}
	return eventChunk
}

// chunksMissed is the data of a chunks-missed event.
type chunksMissed struct {
	// Count is how many chunks the feed no longer held when the stream
	// came to read them.
	Count int64 `json:"count"`
}

// streamPos is where an execution's stream is: after history event
// `history` and, in the live feed of epoch `epoch`, after chunk `seq`.
type streamPos struct {
	history int64
	epoch   string
	seq     int64
	// chunked is set once the stream sent an event of the feed (or the
	// client resumed from one): from then on its ids carry the feed's
	// place.
	chunked bool
}

// id is the event id of the place: "N" while no chunk was sent,
// "N:EPOCH:SEQ" after.
func (p streamPos) id() string {
	n := strconv.FormatInt(p.history, 10)
	if !p.chunked {
		return n
	}
	return n + ":" + p.epoch + ":" + strconv.FormatInt(p.seq, 10)
}

// maxEpoch bounds the epoch of an event id.
const maxEpoch = 64

// parseStreamID reads an execution stream's event id, given by what
// (the header or parameter it came in): "N" (history event N; the live
// feed from its start) or "N:EPOCH:SEQ" (and chunk SEQ of the feed of
// EPOCH). N and SEQ are decimal numbers from 0 (digits only); EPOCH is 1
// to 64 letters, digits, '-' or '_'.
func parseStreamID(v, what string) (streamPos, error) {
	bad := func(why string) error {
		return badRequest("", "%s %q is not an event id of this stream (want N or N:EPOCH:SEQ): %s", what, v, why)
	}
	parts := strings.Split(v, ":")
	if len(parts) != 1 && len(parts) != 3 {
		return streamPos{}, bad(fmt.Sprintf("%d parts separated by ':'", len(parts)))
	}
	var p streamPos
	var err error
	if p.history, err = parseCount(parts[0]); err != nil {
		return streamPos{}, bad("N " + err.Error())
	}
	if len(parts) == 1 {
		return p, nil
	}
	p.epoch, p.chunked = parts[1], true
	if p.epoch == "" || len(p.epoch) > maxEpoch || strings.ContainsFunc(p.epoch, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	}) {
		return streamPos{}, bad(fmt.Sprintf("EPOCH must be 1 to %d letters, digits, '-' or '_'", maxEpoch))
	}
	if p.seq, err = parseCount(parts[2]); err != nil {
		return streamPos{}, bad("SEQ " + err.Error())
	}
	return p, nil
}

// parseCount reads a decimal number from 0: digits only, no sign.
func parseCount(s string) (int64, error) {
	if s == "" || strings.ContainsFunc(s, func(c rune) bool { return c < '0' || c > '9' }) {
		return 0, errors.New("is not a number of digits")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("is too large")
	}
	return n, nil
}

// resumeExecution reads where an execution's stream resumes: the
// Last-Event-ID header or, without it, ?after=; from the start when
// neither is given.
func resumeExecution(r *http.Request) (streamPos, error) {
	v, what := resumeValue(r)
	if v == "" {
		return streamPos{}, nil
	}
	return parseStreamID(v, what)
}

// emitter is where an execution's stream sends its events: an SSE
// response (sse) or a WebSocket (wsStream). Its methods are called from
// one goroutine, the stream's.
type emitter interface {
	// event sends an event: its id (none when empty), its name and its
	// data, JSON.
	event(id, name string, data []byte) error
	// keepalive tells the client, and the proxies between, that the
	// stream is open while nothing happens.
	keepalive() error
}

var (
	_ emitter = (*sse)(nil)
	_ emitter = (*wsStream)(nil)
)

func (o *sse) event(id, name string, data []byte) error { return o.sendRaw(id, name, data) }

func (o *sse) keepalive() error { return o.comment("keepalive") }

// executionStream is an execution's stream admitted (within the bounds,
// the server not stopping), before it answers.
type executionStream struct {
	id   string
	from streamPos
	// kinds are the kinds of events the client gets (see
	// states.RealTimeEventKinds); nil means all.
	kinds []string
	feed  *historyFeed
	stop  <-chan struct{} // closed when the server stops its streams
	every time.Duration   // the keepalive interval
	close func()          // counts the stream out
}

// openExecutionStream checks a request for an execution's stream (its
// resume point: 400; the execution: 404; the caller's and the server's
// bounds: 429; the server stopping: 503) and counts it in.
func (s *Server) openExecutionStream(r *http.Request) (*executionStream, error) {
	ctx, id := r.Context(), r.PathValue("id")
	from, err := resumeExecution(r)
	if err != nil {
		return nil, err
	}
	e, err := s.st.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	kinds, err := s.streamKinds(r, e)
	if err != nil {
		return nil, err
	}
	p, _ := principalOf(ctx)
	release, err := s.streams.histories.admit(p.Name, "history")
	if err != nil {
		return nil, err
	}
	stop, every, ok := s.streams.enter()
	if !ok {
		release()
		return nil, errStopping
	}
	f := s.streams.follow(s.st, id)
	live := s.x.FollowLive(id)
	return &executionStream{id: id, from: from, kinds: kinds, feed: f, stop: stop, every: every, close: func() {
		live()
		s.streams.unfollow(f)
		s.streams.open.Done()
		release()
	}}, nil
}

// streamEnd says why followExecution returned.
type streamEnd int

const (
	// endDone: the execution ended and `end` was sent.
	endDone streamEnd = iota
	// endStopped: the server stops its streams, or the request ended.
	endStopped
	// endFailed: an `error` event was sent.
	endFailed
	// endGone: a write failed (the client is gone, or too slow).
	endGone
)

// followExecution sends an execution's events to out from es.from: the
// history events after es.from.history, in order, and the live feed's
// chunks after es.from's place in it, as they come; then `end` once the
// execution has ended and every event and chunk was sent. It reads the
// feed as any reader does, so that a slow client never holds up the run:
// a client the feed's ring outran gets `chunks-missed`.
func (s *Server) followExecution(ctx context.Context, es *executionStream, out emitter) streamEnd {
	pos, f := es.from, es.feed
	settled := false
	if es.kinds != nil {
		out = kindFilter{out, es.kinds}
	}
	keepalive := time.NewTicker(es.every)
	defer keepalive.Stop()
	fail := func(err error) streamEnd {
		if ctx.Err() != nil {
			return endStopped
		}
		if out.event("", "error", problemData(err)) != nil {
			return endGone
		}
		return endFailed
	}
	for {
		events, floor, changed, end, err := f.since(pos.history)
		if pos.history < floor {
			// Behind what the feed holds: read the gap from the store.
			page, _, err := s.st.HistoryRange(ctx, es.id, pos.history, min(historyCatchUp, int(floor-pos.history)))
			if err == nil && len(page) == 0 {
				err = fmt.Errorf("execution %s: history event %d: %w", es.id, pos.history+1, engine.ErrNotFound)
			}
			if err != nil {
				return fail(err)
			}
			for _, e := range page {
				ev := eventOf(pos.history+1, e)
				data, err := json.Marshal(ev)
				if err != nil {
					return fail(fmt.Errorf("execution %s: history event %d: %w", es.id, ev.Seq, err))
				}
				pos.history = ev.Seq
				if out.event(pos.id(), ev.Type, data) != nil {
					return endGone
				}
			}
			continue
		}
		for _, ev := range events {
			pos.history = ev.seq
			if out.event(pos.id(), ev.typ, ev.data) != nil {
				return endGone
			}
		}
		// The chunks after the events (once the history as it stands is
		// sent: a new stream shows the history first): the engine ends a
		// state's stream before it commits the state's result, so once
		// the execution has ended (end set) the feed here holds every
		// chunk it gets.
		var more <-chan struct{}
		if f.ready() {
			var werr error
			if more, werr = s.sendChunks(es.id, &pos, out); werr != nil {
				return endGone
			}
		} else {
			// Woken by a chunk too: the feed's first read changes
			// nothing when the history is still empty.
			more = s.x.Live(es.id, pos.epoch, pos.seq).Changed
		}
		switch {
		case err != nil:
			return fail(err)
		case end != nil:
			// Chunks relayed from the server that ran the execution may
			// come after its history: wait for those it published, and
			// send them first.
			if !settled {
				settled = true
				if err := s.x.SettleLive(ctx, es.id); err != nil {
					s.log.Warn("the live feed of an ended execution may lack its last chunks", "execution", es.id, "error", err)
				}
				continue
			}
			if out.event("", "end", end) != nil {
				return endGone
			}
			return endDone
		case len(events) > 0:
			continue
		}
		select {
		case <-es.stop:
			return endStopped
		case <-ctx.Done():
			return endStopped
		case <-keepalive.C:
			if out.keepalive() != nil {
				return endGone
			}
		case <-changed:
		case <-more:
		}
	}
}

// ready reports whether f has read the store once (or failed).
func (f *historyFeed) ready() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started || f.end != nil || f.err != nil
}

// sendChunks sends the chunks of execution id's live feed after pos,
// moving pos past them, and returns the channel closed when more come.
// Its error is a write's.
func (s *Server) sendChunks(id string, pos *streamPos, out emitter) (<-chan struct{}, error) {
	lr := s.x.Live(id, pos.epoch, pos.seq)
	missed := lr.Missed
	if pos.epoch != "" && lr.Epoch != pos.epoch {
		// Another feed: the execution ran again (here after its feed
		// was dropped, or in another process). Live counts the old
		// place as missed; what the client holds of the old feed is
		// void.
		missed -= pos.seq
		had := pos.seq > 0
		pos.epoch, pos.seq = lr.Epoch, 0
		if had {
			data, err := json.Marshal(engine.Chunk{Kind: engine.ChunkRestart, At: time.Now().UTC()})
			if err != nil {
				return nil, err
			}
			if err := out.event(pos.id(), eventRestart, data); err != nil {
				return nil, err
			}
		}
	}
	pos.epoch = lr.Epoch
	if missed > 0 && len(lr.Chunks) > 0 {
		pos.chunked, pos.seq = true, lr.Chunks[0].Seq-1
		data, err := json.Marshal(chunksMissed{Count: missed})
		if err != nil {
			return nil, err
		}
		if err := out.event(pos.id(), eventChunksMissed, data); err != nil {
			return nil, err
		}
	}
	for _, c := range lr.Chunks {
		data, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		pos.chunked, pos.seq = true, c.Seq
		if err := out.event(pos.id(), chunkEvent(c.Kind), data); err != nil {
			return nil, err
		}
	}
	return lr.Changed, nil
}

// problemData is the data of an `error` event: err's problem document.
func problemData(err error) []byte {
	p := problemOf(err)
	data, merr := json.Marshal(api.Problem{Type: api.ProblemType + p.kind, Title: p.title, Status: p.status, Detail: p.detail, Errors: p.errors})
	if merr != nil {
		return []byte(`{"title":"internal error"}`)
	}
	return data
}

// WebSocket streams: the frames wait in a bounded queue for the one
// goroutine that writes them, each write with streamWriteTimeout; a
// client that lets the queue fill is closed as too slow.
const (
	// wsQueueFrames and wsQueueBytes bound a WebSocket's queue.
	wsQueueFrames = 256
	wsQueueBytes  = 1 << 20
	// wsDrain bounds how long a stream that ends waits for its queue to
	// be written before it closes.
	wsDrain = streamWriteTimeout
)

// wsStreams counts the WebSocket streams closed as too slow. It is safe
// for concurrent use.
type wsStreams struct {
	tooSlow atomic.Int64
}

// errTooSlow ends a WebSocket stream whose client does not read what it
// is sent fast enough.
var errTooSlow = errors.New("too slow")

// wsStream is an execution's stream over a WebSocket. event and
// keepalive are called from the stream's goroutine, write runs in its
// own.
type wsStream struct {
	c       *websocket.Conn
	timeout time.Duration
	queue   chan []byte // text frames; nil is a ping
	queued  atomic.Int64
	done    chan struct{} // closed when write returns
	abandon atomic.Bool   // write drops what is queued
	slow    bool          // the queue filled
}

func newWSStream(c *websocket.Conn) *wsStream {
	ws := &wsStream{c: c, timeout: streamWriteTimeout, queue: make(chan []byte, wsQueueFrames), done: make(chan struct{})}
	go ws.write()
	return ws
}

// write writes the queued frames, one at a time, until the queue is
// closed or a write fails.
func (ws *wsStream) write() {
	defer close(ws.done)
	for frame := range ws.queue {
		if ws.abandon.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), ws.timeout)
		var err error
		if frame == nil {
			err = ws.c.Ping(ctx)
		} else {
			err = ws.c.Write(ctx, websocket.MessageText, frame)
		}
		cancel()
		ws.queued.Add(-int64(len(frame)))
		if err != nil {
			return
		}
	}
}

// event queues the frame {"id": id, "event": name, "data": data} (no
// id when empty).
func (ws *wsStream) event(id, name string, data []byte) error {
	select {
	case <-ws.done:
		return errGone
	default:
	}
	frame := make([]byte, 0, len(data)+len(id)+len(name)+32)
	frame = append(frame, '{')
	if id != "" {
		frame = append(frame, `"id":`...)
		frame = strconv.AppendQuote(frame, id) // ids and names are ASCII
		frame = append(frame, ',')
	}
	frame = append(frame, `"event":`...)
	frame = strconv.AppendQuote(frame, name)
	frame = append(frame, `,"data":`...)
	frame = append(frame, data...)
	frame = append(frame, '}')
	n := int64(len(frame))
	if q := ws.queued.Add(n); q > wsQueueBytes && q > n {
		ws.queued.Add(-n)
		ws.slow = true
		return errTooSlow
	}
	select {
	case ws.queue <- frame:
		return nil
	default:
		ws.queued.Add(-n)
		ws.slow = true
		return errTooSlow
	}
}

// keepalive queues a ping, unless the queue is full (the client has
// plenty to read).
func (ws *wsStream) keepalive() error {
	select {
	case <-ws.done:
		return errGone
	case ws.queue <- nil:
	default:
	}
	return nil
}

// finish closes the WebSocket as the stream ended: after its queue is
// written when the execution ended or the stream failed, at once with
// the reason otherwise.
func (ws *wsStream) finish(end streamEnd, closed bool, tooSlow *atomic.Int64) {
	code, reason := websocket.StatusNormalClosure, "the execution has ended"
	switch {
	case end == endFailed:
		code, reason = websocket.StatusInternalError, "the stream failed: see its error event"
	case ws.slow:
		tooSlow.Add(1)
		code, reason = websocket.StatusPolicyViolation, fmt.Sprintf("too slow: more than %d frames or %d bytes waited to be sent", wsQueueFrames, wsQueueBytes)
		ws.abandon.Store(true)
	case end == endStopped || end == endGone:
		code, reason = websocket.StatusGoingAway, "the server is stopping"
		ws.abandon.Store(true)
	}
	close(ws.queue)
	drain := time.NewTimer(wsDrain)
	defer drain.Stop()
	select {
	case <-ws.done:
	case <-drain.C:
		closed = true
	}
	if closed || end == endGone && !ws.slow {
		ws.c.CloseNow()
		return
	}
	ws.c.Close(code, reason)
}

// streamHistoryWS is GET /v1/executions/{id}/ws: the events of
// streamHistory as WebSocket text frames, {"id", "event", "data"}.
func (s *Server) streamHistoryWS(w http.ResponseWriter, r *http.Request) error {
	if err := checkWebSocket(r); err != nil {
		return err
	}
	es, err := s.openExecutionStream(r)
	if err != nil {
		return err
	}
	defer es.close()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil // Accept answered
	}
	// The client sends nothing: CloseRead answers its pings and its
	// close, closes on a data message, and ends ctx when it closes.
	ctx := c.CloseRead(r.Context())
	ws := newWSStream(c)
	end := s.followExecution(ctx, es, ws)
	ws.finish(end, ctx.Err() != nil, &s.streams.ws.tooSlow)
	return nil
}

// checkWebSocket refuses, as problems, a request that is not a WebSocket
// handshake (426) or that comes from a page of another site (403: a
// browser sends its session cookie along, as for any request).
// websocket.Accept checks them too, answering in plain text.
func checkWebSocket(r *http.Request) error {
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		return &problem{status: http.StatusUpgradeRequired, kind: "upgrade-required", title: "a WebSocket handshake is required",
			detail: fmt.Sprintf("%s takes a WebSocket handshake (Connection: Upgrade, Upgrade: websocket); for Server-Sent Events use %s", r.URL.Path, strings.TrimSuffix(r.URL.Path, "/ws")+"/events")}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &problem{status: http.StatusForbidden, kind: "forbidden", title: "forbidden",
				detail: fmt.Sprintf("the Origin header %q is not this server's (%s): a page of another site may not open this WebSocket", origin, r.Host)}
		}
	}
	return nil
}

// headerHas reports whether header name lists token (case-insensitive).
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// streamKinds are the kinds of events a stream sends: the request's
// ?events= (a comma-separated list of states.RealTimeEventKinds: 400 on
// another), else its workflow's RealTime Events; with RealTime Enabled
// false, no streamed text unless the request asks for it. nil means all.
func (s *Server) streamKinds(r *http.Request, e *engine.Execution) ([]string, error) {
	if q, ok := r.URL.Query()["events"]; ok {
		var kinds []string
		for _, v := range q {
			for k := range strings.SplitSeq(v, ",") {
				if !slices.Contains(states.RealTimeEventKinds, k) {
					return nil, badRequest("/events", "events: %q is not a kind of event (%s)", k, strings.Join(states.RealTimeEventKinds, ", "))
				}
				kinds = append(kinds, k)
			}
		}
		return kinds, nil
	}
	m, err := s.machines.Parse(e.Definition)
	if err != nil || m.Extensions == nil || m.Extensions.RealTime == nil {
		return nil, nil
	}
	rt := m.Extensions.RealTime
	switch {
	case len(rt.Events) > 0:
		return rt.Events, nil
	case !rt.Enabled:
		return []string{"history", "state", "end"}, nil
	}
	return nil, nil
}

// kindFilter passes on the events of its kinds: "end" and "error"
// always, the streamed text's and the progress reports ("progress") as
// "chunk", states entered and exited as "state" (and "history"), other
// history events as "history".
type kindFilter struct {
	emitter
	kinds []string
}

func (k kindFilter) event(id, name string, data []byte) error {
	kind := "history"
	switch {
	case name == "end" || name == "error":
		return k.emitter.event(id, name, data)
	case name == eventChunk || name == eventProgress || name == eventRestart || name == eventChunksMissed || strings.HasPrefix(name, "stream-"):
		kind = "chunk"
	case strings.HasSuffix(name, "StateEntered") || strings.HasSuffix(name, "StateExited"):
		if slices.Contains(k.kinds, "state") {
			return k.emitter.event(id, name, data)
		}
	}
	if !slices.Contains(k.kinds, kind) {
		return nil
	}
	return k.emitter.event(id, name, data)
}
