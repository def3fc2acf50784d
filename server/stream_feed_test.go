package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// countingStore counts the history reads of the store under it.
type countingStore struct {
	Store
	whole, ranged atomic.Int64
}

func (c *countingStore) History(ctx context.Context, id string) ([]engine.Event, error) {
	c.whole.Add(1)
	return c.Store.History(ctx, id)
}

func (c *countingStore) HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error) {
	c.ranged.Add(1)
	return c.Store.HistoryRange(ctx, id, after, limit)
}

// countingServer is a test server whose handlers read the store through
// a countingStore.
func countingServer(t *testing.T) (*testServer, *countingStore) {
	t.Helper()
	var cs *countingStore
	ts := newTestServer(t, func(c *Config) {
		cs = &countingStore{Store: c.Store}
		c.Store = cs
	})
	return ts, cs
}

// TestHistoryPageReadsThePage: GET …/history reads the page by range,
// never the whole history, and a verified page still verifies the whole
// chain.
func TestHistoryPageReadsThePage(t *testing.T) {
	ts, cs := countingServer(t)
	ts.startReview(t, "r1")
	ts.decideReview(t, "r1")
	ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	want := ts.history(t, "r1")
	var got []api.Event
	after := ""
	for pages := 0; ; pages++ {
		var h api.History
		path := "/v1/executions/r1/history?limit=2"
		if after != "" {
			path += "&after=" + after
		}
		if code, body := ts.call(t, RoleViewer, "GET", path, nil, &h); code != 200 || len(h.Events) == 0 || len(h.Events) > 2 || h.Verified {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		got = append(got, h.Events...)
		if h.Next == "" {
			break
		}
		after = h.Next
	}
	sameHistory(t, got, want)
	if n := cs.whole.Load(); n != 0 {
		t.Errorf("paging the history read the whole history %d times, want 0", n)
	}
	var h api.History
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/r1/history?after=100&verify=true", nil, &h); code != 200 || !h.Verified || len(h.Events) != 0 || h.Next != "" {
		t.Errorf("a verified page past the end: %d %s, want verified and empty", code, body)
	}
}

// TestHistoryStreamSharesOneFeed: many streams of one execution follow
// one feed, which reads the history once for them all: the store's
// history reads do not grow with the streams, and every stream gets the
// whole history, then `end`.
func TestHistoryStreamSharesOneFeed(t *testing.T) {
	const viewers = 40
	ts, cs := countingServer(t)
	ts.startReview(t, "s1")
	ts.waitFor(t, "s1", func(e api.Execution) bool { return len(e.Approvals) == 1 })
	readers := make([]*sseReader, viewers)
	firsts := make([][]api.Event, viewers)
	ts.s.streams.histories.mu.Lock()
	ts.s.streams.histories.maxPerCaller = viewers
	ts.s.streams.histories.mu.Unlock()
	for i := range readers {
		resp, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "")
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		readers[i] = rd
		firsts[i], _ = readHistory(t, rd, 1) // the stream follows the feed
	}
	ss := &ts.s.streams
	ss.mu.Lock()
	feeds, subs := len(ss.feeds), 0
	if f := ss.feeds["s1"]; f != nil {
		subs = f.subs
	}
	ss.mu.Unlock()
	if feeds != 1 || subs != viewers {
		t.Errorf("%d feeds followed by %d streams, want 1 followed by %d", feeds, subs, viewers)
	}
	ts.decideReview(t, "s1")
	var wg sync.WaitGroup
	rests := make([][]api.Event, viewers)
	ended := make([]bool, viewers)
	for i, rd := range readers {
		wg.Go(func() { rests[i], ended[i] = readHistoryQuiet(rd) })
	}
	wg.Wait()
	want := ts.history(t, "s1")
	for i := range readers {
		if !ended[i] {
			t.Fatalf("stream %d did not end", i)
		}
		sameHistory(t, append(firsts[i], rests[i]...), want)
	}
	if n := cs.whole.Load(); n != 0 {
		t.Errorf("the streams read the whole history %d times, want 0", n)
	}
	// One feed: a first read, then a read per change seen, far fewer than
	// one per stream.
	if n := cs.ranged.Load(); n >= viewers/2 {
		t.Errorf("%d streams made %d ranged history reads, want fewer than %d", viewers, n, viewers/2)
	}
}

// readHistoryQuiet reads a history stream to its `end` without a
// testing.T (for goroutines); false when it ended otherwise.
func readHistoryQuiet(rd *sseReader) ([]api.Event, bool) {
	var got []api.Event
	for {
		ev, err := rd.next()
		if err != nil {
			return got, false
		}
		switch ev.event {
		case "":
			continue
		case "end":
			return got, true
		}
		var e api.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return got, false
		}
		got = append(got, e)
	}
}

// TestHistoryStreamBehindTheFeed: a feed holds only its last events; a
// stream that resumes from before them reads the gap from the store and
// goes on with the feed, without a gap or a repeat, while the execution
// runs and after it ended.
func TestHistoryStreamBehindTheFeed(t *testing.T) {
	ts := newTestServer(t)
	ts.s.streams.mu.Lock()
	ts.s.streams.keep = 2
	ts.s.streams.mu.Unlock()
	ts.startReview(t, "s1")
	ts.waitFor(t, "s1", func(e api.Execution) bool { return len(e.Approvals) == 1 })
	_, live := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "")
	first, _ := readHistory(t, live, 1)
	_, second := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events", "")
	ts.decideReview(t, "s1")
	rest, ended := readHistory(t, live, 0)
	if !ended {
		t.Fatal("the stream did not end")
	}
	want := ts.history(t, "s1")
	if len(want) <= 4 {
		t.Fatalf("the history has %d events, want more than the feed holds", len(want))
	}
	sameHistory(t, append(first, rest...), want)
	all, ended := readHistory(t, second, 0)
	if !ended {
		t.Fatal("the second stream did not end")
	}
	sameHistory(t, all, want)
	_, after := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/s1/events?after=1", "")
	tail, ended := readHistory(t, after, 0)
	if !ended {
		t.Fatal("the stream of the ended execution did not end")
	}
	sameHistory(t, tail, want[1:])
}

// TestHistoryAndApprovalStreamBounds: a caller holds at most
// maxPerCaller history streams, and as many approval streams, and the
// server max of each; past them a stream is refused with 429 before it
// starts, and a stream closed makes room.
func TestHistoryAndApprovalStreamBounds(t *testing.T) {
	for _, tc := range []struct {
		name, path, kind string
		limit            func(*streams) *streamLimit
	}{
		{"history", "/v1/executions/s1/events", "history", func(ss *streams) *streamLimit { return &ss.histories }},
		{"approvals", "/v1/approvals/events", "approval", func(ss *streams) *streamLimit { return &ss.approvals }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t)
			ts.startReview(t, "s1")
			ts.waitFor(t, "s1", func(e api.Execution) bool { return len(e.Approvals) == 1 })
			l := tc.limit(&ts.s.streams)
			l.mu.Lock()
			l.max, l.maxPerCaller = 3, 2
			l.mu.Unlock()
			open := func(role Role) (*http.Response, *sseReader) {
				t.Helper()
				resp, rd := ts.stream(t, ts.URL, role, tc.path, "")
				if resp.StatusCode == http.StatusOK {
					rd.event(t) // the stream has started: it is counted
				}
				return resp, rd
			}
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
			first, _ := open(RoleViewer)
			open(RoleViewer)
			refused(RoleViewer, "viewer-bot has 2 "+tc.kind+" streams open")
			if resp, _ := open(RoleApprover); resp.StatusCode != http.StatusOK {
				t.Fatalf("another caller's stream: %d, want 200", resp.StatusCode)
			}
			refused(RoleOperator, "the server has 3 "+tc.kind+" streams open")
			first.Body.Close()
			waitUntil(t, func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.open == 2
			})
			if resp, _ := open(RoleViewer); resp.StatusCode != http.StatusOK {
				t.Errorf("a stream after one closed: %d, want 200", resp.StatusCode)
			}
		})
	}
}

// waitUntil waits, for at most 10 s, until cond holds: a stream whose
// client went away is counted out once its handler has seen it.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition did not hold within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
