package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// listEvent is an event of the list stream with its data decoded.
type listEvent struct {
	sseEvent
	execution api.Execution
	reset     listReset
}

func nextListEvent(t *testing.T, rd *sseReader) listEvent {
	t.Helper()
	ev := listEvent{sseEvent: rd.event(t)}
	var v any
	switch ev.event {
	case "execution", "gone":
		v = &ev.execution
	case "reset":
		v = &ev.reset
	default:
		t.Fatalf("list event %+v", ev.sseEvent)
	}
	if err := json.Unmarshal([]byte(ev.data), v); err != nil {
		t.Fatalf("%s data %q: %v", ev.event, ev.data, err)
	}
	return ev
}

// untilStatus reads the list stream until an `execution` event shows id
// with status, and returns the events read for id on the way.
func untilStatus(t *testing.T, rd *sseReader, id, status string) []listEvent {
	t.Helper()
	var seen []listEvent
	for {
		ev := nextListEvent(t, rd)
		if ev.execution.ID != id {
			continue
		}
		seen = append(seen, ev)
		if ev.event == "execution" && ev.execution.Status == status {
			return seen
		}
	}
}

// startPass starts a one-Pass execution named name and waits for its end.
func (ts *testServer) startPass(t *testing.T, name string) {
	t.Helper()
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), "name": name}, nil); code != http.StatusCreated {
		t.Fatalf("start %s: %d %s", name, code, body)
	}
	ts.waitFor(t, name, func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
}

// TestExecutionStream: without a resume point the stream gives the first
// page of the list after a reset, then each execution that appears and
// each change of its status, with increasing ids; it resumes from an id
// of this process and resets from any other.
func TestExecutionStream(t *testing.T) {
	ts := newTestServer(t)
	ts.startPass(t, "old")
	resp, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ev := nextListEvent(t, rd)
	if ev.event != "reset" || ev.reset.Executions != 1 || !ev.hasID {
		t.Fatalf("first event %+v, want a reset with an id and one execution", ev)
	}
	if ev = nextListEvent(t, rd); ev.event != "execution" || ev.execution.ID != "old" || ev.execution.Status != "SUCCEEDED" || ev.hasID {
		t.Fatalf("after the reset: %+v, want old, SUCCEEDED, without an id", ev)
	}

	ts.startReview(t, "r1")
	waiting := untilStatus(t, rd, "r1", "WAITING")
	ts.decideReview(t, "r1")
	done := untilStatus(t, rd, "r1", "SUCCEEDED")
	last := int64(0)
	for _, ev := range append(waiting, done...) {
		n, err := strconv.ParseInt(ev.id, 10, 64)
		if err != nil || n <= last {
			t.Errorf("event id %q after %d, want increasing numbers", ev.id, last)
		}
		last = n
		if ev.event != "execution" || ev.execution.Workflow == "" || ev.execution.StartedAt.IsZero() {
			t.Errorf("event %+v, want an execution's summary", ev)
		}
	}
	if end := done[len(done)-1].execution; end.StoppedAt == nil {
		t.Errorf("SUCCEEDED without a stop time: %+v", end)
	}

	// Resumed after r1's WAITING: its changes after, nothing before.
	resumeAt := waiting[len(waiting)-1].id
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events", resumeAt)
	ev = nextListEvent(t, rd)
	if ev.event != "execution" || ev.execution.ID != "r1" || ev.execution.Status == "WAITING" {
		t.Errorf("resumed after %s: %+v, want r1's next change", resumeAt, ev)
	}
	// An id of another process: a reset, then the list.
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events?after=1", "")
	if ev = nextListEvent(t, rd); ev.event != "reset" || ev.reset.Executions != 2 {
		t.Fatalf("resumed from 1: %+v, want a reset with both executions", ev)
	}
	if ev = nextListEvent(t, rd); ev.execution.ID != "r1" {
		t.Errorf("after the reset: %+v, want r1, the newest, first", ev)
	}
}

// TestExecutionStreamFilters: a filtered stream gives only the
// executions that match, and `gone` for one that stops matching.
func TestExecutionStreamFilters(t *testing.T) {
	ts := newTestServer(t)
	_, waiting := ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events?status=waiting", "")
	_, succeeded := ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events?status=SUCCEEDED", "")
	_, other := ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events?workflow=Other", "")
	for _, rd := range []*sseReader{waiting, succeeded, other} {
		if ev := nextListEvent(t, rd); ev.event != "reset" || ev.reset.Executions != 0 {
			t.Fatalf("first event %+v, want an empty reset", ev)
		}
	}
	ts.startReview(t, "r1")
	ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "WAITING" })
	ts.startPass(t, "p1")
	// r1 never SUCCEEDED yet: the SUCCEEDED stream's first event is p1.
	if ev := nextListEvent(t, succeeded); ev.event != "execution" || ev.execution.ID != "p1" {
		t.Errorf("SUCCEEDED stream: %+v, want p1 first", ev)
	}
	if ev := nextListEvent(t, waiting); ev.event != "execution" || ev.execution.ID != "r1" || ev.execution.Status != "WAITING" {
		t.Errorf("WAITING stream: %+v, want r1 WAITING", ev)
	}
	ts.decideReview(t, "r1")
	if ev := nextListEvent(t, waiting); ev.event != "gone" || ev.execution.ID != "r1" || ev.execution.Status == "WAITING" {
		t.Errorf("WAITING stream after the decision: %+v, want r1 gone", ev)
	}
	if ev := nextListEvent(t, succeeded); ev.event != "execution" || ev.execution.ID != "r1" || ev.execution.Status != "SUCCEEDED" {
		t.Errorf("SUCCEEDED stream after the decision: %+v, want r1", ev)
	}
	// The workflow filter saw nothing of StateMachine's executions: its
	// next line is a keepalive, after which the test stops reading.
	ts.s.streams.mu.Lock()
	ts.s.streams.keepalive = 10 * time.Millisecond
	ts.s.streams.mu.Unlock()
	_, other = ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events?workflow=Other", "")
	if ev := nextListEvent(t, other); ev.event != "reset" || ev.reset.Executions != 0 {
		t.Errorf("workflow Other: %+v, want an empty reset", ev)
	}
	for {
		ev, err := other.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.comment == "keepalive" {
			break
		}
		t.Errorf("workflow Other: %+v, want nothing but keepalives", ev)
	}
}

// TestExecutionStreamRefusals: a filter or a resume point the stream
// cannot take is a 400 problem naming it, before any stream.
func TestExecutionStreamRefusals(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		name, query, lastID string
		role                Role
		want                int
		detail              string
	}{
		{"no token", "", "", 0, http.StatusUnauthorized, "bearer token"},
		{"status", "?status=DONE", "", RoleViewer, http.StatusBadRequest, `status "DONE" is not one of`},
		{"status twice", "?status=RUNNING&status=FAILED", "", RoleViewer, http.StatusBadRequest, "status is given 2 times"},
		{"workflow control character", "?workflow=" + url.QueryEscape("a\nb"), "", RoleViewer, http.StatusBadRequest, "control character"},
		{"workflow not UTF-8", "?workflow=%ff", "", RoleViewer, http.StatusBadRequest, "not valid UTF-8"},
		{"workflow too long", "?workflow=" + strings.Repeat("w", maxExecutionID+1), "", RoleViewer, http.StatusBadRequest, "more than 1024"},
		{"Last-Event-ID", "", "x", RoleViewer, http.StatusBadRequest, "Last-Event-ID"},
		{"after", "?after=-2", "", RoleViewer, http.StatusBadRequest, "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := ts.stream(t, ts.URL, tc.role, "/v1/execution-events"+tc.query, tc.lastID)
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", resp.StatusCode, data, tc.want)
			}
			if p := problemIn(t, data); p.Status != tc.want || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("problem %+v, want %d saying %q", p, tc.want, tc.detail)
			}
		})
	}
}

// TestExecutionStreamBounds: a caller holds at most maxPerCaller list
// streams and the server max; a stream closed makes room.
func TestExecutionStreamBounds(t *testing.T) {
	ts := newTestServer(t)
	l := &ts.s.feed.streams
	l.mu.Lock()
	l.max, l.maxPerCaller = 3, 2
	l.mu.Unlock()
	open := func(role Role) (*http.Response, *sseReader) {
		t.Helper()
		resp, rd := ts.stream(t, ts.URL, role, "/v1/execution-events", "")
		if resp.StatusCode == http.StatusOK {
			nextListEvent(t, rd) // the reset: the stream is counted
		}
		return resp, rd
	}
	first, _ := open(RoleViewer)
	open(RoleViewer)
	refused := func(role Role, detail string) {
		t.Helper()
		resp, _ := open(role)
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("over the bound: %d %s, want 429", resp.StatusCode, data)
		}
		if p := problemIn(t, data); !strings.Contains(p.Type, "too-many-streams") || !strings.Contains(p.Detail, detail) {
			t.Errorf("problem %+v, want too-many-streams saying %q", p, detail)
		}
	}
	refused(RoleViewer, "viewer-bot has 2 list streams open")
	if resp, _ := open(RoleApprover); resp.StatusCode != http.StatusOK {
		t.Fatalf("another caller's stream: %d, want 200", resp.StatusCode)
	}
	refused(RoleOperator, "the server has 3 list streams open")
	// Closing a stream makes room once its handler has returned.
	first.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		n := l.open
		l.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams counted after one closed, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp, _ := open(RoleViewer); resp.StatusCode != http.StatusOK {
		t.Errorf("a stream after one closed: %d, want 200", resp.StatusCode)
	}
}

// TestListStreamsEndOnShutdown: Shutdown with StopStreams registered, and
// Close, end the list streams promptly; a stream asked for after is 503.
func TestListStreamsEndOnShutdown(t *testing.T) {
	ts := newTestServer(t)
	hs := httptest.NewUnstartedServer(ts.s.Handler())
	hs.Config.RegisterOnShutdown(ts.s.StopStreams)
	hs.Start()
	defer hs.Close()
	_, rd := ts.stream(t, hs.URL, RoleViewer, "/v1/execution-events", "")
	nextListEvent(t, rd)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a list stream open: %v", err)
	}
	if err := drain(rd); err != nil {
		t.Errorf("the list stream: %v, want it ended", err)
	}

	// StopStreams refuses streams from now on: Close on a new server.
	ts = newTestServer(t)
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events?status=RUNNING", "")
	nextListEvent(t, rd)
	closed := make(chan struct{})
	go func() { ts.s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Second):
		t.Fatal("Close did not return within a second with a list stream open")
	}
	if err := drain(rd); err != nil {
		t.Errorf("the list stream: %v, want it ended", err)
	}
	resp, _ := ts.stream(t, ts.URL, RoleViewer, "/v1/execution-events", "")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a list stream after Close: %d, want 503", resp.StatusCode)
	}
	ts.s.feed.streams.mu.Lock()
	defer ts.s.feed.streams.mu.Unlock()
	if ts.s.feed.streams.open != 0 {
		t.Errorf("%d list streams counted after Close, want 0", ts.s.feed.streams.open)
	}
}

// TestExecutionFeed: the feed records a change only when a summary
// changes, sees the end of an execution that left the watched lists,
// and resumes only from the ids its ring holds.
func TestExecutionFeed(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	m, err := states.Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(id string) {
		t.Helper()
		if _, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	var f executionFeed
	f.ringSize = 2
	run("w1")
	if err := f.refresh(ctx, st); err != nil {
		t.Fatal(err)
	}
	base := f.cursor()
	if changes, head, ok := f.since(base); !ok || len(changes) != 0 || head != base {
		t.Fatalf("after the first read: %d changes, head %d, %v; want none (the first read is the baseline)", len(changes), head, ok)
	}
	refresh := func() []feedChange {
		t.Helper()
		f.mu.Lock()
		f.polled = time.Time{} // read again now
		f.mu.Unlock()
		if err := f.refresh(ctx, st); err != nil {
			t.Fatal(err)
		}
		changes, _, _ := f.since(base)
		return changes
	}
	if changes := refresh(); len(changes) != 0 {
		t.Errorf("nothing changed: %d changes", len(changes))
	}
	run("w2")
	changes := refresh()
	if len(changes) != 1 || changes[0].now.ID != "w2" || changes[0].hadOld || changes[0].now.Status != engine.StatusWaiting {
		t.Fatalf("after w2 started: %+v, want w2 new and WAITING", changes)
	}
	// w1 stopped: it leaves the waiting list, and is read once for its end.
	if _, err := x.Stop(ctx, "w1", "", "test"); err != nil {
		t.Fatal(err)
	}
	changes = refresh()
	if len(changes) != 2 || changes[1].now.ID != "w1" || !changes[1].hadOld || changes[1].old.Status != engine.StatusWaiting || changes[1].now.Status != engine.StatusAborted {
		t.Fatalf("after w1 stopped: %+v, want w1 from WAITING to ABORTED", changes)
	}
	// A third change overflows the ring of two: base is out of it.
	if _, err := x.Stop(ctx, "w2", "", "test"); err != nil {
		t.Fatal(err)
	}
	refresh()
	if _, _, ok := f.since(base); ok {
		t.Error("resumed from an id out of the ring")
	}
	if changes, _, ok := f.since(base + 1); !ok || len(changes) != 2 || changes[1].now.ID != "w2" {
		t.Errorf("since the first change: %+v %v, want w1's and w2's ends", changes, ok)
	}
	if _, _, ok := f.since(f.cursor() + 1); ok {
		t.Error("resumed from an id after the head")
	}
}

// BenchmarkExecutionFeedRefresh measures one read of the list streams'
// feed over a bbolt store of 2000 executions, 200 of them waiting.
func BenchmarkExecutionFeedRefresh(b *testing.B) {
	ctx := context.Background()
	st, err := store.OpenBolt(filepath.Join(b.TempDir(), "db"), store.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	x := engine.New(engine.Config{Store: st})
	wait, err := states.Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`))
	if err != nil {
		b.Fatal(err)
	}
	pass, err := states.Parse([]byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2000 {
		m := pass
		if i%10 == 0 {
			m = wait
		}
		if _, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var f executionFeed
	b.ResetTimer()
	for b.Loop() {
		f.mu.Lock()
		f.polled = time.Time{}
		f.mu.Unlock()
		if err := f.refresh(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
}
