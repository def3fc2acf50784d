package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ServeOptions tune Serve.
type ServeOptions struct {
	// Poll is how often Serve looks for due executions; 0 means one second.
	Poll time.Duration
	// MaxConcurrent bounds the executions Serve runs at once; 0 means 64.
	MaxConcurrent int
	// OnResult, when set, is told how each execution Serve ran ended (or
	// why it could not run).
	OnResult func(id string, res *Result, err error)
}

// Serve runs as a worker until ctx ends: it first resumes the RUNNING
// executions a stopped process left behind, then wakes WAITING executions
// when they are due. On a store that is a Leaser, it also takes over, at
// every poll, the RUNNING executions whose process's lease expired. It needs a store that implements Scheduler.
// Executions it runs are cancelled when ctx ends; they stay resumable.
func (x *Executor) Serve(ctx context.Context, opts ServeOptions) error {
	sched, ok := x.store.(Scheduler)
	if !ok {
		return fmt.Errorf("serve: %w (or the store cannot schedule)", ErrNotDurable)
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 64
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, opts.MaxConcurrent)
	)
	defer wg.Wait()
	launch := func(id string) {
		if x.isActive(id) {
			return
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			res, err := x.Resume(ctx, id, ResumeOptions{noWait: true})
			if errors.Is(err, ErrBusy) {
				return
			}
			if err != nil && ctx.Err() == nil {
				x.log.Error("resume failed", "execution", id, "error", err)
			}
			if opts.OnResult != nil {
				opts.OnResult(id, res, err)
			}
		}()
	}
	ids, err := sched.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("serve: find unfinished executions: %w", err)
	}
	for _, id := range ids {
		launch(id)
	}
	// On a store other processes share, a RUNNING execution no live
	// process holds is one whose process died: it is taken over.
	_, shared := x.store.(Leaser)
	t := time.NewTicker(opts.Poll)
	defer t.Stop()
	for {
		due, err := sched.Due(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			x.log.Error("find due executions", "error", err)
		}
		if shared {
			orphans, err := sched.Unfinished(ctx)
			if err != nil && ctx.Err() == nil {
				x.log.Error("find unfinished executions", "error", err)
			}
			due = append(due, orphans...)
		}
		for _, id := range due {
			launch(id)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (x *Executor) isActive(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.active[id] != nil
}
