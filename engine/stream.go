package engine

import (
	"context"
	"strings"
	"sync"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

// Bounds of a Streaming block's Callbacks: the chunks waiting for the
// OnChunk agent (more are dropped, and counted), and the text an
// OnComplete agent gets.
const (
	callbackQueue = 256
	callbackText  = 256 << 10
)

// shapeOf is the chunker's shape of a Streaming block.
func shapeOf(sc *states.StreamingConfig) streamShape {
	shape := streamShape{mode: sc.Mode, size: sc.ChunkSize}
	if b := sc.Buffer; b != nil {
		shape.bufSize, shape.flushEvery, shape.flushOnNewline = b.Size, b.FlushInterval, b.FlushOnNewline
	}
	return shape
}

// taskStream is the stream of one agent call of a Task with an enabled
// Streaming block: its chunks go to the execution's live feed, and to
// the block's Callbacks agents (called in order on a goroutine of the
// stream's, not journaled: a callback that fails is logged, and the state
// goes on).
type taskStream struct {
	live *liveStream
	h    *stateRun
	sc   *states.StreamingConfig
	// The OnChunk queue and what OnComplete gets.
	queue   chan Chunk
	done    sync.WaitGroup
	mu      sync.Mutex
	text    strings.Builder
	chunks  int
	dropped int
	cut     bool
}

// startTaskStream opens the stream of the state's agent call req.
func (h *stateRun) startTaskStream(ctx context.Context, sc *states.StreamingConfig, req *agents.Request) *taskStream {
	ts := &taskStream{h: h, sc: sc}
	if sc.OnChunk != "" {
		ts.queue = make(chan Chunk, callbackQueue)
		ts.done.Add(1)
		go func() {
			defer ts.done.Done()
			for c := range ts.queue {
				ts.callback(ctx, sc.OnChunk, "chunk", map[string]any{"state": c.State, "turn": c.Turn, "seq": c.Seq, "text": c.Text})
			}
		}()
	}
	ts.live = h.r.x.startStream(h.r.exec.ID, req.State, req.Step, req.Attempt, shapeOf(sc))
	ts.live.onChunk = ts.chunk
	req.OnStream = ts.live.write
	if sec := h.r.secrets; sec != nil {
		// Live text leaves for people: the execution's secrets known so
		// far are masked in each piece (one split across two pieces is
		// not: docs/security.md).
		req.OnStream = func(turn int, text string) { ts.live.write(turn, sec.text(text)) }
	}
	return ts
}

// chunk takes each text chunk the feed got.
func (ts *taskStream) chunk(c Chunk) {
	ts.mu.Lock()
	ts.chunks++
	if ts.sc.OnComplete != "" {
		if room := callbackText - ts.text.Len(); room >= len(c.Text) {
			ts.text.WriteString(c.Text)
		} else {
			ts.cut = true
		}
	}
	ts.mu.Unlock()
	if ts.queue == nil {
		return
	}
	select {
	case ts.queue <- c:
	default:
		ts.mu.Lock()
		ts.dropped++
		ts.mu.Unlock()
	}
}

// end closes the stream with the call's outcome (err nil on success),
// and calls OnComplete or OnError once the OnChunk agent has had the
// queued chunks.
func (ts *taskStream) end(ctx context.Context, err error) {
	name := ""
	if err != nil {
		name = string(classify(err, 0, 0).Name)
	}
	ts.live.end(name)
	if ts.queue != nil {
		close(ts.queue)
		ts.done.Wait()
	}
	ts.mu.Lock()
	info := map[string]any{"state": ts.live.base.State, "chunks": ts.chunks, "dropped": ts.dropped}
	text, cut := ts.text.String(), ts.cut
	ts.mu.Unlock()
	switch {
	case err == nil && ts.sc.OnComplete != "":
		info["text"], info["truncated"] = text, cut
		ts.callback(ctx, ts.sc.OnComplete, "complete", info)
	case err != nil && ts.sc.OnError != "":
		ae := classify(err, 0, 0)
		info["error"], info["cause"] = string(ae.Name), ae.Cause
		ts.callback(ctx, ts.sc.OnError, "error", info)
	}
}

// callback calls a Callbacks agent with input; it is not journaled, and
// its failure is logged, not raised.
func (ts *taskStream) callback(ctx context.Context, agent, what string, input map[string]any) {
	r := ts.h.r
	a, ok := r.agents.Lookup(agent)
	if !ok {
		r.x.log.Warn("a Streaming callback agent is not registered", "execution", r.exec.ID, "state", ts.live.base.State, "agent", agent)
		return
	}
	req := &agents.Request{Agent: agent, Execution: r.exec.ID, State: ts.live.base.State, Step: ts.live.base.Step + "/stream-" + what, Attempt: ts.live.base.Attempt, Input: input}
	if _, err := a.Invoke(ctx, req); err != nil && ctx.Err() == nil {
		r.x.log.Warn("a Streaming callback failed", "execution", r.exec.ID, "state", ts.live.base.State, "agent", agent, "callback", what, "error", err)
	}
}
