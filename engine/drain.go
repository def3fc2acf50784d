package engine

import (
	"context"
	"errors"
	"time"
)

// ErrDrained is returned (wrapped) by a run that Drain stopped at a state
// boundary: the execution stays RUNNING at its last commit, and Resume
// continues it.
var ErrDrained = errors.New("the executor is draining: the execution stopped at its last commit")

// Drain makes every run of this executor stop at its next state boundary
// — an agent call in flight finishes and its result is committed first —
// and then waits until no execution is held in this process or ctx ends.
// Runs started afterwards stop at their first boundary too. It is how a
// server stops gracefully: what it stopped is resumed where it stood by
// the next process. It returns ctx's error when executions were still
// running when ctx ended (cancel them then: they stay resumable).
func (x *Executor) Drain(ctx context.Context) error {
	x.draining.Store(true)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		x.mu.Lock()
		n := len(x.active)
		x.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
