package liverelay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store/postgres/liverelay"
)

// writer is an agent that streams the texts it is sent on its channel,
// one by one, until the channel closes.
func writer(texts <-chan string) agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		for s := range texts {
			fmt.Fprint(req.Stream(), s)
		}
		return "done", nil
	})
}

// streamingExecutor returns an executor whose agent Writer streams what
// texts sends, and the definition of a workflow that runs it.
func streamingExecutor(t testing.TB, texts <-chan string) (*engine.Executor, *states.Machine) {
	t.Helper()
	reg := agents.NewRegistry()
	if err := reg.Register("Writer", writer(texts)); err != nil {
		t.Fatal(err)
	}
	def, err := states.Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Writer","End":true,
		"Streaming":{"Mode":"token"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Agents: reg}), def
}

// texts reads the text chunks of execution id's feed in x, joined, and
// the feed's epoch and kinds.
func feedOf(x *engine.Executor, id string) (epoch, text, kinds string, r engine.LiveRead) {
	r = x.Live(id, "", 0)
	var t, k strings.Builder
	for _, c := range r.Chunks {
		t.WriteString(c.Text)
		k.WriteString(c.Kind[:1])
	}
	return r.Epoch, t.String(), k.String(), r
}

// waitFor waits until cond holds, woken by id's feed in x changing.
func waitFor(t *testing.T, x *engine.Executor, id string, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-x.Live(id, "", 0).Changed:
		case <-deadline:
			t.Fatalf("waiting for %s: never came", what)
		case <-time.After(50 * time.Millisecond):
			// A condition on the relay's side, not the feed's.
		}
	}
}

// TestRelayStreamsToAnotherServer: a server whose client follows an
// execution another server runs gets its chunks, with the writer's epoch
// and numbers: those streamed before it asked (from the writer's ring)
// and those after, a chunk larger than a payload in fragments; and once
// the execution ended and the follower settled, every chunk is there.
func TestRelayStreamsToAnotherServer(t *testing.T) {
	bus := &liverelay.Bus{Max: 700}
	texts := make(chan string)
	a, def := streamingExecutor(t, texts)
	b := engine.New(engine.Config{})
	ra := liverelay.New(a, bus.Join(), "serverA", nil)
	defer ra.Close()
	rb := liverelay.New(b, bus.Join(), "serverB", nil)
	defer rb.Close()

	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), def, map[string]any{}, engine.StartOptions{ID: "x1"})
		done <- err
	}()
	texts <- "Hello"
	texts <- ", "
	waitFor(t, a, "x1", "the first chunks on the writer", func() bool { _, s, _, _ := feedOf(a, "x1"); return s == "Hello, " })

	release := b.FollowLive("x1")
	defer release()
	waitFor(t, b, "x1", "the chunks written before the ask", func() bool { _, s, _, _ := feedOf(b, "x1"); return s == "Hello, " })
	big := strings.Repeat("λ", 1500) // 3000 bytes: fragments
	texts <- big
	texts <- "world"
	close(texts)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.SettleLive(context.Background(), "x1"); err != nil {
		t.Fatal(err)
	}
	ea, ta, ka, _ := feedOf(a, "x1")
	eb, tb, kb, rb2 := feedOf(b, "x1")
	if ea != eb || ta != tb || ka != kb || !rb2.Mirror || rb2.Missed != 0 {
		t.Errorf("the mirror is not the feed:\nwriter %s %q %s\nmirror %s %q %s (mirror %v, missed %d)", ea, ta, ka, eb, tb, kb, rb2.Mirror, rb2.Missed)
	}
	if kb != "scccce" {
		t.Errorf("kinds %s", kb)
	}
	sa, sb := ra.Stats(), rb.Stats()
	if sa.PublishedChunks != 6 || sb.Mirrored != 6 || sb.AsksSent == 0 || sa.Published < 6 {
		t.Errorf("stats: writer %+v, follower %+v", sa, sb)
	}
	if sb.Published != 0 {
		t.Errorf("the follower published its mirror: %+v", sb)
	}
}

// TestRelayNotWanted: chunks of an execution no client here follows are
// not mirrored, and a server without followers asks for nothing.
func TestRelayNotWanted(t *testing.T) {
	bus := &liverelay.Bus{}
	texts := make(chan string)
	a, def := streamingExecutor(t, texts)
	b, c := engine.New(engine.Config{}), engine.New(engine.Config{})
	ra := liverelay.New(a, bus.Join(), "a", nil)
	for _, r := range []*liverelay.Relay{ra, liverelay.New(b, bus.Join(), "b", nil), liverelay.New(c, bus.Join(), "c", nil)} {
		defer r.Close()
	}
	release := b.FollowLive("x2")
	defer release()
	asked(t, ra)
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), def, map[string]any{}, engine.StartOptions{ID: "x2"})
		done <- err
	}()
	texts <- "only for b"
	close(texts)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.SettleLive(context.Background(), "x2"); err != nil {
		t.Fatal(err)
	}
	if _, s, _, _ := feedOf(b, "x2"); s != "only for b" {
		t.Errorf("b has %q", s)
	}
	if ep, _, _, _ := feedOf(c, "x2"); ep != "" {
		t.Errorf("c mirrored a feed nobody follows there: epoch %q", ep)
	}
}

// TestRelayRefuses: payloads that are not relay messages, or carry what
// a stream must not (an epoch that cannot be in an event id, chunks out
// of order, unknown kinds, fragments out of bounds), are dropped and
// counted, and change no feed.
func TestRelayRefuses(t *testing.T) {
	bus := &liverelay.Bus{}
	b := engine.New(engine.Config{})
	rb := liverelay.New(b, bus.Join(), "b", nil)
	defer rb.Close()
	release := b.FollowLive("x")
	defer release()
	evil := bus.Join()
	bad := []string{
		``,
		`not json`,
		`{"t":"data","by":"e","x":"x","e":"ep","c":[{"seq":1,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]} trailing`,
		`{"t":"data","by":"e","x":"x","e":"bad epoch","c":[{"seq":1,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"e","x":"x","e":"ep","c":[]}`,
		`{"t":"data","by":"e","x":"x","e":"ep","c":[{"seq":2,"kind":"chunk","at":"2026-01-01T00:00:00Z"},{"seq":1,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"e","x":"x","e":"ep","c":[{"seq":1,"kind":"script","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"e","x":"x","e":"ep","c":[{"seq":0,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"e","x":"x","e":"ep","c":[{"seq":1,"kind":"progress","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"e","x":"","e":"ep","c":[{"seq":1,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"","x":"x","e":"ep","c":[{"seq":1,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"data","by":"e","x":"x","e":"ep","extra":1,"c":[{"seq":1,"kind":"chunk","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"frag","by":"e","x":"x","e":"ep","s":1,"i":5,"n":3,"d":"eA=="}`,
		`{"t":"frag","by":"e","x":"x","e":"ep","s":1,"i":0,"n":99999,"d":"eA=="}`,
		`{"t":"frag","by":"e","x":"x","e":"ep","s":1,"i":0,"n":2,"d":"not base64!"}`,
		`{"t":"ask","by":"e","w":[]}`,
		`{"t":"ask","by":"e","w":[{"x":"x","s":-1}]}`,
		`{"t":"fence","by":"e","f":""}`,
		`{"t":"shout","by":"e"}`,
	}
	if err := evil.Send(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	// A fence after them: once it is back, they were all handled.
	if err := b.SettleLive(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if got := rb.Stats().Dropped; got != int64(len(bad)) {
		t.Errorf("dropped %d of %d bad payloads", got, len(bad))
	}
	if ep, _, _, _ := feedOf(b, "x"); ep != "" {
		t.Errorf("a bad payload made a mirror of epoch %q", ep)
	}
	// Fragments that never complete leave nothing either; a complete
	// pair whose chunk is not the one announced is refused.
	if err := evil.Send(context.Background(), []string{
		`{"t":"frag","by":"e","x":"x","e":"ep","s":7,"i":0,"n":2,"d":"eyJzZXEiOjgsImtpbmQiOiJjaHVuayIsInN0YXRlIjoiIiwic3RlcCI6IiIsImF0dGVtcHQiOjAs"}`,
		`{"t":"frag","by":"e","x":"x","e":"ep","s":7,"i":1,"n":2,"d":"ImF0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoifQ=="}`,
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.SettleLive(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if ep, _, _, _ := feedOf(b, "x"); ep != "" {
		t.Errorf("a mismatched fragment made a mirror of epoch %q", ep)
	}
}

// FuzzParse: no payload panics the relay's reader, and what it accepts
// is a message of a known kind.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"t":"ask","by":"b","w":[{"x":"x1","e":"ep","s":3}]}`,
		`{"t":"data","by":"a","x":"x","e":"ep","c":[{"seq":1,"kind":"chunk","text":"hi","at":"2026-01-01T00:00:00Z"}]}`,
		`{"t":"frag","by":"a","x":"x","e":"ep","s":1,"i":0,"n":2,"d":"eA=="}`,
		`{"t":"fence","by":"b","f":"n1"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		liverelay.ParseForTest(payload)
	})
}

// asked waits until the server of r heard an ask (it publishes the
// feed asked for): a follower's ask goes out on its own goroutine.
func asked(t testing.TB, r *liverelay.Relay) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats().Publishers == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no ask reached the writer")
		}
		time.Sleep(time.Millisecond)
	}
}
