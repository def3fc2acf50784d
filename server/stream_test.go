package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
)

// sseEvent is one event of a stream, or a comment (event "" and
// comment set).
type sseEvent struct {
	id, event, data string
	hasID           bool
	comment         string
}

// sseReader reads a text/event-stream: fields up to a blank line make an
// event; comment lines alone make a comment.
type sseReader struct {
	rd *bufio.Reader
}

func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	started := false
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			if err == io.EOF && started {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if !started {
				continue
			}
			ev.data = strings.Join(data, "\n")
			return ev, nil
		}
		started = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			ev.comment = value
		case "id":
			ev.id, ev.hasID = value, true
		case "event":
			ev.event = value
		case "data":
			data = append(data, value)
		}
	}
}

// event skips comments.
func (r *sseReader) event(t *testing.T) sseEvent {
	t.Helper()
	for {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("read the stream: %v", err)
		}
		if ev.event != "" {
			return ev
		}
	}
}

// stream opens an event stream as role, with a Last-Event-ID when
// lastID is not empty; the caller closes the body.
func (ts *testServer) stream(t *testing.T, url string, role Role, path, lastID string) (*http.Response, *sseReader) {
	t.Helper()
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if role != 0 {
		req.Header.Set("Authorization", "Bearer "+ts.tokens[role])
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	client := &http.Client{Transport: ts.Client().Transport, Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseReader{rd: bufio.NewReader(resp.Body)}
}

// startReview starts the review flow as name; it stops at its approval.
func (ts *testServer) startReview(t *testing.T, name string) {
	t.Helper()
	start := map[string]any{"definition": json.RawMessage(reviewFlow), "mock": json.RawMessage(reviewMock), "name": name}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start %s: %d %s", name, code, body)
	}
}

// decideReview publishes name's pending approval.
func (ts *testServer) decideReview(t *testing.T, name string) {
	t.Helper()
	e := ts.waitFor(t, name, func(e api.Execution) bool { return len(e.Approvals) == 1 })
	if code, body := ts.call(t, RoleApprover, "POST", "/v1/approvals/"+e.Approvals[0].ID+"/decision", map[string]any{"option": "publish"}, nil); code != http.StatusAccepted {
		t.Fatalf("decide %s: %d %s", name, code, body)
	}
}

// history is the execution's whole history, as GET …/history pages it.
func (ts *testServer) history(t *testing.T, id string) []api.Event {
	t.Helper()
	var h api.History
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/"+id+"/history?limit=1000", nil, &h); code != 200 {
		t.Fatalf("history: %d %s", code, body)
	}
	return h.Events
}

// readHistory reads events from a history stream until `end` (true) or,
// with stopAfter > 0, until that many events were read (false).
func readHistory(t *testing.T, rd *sseReader, stopAfter int) ([]api.Event, bool) {
	t.Helper()
	var got []api.Event
	for stopAfter <= 0 || len(got) < stopAfter {
		ev := rd.event(t)
		if ev.event == "end" {
			var e api.Execution
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.Status == "" {
				t.Fatalf("end data %q: %v", ev.data, err)
			}
			return got, true
		}
		var e api.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			t.Fatalf("event data %q: %v", ev.data, err)
		}
		if ev.id != strconv.FormatInt(e.Seq, 10) || ev.event != e.Type {
			t.Fatalf("event id %q type %q, data seq %d type %q", ev.id, ev.event, e.Seq, e.Type)
		}
		got = append(got, e)
	}
	return got, false
}

// sameHistory checks that got is the history want, event for event.
func sameHistory(t *testing.T, got, want []api.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the stream gave %d events, the history has %d", len(got), len(want))
	}
	for i := range got {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Errorf("event %d: %s, want %s", i+1, g, w)
		}
	}
}

// TestHistoryStream: a running execution's stream delivers every event
// once, in order, then `end`; a stream resumed with Last-Event-ID or
// ?after= goes on from there without a gap or a repeat.
func TestHistoryStream(t *testing.T) {
	ts := newTestServer(t)
	ts.startReview(t, "s1")
	respA, whole := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "")
	if respA.StatusCode != 200 || respA.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", respA.StatusCode, respA.Header.Get("Content-Type"))
	}
	respB, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "")
	first, _ := readHistory(t, rd, 3)
	respB.Body.Close()
	// Resume after the third event while the execution waits, then decide.
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "3")
	ts.decideReview(t, "s1")
	rest, ended := readHistory(t, rd, 0)
	if !ended {
		t.Fatal("the resumed stream did not end")
	}
	all, ended := readHistory(t, whole, 0)
	if !ended {
		t.Fatal("the stream did not end")
	}
	want := ts.history(t, "s1")
	if want[len(want)-1].Type != "ExecutionSucceeded" {
		t.Fatalf("history ends with %s", want[len(want)-1].Type)
	}
	sameHistory(t, all, want)
	sameHistory(t, append(first, rest...), want)
	if ev, err := whole.next(); err != io.EOF {
		t.Errorf("after end: %+v %v, want the stream closed", ev, err)
	}

	// An ended execution: ?after= resumes too, and a stream past the last
	// event only says `end`.
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events?after=2", "")
	tail, ended := readHistory(t, rd, 0)
	if !ended {
		t.Fatal("the stream of an ended execution did not end")
	}
	sameHistory(t, tail, want[2:])
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events?after=1", strconv.Itoa(len(want)))
	if tail, _ := readHistory(t, rd, 0); len(tail) != 0 {
		t.Errorf("Last-Event-ID %d (over ?after=1) gave %d events, want none", len(want), len(tail))
	}
}

// TestStreamRefusals: bad resume points are 400, an unknown execution
// 404, both before any stream; without a token 401.
func TestStreamRefusals(t *testing.T) {
	ts := newTestServer(t)
	ts.startReview(t, "s1")
	for _, tc := range []struct {
		name   string
		role   Role
		path   string
		lastID string
		want   int
	}{
		{"no token", 0, "/v1/executions/s1/events", "", http.StatusUnauthorized},
		{"no token, inbox", 0, "/v1/approvals/events", "", http.StatusUnauthorized},
		{"unknown execution", RoleViewer, "/v1/executions/none/events", "", http.StatusNotFound},
		{"Last-Event-ID not a number", RoleViewer, "/v1/executions/s1/events", "x7", http.StatusBadRequest},
		{"Last-Event-ID negative", RoleViewer, "/v1/executions/s1/events", "-1", http.StatusBadRequest},
		{"after not a number", RoleViewer, "/v1/executions/s1/events?after=1.5", "", http.StatusBadRequest},
		{"inbox Last-Event-ID not a number", RoleViewer, "/v1/approvals/events", "abc", http.StatusBadRequest},
		{"inbox after empty", RoleViewer, "/v1/approvals/events?after=", "", http.StatusOK},
		{"inbox after huge", RoleViewer, "/v1/approvals/events?after=99999999999999999999", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := ts.stream(t, ts.URL, tc.role, tc.path, tc.lastID)
			defer resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 200 {
				return
			}
			data, _ := io.ReadAll(resp.Body)
			if p := problemIn(t, data); p.Status != tc.want {
				t.Errorf("problem %s, want status %d", data, tc.want)
			}
		})
	}
}

// inboxEvent is an event of the approval stream with its data decoded.
type inboxEvent struct {
	sseEvent
	approval api.Approval
	gone     api.ApprovalGone
	reset    api.InboxReset
}

func nextInbox(t *testing.T, rd *sseReader) inboxEvent {
	t.Helper()
	ev := inboxEvent{sseEvent: rd.event(t)}
	var v any
	switch ev.event {
	case "pending":
		v = &ev.approval
	case "gone":
		v = &ev.gone
	case "reset":
		v = &ev.reset
	default:
		t.Fatalf("inbox event %+v", ev.sseEvent)
	}
	if err := json.Unmarshal([]byte(ev.data), v); err != nil {
		t.Fatalf("%s data %q: %v", ev.event, ev.data, err)
	}
	if ev.event != "reset" && !ev.hasID {
		t.Errorf("%s event without an id", ev.event)
	}
	return ev
}

// TestApprovalStream: the inbox stream gives what is pending, then each
// approval that appears and each that goes; it resumes from an id of this
// process, and resets from any other.
func TestApprovalStream(t *testing.T) {
	ts := newTestServer(t)
	ts.startReview(t, "a1")
	a1 := ts.waitFor(t, "a1", func(e api.Execution) bool { return len(e.Approvals) == 1 }).Approvals[0]
	_, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/approvals/events", "")
	ev := nextInbox(t, rd)
	if ev.event != "pending" || ev.approval.ID != a1.ID || ev.approval.Digest != a1.Digest {
		t.Fatalf("first event %+v, want a1's approval pending", ev)
	}
	firstID := ev.id

	ts.startReview(t, "a2")
	ev = nextInbox(t, rd)
	if ev.event != "pending" || ev.approval.Execution != "a2" {
		t.Fatalf("after a2 started: %+v, want a2's approval pending", ev)
	}
	a2ID := ev.id
	ts.decideReview(t, "a1")
	ev = nextInbox(t, rd)
	if ev.event != "gone" || ev.gone.ID != a1.ID || ev.gone.Execution != "a1" || ev.gone.Approval != a1.Approval {
		t.Fatalf("after a1 was decided: %+v, want a1 gone", ev)
	}
	goneID := ev.id
	for _, pair := range [][2]string{{firstID, a2ID}, {a2ID, goneID}} {
		a, _ := strconv.ParseInt(pair[0], 10, 64)
		if b, _ := strconv.ParseInt(pair[1], 10, 64); b <= a {
			t.Errorf("ids %s then %s, want them increasing", pair[0], pair[1])
		}
	}

	// Resumed after a2's pending: a1 gone, nothing repeated.
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/approvals/events", a2ID)
	if ev = nextInbox(t, rd); ev.event != "gone" || ev.id != goneID {
		t.Errorf("resumed after %s: %+v, want a1 gone (%s)", a2ID, ev, goneID)
	}
	// Resumed with an id of a previous process: reset, then the inbox.
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/approvals/events", "1")
	if ev = nextInbox(t, rd); ev.event != "reset" || ev.reset.Pending != 1 || ev.hasID {
		t.Fatalf("resumed from 1: %+v, want a reset without an id", ev)
	}
	if ev = nextInbox(t, rd); ev.event != "pending" || ev.approval.Execution != "a2" || ev.id != a2ID {
		t.Errorf("after the reset: %+v, want a2's approval pending as %s", ev, a2ID)
	}

	// An id older than the ring: reset too. The stream open since the
	// reset sees a2 go and a3 come: two changes, over a ring of one.
	in := &ts.s.streams.inbox
	in.mu.Lock()
	in.ringSize = 1
	in.mu.Unlock()
	ts.decideReview(t, "a2")
	if ev = nextInbox(t, rd); ev.event != "gone" || ev.gone.Execution != "a2" {
		t.Fatalf("after a2 was decided: %+v, want a2 gone", ev)
	}
	ts.startReview(t, "a3")
	if ev = nextInbox(t, rd); ev.event != "pending" || ev.approval.Execution != "a3" {
		t.Fatalf("after a3 started: %+v, want a3 pending", ev)
	}
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/approvals/events", goneID)
	if ev = nextInbox(t, rd); ev.event != "reset" || ev.reset.Pending != 1 {
		t.Fatalf("resumed from %s, out of the ring: %+v, want a reset", goneID, ev)
	}
	if ev = nextInbox(t, rd); ev.event != "pending" || ev.approval.Execution != "a3" {
		t.Errorf("after the reset: %+v, want a3's approval pending", ev)
	}
}

// TestCloseEndsStreams: Close, and http.Server.Shutdown with StopStreams
// registered, return promptly while clients hold streams open; the
// streams end.
func TestCloseEndsStreams(t *testing.T) {
	ts := newTestServer(t)
	ts.startReview(t, "c1")
	ts.waitFor(t, "c1", func(e api.Execution) bool { return len(e.Approvals) == 1 })

	// Shutdown of a server whose handler streams.
	hs := httptest.NewUnstartedServer(ts.s.Handler())
	hs.Config.RegisterOnShutdown(ts.s.StopStreams)
	hs.Start()
	defer hs.Close()
	_, history := ts.stream(t, hs.URL, RoleViewer, "/v1/executions/c1/events", "")
	history.event(t)
	_, inbox := ts.stream(t, hs.URL, RoleViewer, "/v1/approvals/events", "")
	nextInbox(t, inbox)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with streams open: %v", err)
	}
	for name, rd := range map[string]*sseReader{"history": history, "inbox": inbox} {
		if err := drain(rd); err != nil {
			t.Errorf("the %s stream: %v, want it ended", name, err)
		}
	}
}

func TestCloseEndsStreamsOfClose(t *testing.T) {
	ts := newTestServer(t)
	ts.startReview(t, "c1")
	_, history := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/c1/events", "")
	history.event(t)
	_, inbox := ts.stream(t, ts.URL, RoleViewer, "/v1/approvals/events", "")
	closed := make(chan struct{})
	go func() { ts.s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Second):
		t.Fatal("Close did not return within a second while streams are open")
	}
	for name, rd := range map[string]*sseReader{"history": history, "inbox": inbox} {
		if err := drain(rd); err != nil {
			t.Errorf("the %s stream: %v, want it ended", name, err)
		}
	}
	// A stream asked for now is refused.
	resp, _ := ts.stream(t, ts.URL, RoleViewer, "/v1/approvals/events", "")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream after Close: %d, want 503", resp.StatusCode)
	}
}

// drain reads a stream to its end: nil when it ends cleanly.
func drain(rd *sseReader) error {
	for {
		if _, err := rd.next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestStreamOutlivesServerTimeouts: a stream lasts longer than the
// server's ReadTimeout and WriteTimeout, with keepalive comments.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	ts := newTestServer(t)
	ts.s.streams.mu.Lock()
	ts.s.streams.keepalive = 10 * time.Millisecond
	ts.s.streams.mu.Unlock()
	hs := httptest.NewUnstartedServer(ts.s.Handler())
	hs.Config.ReadTimeout, hs.Config.WriteTimeout = 50*time.Millisecond, 50*time.Millisecond
	hs.Start()
	defer hs.Close()
	ts.startReview(t, "k1")
	ts.waitFor(t, "k1", func(e api.Execution) bool { return len(e.Approvals) == 1 })
	_, rd := ts.stream(t, hs.URL, RoleViewer, "/v1/executions/k1/events", "")
	// 30 keepalives: at least 300ms, six times the timeouts.
	for n := 0; n < 30; {
		ev, err := rd.next()
		if err != nil {
			t.Fatalf("after %d keepalives: %v", n, err)
		}
		if ev.comment == "keepalive" {
			n++
		}
	}
	ts.decideReview(t, "k1")
	for {
		ev := rd.event(t)
		if ev.event == "end" {
			break
		}
	}
}
