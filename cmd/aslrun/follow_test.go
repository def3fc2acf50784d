package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
)

// TestChunkPrinter: a header when the state or the turn changes, text as
// it comes, restarts, failures and missed chunks on lines of their own,
// control characters escaped but line breaks and tabs kept.
func TestChunkPrinter(t *testing.T) {
	type ev struct {
		kind string
		c    engine.Chunk
	}
	text := func(state string, turn int, s string) ev {
		return ev{engine.ChunkText, engine.Chunk{State: state, Turn: turn, Text: s}}
	}
	for _, tc := range []struct {
		name   string
		events []ev
		missed int64
		want   string
	}{
		{"one turn", []ev{{engine.ChunkStart, engine.Chunk{State: "Ask"}}, text("Ask", 1, "Hello, "), text("Ask", 1, "world."), {engine.ChunkEnd, engine.Chunk{State: "Ask"}}},
			0, "── Ask (turn 1)\nHello, world.\n"},
		{"turns and states", []ev{text("Ask", 1, "one\n"), text("Ask", 2, "two"), text("B/Item", 0, "b"), text("Ask", 2, "more")},
			0, "── Ask (turn 1)\none\n── Ask (turn 2)\ntwo\n── B/Item\nb\n── Ask (turn 2)\nmore\n"},
		{"restart", []ev{text("Ask", 1, "draft"), {engine.ChunkRestart, engine.Chunk{State: "Ask", Attempt: 1}}, text("Ask", 1, "again")},
			0, "── Ask (turn 1)\ndraft\n── Ask restarted (attempt 2): the text above is void\n── Ask (turn 1)\nagain\n"},
		{"failure", []ev{text("Ask", 0, "half"), {engine.ChunkEnd, engine.Chunk{State: "Ask", Error: "States.TaskFailed"}}},
			0, "── Ask\nhalf\n── Ask failed: States.TaskFailed\n"},
		{"escaped", []ev{text("Ask", 0, "a\x1b[2Jb\tc\r\nd\u202e")},
			0, "── Ask\na\\x1b[2Jb\tc\\r\nd\\u202e\n"},
		{"missed", []ev{text("Ask", 0, "x")}, 3, "── Ask\nx\n── 3 streamed chunks missed\n"},
		{"empty text", []ev{text("Ask", 0, "")}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newChunkPrinter(&b)
			for _, e := range tc.events {
				p.chunk(e.kind, e.c)
			}
			if tc.missed > 0 {
				p.missed(tc.missed)
			}
			p.finish()
			if got := b.String(); got != tc.want {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProgressLines: progress reports into a file or a pipe are lines
// of their own, at most one a second per state but for a Map's last and
// every milestone; on a terminal, one line rewritten in place (\r), one
// part per state, wiped for other lines and ended at the finish.
func TestProgressLines(t *testing.T) {
	pct := func(f float64) *float64 { return &f }
	items := func(done, failed, running int64) engine.Chunk {
		return engine.Chunk{Kind: engine.ChunkProgress, State: "Each", Progress: &engine.ProgressReport{Percentage: pct(float64(100 * (done + failed) / 20)),
			Total: 20, Completed: done, Failed: failed, InProgress: running, Pending: 20 - done - failed - running}}
	}
	agent := func(p float64, report any) engine.Chunk {
		return engine.Chunk{Kind: engine.ChunkProgress, State: "Work", Progress: &engine.ProgressReport{Percentage: pct(p), Report: report}}
	}
	milestone := engine.Chunk{Kind: engine.ChunkProgress, State: "Work", Progress: &engine.ProgressReport{Percentage: pct(50), Milestone: "half"}}
	type step struct {
		after time.Duration // the clock moves first
		c     engine.Chunk
	}
	for _, tc := range []struct {
		name   string
		styled bool
		steps  []step
		want   string
	}{
		{"plain, throttled per state", false, []step{
			{0, items(1, 0, 3)}, {100 * time.Millisecond, items(2, 0, 3)}, {0, agent(10, nil)}, {time.Second, items(5, 1, 3)},
			{0, agent(50, map[string]any{"page": 5})}, {0, milestone}, {10 * time.Millisecond, items(19, 1, 0)}, {0, agent(60, nil)},
		}, "── Each: 1/20 done, 3 running (5%)\n── Work: 10%\n── Each: 5/20 done, 1 failed, 3 running (30%)\n" +
			"── Work: 50% {\"page\":5}\n── Work reached milestone half (50%)\n── Each: 19/20 done, 1 failed (100%)\n"},
		{"plain, a report as text", false, []step{{0, agent(20, "reading \x1b[2Jpage 2")}, {0, agent(0, nil)}, {0, engine.Chunk{Kind: engine.ChunkProgress, State: "Work"}}},
			"── Work: 20% reading \\x1b[2Jpage 2\n"},
		{"terminal, one line in place", true, []step{{0, items(1, 0, 3)}, {0, agent(10, nil)}, {0, items(2, 0, 3)}},
			"\r\x1b[K" + styleNote + "Each: 1/20 done, 3 running (5%)" + styleReset +
				"\r\x1b[K" + styleNote + "Each: 1/20 done, 3 running (5%)  ·  Work: 10%" + styleReset +
				"\r\x1b[K" + styleNote + "Each: 2/20 done, 3 running (10%)  ·  Work: 10%" + styleReset + "\n"},
		{"terminal, a milestone wipes it", true, []step{{0, agent(10, nil)}, {0, milestone}},
			"\r\x1b[K" + styleNote + "Work: 10%" + styleReset + "\r\x1b[K" + styleNote + "── Work reached milestone half (50%)" + styleReset + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newChunkPrinter(&b)
			p.styled = tc.styled
			now := time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)
			p.now = func() time.Time { return now }
			for _, s := range tc.steps {
				now = now.Add(s.after)
				p.chunk(s.c.Kind, s.c)
			}
			p.finish()
			if got := b.String(); got != tc.want {
				t.Errorf("printed\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestRunFollowProgress: run --follow prints a Map's item counts; the
// last report, all items done, always goes.
func TestRunFollowProgress(t *testing.T) {
	wf := filepath.Join(t.TempDir(), "map.json")
	def := `{"StartAt": "Each", "States": {"Each": {"Type": "Map", "End": true,
	  "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}}}`
	if err := os.WriteFile(wf, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, "", "run", wf, "--input", "[1, 2, 3]", "--follow", "--db", ":memory:")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	lines, doc, _ := strings.Cut(out, "\n[")
	if !strings.HasSuffix(lines, "── Each: 3/3 done (100%)") || !jsonEqual(t, "["+doc, "[1, 2, 3]") {
		t.Errorf("stdout %q, want the Map's last count, then the output", out)
	}
}

// TestReadSSE: events with their ids, names and multi-line data; comments
// and data-less events skipped; an id carried to the next events; an
// event cut by the stream's end dropped; a line past the bound refused.
func TestReadSSE(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []sseEvent
		err      bool
	}{
		{"events", "id: 1\nevent: TaskStateEntered\ndata: {\"seq\":1}\n\n: keepalive\n\nid: 2:e:3\nevent: chunk\ndata: {\"text\":\"a\"}\n\n",
			[]sseEvent{{"1", "TaskStateEntered", []byte(`{"seq":1}`)}, {"2:e:3", "chunk", []byte(`{"text":"a"}`)}}, false},
		{"multi-line data, no space, default name", "data:a\ndata: b\n\n", []sseEvent{{"", "message", []byte("a\nb")}}, false},
		{"id carried", "id: 7\nevent: x\ndata: 1\n\nevent: y\ndata: 2\n\n", []sseEvent{{"7", "x", []byte("1")}, {"7", "y", []byte("2")}}, false},
		{"no data", "event: x\n\n", nil, false},
		{"cut", "event: x\ndata: 1\n", nil, false},
		{"too long", "data: " + strings.Repeat("x", sseMaxLine+1) + "\n\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []sseEvent
			err := readSSE(strings.NewReader(tc.in), func(ev sseEvent) error {
				ev.Data = bytes.Clone(ev.Data)
				got = append(got, ev)
				return nil
			})
			if (err != nil) != tc.err {
				t.Fatalf("readSSE: %v, want error %v", err, tc.err)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
	stop := errors.New("stop")
	if err := readSSE(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(sseEvent) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("a handler's error: %v, want it returned", err)
	}
}

// FuzzReadSSE: any stream reads without a panic.
func FuzzReadSSE(f *testing.F) {
	f.Add("id: 1\nevent: chunk\ndata: {}\n\n")
	f.Add(": c\n\ndata\nid\x00: x\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		readSSE(strings.NewReader(in), func(ev sseEvent) error {
			p := newChunkPrinter(&bytes.Buffer{})
			streamChunk(p, ev)
			return nil
		})
	})
}

// streamFake is a Chat Completions server that streams its answer in
// two deltas; with hold set, it waits for hold between them.
type streamFake struct {
	mu   sync.Mutex
	hold chan struct{}
}

// holding makes the fake hold its answers until the channel it returns
// is closed (nil: it holds none).
func (f *streamFake) holding(on bool) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = nil
	if on {
		f.hold = make(chan struct{})
	}
	return f.hold
}

func (f *streamFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any, finish any) {
		data, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "x",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil)
	send(map[string]any{"content": "Hello, "}, nil)
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	send(map[string]any{"content": "streamed world."}, nil)
	send(map[string]any{}, "stop")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// streamSetup writes a workflow whose one Task streams a loop agent's
// turn, and the agents file of that agent on a streamFake.
func streamSetup(t *testing.T, dir string, fake *streamFake) (wf, agentsFile string) {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	file := map[string]any{
		"Hosts":   map[string]any{"Allow": []string{strings.TrimPrefix(srv.URL, "http://")}},
		"Models":  map[string]any{"m": map[string]any{"Provider": "openai", "Model": "x", "BaseURL": srv.URL + "/v1", "MaxRetries": 0}},
		"Greeter": map[string]any{"Type": "loop", "Model": "m", "System": "Greet."},
	}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	wf = writeFile(t, dir, "greet.json", `{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Agent":"Greeter","Streaming":{},"ResultPath":"$.answer","Next":"Done"},"Done":{"Type":"Pass","End":true}}}`)
	return wf, writeFile(t, dir, "agents.json", string(data))
}

// watchedWriter is a writer whose content a test may wait for.
type watchedWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newWatchedWriter() *watchedWriter { return &watchedWriter{changed: make(chan struct{})} }

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	return w.b.Write(p)
}

func (w *watchedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the content holds s.
func (w *watchedWriter) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		has, changed := strings.Contains(w.b.String(), s), w.changed
		w.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("never printed %q; printed %q", s, w.String())
		}
	}
}

// invokeWith runs the CLI in process with its own writers.
func invokeWith(ctx context.Context, stdout, stderr *watchedWriter, args ...string) int {
	err := dispatch(ctx, &cmdContext{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}, args)
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "aslrun: %s\n", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "aslrun: %v\n", err)
	return 2
}

// TestRunFollow: run --follow prints the streamed text as the model
// streams it (the first delta before the model has answered), under a
// header, then the output as without --follow; without it, the output
// alone.
func TestRunFollow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := &streamFake{}
	wf, agentsFile := streamSetup(t, dir, fake)
	for _, db := range []string{filepath.Join(dir, "a.db"), ":memory:"} {
		t.Run(filepath.Base(db), func(t *testing.T) {
			hold := fake.holding(true)
			out, errOut := newWatchedWriter(), newWatchedWriter()
			code := make(chan int, 1)
			go func() {
				code <- invokeWith(context.Background(), out, errOut, "run", wf, "--agents", agentsFile, "--follow", "--db", db)
			}()
			out.waitFor(t, "Hello, ")
			if got := out.String(); got != "── Ask (turn 1)\nHello, " {
				t.Errorf("while the model streams, stdout is %q", got)
			}
			close(hold)
			if c := <-code; c != 0 {
				t.Fatalf("exit %d, stderr %s", c, errOut)
			}
			text, doc, ok := strings.Cut(out.String(), "\n{")
			if want := "── Ask (turn 1)\nHello, streamed world."; !ok || text != want {
				t.Errorf("streamed %q, want %q (stdout %q)", text, want, out)
			}
			if !jsonEqual(t, "{"+doc, `{"answer":"Hello, streamed world."}`) {
				t.Errorf("output %q", doc)
			}
		})
	}
	t.Run("without", func(t *testing.T) {
		fake.holding(false)
		code, out, errOut := invoke(t, "", "run", wf, "--agents", agentsFile, "--db", ":memory:")
		if code != 0 || !jsonEqual(t, out, `{"answer":"Hello, streamed world."}`) {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
}

// TestWatchLocal: with no process holding the database, watch prints the
// history, one line per event, until the execution ends (through an
// approval another command decides meanwhile), says once that streamed
// text is not shown, and exits as the execution ended.
func TestWatchLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	ok := writeFile(t, dir, "ok.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	fail := writeFile(t, dir, "fail.json", `{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Bad.Thing","Cause":"it broke"}}}`)
	review := writeFile(t, dir, "review.json", `{"StartAt":"R","States":{"R":{"Type":"Approval","Prompt":"ok?","Options":["yes","no"],"End":true}}}`)
	for _, run := range [][]string{{ok, "ok"}, {fail, "fail"}, {review, "review"}} {
		invoke(t, "", "run", run[0], "--name", run[1], "--no-prompt", "--db", db)
	}
	t.Run("succeeded", func(t *testing.T) {
		code, out, errOut := invoke(t, "", "watch", "ok", "--db", db)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 5 || !strings.Contains(lines[0], "ExecutionStarted") || !strings.Contains(lines[1], "PassStateEntered  P") ||
			lines[4] != "execution ok SUCCEEDED" || errOut != "" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if !strings.HasPrefix(out, "   1  ") {
			t.Errorf("the first line %q does not start with its number", lines[0])
		}
	})
	t.Run("failed", func(t *testing.T) {
		code, out, _ := invoke(t, "", "watch", "fail", "--db", db)
		if code != exitFailed || !strings.Contains(out, "ExecutionFailed  Bad.Thing: it broke") || !strings.HasSuffix(out, "execution fail FAILED: Bad.Thing: it broke\n") {
			t.Errorf("exit %d, stdout %q", code, out)
		}
	})
	t.Run("waiting, then decided", func(t *testing.T) {
		out, errOut := newWatchedWriter(), newWatchedWriter()
		code := make(chan int, 1)
		go func() { code <- invokeWith(context.Background(), out, errOut, "watch", "review", "--db", db) }()
		out.waitFor(t, "ApprovalRequested")
		errOut.waitFor(t, "without streamed text")
		if c, _, e := invoke(t, "", "approve", "review", "--decision", "yes", "--db", db); c != 0 {
			t.Fatalf("approve: exit %d: %s", c, e)
		}
		if c := <-code; c != 0 {
			t.Errorf("watch exit %d, stderr %s", c, errOut)
		}
		if got := out.String(); !strings.Contains(got, "ApprovalDecided") || !strings.HasSuffix(got, "execution review SUCCEEDED\n") {
			t.Errorf("stdout %q", got)
		}
		if n := strings.Count(errOut.String(), "without streamed text"); n != 1 {
			t.Errorf("stderr %q says %d times that chunks are not shown, want once", errOut, n)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no id", []string{"watch", "--db", db}, "want exactly one execution ID, got 0"},
		{"two ids", []string{"watch", "a", "b", "--db", db}, "want exactly one execution ID, got 2"},
		{"unknown", []string{"watch", "nope", "--db", db}, "nope"},
		{"no database", []string{"watch", "x", "--db", filepath.Join(dir, "none.db")}, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := invoke(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, errOut, tc.want)
			}
		})
	}
}

// TestWatchServe: with `aslrun serve` holding the database, watch reads
// the execution's event stream through its socket: history events one
// line each and the streamed text inline, until it ends; run --follow
// through the server prints the streamed text, then the output.
func TestWatchServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts aslrun serve")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	fake := &streamFake{}
	hold := fake.holding(true)
	wf, agentsFile := streamSetup(t, dir, fake)
	srv := startServe(t, db, "--agents", agentsFile)
	c := client.NewUnix(srv.sock)
	def := []byte(`{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Agent":"Greeter","Streaming":{},"ResultPath":"$.answer","Next":"Done"},"Done":{"Type":"Pass","End":true}}}`)
	if _, err := c.Start(context.Background(), api.StartExecution{Definition: def, Name: "s1"}); err != nil {
		t.Fatal(err)
	}
	out, errOut := newWatchedWriter(), newWatchedWriter()
	code := make(chan int, 1)
	go func() { code <- invokeWith(context.Background(), out, errOut, "watch", "s1", "--db", db) }()
	out.waitFor(t, "── Ask (turn 1)\nHello, ")
	close(hold)
	if c := <-code; c != 0 {
		t.Fatalf("watch: exit %d, stderr %s, stdout %s", c, errOut, out)
	}
	got := out.String()
	for _, want := range []string{"ExecutionStarted", "TaskStateEntered  Ask", "── Ask (turn 1)\nHello, streamed world.\n", "PassStateEntered  Done", "execution s1 SUCCEEDED\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("watch printed %q, without %q", got, want)
		}
	}
	if strings.Contains(errOut.String(), "without streamed text") {
		t.Errorf("stderr %q", errOut)
	}

	fake.holding(false)
	out, errOut = newWatchedWriter(), newWatchedWriter()
	if c := invokeWith(context.Background(), out, errOut, "run", wf, "--follow", "--db", db); c != 0 {
		t.Fatalf("run --follow through serve: exit %d, stderr %s", c, errOut)
	}
	text, doc, ok := strings.Cut(out.String(), "\n{")
	if !ok || text != "── Ask (turn 1)\nHello, streamed world." || !jsonEqual(t, "{"+doc, `{"answer":"Hello, streamed world."}`) {
		t.Errorf("run --follow through serve printed %q", out)
	}
}

// TestWatchHolderGoes: watch follows an execution through the socket of
// an `aslrun approve` process that continues it, and when that process
// exits with the execution waiting again, goes on reading the database,
// each event printed once, until it ends.
func TestWatchHolderGoes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts aslrun approve")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	wf := writeFile(t, dir, "two.json", `{"StartAt":"A","States":{
		"A":{"Type":"Approval","Prompt":"first?","Options":["yes"],"Next":"Work"},
		"Work":{"Type":"Task","Agent":"Worker","ResultPath":"$.w","Next":"B"},
		"B":{"Type":"Approval","Prompt":"second?","Options":["yes"],"End":true}}}`)
	mock := writeFile(t, dir, "mock.json", `{"Worker":{"0":{"Return":1,"DelaySeconds":2}}}`)
	if code, _, errOut := invoke(t, "", "run", wf, "--mock", mock, "--name", "h", "--no-prompt", "--db", db); code != exitWaiting {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	out, errOut := newWatchedWriter(), newWatchedWriter()
	code := make(chan int, 1)
	go func() { code <- invokeWith(context.Background(), out, errOut, "watch", "h", "--db", db) }()
	out.waitFor(t, "ApprovalRequested")
	approve := aslrunCmd("approve", "h", "--decision", "yes", "--db", db)
	if b, err := approve.CombinedOutput(); err != nil && !strings.Contains(string(b), "waits for a decision") {
		t.Fatalf("approve A: %v: %s", err, b)
	}
	out.waitFor(t, "ApprovalStateEntered  B")
	if c, o, e := invoke(t, "", "approve", "h", "--decision", "yes", "--db", db); c != 0 {
		t.Fatalf("approve B: exit %d: %s %s; watch printed %s", c, o, e, out)
	}
	if c := <-code; c != 0 {
		t.Fatalf("watch: exit %d, stderr %s", c, errOut)
	}
	got := out.String()
	if n := strings.Count(got, "ApprovalDecided"); n != 2 || !strings.HasSuffix(got, "execution h SUCCEEDED\n") {
		t.Errorf("watch printed %d ApprovalDecided (want 2, each once): %q", n, got)
	}
	if n := strings.Count(got, "TaskSucceeded"); n != 1 {
		t.Errorf("watch printed TaskSucceeded %d times, want once: %q", n, got)
	}
}

// Example_chunkPrinter: what run --follow and watch print of a state's
// stream into a file or a pipe.
func Example_chunkPrinter() {
	p := newChunkPrinter(os.Stdout)
	p.chunk(engine.ChunkStart, engine.Chunk{State: "Draft"})
	p.chunk(engine.ChunkText, engine.Chunk{State: "Draft", Turn: 1, Text: "Dear team,\nthe release "})
	p.chunk(engine.ChunkText, engine.Chunk{State: "Draft", Turn: 1, Text: "ships today."})
	p.chunk(engine.ChunkEnd, engine.Chunk{State: "Draft"})
	p.history(eventLine(9, time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC), "TaskSucceeded", "Draft", "", ""))
	// Output:
	// ── Draft (turn 1)
	// Dear team,
	// the release ships today.
	//    9  15:04:05.000  TaskSucceeded  Draft
}
