package server

// Server-Sent Events: an execution's history and the approval inbox as
// they change. Both are read from the store by polling, so that a stream
// only ever shows what is committed, whichever process committed it.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

const (
	// keepaliveEvery is how often a stream sends a comment line, so that
	// proxies keep an idle stream open.
	keepaliveEvery = 15 * time.Second
	// streamWriteTimeout bounds each write of a stream: a client that
	// stops reading ends its stream.
	streamWriteTimeout = 10 * time.Second
	// An execution's stream reads the store every historyPollMin, backing
	// off to historyPollMax while nothing changes.
	historyPollMin = 100 * time.Millisecond
	historyPollMax = time.Second
	// inboxPoll is how often the approval streams look at the inbox; one
	// read of the store serves them all.
	inboxPoll = 250 * time.Millisecond
	// inboxRing is how many inbox changes are kept for streams to resume
	// from.
	inboxRing = 1024
)

// streams are the server's open event streams. The zero value is ready;
// it is safe for concurrent use.
type streams struct {
	mu      sync.Mutex
	stop    chan struct{} // closed by StopStreams; made on first use
	stopped bool
	open    sync.WaitGroup
	// keepalive is the interval of the keepalive comments; 0 means
	// keepaliveEvery (tests shorten it).
	keepalive time.Duration
	inbox     inbox
	// feeds are the executions' history feeds, by execution id, while
	// a stream follows them (guarded by mu).
	feeds map[string]*historyFeed
	// histories and approvals bound the open history and approval
	// streams, as list streams are.
	histories, approvals streamLimit
	// keep bounds the events a history feed holds; 0 means feedKeep
	// (tests lower it).
	keep int64
	// ws counts the WebSocket streams closed as too slow (stream_live.go).
	ws wsStreams
}

// enter counts a stream in: it returns the channel closed when streams
// must stop and the keepalive interval, or false when the server stops.
func (ss *streams) enter() (<-chan struct{}, time.Duration, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return nil, 0, false
	}
	if ss.stop == nil {
		ss.stop = make(chan struct{})
	}
	ss.open.Add(1)
	every := ss.keepalive
	if every <= 0 {
		every = keepaliveEvery
	}
	return ss.stop, every, true
}

// StopStreams ends every open event stream, refuses new ones (503), and
// waits until their handlers have returned. http.Server.Shutdown does not
// end a response that is still being written, and would wait for stream
// clients until its context ends: register StopStreams with
// http.Server.RegisterOnShutdown. Close calls it too. It may be called
// more than once.
func (s *Server) StopStreams() {
	ss := &s.streams
	ss.mu.Lock()
	if !ss.stopped {
		ss.stopped = true
		if ss.stop == nil {
			ss.stop = make(chan struct{})
		}
		close(ss.stop)
	}
	ss.mu.Unlock()
	ss.open.Wait()
}

// Unwrap lets http.ResponseController reach the connection under the
// request log, for a stream's deadlines.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// sse writes a text/event-stream response.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
}

// startSSE answers 200 with an event stream. The server's WriteTimeout
// would cut the response: a stream sets a deadline for each write instead.
// (Its ReadTimeout does not matter: once a request without a body is
// read, net/http clears the read deadline.)
func startSSE(w http.ResponseWriter) (*sse, error) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	out := &sse{w: w, rc: rc}
	if err := out.deadline(); err != nil {
		return nil, err
	}
	w.WriteHeader(http.StatusOK)
	return out, rc.Flush()
}

func (o *sse) deadline() error {
	if err := o.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// send writes one event: its id (none when empty), its type, and data as
// JSON.
func (o *sse) send(id, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return o.sendRaw(id, event, b)
}

// sendRaw writes one event whose data is JSON already encoded.
func (o *sse) sendRaw(id, event string, data []byte) error {
	o.buf.Reset()
	if id != "" {
		fmt.Fprintf(&o.buf, "id: %s\n", id)
	}
	fmt.Fprintf(&o.buf, "event: %s\n", event)
	for line := range strings.Lines(string(data)) {
		fmt.Fprintf(&o.buf, "data: %s\n", strings.TrimSuffix(line, "\n"))
	}
	o.buf.WriteByte('\n')
	return o.flush()
}

// comment writes a comment line, which clients ignore.
func (o *sse) comment(text string) error {
	o.buf.Reset()
	fmt.Fprintf(&o.buf, ": %s\n\n", text)
	return o.flush()
}

// fail ends a stream on an error: an `error` event with its problem.
func (o *sse) fail(err error) {
	p := problemOf(err)
	o.send("", "error", api.Problem{Type: api.ProblemType + p.kind, Title: p.title, Status: p.status, Detail: p.detail, Errors: p.errors})
}

func (o *sse) flush() error {
	if err := o.deadline(); err != nil {
		return err
	}
	if _, err := io.Copy(o.w, &o.buf); err != nil {
		return err
	}
	return o.rc.Flush()
}

// resumePoint reads where a stream resumes: after the Last-Event-ID
// header's id or, without it, after ?after=; false when neither is given.
func resumePoint(r *http.Request) (int64, bool, error) {
	v, what := resumeValue(r)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, badRequest("", "%s %q is not an event id (a number from 0)", what, v)
	}
	return n, true, nil
}

// resumeValue is the Last-Event-ID header or, without it, ?after=, and
// which of them it is.
func resumeValue(r *http.Request) (v, what string) {
	v, what = r.Header.Get("Last-Event-ID"), "the Last-Event-ID header"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "after"
	}
	return v, what
}

// errStopping answers a stream asked for while the server stops.
var errStopping = &problem{status: http.StatusServiceUnavailable, kind: "stopping", title: "the server is stopping", detail: "the server is stopping: connect again later"}

// streamHistory is GET /v1/executions/{id}/events: the execution's
// committed events in order and, interleaved as they happen, the chunks
// its agents stream (followExecution), then `end` once the execution has
// ended. Every stream of an execution follows one historyFeed: one
// reader of the store per execution, however many watch it. A stream
// that resumes from before what the feed holds reads the part it lacks
// itself, a page at a time.
func (s *Server) streamHistory(w http.ResponseWriter, r *http.Request) error {
	es, err := s.openExecutionStream(r)
	if err != nil {
		return err
	}
	defer es.close()
	out, err := startSSE(w)
	if err != nil {
		return nil
	}
	s.followExecution(r.Context(), es, out)
	return nil
}

// inbox follows the approval inbox for the approval streams. Each stream
// asks it to refresh on its own interval, and one read of the store
// serves them all: refresh skips the store when it was read less than
// half an inboxPoll ago. It is safe for concurrent use.
type inbox struct {
	polling sync.Mutex // held while the store is read

	mu      sync.Mutex // guards what follows
	started bool
	polled  time.Time
	// head is the seq of the last change. Seqs number the inbox's changes
	// server-wide: an in-memory counter of this server process, lost with
	// it. It starts at the process's first poll time in microseconds, so
	// that an id of a previous process is lower than every id of this one
	// (and one of another process most likely higher than head).
	head int64
	// ring holds the last changes, floor+1 to head: a stream resumes
	// from an id in floor…head.
	floor    int64
	ring     []inboxChange
	ringSize int // 0 means inboxRing
	// pending is the inbox as last read, by approval id.
	pending map[string]inboxEntry
}

type inboxEntry struct {
	seq      int64 // of its last pending change
	approval api.Approval
	data     []byte // its JSON: a change of it is a new pending change
}

// inboxChange is an event of the approval streams.
type inboxChange struct {
	seq   int64
	event string // "pending" (data an api.Approval) or "gone" (an api.ApprovalGone)
	data  any
}

// refresh reads the inbox from the store unless it was read just now,
// and records its changes.
func (in *inbox) refresh(ctx context.Context, st Executions) error {
	in.polling.Lock()
	defer in.polling.Unlock()
	in.mu.Lock()
	fresh := in.started && time.Since(in.polled) < inboxPoll/2
	in.mu.Unlock()
	if fresh {
		return nil
	}
	list, err := readInbox(ctx, st)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.polled = time.Now()
	if !in.started {
		in.started = true
		in.head = in.polled.UnixMicro()
		in.floor = in.head
		in.pending = map[string]inboxEntry{}
	}
	seen := map[string]bool{}
	for _, a := range list {
		seen[a.ID] = true
	}
	var gone []string
	for id := range in.pending {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		a := in.pending[id].approval
		delete(in.pending, id)
		in.record("gone", api.ApprovalGone{ID: id, Execution: a.Execution, Approval: a.Approval})
	}
	for _, a := range list {
		data, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if old, ok := in.pending[a.ID]; ok && bytes.Equal(old.data, data) {
			continue
		}
		in.pending[a.ID] = inboxEntry{seq: in.record("pending", a), approval: a, data: data}
	}
	return nil
}

// record adds a change to the ring and returns its seq.
func (in *inbox) record(event string, data any) int64 {
	in.head++
	in.ring = append(in.ring, inboxChange{seq: in.head, event: event, data: data})
	size := in.ringSize
	if size <= 0 {
		size = inboxRing
	}
	if n := len(in.ring) - size; n > 0 {
		in.floor = in.ring[n-1].seq
		in.ring = in.ring[n:]
	}
	return in.head
}

// since returns the changes after seq k and the head, or false when k is
// not an id this process can resume from.
func (in *inbox) since(k int64) ([]inboxChange, int64, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.started || k < in.floor || k > in.head {
		return nil, in.head, false
	}
	return slices.Clone(in.ring[k-in.floor:]), in.head, true
}

// snapshot returns the whole inbox as pending changes, by seq, and the
// head.
func (in *inbox) snapshot() ([]inboxChange, int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]inboxChange, 0, len(in.pending))
	for _, e := range in.pending {
		out = append(out, inboxChange{seq: e.seq, event: "pending", data: e.approval})
	}
	slices.SortFunc(out, func(a, b inboxChange) int { return cmp.Compare(a.seq, b.seq) })
	return out, in.head
}

// readInbox reads every pending approval, oldest execution first, as
// GET /v1/approvals lists them. Only the executions waiting for an
// approval are loaded.
func readInbox(ctx context.Context, st Executions) ([]api.Approval, error) {
	list, err := st.List(ctx, store.ListOptions{Status: engine.StatusWaiting})
	if err != nil {
		return nil, err
	}
	var out []api.Approval
	for i := len(list) - 1; i >= 0; i-- {
		if !slices.Contains(strings.Split(list[i].WaitingFor, ", "), engine.WaitingForApproval) {
			continue
		}
		e, err := st.Load(ctx, list[i].ID)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, pa := range engine.PendingOf(e) {
			out = append(out, approvalOf(e.ID, pa))
		}
	}
	return out, nil
}

// streamApprovals is GET /v1/approvals/events: the inbox, then its
// changes as they are seen.
func (s *Server) streamApprovals(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	after, resume, err := resumePoint(r)
	if err != nil {
		return err
	}
	in := &s.streams.inbox
	if err := in.refresh(ctx, s.st); err != nil {
		return err
	}
	p, _ := principalOf(ctx)
	release, err := s.streams.approvals.admit(p.Name, "approval")
	if err != nil {
		return err
	}
	defer release()
	stop, every, ok := s.streams.enter()
	if !ok {
		return errStopping
	}
	defer s.streams.open.Done()
	out, err := startSSE(w)
	if err != nil {
		return nil
	}
	// send writes the changes after the stream's cursor, or the whole
	// inbox after a reset when the cursor is not one to resume from.
	var cursor int64
	send := func(changes []inboxChange, head int64, ok bool) error {
		if !ok {
			changes, head = in.snapshot()
			if err := out.send("", "reset", api.InboxReset{Pending: len(changes)}); err != nil {
				return err
			}
		}
		for _, c := range changes {
			if err := out.send(strconv.FormatInt(c.seq, 10), c.event, c.data); err != nil {
				return err
			}
		}
		cursor = head
		return nil
	}
	if resume {
		err = send(in.since(after))
	} else {
		changes, head := in.snapshot()
		err = send(changes, head, true)
	}
	if err != nil {
		return nil
	}
	follow(ctx, stop, out, every, inboxPoll, func() error {
		if err := in.refresh(ctx, s.st); err != nil {
			return err
		}
		if send(in.since(cursor)) != nil {
			return errGone
		}
		return nil
	})
	return nil
}

// errGone ends a stream whose client is gone (a write failed): there is
// nobody to tell.
var errGone = errors.New("the client is gone")

// follow keeps a polling stream open until stop closes, ctx ends or a
// write fails: a keepalive comment every `every`, and tick every `poll`.
// An error of tick ends the stream, told to the client unless it is
// errGone or ctx has ended.
func follow(ctx context.Context, stop <-chan struct{}, out *sse, every, poll time.Duration, tick func() error) {
	keepalive := time.NewTicker(every)
	defer keepalive.Stop()
	ticks := time.NewTicker(poll)
	defer ticks.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if out.comment("keepalive") != nil {
				return
			}
		case <-ticks.C:
			if err := tick(); err != nil {
				if !errors.Is(err, errGone) && ctx.Err() == nil {
					out.fail(err)
				}
				return
			}
		}
	}
}

const (
	// historyCatchUp is how many events a history stream reads from the
	// store at a time when it resumes from before what its feed holds.
	historyCatchUp = 256
	// historyBatch is how many events a feed reads from the store at a
	// time.
	historyBatch = 1024
	// feedKeep and feedKeepBytes bound the events a feed holds for its
	// streams: the last feedKeep, and fewer when their data pass
	// feedKeepBytes (at least one). With at most maxListStreams history
	// streams, and so feeds, that bounds what they all hold.
	feedKeep      = 1024
	feedKeepBytes = 1 << 20
)

// streamLimit bounds open streams of one kind: maxListStreams for the
// server and maxListStreamsPerCaller for one caller (a token's or a
// signed-in person's name); the list, history and approval streams each
// have one. It is safe for concurrent use.
type streamLimit struct {
	mu       sync.Mutex
	open     int
	byCaller map[string]int
	// max and maxPerCaller bound them; 0 means maxListStreams and
	// maxListStreamsPerCaller (tests lower them).
	max, maxPerCaller int
}

// admit counts a stream of what kind of caller in, or refuses it (429)
// over the bounds; release counts it out.
func (l *streamLimit) admit(caller, kind string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit, perCaller := cmp.Or(l.max, maxListStreams), cmp.Or(l.maxPerCaller, maxListStreamsPerCaller)
	switch {
	case l.open >= limit:
		return nil, errTooManyStreams(fmt.Sprintf("the server has %d %s streams open, its most: close one, or retry later", l.open, kind))
	case l.byCaller[caller] >= perCaller:
		return nil, errTooManyStreams(fmt.Sprintf("%s has %d %s streams open, the most one caller may: close one", caller, l.byCaller[caller], kind))
	}
	if l.byCaller == nil {
		l.byCaller = map[string]int{}
	}
	l.open++
	l.byCaller[caller]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.open--
		if l.byCaller[caller]--; l.byCaller[caller] == 0 {
			delete(l.byCaller, caller)
		}
	}, nil
}

// historyFeed reads one execution's history for all the streams that
// follow it: it polls the execution (historyPollMin, backing off to
// historyPollMax while nothing changes), reads only the events after the
// last it read (HistoryRange), encodes each once, and keeps the last
// feedKeep of them for its streams. It ends once the execution has ended
// and every event is read, or a read fails, or no stream follows it. It
// is safe for concurrent use.
type historyFeed struct {
	id     string
	cancel context.CancelFunc // ends the reading goroutine
	subs   int                // streams following it (guarded by streams.mu)
	keep   int64              // the most events it holds (feedKeep)

	mu      sync.Mutex    // guards what follows
	started bool          // the first read is done
	floor   int64         // the seq of the event before the first held
	events  []feedEvent   // the events floor+1… as read, in order
	size    int           // the bytes of their data
	changed chan struct{} // closed, and replaced, at each change
	end     []byte        // the `end` event's data once the execution ended and every event is held
	err     error         // the read that failed
}

// feedEvent is a history event as its streams send it.
type feedEvent struct {
	seq  int64
	typ  string
	data []byte
}

// follow returns the feed of execution id, started for its first
// stream; unfollow is called when the stream ends.
func (ss *streams) follow(st Store, id string) *historyFeed {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	f := ss.feeds[id]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &historyFeed{id: id, cancel: cancel, changed: make(chan struct{}), keep: cmp.Or(ss.keep, feedKeep)}
		if ss.feeds == nil {
			ss.feeds = map[string]*historyFeed{}
		}
		ss.feeds[id] = f
		// Counted as a stream: StopStreams waits for it too. The calling
		// stream is counted already, so the count is not zero.
		ss.open.Add(1)
		go func() {
			defer ss.open.Done()
			f.run(ctx, st)
			ss.mu.Lock()
			if ss.feeds[id] == f {
				delete(ss.feeds, id) // a later stream starts afresh (a redrive)
			}
			ss.mu.Unlock()
		}()
	}
	f.subs++
	return f
}

// unfollow counts a stream of f out, ending f with its last.
func (ss *streams) unfollow(f *historyFeed) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if f.subs--; f.subs == 0 {
		f.cancel()
		if ss.feeds[f.id] == f {
			delete(ss.feeds, f.id)
		}
	}
}

// since returns the events after seq `after` that f holds, the seq before
// the first it holds (a stream behind it reads from the store), the
// channel closed at f's next change, and, once there is nothing more,
// the `end` data or the error that ended f. Before f's first read it
// returns floor 0, no events and no end.
func (f *historyFeed) since(after int64) (events []feedEvent, floor int64, changed <-chan struct{}, end []byte, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		return nil, 0, f.changed, nil, f.err
	}
	if after < f.floor {
		return nil, f.floor, f.changed, nil, nil
	}
	if i := after - f.floor; i < int64(len(f.events)) {
		events = f.events[i:len(f.events):len(f.events)]
	}
	last := f.floor + int64(len(f.events))
	if after+int64(len(events)) >= last {
		end, err = f.end, f.err
	}
	return events, f.floor, f.changed, end, err
}

// run reads the execution until it has ended and every event is read, a
// read fails, or ctx ends.
func (f *historyFeed) run(ctx context.Context, st Store) {
	type mark struct {
		seq, last, own int64
		status         engine.Status
	}
	var seen mark
	var read int64 = -1 // the events read (-1: none yet)
	wait := historyPollMin
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		e, err := st.Load(ctx, f.id)
		if err != nil {
			f.fail(ctx, err)
			return
		}
		// Load before reading the history: when the execution has ended,
		// the history read after holds every event.
		now := mark{e.Seq, e.Progress.LastEvent, e.Progress.LastOwnEvent, e.Status}
		if read < 0 || now != seen {
			if read < 0 {
				// Start near the end: a stream behind reads the rest itself.
				_, total, err := st.HistoryRange(ctx, f.id, math.MaxInt64, 1)
				if err != nil {
					f.fail(ctx, err)
					return
				}
				read = max(0, total-f.keep)
				f.mu.Lock()
				f.floor = read
				f.mu.Unlock()
			}
			grew := false
			for {
				page, _, err := st.HistoryRange(ctx, f.id, read, historyBatch)
				if err != nil {
					f.fail(ctx, err)
					return
				}
				if err := f.add(read, page); err != nil {
					f.fail(ctx, err)
					return
				}
				read += int64(len(page))
				grew = grew || len(page) > 0
				if len(page) < historyBatch {
					break
				}
			}
			if grew {
				wait = historyPollMin
			}
			seen = now
		} else {
			wait = min(2*wait, historyPollMax)
		}
		if e.Status.Ended() {
			data, err := json.Marshal(executionOf(e))
			if err != nil {
				f.fail(ctx, err)
				return
			}
			f.mu.Lock()
			f.end = data
			f.signal()
			f.mu.Unlock()
			return
		}
		f.mu.Lock()
		if !f.started {
			f.started = true
			f.signal()
		}
		f.mu.Unlock()
		poll.Reset(wait)
	}
}

// add holds the events read after seq `after`, encoded, dropping the
// oldest past feedKeep and feedKeepBytes.
func (f *historyFeed) add(after int64, page []engine.Event) error {
	encoded := make([]feedEvent, len(page))
	for i, e := range page {
		ev := eventOf(after+int64(i)+1, e)
		data, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("execution %s: history event %d: %w", f.id, ev.Seq, err)
		}
		encoded[i] = feedEvent{seq: ev.Seq, typ: ev.Type, data: data}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// A new slice when some are dropped: streams keep reading the old.
	f.events = append(f.events, encoded...)
	for _, e := range encoded {
		f.size += len(e.data)
	}
	drop := 0
	for int64(len(f.events)-drop) > f.keep || (f.size > feedKeepBytes && len(f.events)-drop > 1) {
		f.size -= len(f.events[drop].data)
		drop++
	}
	if drop > 0 {
		f.events = slices.Clone(f.events[drop:])
		f.floor += int64(drop)
	}
	// The first read wakes the streams even when it read nothing: they
	// wait for it before they send the live feed's chunks.
	if len(encoded) > 0 || !f.started {
		f.signal()
	}
	f.started = true
	return nil
}

// fail ends f with err, unless ctx ended (no stream follows it).
func (f *historyFeed) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = true
	f.err = err
	f.signal()
}

// signal wakes the streams waiting for a change (f.mu held).
func (f *historyFeed) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}
