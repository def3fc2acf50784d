package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
)

// TestStreamingTask: a Task whose Streaming block is enabled passes what
// its agent writes to Request.Stream to the execution's live feed, cut
// as its Mode says, while the state runs (a reader has the first chunk
// before the agent returns); the Callbacks agents get each chunk, then
// the whole text; only the result is in the history.
func TestStreamingTask(t *testing.T) {
	reg := agents.NewRegistry()
	var x *engine.Executor
	release := make(chan struct{})
	sawFirst := make(chan engine.Chunk, 1)
	writer := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		if !req.Streaming() {
			return nil, fmt.Errorf("the request does not stream")
		}
		fmt.Fprint(req.Stream(), "First line.\nSecond ")
		// A reader of the feed has the first line before the agent ends.
		r := x.Live(req.Execution, "", 0)
		for _, c := range r.Chunks {
			if c.Kind == engine.ChunkText {
				sawFirst <- c
				break
			}
		}
		<-release
		fmt.Fprint(req.Stream(), "line.\nrest")
		return "done", nil
	})
	var mu sync.Mutex
	var got []string
	callback := func(what string) agents.Agent {
		return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
			in := req.Input.(map[string]any)
			mu.Lock()
			defer mu.Unlock()
			switch what {
			case "chunk":
				got = append(got, fmt.Sprintf("chunk %v %q", in["seq"], in["text"]))
			case "complete":
				got = append(got, fmt.Sprintf("complete %v chunks %q", in["chunks"], in["text"]))
			}
			return nil, nil
		})
	}
	for name, a := range map[string]agents.Agent{"Writer": writer, "OnChunk": callback("chunk"), "OnComplete": callback("complete")} {
		if err := reg.Register(name, a); err != nil {
			t.Fatal(err)
		}
	}
	x = engine.New(engine.Config{Agents: reg})
	def := `{"StartAt":"W","States":{"W":{"Type":"Task","Agent":"Writer","End":true,
		"Streaming":{"Mode":"line","Callbacks":{"OnChunk":"OnChunk","OnComplete":"OnComplete"}}}}}`
	done := make(chan *engine.Result, 1)
	go func() {
		res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "s1"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	first := <-sawFirst
	if first.Text != "First line.\n" || first.State != "W" || first.Seq != 2 {
		t.Errorf("the first chunk read while the state runs: %+v", first)
	}
	close(release)
	res := <-done
	wantOutput(t, res, `"done"`)
	r := x.Live("s1", "", 0)
	var kinds []string
	for _, c := range r.Chunks {
		kinds = append(kinds, c.Kind+":"+c.Text)
	}
	if got := strings.Join(kinds, "|"); got != "start:|chunk:First line.\n|chunk:Second line.\n|chunk:rest|end:" {
		t.Errorf("the feed: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := `[chunk 2 "First line.\n" chunk 3 "Second line.\n" chunk 4 "rest" complete 3 chunks "First line.\nSecond line.\nrest"]`
	if fmt.Sprint(got) != want {
		t.Errorf("callbacks got %v\nwant %s", got, want)
	}
}

// TestStreamingOff: without a Streaming block, or with Enabled false,
// the agent's request does not stream and the feed stays empty.
func TestStreamingOff(t *testing.T) {
	for _, block := range []string{``, `"Streaming":{"Enabled":false},`} {
		streamed := false
		a := agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
			streamed = req.Streaming()
			fmt.Fprint(req.Stream(), "discarded")
			return 1, nil
		})
		reg := agents.NewRegistry()
		if err := reg.Register("A", a); err != nil {
			t.Fatal(err)
		}
		x := engine.New(engine.Config{Agents: reg})
		res, err := x.Run(context.Background(), mustParse(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A",`+block+`"End":true}}}`), nil, engine.StartOptions{ID: "q"})
		if err != nil {
			t.Fatal(err)
		}
		wantOutput(t, res, `1`)
		if streamed || len(x.Live("q", "", 0).Chunks) != 0 {
			t.Errorf("%s: streamed %v, feed %+v", block, streamed, x.Live("q", "", 0).Chunks)
		}
	}
}
