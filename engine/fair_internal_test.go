package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// acquireAsync asks for a turn of owner on a goroutine of its own; the
// channel gets the release function once the turn is handed out.
func acquireAsync(t *testing.T, f *fairShare, owner string) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		turn, err := f.acquire(context.Background(), owner)
		if err != nil {
			t.Errorf("acquire(%s) = %v", owner, err)
		}
		got <- func() { f.release(turn) }
	}()
	return got
}

// take takes a turn of owner at once or fails the test; it returns the
// function that gives it back.
func take(t *testing.T, f *fairShare, owner string) func() {
	t.Helper()
	turn, err := f.acquire(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return func() { f.release(turn) }
}

// handed reports whether a turn was handed out on c, without waiting.
func handed(c <-chan func()) (func(), bool) {
	select {
	case release := <-c:
		return release, true
	default:
		return nil, false
	}
}

// TestFairShareBound: at most n turns are fresh; the next waits until one
// is given back.
func TestFairShareBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFairShare(2, time.Hour)
		r1 := take(t, f, "a")
		take(t, f, "a")
		third := acquireAsync(t, f, "b")
		synctest.Wait()
		if _, ok := handed(third); ok {
			t.Fatal("a third turn was handed out while two were fresh")
		}
		r1()
		synctest.Wait()
		if _, ok := handed(third); !ok {
			t.Fatal("a turn given back was not handed to the waiter")
		}
	})
}

// TestFairShareRoundRobin: waiting executions are served in turn, not in
// the order their items queued: b's one item goes before a's second.
func TestFairShareRoundRobin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFairShare(1, time.Hour)
		release := take(t, f, "a")
		var order []string
		var waiting []<-chan func()
		for _, owner := range []string{"a", "a", "a", "b"} {
			waiting = append(waiting, acquireAsync(t, f, owner))
			synctest.Wait() // queued in this order
			order = append(order, owner)
		}
		owners := order
		order = nil
		for range waiting {
			release()
			synctest.Wait()
			n := 0
			for i, c := range waiting {
				if r, ok := handed(c); ok {
					release = r
					order = append(order, owners[i])
					n++
				}
			}
			if n != 1 {
				t.Fatalf("a release handed out %d turns, want 1", n)
			}
		}
		if got, want := order, []string{"a", "b", "a", "a"}; !slices.Equal(got, want) {
			t.Errorf("turns went to %v, want %v (round robin)", got, want)
		}
	})
}

// TestFairShareLongTurns: a turn held over a quantum stops counting, so a
// waiter gets in even though no turn is given back (an item waiting for
// an agent, or for nested items of its own, never blocks the rest).
func TestFairShareLongTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFairShare(1, 5*time.Millisecond)
		start := time.Now()
		take(t, f, "a")
		second := acquireAsync(t, f, "a")
		synctest.Wait()
		if _, ok := handed(second); ok {
			t.Fatal("a second turn was handed out at once")
		}
		release := <-second
		if waited := time.Since(start); waited != 5*time.Millisecond {
			t.Errorf("the waiter got in after %v, want the quantum (5ms)", waited)
		}
		// The long turn no longer counts: the new one is the fresh one,
		// and giving it back lets the next in at once.
		third := acquireAsync(t, f, "b")
		synctest.Wait()
		release()
		synctest.Wait()
		if _, ok := handed(third); !ok {
			t.Error("the fresh turn given back was not handed on")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.fresh != 1 || len(f.held) != 1 {
			t.Errorf("fresh %d, held %d; want 1 and 1", f.fresh, len(f.held))
		}
	})
}

// TestFairShareCancel: a waiter whose ctx ends leaves the queue with ctx's
// error, and takes no turn with it.
func TestFairShareCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFairShare(1, time.Hour)
		release := take(t, f, "a")
		ctx, cancel := context.WithCancel(t.Context())
		failed := make(chan error, 1)
		go func() {
			_, err := f.acquire(ctx, "b")
			failed <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-failed; !errors.Is(err, context.Canceled) {
			t.Fatalf("acquire after cancel = %v, want context.Canceled", err)
		}
		f.mu.Lock()
		if len(f.ring) != 0 || len(f.queues) != 0 {
			t.Errorf("the cancelled waiter is still queued: ring %v", f.ring)
		}
		f.mu.Unlock()
		release()
		take(t, f, "c")
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.fresh != 1 {
			t.Errorf("fresh = %d after one release and one acquire, want 1", f.fresh)
		}
	})
}

// TestPauseTurn: a turn given back while its holder blocks lets a waiter
// in at once; once unblocked, the holder waits for a turn again.
func TestPauseTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFairShare(1, time.Hour)
		turn, err := f.acquire(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		ctx := withTurn(t.Context(), turn)
		waiter := acquireAsync(t, f, "b")
		synctest.Wait()
		resume := pauseTurn(ctx)
		synctest.Wait()
		releaseB, ok := handed(waiter)
		if !ok {
			t.Fatal("pausing did not let the waiter in")
		}
		back := make(chan struct{})
		go func() {
			resume.resume()
			close(back)
		}()
		synctest.Wait()
		select {
		case <-back:
			t.Fatal("the paused holder got a turn back while the other held the only one")
		default:
		}
		releaseB()
		<-back
		f.release(turn)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.fresh != 0 || len(f.held) != 0 || len(f.ring) != 0 {
			t.Errorf("after every release: fresh %d, held %d, queued %v", f.fresh, len(f.held), f.ring)
		}
		pauseTurn(t.Context()).resume() // no turn: nothing to do
	})
}
