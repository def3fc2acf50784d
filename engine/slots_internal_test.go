package engine

import (
	"testing"
	"testing/synctest"
)

// TestSlots: a claim reserves the free slots; a start that finds none
// free while the claim is under way waits for it to settle, and gets a
// slot the claim did not keep; without a claim under way it does not wait.
func TestSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlots(3)
		if !s.take() {
			t.Fatal("take with three free slots failed")
		}
		if n := s.reserve(); n != 2 {
			t.Fatalf("reserve = %d, want the 2 free slots", n)
		}
		got := make(chan bool, 1)
		go func() { got <- s.take() }()
		synctest.Wait()
		select {
		case ok := <-got:
			t.Fatalf("take returned %v while the claim was under way", ok)
		default:
		}
		s.settle(1) // the claim kept one: one is free again
		if ok := <-got; !ok {
			t.Error("take after the claim left a slot free failed")
		}
		// All three used, no claim under way: refused at once.
		if s.take() {
			t.Error("take with every slot used succeeded")
		}
		if n := s.reserve(); n != 0 {
			t.Errorf("reserve with every slot used = %d, want 0", n)
		}
		s.give()
		select {
		case <-s.freed:
		default:
			t.Error("give did not say a slot was freed")
		}
		if !s.take() {
			t.Error("take after give failed")
		}
	})
}
