package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/aslrun/aslrun/client"
)

// TestServeLeavesNoGoroutine runs serve in this process, uses it, stops
// it, and checks that no goroutine it started outlives it. (Not parallel:
// the other tests' goroutines are paused and ignored.)
func TestServeLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	db := filepath.Join(t.TempDir(), "leak.db")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--db", db, "--poll", "10ms"}, nil, io.Discard, io.Discard) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(db + ".sock"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not make its socket")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := client.NewUnix(db + ".sock")
	if _, err := c.Executions(ctx, "", 10); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := os.Stat(db + ".sock"); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}
