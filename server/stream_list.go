package server

// The executions list as it changes: GET /v1/execution-events, which the
// executions page follows. Like the approval stream it reads the store by
// polling, so that it shows only what is committed, whichever process
// committed it; one read serves every open stream, each filtering the
// changes by its own status and workflow.

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

const (
	// feedPoll is how often the list streams look at the executions.
	feedPoll = 250 * time.Millisecond
	// feedRecent is how many of the newest executions are watched besides
	// those running or waiting: a new execution that starts and ends
	// between two reads is among them.
	feedRecent = 200
	// feedRing is how many changes are kept for streams to resume from.
	feedRing = 1024
	// feedSnapshot is how many executions a stream sends after a reset:
	// the first page of GET /v1/executions.
	feedSnapshot = 100
	// maxListStreams bounds the open list streams of the server, and
	// maxListStreamsPerCaller those of one caller (a token's or a signed-in
	// person's name: their browser tabs share it).
	maxListStreams          = 256
	maxListStreamsPerCaller = 16
)

// listQuery is a filter of the executions list, as the page and the
// stream take it: ?status= and ?workflow=.
type listQuery struct {
	Status   engine.Status // "" for any
	Workflow string        // "" for any
}

// listStatuses are the statuses a list may be filtered by.
var listStatuses = []engine.Status{engine.StatusRunning, engine.StatusWaiting, engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut, engine.StatusAborted}

// parseListQuery reads a list's filter from a query string. A status is
// taken in any case; one that is not an execution's, or a workflow name
// that no execution could have, is refused naming the parameter.
func parseListQuery(q url.Values) (listQuery, error) {
	var lq listQuery
	for _, name := range []string{"status", "workflow"} {
		if vs := q[name]; len(vs) > 1 {
			return lq, badRequest("", "%s is given %d times; give it once", name, len(vs))
		}
	}
	if v := q.Get("status"); v != "" {
		lq.Status = engine.Status(strings.ToUpper(v))
		if !slices.Contains(listStatuses, lq.Status) {
			return listQuery{}, badRequest("", "status %q is not one of RUNNING, WAITING, SUCCEEDED, FAILED, TIMED_OUT or ABORTED", v)
		}
	}
	w := q.Get("workflow")
	switch {
	case len(w) > maxExecutionID:
		return listQuery{}, badRequest("", "workflow is %d bytes long, more than %d", len(w), maxExecutionID)
	case !utf8.ValidString(w):
		return listQuery{}, badRequest("", "workflow is not valid UTF-8")
	case strings.ContainsFunc(w, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return listQuery{}, badRequest("", "workflow %q contains a control character", w)
	}
	lq.Workflow = w
	return lq, nil
}

// match reports whether an execution is in the filtered list.
func (lq listQuery) match(s store.Summary) bool {
	return (lq.Status == "" || s.Status == lq.Status) && (lq.Workflow == "" || s.MachineName == lq.Workflow)
}

// values is the filter as a query string's values (empty ones left out).
func (lq listQuery) values() url.Values {
	v := url.Values{}
	if lq.Status != "" {
		v.Set("status", string(lq.Status))
	}
	if lq.Workflow != "" {
		v.Set("workflow", lq.Workflow)
	}
	return v
}

// summaryOf is what GET /v1/executions says of an execution.
func summaryOf(sum store.Summary) api.Execution {
	return api.Execution{ID: sum.ID, Workflow: sum.MachineName, Hash: sum.DefinitionHash, Status: string(sum.Status), StartedAt: sum.StartedAt,
		StoppedAt: timePtr(sum.StoppedAt), Error: sum.Error, WaitingFor: sum.WaitingFor, WakeAt: timePtr(sum.WakeAt), Parent: sum.Parent, Approvals: []api.Approval{}}
}

// listed is an execution of a list as the API shows it: its summary and,
// for a WAITING one, its pending approvals, which the summary does not
// hold (without them a list showed "approvals": [] for an execution that
// waited for one).
func (s *Server) listed(ctx context.Context, sum store.Summary) (api.Execution, error) {
	out := summaryOf(sum)
	if sum.Status != engine.StatusWaiting {
		return out, nil
	}
	e, err := s.st.Load(ctx, sum.ID)
	if errors.Is(err, engine.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return api.Execution{}, err
	}
	for _, pa := range engine.PendingOf(e) {
		out.Approvals = append(out.Approvals, approvalOf(e.ID, pa))
	}
	return out, nil
}

// storeSummary is a loaded execution's summary, as List gives it.
func storeSummary(e *engine.Execution) store.Summary {
	return store.Summary{ID: e.ID, MachineName: e.MachineName, DefinitionHash: e.DefinitionHash, Status: e.Status, StartedAt: e.StartedAt,
		StoppedAt: e.StoppedAt, Error: e.Error, Parent: e.Parent, WaitingFor: e.WaitingFor, WakeAt: e.WakeAt}
}

// sameSummary compares summaries, times by instant.
func sameSummary(a, b store.Summary) bool {
	return a.ID == b.ID && a.MachineName == b.MachineName && a.DefinitionHash == b.DefinitionHash && a.Status == b.Status &&
		a.StartedAt.Equal(b.StartedAt) && a.StoppedAt.Equal(b.StoppedAt) && a.Error == b.Error && a.Parent == b.Parent &&
		a.WaitingFor == b.WaitingFor && a.WakeAt.Equal(b.WakeAt)
}

// executionFeed follows the executions for the list streams: those
// running or waiting, and the newest feedRecent. Each stream asks it to
// refresh on its own interval, and one read of the store serves them
// all: refresh skips the store when it was read less than half a
// feedPoll ago. It also counts the open list streams. It is safe for
// concurrent use; the zero value is ready.
type executionFeed struct {
	polling sync.Mutex // held while the store is read
	// known are the executions watched, as last read; only refresh,
	// holding polling, reads and writes it.
	known map[string]store.Summary

	mu      sync.Mutex // guards what follows
	started bool
	polled  time.Time
	// head is the seq of the last change: numbered server-wide in this
	// process's memory, from its first read's time in microseconds (as
	// the inbox's), so that an id of a previous process is below floor.
	head, floor int64
	ring        []feedChange
	ringSize    int // 0 means feedRing
	// streams counts and bounds the open list streams.
	streams streamLimit
}

// feedChange is a change of one execution: how it was (ok false when it
// was not watched) and how it is.
type feedChange struct {
	seq    int64
	old    store.Summary
	hadOld bool
	now    store.Summary
}

// refresh reads the executions from the store unless they were read just
// now, and records what changed.
func (f *executionFeed) refresh(ctx context.Context, st Executions) error {
	f.polling.Lock()
	defer f.polling.Unlock()
	f.mu.Lock()
	fresh := f.started && time.Since(f.polled) < feedPoll/2
	f.mu.Unlock()
	if fresh {
		return nil
	}
	current := map[string]store.Summary{}
	watch := map[string]bool{} // those kept for the next read
	for _, opts := range []store.ListOptions{{Status: engine.StatusRunning}, {Status: engine.StatusWaiting}, {Limit: feedRecent}} {
		list, err := st.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, s := range list {
			current[s.ID], watch[s.ID] = s, true
		}
	}
	// An execution that was running or waiting and is in none of the
	// lists now has ended (or is gone), or changed between two of the
	// reads: read it once more, for its end, and keep watching it if it
	// has not ended.
	for id, old := range f.known {
		if _, ok := current[id]; ok || old.Status.Ended() {
			continue
		}
		e, err := st.Load(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		current[id], watch[id] = storeSummary(e), !e.Status.Ended()
	}
	ids := make([]string, 0, len(current))
	for id := range current {
		ids = append(ids, id)
	}
	// Oldest first, so that a client adding each at the top of a
	// newest-first list keeps its order.
	slices.SortFunc(ids, func(a, b string) int {
		if c := current[a].StartedAt.Compare(current[b].StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polled = time.Now()
	first := !f.started
	if first {
		f.started = true
		f.head = f.polled.UnixMicro()
		f.floor = f.head
	}
	known := make(map[string]store.Summary, len(watch))
	for _, id := range ids {
		now := current[id]
		if watch[id] {
			known[id] = now
		}
		old, had := f.known[id]
		if first || had && sameSummary(old, now) {
			continue
		}
		f.record(feedChange{old: old, hadOld: had, now: now})
	}
	f.known = known
	return nil
}

// record adds a change to the ring; f.mu is held.
func (f *executionFeed) record(c feedChange) {
	f.head++
	c.seq = f.head
	f.ring = append(f.ring, c)
	size := f.ringSize
	if size <= 0 {
		size = feedRing
	}
	if n := len(f.ring) - size; n > 0 {
		f.floor = f.ring[n-1].seq
		f.ring = f.ring[n:]
	}
}

// since returns the changes after seq k and the head, or false when k is
// not an id this process can resume from.
func (f *executionFeed) since(k int64) ([]feedChange, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started || k < f.floor || k > f.head {
		return nil, f.head, false
	}
	return slices.Clone(f.ring[k-f.floor:]), f.head, true
}

// cursor is the seq of the last change: a stream asked to resume from it
// sends what changes after.
func (f *executionFeed) cursor() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}

// errTooManyStreams refuses a stream over the bounds.
func errTooManyStreams(detail string) error {
	return &problem{status: http.StatusTooManyRequests, kind: "too-many-streams", title: "too many streams", detail: detail}
}

// listReset is the data of a list stream's reset event: how many
// execution events follow.
type listReset struct {
	Executions int `json:"executions"`
}

// streamExecutions is GET /v1/execution-events: the executions that
// match the filter as they change (an `execution` event each time one
// appears or changes, `gone` when one no longer matches), after a reset
// and the first page of the list unless the stream resumes.
func (s *Server) streamExecutions(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	after, resume, err := resumePoint(r)
	if err != nil {
		return err
	}
	f := &s.feed
	if err := f.refresh(ctx, s.st); err != nil {
		return err
	}
	stop, every, ok := s.streams.enter()
	if !ok {
		return errStopping
	}
	defer s.streams.open.Done()
	p, _ := principalOf(ctx)
	release, err := f.streams.admit(p.Name, "list")
	if err != nil {
		return err
	}
	defer release()
	out, err := startSSE(w)
	if err != nil {
		return nil
	}
	// send writes the changes that concern the filter.
	send := func(changes []feedChange) error {
		for _, c := range changes {
			event := "execution"
			switch {
			case lq.match(c.now):
			case c.hadOld && lq.match(c.old):
				event = "gone"
			default:
				continue
			}
			x, err := s.listed(ctx, c.now)
			if err != nil {
				return err
			}
			if err := out.send(strconv.FormatInt(c.seq, 10), event, x); err != nil {
				return err
			}
		}
		return nil
	}
	// reset writes the first page of the list, after a reset event whose
	// id is the head read before it: the changes after it follow.
	reset := func() (int64, error) {
		head := f.cursor()
		list, err := s.st.List(ctx, store.ListOptions{Status: lq.Status, MachineName: lq.Workflow, Limit: feedSnapshot})
		if err != nil {
			return 0, err
		}
		if err := out.send(strconv.FormatInt(head, 10), "reset", listReset{Executions: len(list)}); err != nil {
			return 0, err
		}
		for _, sum := range list {
			x, err := s.listed(ctx, sum)
			if err != nil {
				return 0, err
			}
			if err := out.send("", "execution", x); err != nil {
				return 0, err
			}
		}
		return head, nil
	}
	var cursor int64
	if changes, head, ok := f.since(after); resume && ok {
		if send(changes) != nil {
			return nil
		}
		cursor = head
	} else if cursor, err = reset(); err != nil {
		if ctx.Err() == nil {
			out.fail(err)
		}
		return nil
	}
	follow(ctx, stop, out, every, feedPoll, func() error {
		if err := f.refresh(ctx, s.st); err != nil {
			return err
		}
		changes, head, ok := f.since(cursor)
		if !ok {
			// Fell out of the ring (or cannot happen otherwise): the
			// list again.
			var err error
			cursor, err = reset()
			return err
		}
		if send(changes) != nil {
			return errGone
		}
		cursor = head
		return nil
	})
	return nil
}
