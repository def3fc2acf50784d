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
	o.buf.Reset()
	if id != "" {
		fmt.Fprintf(&o.buf, "id: %s\n", id)
	}
	fmt.Fprintf(&o.buf, "event: %s\n", event)
	for line := range strings.Lines(string(b)) {
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
	v, what := r.Header.Get("Last-Event-ID"), "the Last-Event-ID header"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, badRequest("", "%s %q is not an event id (a number from 0)", what, v)
	}
	return n, true, nil
}

// errStopping answers a stream asked for while the server stops.
var errStopping = &problem{status: http.StatusServiceUnavailable, kind: "stopping", title: "the server is stopping", detail: "the server is stopping: connect again later"}

// streamHistory is GET /v1/executions/{id}/events: the execution's
// committed events in order, each with its seq as its id, then `end`
// once the execution has ended.
func (s *Server) streamHistory(w http.ResponseWriter, r *http.Request) error {
	ctx, id := r.Context(), r.PathValue("id")
	after, _, err := resumePoint(r)
	if err != nil {
		return err
	}
	if _, err := s.st.Load(ctx, id); err != nil {
		return err
	}
	stop, every, ok := s.streams.enter()
	if !ok {
		return errStopping
	}
	defer s.streams.open.Done()
	out, err := startSSE(w)
	if err != nil {
		return nil
	}
	keepalive := time.NewTicker(every)
	defer keepalive.Stop()
	poll := time.NewTimer(0)
	defer poll.Stop()
	wait := historyPollMin
	// seen is what the last read of the history was made after; count is
	// how many events it had.
	type mark struct {
		seq, last, own int64
		status         engine.Status
	}
	var seen mark
	count := int64(-1)
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-keepalive.C:
			if out.comment("keepalive") != nil {
				return nil
			}
			continue
		case <-poll.C:
		}
		e, err := s.st.Load(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				out.fail(err)
			}
			return nil
		}
		// Load before History: when the execution has ended, the history
		// read after holds every event.
		now := mark{e.Seq, e.Progress.LastEvent, e.Progress.LastOwnEvent, e.Status}
		if count < 0 || now != seen {
			events, err := s.st.History(ctx, id)
			if err != nil {
				if ctx.Err() == nil {
					out.fail(err)
				}
				return nil
			}
			for ; after < int64(len(events)); after++ {
				ev := eventOf(after+1, events[after])
				if out.send(strconv.FormatInt(ev.Seq, 10), ev.Type, ev) != nil {
					return nil
				}
			}
			if int64(len(events)) > count {
				wait = historyPollMin
			}
			seen, count = now, int64(len(events))
		} else {
			wait = min(2*wait, historyPollMax)
		}
		if e.Status.Ended() && after >= count {
			out.send("", "end", executionOf(e))
			return nil
		}
		poll.Reset(wait)
	}
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
