package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestQueuedStartsBounds: an executor remembers the starts it queued up to
// maxQueuedStarts of them and maxQueuedBytes of their inputs, oldest
// first; what it drops frees room for more.
func TestQueuedStartsBounds(t *testing.T) {
	start := func(i, bytes int) *queuedStart {
		return &queuedStart{e: &Execution{ID: fmt.Sprint(i)}, bytes: bytes}
	}
	s := newSlots(1)
	for i := range maxQueuedStarts + 1 {
		s.remember(start(i, 1))
	}
	if len(s.starts) != maxQueuedStarts || s.startBytes != maxQueuedStarts {
		t.Fatalf("%d starts remembered, %d bytes; want %d of each (the count's bound)", len(s.starts), s.startBytes, maxQueuedStarts)
	}
	got := s.oldestStarts(3)
	if len(got) != 3 || got[0].e.ID != "0" || got[2].e.ID != "2" {
		t.Errorf("oldestStarts(3) = %v, want the three oldest", got)
	}
	if len(s.starts) != maxQueuedStarts {
		t.Errorf("oldestStarts removed starts: %d left", len(s.starts))
	}
	s.dropStarts(maxQueuedStarts)
	if len(s.starts) != 0 || s.startBytes != 0 {
		t.Fatalf("after dropping them all: %d starts, %d bytes", len(s.starts), s.startBytes)
	}
	if got := s.oldestStarts(5); len(got) != 0 {
		t.Errorf("oldestStarts of none = %v", got)
	}

	// By bytes: two half-budget inputs fit, a third does not; a small one
	// still does.
	half := maxQueuedBytes / 2
	for i, b := range []int{half, half, 1, 0} {
		s.remember(start(i, b))
	}
	if len(s.starts) != 3 || s.startBytes != maxQueuedBytes {
		t.Fatalf("%d starts, %d bytes remembered; want 3 (two halves and an empty input), %d bytes", len(s.starts), s.startBytes, maxQueuedBytes)
	}
	s.dropStarts(1)
	s.remember(start(9, half))
	if len(s.starts) != 3 || s.startBytes != maxQueuedBytes || s.starts[2].e.ID != "9" {
		t.Errorf("after dropping the oldest half: %d starts, %d bytes, newest %s; want room for another half", len(s.starts), s.startBytes, s.starts[len(s.starts)-1].e.ID)
	}
}

// TestHeldBack: a claimed run that failed is held back; one that ended for
// a reason that says nothing against the execution is not.
func TestHeldBack(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"failed", live, errors.New("its definition no longer parses"), true},
		{"no error", live, nil, false},
		{"server stopping", cancelled, context.Canceled, false},
		{"server stopping, another error", cancelled, errors.New("commit: connection closed"), false},
		{"drained", live, fmt.Errorf("execution e: %w", ErrDrained), false},
		{"busy here", live, fmt.Errorf("execution e: %w", ErrBusy), false},
		{"stopped", live, &StoppedError{Result: &Result{ID: "e", Status: StatusAborted}}, false},
		{"ended", live, fmt.Errorf("execution e: %w", ErrEnded), false},
	}
	for _, tt := range tests {
		if got := heldBack(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: heldBack = %v, want %v", tt.name, got, tt.want)
		}
	}
}
