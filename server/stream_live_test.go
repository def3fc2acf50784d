package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// liveFlow is one Task whose agent, Writer, streams each write as a
// chunk.
const liveFlow = `{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Writer","Streaming":{"Mode":"token"},"End":true}}}`

// liveWriter is a Go agent that streams each text it is sent and returns
// "done" once texts is closed.
func liveWriter(texts <-chan string) agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		for {
			select {
			case text, ok := <-texts:
				if !ok {
					return "done", nil
				}
				fmt.Fprint(req.Stream(), text)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	})
}

// liveServer is a test server whose Writer agent is a, running liveFlow
// as execution id.
func liveServer(t *testing.T, a agents.Agent, id string) *testServer {
	t.Helper()
	reg := agents.NewRegistry()
	if err := reg.Register("Writer", a); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) { c.Agents = reg })
	start := map[string]any{"definition": json.RawMessage(liveFlow), "name": id}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start %s: %d %s", id, code, body)
	}
	return ts
}

// waitChunks waits until execution id's feed holds n chunks.
func (ts *testServer) waitChunks(t *testing.T, id string, n int) {
	t.Helper()
	for {
		r := ts.s.x.Live(id, "", 0)
		if len(r.Chunks) >= n {
			return
		}
		select {
		case <-r.Changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("the feed of %s holds %d chunks, want %d", id, len(r.Chunks), n)
		}
	}
}

// liveEvent is an event of an execution's stream (SSE or WebSocket).
type liveEvent struct {
	ID    string          `json:"id"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// chunk decodes a feed event's data.
func (ev liveEvent) chunk(t *testing.T) engine.Chunk {
	t.Helper()
	var c engine.Chunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		t.Fatalf("%s data %s: %v", ev.Event, ev.Data, err)
	}
	return c
}

func isFeedEvent(name string) bool {
	switch name {
	case eventChunk, eventStreamStart, eventRestart, eventStreamEnd, eventChunksMissed:
		return true
	}
	return false
}

// nextLive reads the next event of an SSE stream.
func nextLive(t *testing.T, rd *sseReader) liveEvent {
	t.Helper()
	ev := rd.event(t)
	return liveEvent{ID: ev.id, Event: ev.event, Data: json.RawMessage(ev.data)}
}

// readLive reads events until `end` (included) or until stop says so.
func readLive(t *testing.T, rd *sseReader, stop func(liveEvent) bool) []liveEvent {
	t.Helper()
	var got []liveEvent
	for {
		ev := nextLive(t, rd)
		got = append(got, ev)
		if ev.Event == "end" || ev.Event == "error" || stop != nil && stop(ev) {
			return got
		}
	}
}

// checkIDs checks the ids of events read from the start of a stream:
// "N" (N the last history event's seq) until the first feed event,
// "N:EPOCH:SEQ" from it on, SEQ the last chunk's; none on `end`.
func checkIDs(t *testing.T, events []liveEvent) {
	t.Helper()
	var history, seq int64
	chunked := false
	for _, ev := range events {
		switch {
		case ev.Event == "end" || ev.Event == "error":
			if ev.ID != "" {
				t.Errorf("%s has id %q", ev.Event, ev.ID)
			}
			continue
		case isFeedEvent(ev.Event):
			chunked = true
			if ev.Event != eventChunksMissed {
				seq = ev.chunk(t).Seq
			}
		default:
			var e api.Event
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			history = e.Seq
		}
		p, err := parseStreamID(ev.ID, "id")
		if err != nil {
			t.Fatalf("%s: %v", ev.Event, err)
		}
		if p.history != history || p.chunked != chunked || chunked && p.seq != seq {
			t.Errorf("%s id %q, want history %d, chunk %d (chunked %v)", ev.Event, ev.ID, history, seq, chunked)
		}
	}
}

// feedOf lists the feed events as "event:text".
func feedOf(t *testing.T, events []liveEvent) []string {
	t.Helper()
	var out []string
	for _, ev := range events {
		if isFeedEvent(ev.Event) && ev.Event != eventChunksMissed {
			out = append(out, ev.Event+":"+ev.chunk(t).Text)
		}
	}
	return out
}

// TestStreamChunksBeforeTheStateEnds: the events stream sends a
// streaming state's chunks as its agent writes them, while the state
// runs, interleaved with the history, with ids N then N:EPOCH:SEQ; the
// stream ends with `end` after `stream-end`.
func TestStreamChunksBeforeTheStateEnds(t *testing.T) {
	texts := make(chan string)
	ts := liveServer(t, liveWriter(texts), "c1")
	_, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/c1/events", "")
	texts <- "Hello"
	got := readLive(t, rd, func(ev liveEvent) bool { return ev.Event == eventChunk })
	if last := got[len(got)-1]; last.chunk(t).Text != "Hello" {
		t.Fatalf("first chunk %s", last.Data)
	}
	var e api.Execution
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/c1", nil, &e); code != 200 || e.Status != "RUNNING" {
		t.Fatalf("while the state runs: %d %s", code, body)
	}
	texts <- ", world"
	got = append(got, readLive(t, rd, func(ev liveEvent) bool { return ev.Event == eventChunk })...)
	close(texts)
	got = append(got, readLive(t, rd, nil)...)
	checkIDs(t, got)
	if feed, want := feedOf(t, got), []string{"stream-start:", "chunk:Hello", "chunk:, world", "stream-end:"}; !slices.Equal(feed, want) {
		t.Errorf("feed events %q, want %q", feed, want)
	}
	var history []string
	for _, ev := range got {
		if !isFeedEvent(ev.Event) {
			history = append(history, ev.Event)
		}
	}
	if history[0] != "ExecutionStarted" || history[len(history)-1] != "end" || !slices.Contains(history, "ExecutionSucceeded") {
		t.Errorf("history events %q", history)
	}
	// The chunks are not history.
	for _, ev := range ts.history(t, "c1") {
		if data, _ := json.Marshal(ev); strings.Contains(string(data), "Hello") {
			t.Errorf("history event %d %s holds the streamed text", ev.Seq, ev.Type)
		}
	}
}

// TestStreamResume: a stream resumed with Last-Event-ID N:EPOCH:SEQ while
// the state runs gets exactly the chunks it missed, none twice; one
// resumed with a plain N gets the feed from its start; ?after= does as
// the header.
func TestStreamResume(t *testing.T) {
	texts := make(chan string)
	ts := liveServer(t, liveWriter(texts), "r1")
	resp, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/r1/events", "")
	texts <- "a"
	texts <- "b"
	var first []liveEvent
	for len(feedOf(t, first)) < 3 {
		first = append(first, nextLive(t, rd))
	}
	resp.Body.Close()
	last := first[len(first)-1].ID
	lastPos, err := parseStreamID(last, "id")
	if err != nil || !lastPos.chunked {
		t.Fatalf("the id of a chunk: %q %v", last, err)
	}
	// Written while nobody reads.
	texts <- "c"
	texts <- "d"
	ts.waitChunks(t, "r1", 5)
	_, rd = ts.stream(t, ts.URL, RoleViewer, "/v1/executions/r1/events", last)
	var second []liveEvent
	for len(feedOf(t, second)) < 2 {
		second = append(second, nextLive(t, rd))
	}
	texts <- "e"
	close(texts)
	second = append(second, readLive(t, rd, nil)...)
	if feed, want := feedOf(t, second), []string{"chunk:c", "chunk:d", "chunk:e", "stream-end:"}; !slices.Equal(feed, want) {
		t.Errorf("resumed from %s: feed %q, want %q", last, feed, want)
	}
	for _, ev := range second {
		if !isFeedEvent(ev.Event) && ev.Event != "end" {
			var e api.Event
			json.Unmarshal(ev.Data, &e)
			if e.Seq <= lastPos.history {
				t.Errorf("resumed from %s: history event %d again", last, e.Seq)
			}
		}
	}
	all := []string{"stream-start:", "chunk:a", "chunk:b", "chunk:c", "chunk:d", "chunk:e", "stream-end:"}
	for _, tc := range []struct{ name, path, lastID string }{
		{"plain N", "/v1/executions/r1/events", strconv.FormatInt(lastPos.history, 10)},
		{"after plain N", "/v1/executions/r1/events?after=" + strconv.FormatInt(lastPos.history, 10), ""},
		{"from the start", "/v1/executions/r1/events", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rd := ts.stream(t, ts.URL, RoleViewer, tc.path, tc.lastID)
			got := readLive(t, rd, nil)
			if feed := feedOf(t, got); !slices.Equal(feed, all) {
				t.Errorf("feed %q, want %q", feed, all)
			}
		})
	}
	t.Run("after N:EPOCH:SEQ", func(t *testing.T) {
		_, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/r1/events?after="+last, "")
		if feed := feedOf(t, readLive(t, rd, nil)); !slices.Equal(feed, all[3:]) {
			t.Errorf("feed %q, want %q", feed, all[3:])
		}
	})
	t.Run("another epoch", func(t *testing.T) {
		// The client held chunks of a feed that is gone: `restart` (void
		// what you hold), then the feed from its start.
		other := fmt.Sprintf("%d:0ther:2", lastPos.history)
		_, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/r1/events", other)
		got := readLive(t, rd, nil)
		i := slices.IndexFunc(got, func(ev liveEvent) bool { return isFeedEvent(ev.Event) })
		if i < 0 || got[i].Event != eventRestart || got[i].chunk(t).State != "" {
			t.Fatalf("events %+v, want a restart of the whole feed first", got)
		}
		if feed, want := feedOf(t, got), append([]string{"restart:"}, all...); !slices.Equal(feed, want) {
			t.Errorf("feed %q, want %q", feed, want)
		}
	})
}

// TestStreamBadEventID: a malformed Last-Event-ID or ?after= is a 400
// problem naming it, on the SSE and the WebSocket routes.
func TestStreamBadEventID(t *testing.T) {
	ts := liveServer(t, liveWriter(nil), "b1")
	for _, id := range []string{"x", "-1", "+1", "1.5", "1:", "1:e", "1:e:", ":e:1", "1::1", "1:e f:1", "1:e:-1", "1:e:1:2",
		"99999999999999999999", "1:" + strings.Repeat("e", 65) + ":1", "1:é:1"} {
		for _, route := range []string{"events", "ws"} {
			t.Run(route+" "+id, func(t *testing.T) {
				for _, where := range []string{"header", "after"} {
					req, err := http.NewRequest("GET", ts.URL+"/v1/executions/b1/"+route, nil)
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleViewer])
					if route == "ws" {
						req.Header.Set("Connection", "Upgrade")
						req.Header.Set("Upgrade", "websocket")
					}
					want := "the Last-Event-ID header"
					if where == "header" {
						req.Header.Set("Last-Event-ID", id)
					} else {
						req.URL.RawQuery = url.Values{"after": {id}}.Encode()
						want = "after"
					}
					resp, err := ts.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					data, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusBadRequest {
						t.Fatalf("%s: %d %s, want 400", where, resp.StatusCode, data)
					}
					if p := problemIn(t, data); !strings.Contains(p.Detail, want) || !strings.Contains(p.Detail, strconv.Quote(id)) {
						t.Errorf("%s: %q does not name %s and the id", where, p.Detail, want)
					}
				}
			})
		}
	}
}

// FuzzParseStreamID: parseStreamID never panics, and what it reads
// writes back as an id it reads the same.
func FuzzParseStreamID(f *testing.F) {
	for _, s := range []string{"0", "12", "12:abc:3", "1:e:", "::", "1:a-b_C:0", "007:x:08"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseStreamID(s, "id")
		if err != nil {
			return
		}
		q, err := parseStreamID(p.id(), "id")
		if err != nil || q != p {
			t.Errorf("%q read %+v, its id %q reads %+v, %v", s, p, p.id(), q, err)
		}
	})
}

// wsURL is the WebSocket URL of a path of ts.
func (ts *testServer) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(ts.URL, "http") + path
}

// dialWS opens a WebSocket of ts as role.
func (ts *testServer) dialWS(t *testing.T, path string, role Role, hc *http.Client) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{}
	if role != 0 {
		h.Set("Authorization", "Bearer "+ts.tokens[role])
	}
	c, resp, err := websocket.Dial(ctx, ts.wsURL(path), &websocket.DialOptions{HTTPHeader: h, HTTPClient: hc})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", path, err, resp)
	}
	c.SetReadLimit(4 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// readWS reads frames until `end` and the close that follows, returning
// them and the close.
func readWS(t *testing.T, c *websocket.Conn) ([]liveEvent, websocket.CloseError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []liveEvent
	for {
		typ, data, err := c.Read(ctx)
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return got, ce
		}
		if err != nil {
			t.Fatalf("read after %d frames: %v", len(got), err)
		}
		if typ != websocket.MessageText {
			t.Fatalf("a %v frame", typ)
		}
		var ev liveEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		got = append(got, ev)
	}
}

// TestStreamWebSocket: the WebSocket route sends the events of the SSE
// route, as frames {"id","event","data"}, then closes normally; it takes
// a token or a page's session cookie from the server's own origin, and
// refuses another origin and a request that is not a handshake.
func TestStreamWebSocket(t *testing.T) {
	texts := make(chan string)
	ts := liveServer(t, liveWriter(texts), "w1")
	live := ts.dialWS(t, "/v1/executions/w1/ws", RoleViewer, nil)
	texts <- "one"
	texts <- "two"
	close(texts)
	gotLive, closed := readWS(t, live)
	if closed.Code != websocket.StatusNormalClosure {
		t.Errorf("close %v, want normal", closed)
	}
	checkIDs(t, gotLive)
	if feed, want := feedOf(t, gotLive), []string{"stream-start:", "chunk:one", "chunk:two", "stream-end:"}; !slices.Equal(feed, want) {
		t.Errorf("feed %q, want %q", feed, want)
	}
	// Once the execution has ended, a stream is the history, then the
	// chunks, then end: the WebSocket's frames are the SSE's events.
	_, rd := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/w1/events", "")
	want := readLive(t, rd, nil)
	sameLive := func(t *testing.T, got []liveEvent) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d frames, the SSE stream has %d events", len(got), len(want))
		}
		for i := range got {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			if string(g) != string(w) {
				t.Errorf("frame %d: %s\nSSE event: %s", i, g, w)
			}
		}
	}
	after, closed := readWS(t, ts.dialWS(t, "/v1/executions/w1/ws", RoleViewer, nil))
	sameLive(t, after)
	if closed.Code != websocket.StatusNormalClosure {
		t.Errorf("close %v, want normal", closed)
	}

	sess := ts.s.sessions.start(Principal{Name: "person", Role: RoleViewer})
	cookie := http.Header{"Cookie": {sessionCookie + "=" + sess.id}}
	t.Run("session cookie, same origin", func(t *testing.T) {
		h := cookie.Clone()
		h.Set("Origin", ts.URL)
		c, _, err := websocket.Dial(context.Background(), ts.wsURL("/v1/executions/w1/ws"), &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(4 << 20)
		got, _ := readWS(t, c)
		sameLive(t, got)
	})
	t.Run("resume with after", func(t *testing.T) {
		// The events after the third last (in another interleaving,
		// maybe: the history first, then the chunks).
		from := want[len(want)-4].ID
		c := ts.dialWS(t, "/v1/executions/w1/ws?after="+url.QueryEscape(from), RoleViewer, nil)
		got, _ := readWS(t, c)
		var names, wantNames []string
		for _, ev := range got {
			names = append(names, ev.Event)
		}
		for _, ev := range want[len(want)-3:] {
			wantNames = append(wantNames, ev.Event)
		}
		slices.Sort(names)
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Errorf("resumed after %s: %q, want %q", from, names, wantNames)
		}
	})
	for _, tc := range []struct {
		name   string
		header http.Header
		plain  bool // not a handshake
		want   int
	}{
		{"another origin", http.Header{"Cookie": cookie["Cookie"], "Origin": {"https://evil.example"}}, false, http.StatusForbidden},
		{"no credentials", http.Header{}, false, http.StatusUnauthorized},
		{"a worker", http.Header{"Authorization": {"Bearer " + ts.tokens[RoleWorker]}}, false, http.StatusForbidden},
		{"not a handshake", http.Header{"Authorization": {"Bearer " + ts.tokens[RoleViewer]}}, true, http.StatusUpgradeRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", ts.URL+"/v1/executions/w1/ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tc.header.Clone()
			if !tc.plain {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "websocket")
				req.Header.Set("Sec-WebSocket-Version", "13")
				req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", resp.StatusCode, data, tc.want)
			}
			if p := problemIn(t, data); p.Status != tc.want {
				t.Errorf("problem %s", data)
			}
		})
	}
}

// smallReadBuffer is an HTTP client whose connections have a small
// receive buffer, so that a client that does not read is soon seen.
func smallReadBuffer() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// flood is a Go agent that streams 64 KiB texts until stop is closed
// (at most 256 MiB), then returns how many.
func flood(stop <-chan struct{}) agents.Agent {
	text := strings.Repeat("x", 64<<10)
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		for n := 0; n < 4096; n++ {
			select {
			case <-stop:
				return n, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			default:
			}
			fmt.Fprint(req.Stream(), text)
		}
		return 4096, nil
	})
}

// TestStreamSlowWebSocketClient: a WebSocket client that does not read
// does not hold up the run (its agent streams on, the execution ends);
// the server closes it as too slow (1008), which it reads once it reads.
func TestStreamSlowWebSocketClient(t *testing.T) {
	stop := make(chan struct{})
	ts := liveServer(t, flood(stop), "slow")
	c := ts.dialWS(t, "/v1/executions/slow/ws", RoleViewer, smallReadBuffer())
	waitUntil(t, func() bool { return ts.s.streams.ws.tooSlow.Load() == 1 })
	close(stop)
	ts.waitFor(t, "slow", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	got, closed := readWS(t, c)
	if closed.Code != websocket.StatusPolicyViolation || !strings.HasPrefix(closed.Reason, "too slow") {
		t.Errorf("closed %v, want 1008 too slow", closed)
	}
	if len(got) == 0 || slices.ContainsFunc(got, func(ev liveEvent) bool { return ev.Event == "end" }) {
		t.Errorf("%d frames before the close, want some and no end", len(got))
	}
}

// TestStreamSlowSSEClient: an SSE client that does not read does not
// hold up the run.
func TestStreamSlowSSEClient(t *testing.T) {
	texts := make(chan string)
	ts := liveServer(t, liveWriter(texts), "slow")
	req, err := http.NewRequest("GET", ts.URL+"/v1/executions/slow/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleViewer])
	resp, err := smallReadBuffer().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // never read
	text := strings.Repeat("y", 64<<10)
	for range 128 { // 8 MiB
		texts <- text
	}
	close(texts)
	ts.waitFor(t, "slow", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
}

// BenchmarkStream200: 200 SSE subscribers of one execution, each chunk
// delivered to all; reports ns and allocations per chunk delivered (to
// one subscriber), and the memory of the process per open subscriber
// (server and client side both).
func BenchmarkStream200(b *testing.B) {
	const subscribers = 200
	texts := make(chan string)
	reg := agents.NewRegistry()
	if err := reg.Register("Writer", liveWriter(texts)); err != nil {
		b.Fatal(err)
	}
	ts := newBenchServer(b, reg)
	ts.s.streams.histories.max, ts.s.streams.histories.maxPerCaller = subscribers, subscribers
	caught := make(chan struct{}, subscribers)
	var want atomic.Int64
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var wg sync.WaitGroup
	opened := make(chan struct{}, subscribers)
	for range subscribers {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", ts.URL+"/v1/executions/bench/events", nil)
			req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleViewer])
			resp, err := ts.Client().Do(req)
			if err != nil {
				b.Error(err)
				opened <- struct{}{}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("subscribe: %d", resp.StatusCode)
			}
			rd := bufio.NewReader(resp.Body)
			var mine int64
			first := true
			for {
				line, err := rd.ReadSlice('\n')
				if err != nil {
					return
				}
				if first {
					first = false
					opened <- struct{}{}
				}
				switch {
				case string(line) == "event: chunk\n":
					mine++
				case strings.HasPrefix(string(line), `data: {"count":`):
					n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(string(line), `data: {"count":`), "}\n"), 10, 64)
					mine += n
				case string(line) == "event: end\n":
					return
				default:
					continue
				}
				if mine == want.Load() {
					caught <- struct{}{}
				}
			}
		})
	}
	for range subscribers {
		<-opened
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	perSubscriber := (float64(ms1.HeapAlloc) - float64(ms0.HeapAlloc)) / subscribers
	b.ResetTimer()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for i := 0; i < b.N; {
		batch := min(1000, b.N-i)
		want.Add(int64(batch))
		for range batch {
			texts <- "token "
		}
		i += batch
		for range subscribers {
			<-caught
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	n := float64(b.N) * subscribers
	b.ReportMetric(perSubscriber, "heap-bytes/subscriber")
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/chunk-delivered")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/chunk-delivered")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/chunk-delivered")
	close(texts)
	wg.Wait()
}

// newBenchServer is a server on the memory store with reg's agents and
// a viewer's and an operator's token, running execution "bench" of
// liveFlow.
func newBenchServer(b *testing.B, reg *agents.Registry) *testServer {
	b.Helper()
	path := filepath.Join(b.TempDir(), "tokens")
	tokens := map[Role]string{}
	for _, r := range []Role{RoleViewer, RoleOperator} {
		tok, err := CreateToken(path, r.String()+"-bot", r)
		if err != nil {
			b.Fatal(err)
		}
		tokens[r] = tok
	}
	tt, err := LoadTokens(path)
	if err != nil {
		b.Fatal(err)
	}
	st := store.NewMemory()
	s, err := New(Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Agents: reg, Tokens: tt, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	b.Cleanup(func() { hs.Close(); s.Close() })
	ts := &testServer{Server: hs, s: s, st: st, tokens: tokens}
	body := strings.NewReader(`{"definition":` + liveFlow + `,"name":"bench"}`)
	req, _ := http.NewRequest("POST", hs.URL+"/v1/executions", body)
	req.Header.Set("Authorization", "Bearer "+tokens[RoleOperator])
	req.Header.Set("Content-Type", "application/json")
	resp, err := hs.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("start: %d", resp.StatusCode)
	}
	return ts
}

// TestStreamEventKinds: ?events= narrows what a stream sends ("end"
// always), and an unknown kind is a 400 naming the parameter.
func TestStreamEventKinds(t *testing.T) {
	texts := make(chan string)
	ts := liveServer(t, liveWriter(texts), "k1")
	_, chunks := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/k1/events?events=chunk", "")
	_, states := ts.stream(t, ts.URL, RoleViewer, "/v1/executions/k1/events?events=state", "")
	texts <- "only text"
	close(texts)
	var names []string
	for _, ev := range readLive(t, chunks, nil) {
		names = append(names, ev.Event)
	}
	if want := []string{"stream-start", "chunk", "stream-end", "end"}; !slices.Equal(names, want) {
		t.Errorf("?events=chunk sent %q, want %q", names, want)
	}
	names = nil
	for _, ev := range readLive(t, states, nil) {
		names = append(names, ev.Event)
	}
	if want := []string{"TaskStateEntered", "TaskStateExited", "end"}; !slices.Equal(names, want) {
		t.Errorf("?events=state sent %q, want %q", names, want)
	}
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/k1/events?events=chunk,progress", nil, nil); code != 400 || !strings.Contains(string(body), `events: \"progress\" is not a kind of event`) {
		t.Errorf("an unknown kind: %d %s", code, body)
	}
}
