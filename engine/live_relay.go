package engine

import (
	"context"
	"time"
)

// Live feeds across processes. A feed lives in the process whose states
// write it; on a store that several processes share (PostgreSQL), a
// reader connected to another one gets the chunks through a LiveRelay:
// the reader's process wants the execution (FollowLive), the relay asks
// the others for it, the one writing the feed publishes it (a relay
// reading it as any reader does, WatchLive), and the chunks land in a
// mirror of the feed here (MirrorLive), with the writer's epoch and
// sequence numbers, so that a reader's position means the same on every
// process.

// LiveRelay carries live feeds between the processes sharing a store
// (package store/postgres/liverelay relays them through PostgreSQL's
// NOTIFY).
type LiveRelay interface {
	// Want is called when execution id's feed gains its first reader in
	// this process (want set) and when it loses its last.
	Want(id string, want bool)
	// Settle returns once the chunks of id that other processes
	// published before now are in its mirror here (or ctx ends): a
	// reader that saw the execution end calls it (SettleLive) before it
	// says so, since the history may come faster than the chunks.
	Settle(ctx context.Context, id string) error
}

// liveFlushWait bounds how long the end of a state's stream waits for
// the relays publishing its feed to have sent it (liveFeed.flushed).
const liveFlushWait = time.Second

// SetLiveRelay makes r carry this executor's live feeds to and from
// other processes. Call it before the executor runs or serves anything.
func (x *Executor) SetLiveRelay(r LiveRelay) {
	x.live.mu.Lock()
	defer x.live.mu.Unlock()
	x.live.relay = r
}

// FollowLive counts a reader of execution id's feed in, until release:
// with a LiveRelay, the execution's feed is relayed here from the
// process that writes it while it has readers. The server's streams
// call it.
func (x *Executor) FollowLive(id string) (release func()) {
	hub := &x.live
	hub.mu.Lock()
	if hub.follows == nil {
		hub.follows = make(map[string]int)
	}
	hub.follows[id]++
	first, r := hub.follows[id] == 1, hub.relay
	hub.mu.Unlock()
	if first && r != nil {
		r.Want(id, true)
	}
	done := false
	return func() {
		hub.mu.Lock()
		if done {
			hub.mu.Unlock()
			return
		}
		done = true
		hub.follows[id]--
		last := hub.follows[id] == 0
		if last {
			delete(hub.follows, id)
		}
		r := hub.relay
		hub.mu.Unlock()
		if last && r != nil {
			r.Want(id, false)
		}
	}
}

// SettleLive waits, with a LiveRelay and when execution id's feed here is
// not written here, until the chunks other processes published of it
// so far are in it (LiveRelay.Settle). A reader calls it when it sees
// the execution end, before it reads the feed one last time.
func (x *Executor) SettleLive(ctx context.Context, id string) error {
	x.live.mu.Lock()
	r, f := x.live.relay, x.live.feeds[id]
	x.live.mu.Unlock()
	if r == nil {
		return nil
	}
	if f != nil {
		f.mu.Lock()
		local := f.epoch != "" && !f.mirror
		f.mu.Unlock()
		if local {
			return nil
		}
	}
	return r.Settle(ctx, id)
}

// LivePosition returns where execution id's feed here is: its epoch ("" when
// it has none) and its last chunk's sequence number.
func (x *Executor) LivePosition(id string) (epoch string, seq int64) {
	f := x.live.feed(id, false)
	if f == nil {
		return "", 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch, f.next - 1
}

// MirrorLive puts chunks of execution id's feed, relayed from the process
// that writes it (its epoch, its sequence numbers, oldest first), in the
// feed here. Chunks this feed holds already are skipped; a feed of
// another epoch is replaced (the execution ran again: here, what was
// relayed before is void), unless a state of the execution streams here
// now (then the chunks are of a process that lost the execution, and
// are dropped).
func (x *Executor) MirrorLive(id, epoch string, chunks []Chunk) {
	if epoch == "" || len(chunks) == 0 {
		return
	}
	f := x.live.feed(id, true)
	for {
		f.mu.Lock()
		if f.gone {
			f.mu.Unlock()
			f = x.live.feed(id, true)
			continue
		}
		if f.epoch != epoch && f.epoch != "" {
			if f.running > 0 {
				f.mu.Unlock()
				return
			}
			f.mu.Unlock()
			f = x.live.replace(id, f)
			continue
		}
		break
	}
	defer f.mu.Unlock()
	f.epoch, f.mirror = epoch, true
	added := false
	for _, c := range chunks {
		if c.Seq < f.next {
			continue
		}
		f.addQuiet(c)
		added = true
	}
	if added {
		f.wake()
	}
}

// WatchLive counts a relay publishing execution id's feed to other
// processes in, until release. While one is, the end of a state's stream
// waits (at most liveFlushWait) for PublishedLive to reach it before the
// state's result is committed: a reader elsewhere that sees the state
// end then finds its chunks published.
func (x *Executor) WatchLive(id string) (release func()) {
	hub := &x.live
	hub.mu.Lock()
	if hub.watches == nil {
		hub.watches = make(map[string]int)
	}
	hub.watches[id]++
	hub.mu.Unlock()
	done := false
	return func() {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		if !done {
			done = true
			if hub.watches[id]--; hub.watches[id] == 0 {
				delete(hub.watches, id)
			}
		}
	}
}

// PublishedLive tells execution id's feed that a relay published its
// chunks up to seq of epoch.
func (x *Executor) PublishedLive(id, epoch string, seq int64) {
	f := x.live.feed(id, false)
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch != epoch || seq <= f.published {
		return
	}
	f.published = seq
	close(f.sent)
	f.sent = make(chan struct{})
}

// flushed waits, while relays publish execution id's feed f, until they
// published seq (at most liveFlushWait).
func (hub *liveHub) flushed(id string, f *liveFeed, seq int64) {
	var deadline <-chan time.Time
	for {
		hub.mu.Lock()
		watched := hub.watches[id] > 0
		hub.mu.Unlock()
		f.mu.Lock()
		if !watched || f.published >= seq || f.gone {
			f.mu.Unlock()
			return
		}
		sent := f.sent
		f.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(liveFlushWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-sent:
		case <-deadline:
			return
		}
	}
}
