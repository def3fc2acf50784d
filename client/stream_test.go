package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
)

// streamFlow is one Task whose agent, Writer, streams each write as a
// chunk.
const streamFlow = `{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Writer","Streaming":{"Mode":"token"},"End":true}}}`

// writer is a Go agent that streams each text it is sent and returns
// "done" once texts is closed.
func writer(texts <-chan string) agents.Agent {
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

// streamServer is a server on a memory store whose Writer is a, with a
// viewer's and an operator's token; it is closed when tb ends.
func streamServer(tb testing.TB, a agents.Agent) (url, viewer, operator string) {
	tb.Helper()
	url, viewer, operator, stop, err := newStreamServer(tb.TempDir(), a)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return url, viewer, operator
}

// newStreamServer is streamServer with its tokens file in dir; stop
// closes it.
func newStreamServer(dir string, a agents.Agent) (url, viewer, operator string, stop func(), err error) {
	path := filepath.Join(dir, "tokens")
	if viewer, err = server.CreateToken(path, "viewer-bot", server.RoleViewer); err != nil {
		return
	}
	if operator, err = server.CreateToken(path, "operator-bot", server.RoleOperator); err != nil {
		return
	}
	tokens, err := server.LoadTokens(path)
	if err != nil {
		return
	}
	reg := agents.NewRegistry()
	if err = reg.Register("Writer", a); err != nil {
		return
	}
	st := store.NewMemory()
	s, err := server.New(server.Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Agents: reg, Tokens: tokens})
	if err != nil {
		return
	}
	hs := httptest.NewServer(s.Handler())
	return hs.URL, viewer, operator, func() { hs.Close(); s.Close() }, nil
}

// conns is a dialer that keeps the connections it made, to cut them.
type conns struct {
	mu   sync.Mutex
	list []net.Conn
}

func (cs *conns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		cs.mu.Lock()
		cs.list = append(cs.list, c)
		cs.mu.Unlock()
	}
	return c, err
}

// cut closes every connection made so far, and says how many.
func (cs *conns) cut() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.list {
		c.Close()
	}
	n := len(cs.list)
	cs.list = nil
	return n
}

// TestStreamReconnects: Stream delivers the chunks while the state runs
// and, when its connection drops mid-stream, reconnects after the last
// event's id: every chunk and history event once, in order, then `end`.
func TestStreamReconnects(t *testing.T) {
	texts := make(chan string, 1)
	url, viewer, operator := streamServer(t, writer(texts))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.New(url, operator, nil).Start(ctx, api.StartExecution{Definition: json.RawMessage(streamFlow), Name: "s1"}); err != nil {
		t.Fatal(err)
	}
	var cs conns
	c := client.New(url, viewer, &http.Client{Transport: &http.Transport{DialContext: cs.dial}})
	want := []string{"a", "b", "c", "d", "e", "f"}
	texts <- want[0]
	var chunks, events []string
	var history []int64
	cuts := 0
	for ev, err := range c.Stream(ctx, "s1", client.StreamOptions{}) {
		if err != nil {
			t.Fatalf("after %q: %v", chunks, err)
		}
		events = append(events, ev.Event)
		switch ev.Event {
		case "chunk":
			var chunk struct{ Text string }
			if err := json.Unmarshal(ev.Data, &chunk); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, chunk.Text)
			if len(chunks) == 2 || len(chunks) == 4 {
				cuts += cs.cut() // the next texts are written while it reconnects
			}
			if len(chunks) < len(want) {
				texts <- want[len(chunks)]
			} else {
				close(texts)
			}
		case "stream-start", "stream-end", "end":
		default:
			var e api.Event
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			history = append(history, e.Seq)
		}
	}
	if !slices.Equal(chunks, want) {
		t.Errorf("chunks %q, want %q", chunks, want)
	}
	if cuts < 2 {
		t.Errorf("%d connections cut, want 2", cuts)
	}
	for i, seq := range history {
		if seq != int64(i+1) {
			t.Fatalf("history events %v, want 1… in order", history)
		}
	}
	if events[len(events)-1] != "end" || !slices.Contains(events, "stream-end") {
		t.Errorf("events %q", events)
	}
}

// TestStreamRefused: a refusal before the stream starts ends the
// sequence with it, not retried.
func TestStreamRefused(t *testing.T) {
	url, viewer, operator := streamServer(t, writer(nil))
	ctx := context.Background()
	for _, tc := range []struct {
		name, id, token, after string
		want                   int
	}{
		{"unknown execution", "nope", viewer, "", http.StatusNotFound},
		{"bad id", "x", viewer, "1:e", http.StatusBadRequest},
		{"no token", "x", "", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.id == "x" {
				client.New(url, operator, nil).Start(ctx, api.StartExecution{Definition: json.RawMessage(streamFlow), Name: "x"})
			}
			var errs []error
			for ev, err := range client.New(url, tc.token, nil).Stream(ctx, tc.id, client.StreamOptions{After: tc.after}) {
				if err == nil {
					t.Fatalf("event %+v", ev)
				}
				errs = append(errs, err)
			}
			if len(errs) != 1 || client.StatusOf(errs[0]) != tc.want {
				t.Errorf("errors %v, want one %d", errs, tc.want)
			}
		})
	}
}

// FuzzReadEvent: the client's event-stream parser never panics on what
// a server sends.
func FuzzReadEvent(f *testing.F) {
	f.Add("id: 1\nevent: x\ndata: {}\n\n: keepalive\n\nevent: end\ndata: {\"a\":\ndata: 1}\n\n")
	f.Add("data\n\n\n\nid:\r\n\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, s)
		}))
		defer hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n := 0
		for range client.New(hs.URL, "", nil).Stream(ctx, "x", client.StreamOptions{}) {
			if n++; n > 1000 {
				break
			}
		}
	})
}

// ExampleClient_Stream follows an execution whose agent streams its
// text: the chunks come as the agent writes them, then `end`.
func ExampleClient_Stream() {
	texts := make(chan string, 3)
	texts <- "Hello"
	texts <- ", "
	texts <- "world"
	close(texts)
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	url, viewer, operator, stop, err := newStreamServer(dir, writer(texts))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()
	if _, err := client.New(url, operator, nil).Start(ctx, api.StartExecution{Definition: json.RawMessage(streamFlow), Name: "hello"}); err != nil {
		fmt.Println(err)
		return
	}
	var text strings.Builder
	for ev, err := range client.New(url, viewer, nil).Stream(ctx, "hello", client.StreamOptions{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Event {
		case "chunk":
			var chunk struct{ Text string }
			json.Unmarshal(ev.Data, &chunk)
			text.WriteString(chunk.Text)
		case "end":
			var e api.Execution
			json.Unmarshal(ev.Data, &e)
			fmt.Printf("%s: %s\n", e.Status, text.String())
		}
	}
	// Output: SUCCEEDED: Hello, world
}
