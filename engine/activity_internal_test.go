package engine

import (
	"context"
	"testing"
	"time"
)

// TestActivityBoardForgets: what the store no longer shows waiting is
// forgotten at the next read, and what it shows is found.
func TestActivityBoardForgets(t *testing.T) {
	x := New(Config{Store: volatileStore{}})
	x.durable = true
	b := &x.acts
	b.parked("gone", []string{"review"})
	b.parked("kept", []string{"review", "other"})
	time.Sleep(time.Millisecond)
	find := func(context.Context) ([]string, error) { return nil, nil }
	if err := x.readActivities(context.Background(), find); err != nil {
		t.Fatal(err)
	}
	if got := b.candidates("review"); len(got) != 0 {
		t.Errorf("candidates after a read that found nothing = %v, want none", got)
	}
	if len(b.local) != 0 {
		t.Errorf("local = %v, want emptied", b.local)
	}
	// Noted after the read began: kept until the next read.
	b.parked("new", []string{"review"})
	if got := b.candidates("review"); len(got) != 1 || got[0] != "new" {
		t.Errorf("candidates = %v, want [new]", got)
	}
	// A read less than ActivityRefresh/2 after the last one is skipped.
	if err := x.readActivities(context.Background(), find); err != nil {
		t.Fatal(err)
	}
	if got := b.candidates("review"); len(got) != 1 {
		t.Errorf("candidates after a skipped read = %v, want [new]", got)
	}
}
