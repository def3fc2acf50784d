package liverelay

import (
	"time"

	"github.com/aslrun/aslrun/engine"
)

// publisher publishes one execution's feed while it is asked for.
type publisher struct {
	id string
	// kick wakes the publisher: an ask came.
	kick chan struct{}
	// release ends its engine.Executor.WatchLive.
	release func()
	// Under Relay.mu: when the asks stop counting, and the place an ask
	// wants the feed from, when it is before the one published
	// (rewind).
	expires time.Time
	rewind  *want
}

// publish starts, or keeps, the publisher of w.X, from w's place when
// that is before the place it is at.
func (r *Relay) publish(w want) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pubs[w.X]
	if p == nil {
		if len(r.pubs) >= MaxPublishers {
			r.log.Warn("live relay: too many executions asked for; not publishing this one", "execution", w.X, "max", MaxPublishers)
			return
		}
		// Watch the feed at once, not when the goroutine starts: a
		// state whose stream ends from now on waits for it to be
		// published.
		p = &publisher{id: w.X, kick: make(chan struct{}, 1), release: r.x.WatchLive(w.X)}
		r.pubs[w.X] = p
		r.done.Add(1)
		go r.run(p, w)
	} else {
		p.rewind = &w
	}
	p.expires = time.Now().Add(AskTTL)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run publishes p's feed from w's place until the asks stop: what this
// process's feed holds after the place asked, then each chunk as it
// comes. A mirror (a feed relayed here) is never published again.
func (r *Relay) run(p *publisher, w want) {
	defer r.done.Done()
	defer p.release()
	epoch, seq := w.E, w.S
	retry := time.NewTimer(0)
	<-retry.C
	for {
		r.mu.Lock()
		if rw := p.rewind; rw != nil {
			p.rewind = nil
			if rw.E != epoch || rw.S < seq {
				epoch, seq = rw.E, rw.S
			}
		}
		left := time.Until(p.expires)
		if left <= 0 {
			delete(r.pubs, p.id)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		lr := r.x.Live(p.id, epoch, seq)
		if lr.Epoch != "" && !lr.Mirror && len(lr.Chunks) > 0 {
			if err := r.send(p.id, lr.Epoch, lr.Chunks); err != nil {
				if r.ctx.Err() == nil {
					r.log.Warn("live relay: publishing an execution's feed failed", "execution", p.id, "error", err)
				}
				retry.Reset(sendRetry)
				select {
				case <-r.ctx.Done():
					return
				case <-retry.C:
				}
				continue
			}
			epoch, seq = lr.Epoch, lr.Chunks[len(lr.Chunks)-1].Seq
			r.x.PublishedLive(p.id, epoch, seq)
			continue
		}
		if lr.Epoch != "" && !lr.Mirror {
			epoch = lr.Epoch
		}
		expiry := time.NewTimer(left)
		select {
		case <-r.ctx.Done():
			expiry.Stop()
			r.mu.Lock()
			delete(r.pubs, p.id)
			r.mu.Unlock()
			return
		case <-lr.Changed:
		case <-p.kick:
		case <-expiry.C:
		}
		expiry.Stop()
	}
}

// send publishes chunks of execution id's feed of epoch.
func (r *Relay) send(id, epoch string, chunks []engine.Chunk) error {
	payloads, err := r.encode(id, epoch, chunks, r.t.MaxPayload())
	if err != nil {
		return err
	}
	if err := r.t.Send(r.ctx, payloads); err != nil {
		return err
	}
	r.stats.published.Add(int64(len(payloads)))
	r.stats.pubChunks.Add(int64(len(chunks)))
	for _, p := range payloads {
		r.stats.pubBytes.Add(int64(len(p)))
	}
	return nil
}
