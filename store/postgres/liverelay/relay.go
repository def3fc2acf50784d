// Package liverelay carries executions' live feeds (the text agents
// stream, progress reports; engine.Executor.Live) between the servers
// sharing a PostgreSQL database, so that a client following an
// execution on one server gets the chunks of a state another server
// runs.
//
// The relay is demand-driven and rides on LISTEN/NOTIFY, on one channel
// (postgres.DB.LiveChannelName):
//
//   - A server whose clients follow an execution it does not run asks
//     for it (an "ask" message naming the execution and the place its
//     mirror of the feed is at), at once and then every AskEvery while
//     they follow it.
//   - Every server that hears an ask starts (or keeps, for AskTTL) a
//     publisher of that execution's feed: a reader of its local feed
//     like any other. Only the server whose states write the feed ever
//     has chunks to publish; the others' publishers wait on an empty
//     feed until the asks stop. A publisher sends the chunks after the
//     place asked, then each new one as it comes, in "data" messages of
//     at most postgres.MaxPayload bytes (a chunk larger than that goes in
//     "frag" messages, reassembled on the other side), one NOTIFY round
//     trip per batch: chunks that come while one is sent go in the next.
//   - The asking server puts what it hears in its mirror of the feed
//     (engine.Executor.MirrorLive), with the writer's epoch and sequence
//     numbers, so that an event id means the same on every server and a
//     client may reconnect to any.
//
// Order: the end of a state's stream waits for its chunks to be
// published before the state's result is committed (engine.WatchLive);
// a server that sees an execution end sends itself a "fence" and waits
// for it to come back (Settle) before it says so: notifications reach a
// listener in commit order, so every chunk published before the end is
// in the mirror by then.
//
// Bounds: at most MaxPublishers publishers and MaxWanted executions
// asked for per server; a mirror keeps what any feed keeps (the engine's
// ring); fragments of at most MaxChunkBytes per chunk and MaxPending
// chunks in reassembly. What is lost (a notification dropped while a
// connection was down, a fragment never completed) reaches the client as
// chunks missed, never as wrong text.
package liverelay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// Bounds and intervals of a Relay.
const (
	// AskEvery is how often a server asks again for the executions its
	// clients follow; AskTTL how long a publisher keeps publishing after
	// the last ask it heard.
	AskEvery = 3 * time.Second
	AskTTL   = 10 * time.Second
	// SettleWait bounds Settle.
	SettleWait = 2 * time.Second
	// MaxPublishers and MaxWanted bound the executions a server
	// publishes and asks for.
	MaxPublishers = 4096
	MaxWanted     = 4096
	// MaxChunkBytes is the largest chunk (its JSON) relayed; a larger one
	// is not sent (the other side counts it missed).
	MaxChunkBytes = 4 << 20
	// MaxPending bounds the chunks in reassembly from fragments.
	MaxPending = 64
	// maxID is the longest execution id relayed.
	maxID = 1024
	// sendRetry is the pause after a failed send.
	sendRetry = time.Second
)

// Message is what a Transport delivers: a payload heard, or word that
// some may have been lost.
type Message struct {
	Payload string
	Missed  bool
}

// Transport carries payloads between the servers: every payload Sent by
// any server reaches every server's Receive (its own included), in the
// order the sends completed.
type Transport interface {
	// Send sends payloads, each at most MaxPayload bytes, together.
	Send(ctx context.Context, payloads []string) error
	// Receive delivers what is heard; it is closed when the transport
	// stops.
	Receive() <-chan Message
	// MaxPayload is the longest payload Send takes.
	MaxPayload() int
}

// Stats counts what a Relay did.
type Stats struct {
	// AsksSent counts ask messages sent; Published the data and
	// fragment messages, with PublishedChunks chunks in PublishedBytes
	// bytes of payload.
	AsksSent        int64
	Published       int64
	PublishedChunks int64
	PublishedBytes  int64
	// Mirrored counts the chunks put in mirrors here; Dropped the
	// messages heard and refused (malformed, unknown kind, not wanted
	// here is not counted).
	Mirrored int64
	Dropped  int64
	// Publishers is how many publish now.
	Publishers int64
}

// Relay relays one executor's live feeds through a Transport. Make it
// with New and stop it with Close.
type Relay struct {
	x    *engine.Executor
	t    Transport
	by   string // this server, in its messages
	log  *slog.Logger
	stop context.CancelFunc
	ctx  context.Context
	done sync.WaitGroup

	mu      sync.Mutex
	wanted  map[string]bool
	asking  map[string]bool // wanted and not asked for yet
	askNow  chan struct{}
	pubs    map[string]*publisher
	fences  map[string]chan struct{}
	pending map[string]*reassembly
	order   []string // pending's keys, oldest first

	stats struct {
		asks, published, pubChunks, pubBytes, mirrored, dropped atomic.Int64
	}
}

// New starts relaying x's live feeds through t and makes itself x's
// LiveRelay. by names this server in its messages (unique among the
// servers: a random one when empty); log may be nil.
func New(x *engine.Executor, t Transport, by string, log *slog.Logger) *Relay {
	if by == "" {
		by = randomName()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{x: x, t: t, by: by, log: log, ctx: ctx, stop: cancel,
		wanted: make(map[string]bool), asking: make(map[string]bool), askNow: make(chan struct{}, 1),
		pubs: make(map[string]*publisher), fences: make(map[string]chan struct{}), pending: make(map[string]*reassembly)}
	r.done.Add(2)
	go r.receive()
	go r.ask()
	x.SetLiveRelay(r)
	return r
}

// Close stops the relay and waits for its goroutines. The transport is
// the caller's to close.
func (r *Relay) Close() {
	r.x.SetLiveRelay(nil)
	r.stop()
	r.done.Wait()
}

// Stats returns what the relay did so far.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	pubs := int64(len(r.pubs))
	r.mu.Unlock()
	return Stats{AsksSent: r.stats.asks.Load(), Published: r.stats.published.Load(), PublishedChunks: r.stats.pubChunks.Load(),
		PublishedBytes: r.stats.pubBytes.Load(), Mirrored: r.stats.mirrored.Load(), Dropped: r.stats.dropped.Load(), Publishers: pubs}
}

// Want is engine.LiveRelay's: ask for id while this server's clients
// follow it.
func (r *Relay) Want(id string, want bool) {
	if len(id) > maxID {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !want {
		delete(r.wanted, id)
		delete(r.asking, id)
		return
	}
	if len(r.wanted) >= MaxWanted {
		r.log.Warn("live relay: too many executions followed; not relaying this one", "execution", id, "max", MaxWanted)
		return
	}
	r.wanted[id], r.asking[id] = true, true
	select {
	case r.askNow <- struct{}{}:
	default:
	}
}

// Settle is engine.LiveRelay's: it sends this server a fence and waits
// (at most SettleWait) for it to come back, after every notification
// sent before it.
func (r *Relay) Settle(ctx context.Context, id string) error {
	r.mu.Lock()
	wanted := r.wanted[id]
	r.mu.Unlock()
	if !wanted {
		return nil
	}
	nonce := randomName()
	back := make(chan struct{})
	r.mu.Lock()
	r.fences[nonce] = back
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.fences, nonce)
		r.mu.Unlock()
	}()
	data, err := json.Marshal(message{T: kindFence, By: r.by, Nonce: nonce})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, SettleWait)
	defer cancel()
	if err := r.t.Send(ctx, []string{string(data)}); err != nil {
		return fmt.Errorf("live relay: settling execution %s: %w", id, err)
	}
	select {
	case <-back:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("live relay: settling execution %s: %w", id, ctx.Err())
	}
}

// ask sends the asks: at once for executions newly wanted, and for
// every wanted one each AskEvery.
func (r *Relay) ask() {
	defer r.done.Done()
	tick := time.NewTicker(AskEvery)
	defer tick.Stop()
	for {
		all := false
		select {
		case <-r.ctx.Done():
			return
		case <-r.askNow:
		case <-tick.C:
			all = true
		}
		r.mu.Lock()
		ids := make([]string, 0, len(r.asking))
		for id := range r.wanted {
			if all || r.asking[id] {
				ids = append(ids, id)
			}
		}
		clear(r.asking)
		r.mu.Unlock()
		r.sendAsks(ids)
	}
}

// sendAsks asks for ids, each from where its mirror here is.
func (r *Relay) sendAsks(ids []string) {
	if len(ids) == 0 {
		return
	}
	var payloads []string
	m := message{T: kindAsk, By: r.by}
	flush := func() {
		if len(m.W) == 0 {
			return
		}
		data, _ := json.Marshal(m)
		payloads = append(payloads, string(data))
		m.W = nil
	}
	size := 0
	for _, id := range ids {
		ep, seq := r.x.LivePosition(id)
		w := want{X: id, E: ep, S: seq}
		n := len(id) + len(ep) + 48
		if size+n > r.t.MaxPayload()-64 {
			flush()
			size = 0
		}
		m.W = append(m.W, w)
		size += n
	}
	flush()
	if err := r.t.Send(r.ctx, payloads); err != nil {
		if r.ctx.Err() == nil {
			r.log.Warn("live relay: asking for executions' feeds failed", "error", err)
		}
		return
	}
	r.stats.asks.Add(int64(len(payloads)))
}

// receive handles what the transport delivers.
func (r *Relay) receive() {
	defer r.done.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case m, ok := <-r.t.Receive():
			if !ok {
				return
			}
			if m.Missed {
				r.missed()
				continue
			}
			if err := r.handle(m.Payload); err != nil {
				r.stats.dropped.Add(1)
				r.log.Debug("live relay: a message refused", "error", err)
			}
		}
	}
}

// missed asks again for every wanted execution: what was published
// meanwhile may be lost.
func (r *Relay) missed() {
	r.mu.Lock()
	for id := range r.wanted {
		r.asking[id] = true
	}
	r.mu.Unlock()
	select {
	case r.askNow <- struct{}{}:
	default:
	}
}

// handle handles one payload heard.
func (r *Relay) handle(payload string) error {
	m, err := parse(payload)
	if err != nil {
		return err
	}
	switch m.T {
	case kindFence:
		if m.By == r.by {
			r.mu.Lock()
			if c := r.fences[m.Nonce]; c != nil {
				close(c)
				delete(r.fences, m.Nonce)
			}
			r.mu.Unlock()
		}
	case kindAsk:
		if m.By != r.by {
			for _, w := range m.W {
				r.publish(w)
			}
		}
	case kindData:
		if m.By != r.by && r.isWanted(m.X) {
			r.x.MirrorLive(m.X, m.E, m.C)
			r.stats.mirrored.Add(int64(len(m.C)))
		}
	case kindFrag:
		if m.By != r.by && r.isWanted(m.X) {
			if c, ok, err := r.fragment(m); err != nil {
				return err
			} else if ok {
				r.x.MirrorLive(m.X, m.E, []engine.Chunk{c})
				r.stats.mirrored.Add(1)
			}
		}
	}
	return nil
}

// isWanted reports whether this server's clients follow id.
func (r *Relay) isWanted(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wanted[id]
}

// randomName returns a random name of 16 hex digits.
func randomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
