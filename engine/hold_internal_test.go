package engine

import (
	"context"
	"testing"
	"time"
)

// TestAcquireNext: what continues an execution waits for a run that has
// settled (its last commit written) to let go, and is refused while a run
// is still under way.
func TestAcquireNext(t *testing.T) {
	x := New(Config{})
	ctx := context.Background()
	if _, ok := x.acquireRun(ctx, "e"); !ok {
		t.Fatal("acquire")
	}
	if _, ok := x.acquireNext(ctx, "e"); ok {
		t.Fatal("acquireNext held an execution whose run is under way")
	}
	x.settled("e")
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		released <- time.Now()
		x.release("e")
	}()
	if _, ok := x.acquireNext(ctx, "e"); !ok {
		t.Fatal("acquireNext refused an execution whose run had settled")
	}
	if at := <-released; time.Now().Before(at) {
		t.Error("acquireNext held the execution before the run let go")
	}
	x.release("e")
	// A settled run that never lets go: the caller's context ends the wait.
	x.acquireRun(ctx, "f")
	x.settled("f")
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, ok := x.acquireNext(cctx, "f"); ok {
		t.Error("acquireNext held an execution still held by a run")
	}
}
