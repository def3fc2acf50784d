package engine

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"
)

// Live chunks: the text agents stream while their states run (a Task's
// Streaming block). They are not history — only a state's result is
// committed — and live in the memory of the process running the state:
// each execution has a feed, a bounded ring of its latest chunks with
// their own sequence numbers, that any number of readers follow (one
// feed, however many subscribers).

// Kinds of chunks.
const (
	// ChunkText is text the agent streamed.
	ChunkText = "chunk"
	// ChunkStart opens a state's stream: its first attempt.
	ChunkStart = "start"
	// ChunkRestart opens the stream of a state that streamed before in
	// this feed (a retry): what came before of that state is void.
	ChunkRestart = "restart"
	// ChunkEnd closes a state's stream; Error is set when the agent
	// failed.
	ChunkEnd = "end"
	// ChunkProgress reports how far a state is (Progress): an agent's
	// report, a milestone reached, a Map's or a Parallel's counts.
	ChunkProgress = "progress"
)

// Chunk is one event of an execution's live feed.
type Chunk struct {
	// Seq numbers the feed's chunks from 1, in order, without gaps.
	Seq int64 `json:"seq"`
	// Kind is ChunkText, ChunkStart, ChunkRestart or ChunkEnd.
	Kind string `json:"kind"`
	// State is the state (qualified inside Map items and Parallel
	// branches, as agents.Request.State) and Step its visit.
	State string `json:"state"`
	Step  string `json:"step"`
	// Attempt is the state's attempt (its retries count).
	Attempt int `json:"attempt"`
	// Turn is the model turn the text belongs to (0 for an agent without
	// turns).
	Turn int `json:"turn,omitempty"`
	// Text is the chunk's text (ChunkText).
	Text string `json:"text,omitempty"`
	// Error is the error a ChunkEnd reports the agent failed with.
	Error string `json:"error,omitempty"`
	// Progress is a ChunkProgress's report.
	Progress *ProgressReport `json:"progress,omitempty"`
	At       time.Time       `json:"at"`
}

// Feed bounds. A feed keeps its latest liveKeep chunks and at most
// liveKeepBytes of their text; a reader that falls further behind is told
// how many it missed. A feed nobody wrote to for liveIdle after its
// execution's run ended is dropped.
const (
	liveKeep      = 4096
	liveKeepBytes = 1 << 20
	liveIdle      = 5 * time.Minute
)

// LiveRead is what Executor.Live returns.
type LiveRead struct {
	// Epoch identifies the feed: a resumed execution (another process,
	// or this one after the feed was dropped) has a feed of another
	// epoch, whose sequence starts again at 1. It is empty while the
	// feed has no chunk (nothing streamed here, nor relayed from the
	// process running the execution).
	Epoch string
	// Chunks are the feed's chunks after the sequence number asked for,
	// oldest first.
	Chunks []Chunk
	// Missed counts the chunks after the number asked for that the feed
	// no longer holds (dropped from its ring, or of another epoch, or
	// lost on their way from another process).
	Missed int64
	// Changed is closed when the feed gains a chunk after these.
	Changed <-chan struct{}
	// Mirror says the feed's chunks come from another process, relayed
	// (see LiveRelay); Running, that some state streams into it here now.
	Mirror  bool
	Running bool
}

// liveHub holds the executor's feeds.
type liveHub struct {
	mu    sync.Mutex
	feeds map[string]*liveFeed
	// follows counts the readers of each execution's feed (FollowLive);
	// relay hears when an execution gains its first and loses its last.
	follows map[string]int
	relay   LiveRelay
	// watches counts the relays publishing each execution's feed here
	// (WatchLive).
	watches map[string]int
}

// liveFeed is one execution's feed.
type liveFeed struct {
	mu sync.Mutex
	// epoch is "" until the feed's first chunk: one written here makes a
	// new epoch; one relayed (mirror) brings its process's.
	epoch  string
	mirror bool
	ring   []Chunk // oldest first, by Seq (a mirror's may skip numbers)
	bytes  int
	next   int64 // the next chunk's Seq
	// changed is closed, and made again, when the feed gains a chunk or
	// is replaced (gone: a reader asks the hub again).
	changed chan struct{}
	gone    bool
	// streamed are the steps that streamed in this feed, for
	// ChunkRestart.
	streamed map[string]bool
	// running counts the states streaming now; touched is the last
	// write.
	running int
	touched time.Time
	// published is the last chunk relays publishing this feed to other
	// processes sent, and sent is closed when it moves (see WatchLive).
	published int64
	sent      chan struct{}
}

// newFeed returns an empty feed.
func newFeed(now time.Time) *liveFeed {
	return &liveFeed{next: 1, changed: make(chan struct{}), streamed: make(map[string]bool), touched: now, sent: make(chan struct{})}
}

// feed returns the execution's feed, made when create is set (nil
// otherwise when there is none). Making one drops the feeds left idle.
func (hub *liveHub) feed(id string, create bool) *liveFeed {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	f := hub.feeds[id]
	if f != nil || !create {
		return f
	}
	now := time.Now()
	for k, old := range hub.feeds {
		old.mu.Lock()
		idle := old.running == 0 && now.Sub(old.touched) > liveIdle && hub.follows[k] == 0 && hub.watches[k] == 0
		old.mu.Unlock()
		if idle {
			delete(hub.feeds, k)
		}
	}
	f = newFeed(now)
	if hub.feeds == nil {
		hub.feeds = make(map[string]*liveFeed)
	}
	hub.feeds[id] = f
	return f
}

// replace puts a new feed in place of old (still the execution's), and
// wakes old's readers so that they read the new one.
func (hub *liveHub) replace(id string, old *liveFeed) *liveFeed {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	f := hub.feeds[id]
	if f != old || f == nil {
		if f == nil {
			f = hub.feedLocked(id)
		}
		return f
	}
	f = newFeed(time.Now())
	hub.feeds[id] = f
	old.mu.Lock()
	old.gone = true
	close(old.changed)
	old.changed = make(chan struct{})
	old.mu.Unlock()
	return f
}

// feedLocked makes execution id's feed; hub.mu is held.
func (hub *liveHub) feedLocked(id string) *liveFeed {
	f := newFeed(time.Now())
	if hub.feeds == nil {
		hub.feeds = make(map[string]*liveFeed)
	}
	hub.feeds[id] = f
	return f
}

// Live returns the chunks of execution id's live feed after sequence
// number after (0: all it holds) in epoch (empty: the current one; an
// epoch that is not the feed's reads from its start and counts the
// reader's position as missed), and the channel closed when more come.
// An execution with no feed in this process (not streaming here, or
// long ended) reads as an empty feed (Epoch "") whose Changed is closed
// when a chunk comes.
func (x *Executor) Live(id, epoch string, after int64) LiveRead {
	f := x.live.feed(id, true)
	f.mu.Lock()
	defer f.mu.Unlock()
	r := LiveRead{Epoch: f.epoch, Changed: f.changed, Mirror: f.mirror, Running: f.running > 0}
	if f.epoch == "" {
		return r
	}
	if epoch != "" && epoch != f.epoch {
		r.Missed, after = after, 0
	}
	if after < 0 {
		after = 0
	}
	i, _ := slices.BinarySearchFunc(f.ring, after+1, func(c Chunk, seq int64) int { return cmp.Compare(c.Seq, seq) })
	if i < len(f.ring) {
		r.Chunks = append([]Chunk(nil), f.ring[i:]...)
		// What is not there between after and the last chunk was
		// dropped from the ring, or lost on its way here.
		r.Missed += r.Chunks[len(r.Chunks)-1].Seq - after - int64(len(r.Chunks))
	}
	return r
}

// own makes f a feed written here, with an epoch of its own, and
// returns it locked: a relayed feed (mirror) is replaced by a new one,
// the execution now running here.
func (x *Executor) own(id string, f *liveFeed) *liveFeed {
	for {
		f.mu.Lock()
		switch {
		case f.gone:
			f.mu.Unlock()
			f = x.live.feed(id, true)
			continue
		case f.mirror:
			f.mu.Unlock()
			f = x.live.replace(id, f)
			continue
		case f.epoch == "":
			f.epoch = newEpoch()
		}
		return f
	}
}

// newEpoch returns a new feed's epoch.
func newEpoch() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// append adds a chunk (numbered and timed: the result), dropping the oldest beyond the bounds, and wakes
// the readers.
func (f *liveFeed) append(c Chunk) Chunk {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appendLocked(c)
}

// appendLocked is append with f.mu held.
func (f *liveFeed) appendLocked(c Chunk) Chunk {
	c.Seq, c.At = f.next, time.Now().UTC()
	f.add(c)
	return c
}

// add puts c, numbered, in the ring and wakes the readers; f.mu is
// held.
func (f *liveFeed) add(c Chunk) {
	f.addQuiet(c)
	f.wake()
}

// wake wakes the feed's readers; f.mu is held.
func (f *liveFeed) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// addQuiet puts c, numbered, in the ring, dropping the oldest beyond the
// bounds; f.mu is held.
func (f *liveFeed) addQuiet(c Chunk) {
	f.next = c.Seq + 1
	f.ring = append(f.ring, c)
	f.bytes += len(c.Text)
	for len(f.ring) > liveKeep || f.bytes > liveKeepBytes && len(f.ring) > 1 {
		f.bytes -= len(f.ring[0].Text)
		f.ring[0] = Chunk{}
		f.ring = f.ring[1:]
	}
	f.touched = time.Now()
}

// liveStream is one agent call's stream into its execution's feed.
type liveStream struct {
	hub  *liveHub
	id   string // the execution's
	f    *liveFeed
	base Chunk // State, Step, Attempt
	ch   *chunker
	// onChunk, when set, gets each text chunk once it is in the feed.
	onChunk func(Chunk)
	mu      sync.Mutex
	done    bool
}

// startStream opens the stream of an agent call of state (qualified) at
// step and attempt, shaped by shape.
func (x *Executor) startStream(execution, state, step string, attempt int, shape streamShape) *liveStream {
	f := x.own(execution, x.live.feed(execution, true))
	s := &liveStream{hub: &x.live, id: execution, f: f, base: Chunk{State: state, Step: step, Attempt: attempt}}
	kind := ChunkStart
	if f.streamed[step] {
		kind = ChunkRestart
	}
	f.streamed[step] = true
	f.running++
	f.mu.Unlock()
	open := s.base
	open.Kind = kind
	f.append(open)
	s.ch = newChunker(shape, s.emit)
	return s
}

// emit adds one chunk of text of turn.
func (s *liveStream) emit(turn int, text string) {
	c := s.base
	c.Kind, c.Turn, c.Text = ChunkText, turn, text
	c = s.f.append(c)
	if s.onChunk != nil {
		s.onChunk(c)
	}
}

// write is agents.Request.OnStream.
func (s *liveStream) write(turn int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.ch.write(turn, text)
}

// end flushes what the chunker holds and closes the stream with the
// agent's error ("" on success).
func (s *liveStream) end(errName string) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	s.done = true
	s.ch.close()
	s.mu.Unlock()
	c := s.base
	c.Kind, c.Error = ChunkEnd, errName
	f := s.f
	f.mu.Lock()
	c = f.appendLocked(c)
	f.running--
	f.mu.Unlock()
	s.hub.flushed(s.id, f, c.Seq)
}
