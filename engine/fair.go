package engine

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// Fair share. An execution runs its states one after another on one
// goroutine, but a Map runs up to MaxConcurrency items at once (256 when
// it is 0) and a Parallel all its branches: left to Go's scheduler, a Map
// of CPU-bound items would have hundreds of goroutines queued for two
// cores, and every other execution's next state would wait behind all of
// them. So the fan-out of every execution of an Executor (Map items,
// Parallel branches, a distributed Map's children) goes through one
// scheduler, fairShare: an item or branch waits for a turn before it runs
// and gives it back when it ends, at most one turn per core is fresh at a
// time, and waiting executions are served in turn (round robin), whatever
// how many items each has queued. Executions that do not fan out never
// wait for a turn: beside a big Map they compete with at most a core's
// worth of its items.
//
// An item gives its turn back while it blocks — on an agent's answer, a
// timer, nested items of its own (pauseTurn) — and waits for one again
// after, so Maps of slow agents still reach their MaxConcurrency at once.
// A turn held longer than fairQuantum without such a pause (a commit
// waiting for the disk, an agent spinning) stops counting against the
// bound (it is "long") and the next waiter is let in, so a turn can never
// deadlock.
const fairQuantum = 5 * time.Millisecond

// fairShare hands out turns; its zero value is not ready: see newFairShare.
type fairShare struct {
	n       int
	quantum time.Duration

	mu sync.Mutex
	// fresh counts the turns held for less than a quantum; held lists them
	// in the order they were handed out (oldest first).
	fresh int
	held  []*share
	// queues are the waiters of each execution with any, and ring the
	// order executions are served in; next is the ring's position.
	queues map[string][]*share
	ring   []string
	next   int
	timer  *time.Timer
	armed  bool
}

// share is one item's or branch's turn: waited for, then held.
type share struct {
	f     *fairShare
	owner string
	at    time.Time
	// ready gets a value each time the turn is handed out to a waiter.
	ready chan struct{}
	// long is set once the turn stopped counting (held over a quantum, or
	// paused), given once it was handed out; both under fairShare.mu.
	long, given bool
}

func newFairShare(n int, quantum time.Duration) *fairShare {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	f := &fairShare{n: n, quantum: quantum, queues: make(map[string][]*share)}
	f.timer = time.AfterFunc(time.Hour, f.tick)
	f.timer.Stop()
	return f
}

// acquire waits for a turn of execution owner and returns it, to be given
// back once (release); ctx's error if ctx ends first.
func (f *fairShare) acquire(ctx context.Context, owner string) (*share, error) {
	t := &share{f: f, owner: owner}
	if err := f.wait(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// wait queues t and waits until it is handed out; ctx's error if ctx
// ends first (t is then neither held nor queued).
func (f *fairShare) wait(ctx context.Context, t *share) error {
	f.mu.Lock()
	t.long, t.given = false, false
	if f.fresh < f.n && len(f.ring) == 0 {
		f.give(t, time.Now())
		f.mu.Unlock()
		return nil
	}
	if t.ready == nil {
		t.ready = make(chan struct{}, 1)
	}
	select {
	case <-t.ready: // left by a hand-out its waiter gave up
	default:
	}
	if len(f.queues[t.owner]) == 0 {
		f.ring = append(f.ring, t.owner)
	}
	f.queues[t.owner] = append(f.queues[t.owner], t)
	f.arm()
	f.mu.Unlock()
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		if t.given {
			f.mu.Unlock()
			f.release(t)
			return ctx.Err()
		}
		f.dequeue(t)
		f.mu.Unlock()
		return ctx.Err()
	}
}

// turnKey carries the turn a goroutine holds in its context.
type turnKey struct{}

// withTurn returns ctx carrying turn t, for pauseTurn.
func withTurn(ctx context.Context, t *share) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// paused is a turn given back while its holder blocks (pauseTurn).
type paused struct {
	ctx context.Context
	t   *share
}

// pauseTurn gives back the turn ctx carries while its holder is about to
// block; resume waits for a turn again once it no longer blocks (call it
// once). Without a turn in ctx both do nothing. A turn that could not be
// had again (ctx ended) stays given back: its holder ends soon, and
// releasing it then does nothing.
func pauseTurn(ctx context.Context) paused {
	t, _ := ctx.Value(turnKey{}).(*share)
	if t == nil {
		return paused{}
	}
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !t.given {
		return paused{}
	}
	f.stopCounting(t)
	t.given = false
	f.serve(time.Now())
	return paused{ctx: ctx, t: t}
}

func (p paused) resume() {
	if p.t == nil {
		return
	}
	if p.t.f.wait(p.ctx, p.t) != nil {
		f := p.t.f
		f.mu.Lock()
		p.t.long, p.t.given = true, false
		f.mu.Unlock()
	}
}

// stopCounting takes t, a fresh turn, out of the count; with f.mu held.
func (f *fairShare) stopCounting(t *share) {
	if t.long {
		return
	}
	t.long = true
	f.fresh--
	for i, h := range f.held {
		if h == t {
			f.held = append(f.held[:i], f.held[i+1:]...)
			break
		}
	}
}

// give hands t out, with f.mu held.
func (f *fairShare) give(t *share, now time.Time) {
	t.at, t.given = now, true
	f.fresh++
	f.held = append(f.held, t)
	if t.ready != nil {
		select {
		case t.ready <- struct{}{}:
		default:
		}
	}
}

// release gives t back and lets the next waiter in.
func (f *fairShare) release(t *share) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.given {
		f.stopCounting(t)
		t.given = false
	}
	f.serve(time.Now())
}

// serve hands turns to waiters, one execution after another, while fewer
// than n are fresh; with f.mu held.
func (f *fairShare) serve(now time.Time) {
	for f.fresh < f.n && len(f.ring) > 0 {
		if f.next >= len(f.ring) {
			f.next = 0
		}
		owner := f.ring[f.next]
		q := f.queues[owner]
		t := q[0]
		q[0] = nil
		if q = q[1:]; len(q) == 0 {
			delete(f.queues, owner)
			f.ring = append(f.ring[:f.next], f.ring[f.next+1:]...)
		} else {
			f.queues[owner] = q
			f.next++
		}
		f.give(t, now)
	}
	f.arm()
}

// dequeue removes waiter t, which ctx gave up; with f.mu held.
func (f *fairShare) dequeue(t *share) {
	q := f.queues[t.owner]
	for i, w := range q {
		if w == t {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		f.queues[t.owner] = q
		return
	}
	delete(f.queues, t.owner)
	for i, o := range f.ring {
		if o == t.owner {
			f.ring = append(f.ring[:i], f.ring[i+1:]...)
			if f.next > i {
				f.next--
			}
			break
		}
	}
}

// arm sets the timer to the moment the oldest fresh turn turns long, when
// someone waits and none is set; with f.mu held.
func (f *fairShare) arm() {
	if f.armed || len(f.ring) == 0 || len(f.held) == 0 {
		return
	}
	f.armed = true
	f.timer.Reset(max(time.Until(f.held[0].at.Add(f.quantum)), 0))
}

// tick marks the turns held over a quantum long and serves the waiters.
func (f *fairShare) tick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
	now := time.Now()
	n := 0
	for _, t := range f.held {
		if now.Sub(t.at) < f.quantum {
			break
		}
		t.long = true
		f.fresh--
		n++
	}
	clear(f.held[:n])
	f.held = f.held[n:]
	f.serve(now)
}
