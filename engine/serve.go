package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

// ServeOptions tune Serve.
type ServeOptions struct {
	// Poll is how often Serve looks for due executions; 0 means one second.
	// On a Dispatcher store, whose processes wake each other, it is the
	// fallback for a wake-up that was lost.
	Poll time.Duration
	// MaxConcurrent bounds the executions Serve runs at once; 0 means 64.
	// On a Dispatcher store it bounds the starts and resumes of the
	// executor too (see Serve).
	MaxConcurrent int
	// OnResult, when set, is told how each execution Serve ran ended (or
	// why it could not run).
	OnResult func(id string, res *Result, err error)
	// Ready, when set, is called once Serve is under way: on a Dispatcher
	// store, once its slots bound the executor's starts, it listens for
	// wake-ups, and its first claim (which takes from all there is to
	// run) is done, so that what the caller does next meets the claims
	// that follow it.
	Ready func()
}

// Dispatcher is implemented by stores several processes share that hand
// the executions with something to run to the processes with room for
// them (the PostgreSQL store). It is safe for concurrent use.
type Dispatcher interface {
	Leaser
	// Claim takes, in one step, the leases of up to n executions (n ≥ 1)
	// that have something to run and that no live process holds: RUNNING
	// ones (started and left for any process, or whose process died),
	// WAITING ones due at now, and ones a stop was requested for
	// (StopRequester), oldest first. Concurrent claims, in any process,
	// never take the same execution, nor wait for each other. Each claimed
	// execution is held as Leaser.Lease holds it, its stop request
	// delivered at once, until its Release. next is when the earliest
	// WAITING execution not yet due falls due (zero when none does).
	Claim(ctx context.Context, n int, now time.Time) (claims []Claimed, next time.Time, err error)
	// Wakes returns a channel that receives a value when another process
	// may have left work to claim (a start it did not run, an execution it
	// let go of with work left), or when such news may have been missed;
	// values are coalesced. It is closed when ctx ends. Wake-ups are hints:
	// Serve polls as well.
	Wakes(ctx context.Context) (<-chan struct{}, error)
}

// StartClaimer is implemented by Dispatcher stores that can claim, by id,
// the executions their process created and queued (Run with no slot free):
// a server that queued a start runs it itself when a slot frees, unless
// another process claimed it first, at the cost of taking its lease, not
// of a Claim that looks through everything there is to claim and reads the
// execution back.
type StartClaimer interface {
	// ClaimStarts takes the leases of up to n (n ≥ 1) of ids, the first in
	// their order that are still as their queued start left them (RUNNING,
	// never committed to, queued, no stop requested, no live lease, not
	// being claimed by a concurrent claim), and holds each as Claim does;
	// it leaves the others alone. Claimed are in the order of ids.
	ClaimStarts(ctx context.Context, ids []string, n int) ([]Claimed, error)
}

// RunFailureNoter is implemented by Dispatcher stores that hold back an
// execution whose claimed run failed: the release of its lease does not
// queue it for a claim at once (a claim would take it straight back, and
// fail the same way, in a loop), but leaves it for later (the PostgreSQL
// store queues it again at its next sweep, within 30 s).
type RunFailureNoter interface {
	// RunFailed tells that the run of execution, whose lease this process
	// holds, failed with err; its release comes next. The store may find
	// that err says nothing against the execution (its database was away)
	// and queue it at its release as usual.
	RunFailed(execution string, err error)
}

// noteFailure tells a RunFailureNoter store that the claimed run of id
// ended with err (heldBack).
func (x *Executor) noteFailure(ctx context.Context, id string, err error) {
	if n, ok := x.store.(RunFailureNoter); ok && heldBack(ctx, err) {
		n.RunFailed(id, err)
	}
}

// heldBack reports whether a claimed run that ended with err on ctx is to
// be held back (RunFailureNoter): not when err says nothing against the
// execution: none, the executor's context ended or it drained (a server
// stopping: the execution goes to another at once), the execution was
// busy here, stopped, or ended.
func heldBack(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, ErrDrained) && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrEnded)
}

// Claimed is an execution whose lease Dispatcher.Claim took: Lost and
// Release are those of Leaser.Lease.
type Claimed struct {
	Execution string
	Lost      <-chan error
	Release   func()
}

// slots bound the executions an executor runs while it serves a
// Dispatcher store (ServeOptions.MaxConcurrent). It is safe for
// concurrent use.
type slots struct {
	mu             sync.Mutex
	n, used, taken int
	// claiming is closed when the claim under way (reserve) settles; nil
	// when there is none.
	claiming chan struct{}
	// freed receives a value when a slot is given back.
	freed chan struct{}
	// starts are the executions this executor created queued, oldest
	// first, for it to run when a slot frees (StartClaimer): at most
	// maxQueuedStarts, their inputs startBytes in all, at most
	// maxQueuedBytes.
	starts     []*queuedStart
	startBytes int
}

// queuedStart is an execution Run created and queued, as Run would have
// run it.
type queuedStart struct {
	m         *states.Machine
	e         *Execution
	reg       *agents.Registry
	inputSize int // as Run measured it for the run (0: no limit)
	bytes     int // the input's size, for maxQueuedBytes
}

// startsLooked is how many of its queued starts, oldest first, an executor
// offers ClaimStarts at once: enough to look past the ones other
// processes claimed meanwhile.
const startsLooked = 64

// claimEvery is how often, in rounds of claims for free slots, a server
// that fills them with the starts it queued itself claims from all there
// is to run first (see serveClaims): the first round, and one in
// claimEvery after it.
const claimEvery = 8

// Bounds of the queued starts an executor remembers, in number and in the
// bytes of their inputs (up to 256 KiB each by default); the ones past
// them are left to Claim, which reads them from the store when they run.
const (
	maxQueuedStarts = 4096
	maxQueuedBytes  = 64 << 20
)

// remember keeps q for the executor to run when a slot frees, within the
// bounds.
func (s *slots) remember(q *queuedStart) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.starts) < maxQueuedStarts && s.startBytes+q.bytes <= maxQueuedBytes {
		s.starts = append(s.starts, q)
		s.startBytes += q.bytes
	}
}

// oldestStarts returns up to n of the queued starts, oldest first, without
// removing them (dropStarts does).
func (s *slots) oldestStarts(n int) []*queuedStart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.starts[:min(n, len(s.starts))])
}

// dropStarts removes the n oldest queued starts.
func (s *slots) dropStarts(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.starts[:n] {
		s.startBytes -= q.bytes
	}
	clear(s.starts[:n])
	s.starts = s.starts[n:]
}

func newSlots(n int) *slots {
	return &slots{n: n, freed: make(chan struct{}, 1)}
}

// take takes a slot if one is free. While a claim is under way, the slots
// it reserved may come back: take waits for it to settle first.
func (s *slots) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.used+s.taken < s.n {
			s.used++
			return true
		}
		if s.claiming == nil {
			return false
		}
		c := s.claiming
		s.mu.Unlock()
		<-c
		s.mu.Lock()
	}
}

// give gives a slot back.
func (s *slots) give() {
	s.mu.Lock()
	s.used--
	s.mu.Unlock()
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// reserve reserves every free slot for a claim, and returns how many;
// settle, called once the claim is done, keeps kept of them.
func (s *slots) reserve() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.n - s.used - s.taken
	if k > 0 {
		s.taken = k
		s.claiming = make(chan struct{})
	}
	return k
}

// settle ends the claim reserve started: kept of the slots it reserved
// are used (each given back once its run ends), the others free again.
func (s *slots) settle(kept int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used += kept
	s.taken = 0
	close(s.claiming)
	s.claiming = nil
}

// dispatching returns the slots of the executor when it serves a
// Dispatcher store (nil otherwise): a start or a resume then runs here
// only when a slot is free, and is left to the process that claims it
// otherwise.
func (x *Executor) dispatching() *slots {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.slots
}

// Serve runs as a worker until ctx ends: it first resumes the RUNNING
// executions a stopped process left behind, then wakes WAITING executions
// when they are due. It needs a store that implements Scheduler or
// Dispatcher. Executions it runs are cancelled when ctx ends; they stay
// resumable.
//
// On a Dispatcher store (one that several processes share), Serve claims
// its work from the store instead: up to MaxConcurrent executions at once
// (the unfinished ones no live process holds, the due ones, the ones a
// stop was requested for), whenever a slot is free and there may be work:
// at start, when the store wakes it (Dispatcher.Wakes), at every poll,
// when a WAITING execution falls due, and when a run ends after a claim
// that filled every slot. While it serves, Run and Resume on the executor
// share its slots: with none free, Run creates the execution and leaves it
// to whichever process has room (it returns it RUNNING, unrun), and runs
// it itself when a slot frees unless another process claimed it first (on
// a StartClaimer store; one claim round in claimEvery takes from all there
// is to run first); Resume leaves it likewise, and stops waiting for a
// lease another process holds (that process runs the execution). A claimed
// run that fails is held back on a RunFailureNoter store. An executor
// serves one Dispatcher store at a time.
func (x *Executor) Serve(ctx context.Context, opts ServeOptions) error {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 64
	}
	if d, ok := x.store.(Dispatcher); ok {
		return x.serveClaims(ctx, d, opts)
	}
	sched, ok := x.store.(Scheduler)
	if !ok {
		return fmt.Errorf("serve: %w (or the store cannot schedule)", ErrNotDurable)
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
	if opts.Ready != nil {
		opts.Ready()
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

// serveClaims is Serve on a Dispatcher store.
func (x *Executor) serveClaims(ctx context.Context, d Dispatcher, opts ServeOptions) error {
	s := newSlots(opts.MaxConcurrent)
	x.mu.Lock()
	if x.slots != nil {
		x.mu.Unlock()
		return errors.New("serve: the executor serves its store already")
	}
	x.slots = s
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.slots = nil
		x.mu.Unlock()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	wakes, err := d.Wakes(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		x.log.Warn("serve: no wake-ups from the store: finding work by polling only", "poll", opts.Poll, "error", err)
	}
	// run runs what a claim took in a slot of its own, and tells how it
	// ended.
	run := func(id string, f func() (*Result, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.give()
			res, err := f()
			var stopped *StoppedError
			switch {
			case errors.Is(err, ErrBusy):
				return
			case errors.As(err, &stopped):
				res, err = stopped.Result, nil
			case err != nil && ctx.Err() == nil:
				x.log.Error("run failed", "execution", id, "error", err)
			}
			if opts.OnResult != nil {
				opts.OnResult(id, res, err)
			}
		}()
	}
	launch := func(c Claimed) {
		run(c.Execution, func() (*Result, error) { return x.Resume(ctx, c.Execution, ResumeOptions{claimed: &c}) })
	}
	// launchStart runs a start this executor queued and claimed back.
	launchStart := func(q *queuedStart, c Claimed) {
		run(c.Execution, func() (*Result, error) { return x.runQueued(ctx, q, &c) })
	}
	starts, _ := d.(StartClaimer)
	// claimStarts claims up to n of the starts this executor queued that
	// are still as it left them, for launchStart.
	type claimedStart struct {
		q *queuedStart
		c Claimed
	}
	claimStarts := func(n int) []claimedStart {
		queued := s.oldestStarts(startsLooked)
		if len(queued) == 0 {
			return nil
		}
		ids := make([]string, len(queued))
		for i, q := range queued {
			ids[i] = q.e.ID
		}
		claims, err := starts.ClaimStarts(ctx, ids, n)
		if err != nil {
			// Left to Claim, here or in another process.
			if ctx.Err() == nil {
				x.log.Error("claim queued starts", "error", err)
			}
			return nil
		}
		// The starts before the last one claimed that were not claimed
		// are no longer to run here (another process claimed them, or a
		// stop was requested); with fewer than n claimed, none of them is.
		out := make([]claimedStart, 0, len(claims))
		past := 0
		for _, c := range claims {
			i := slices.IndexFunc(queued, func(q *queuedStart) bool { return q.e.ID == c.Execution })
			if i < 0 {
				// Not one of ids: a store at fault. Let it go.
				x.log.Error("claim queued starts: the store claimed an execution not asked for", "execution", c.Execution)
				c.Release()
				continue
			}
			out = append(out, claimedStart{queued[i], c})
			past = max(past, i+1)
		}
		if len(claims) < n {
			past = len(queued)
		}
		s.dropStarts(past)
		return out
	}
	// rounds counts the claims for free slots: a slot that frees runs a
	// start this executor queued first, but every claimEvery-th round the
	// oldest of all there is to run goes first (a timer due, the
	// executions of a process that died, another server's starts).
	rounds := 0
	// claim claims work for the free slots until a claim finds none or
	// they are all used; it reports whether there may be more work (every
	// slot was filled). A claim that fills only some of them claims again
	// at once: it may have skipped what concurrent claims held.
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	claim := func() bool {
		for {
			n := s.reserve()
			if n == 0 {
				return true
			}
			var local []claimedStart
			if starts != nil && rounds%claimEvery != 0 {
				local = claimStarts(n)
			}
			rounds++
			var claims []Claimed
			var err error
			if len(local) < n {
				var next time.Time
				claims, next, err = d.Claim(ctx, n-len(local), time.Now())
				if err != nil {
					if ctx.Err() == nil {
						x.log.Error("claim executions", "error", err)
					}
					claims = nil
				}
				if !next.IsZero() {
					due.Reset(time.Until(next))
				}
			}
			s.settle(len(local) + len(claims))
			for _, l := range local {
				launchStart(l.q, l.c)
			}
			for _, c := range claims {
				launch(c)
			}
			if err != nil || len(local) < n && len(claims) == 0 {
				return false
			}
			if ctx.Err() != nil || x.draining.Load() {
				return true
			}
		}
	}
	t := time.NewTicker(opts.Poll)
	defer t.Stop()
	// want is set while there may be work to claim: a store that wakes
	// its servers only while its queue is short relies on the servers
	// whose slots were all filled claiming whenever one frees.
	want := true
	ready := opts.Ready
	for {
		if want && !x.draining.Load() {
			want = claim()
		}
		if ready != nil {
			ready()
			ready = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			want = true
		case <-due.C:
			want = true
		case _, ok := <-wakes:
			if !ok {
				wakes = nil
			}
			want = true
		case <-s.freed:
		}
	}
}

func (x *Executor) isActive(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.active[id] != nil
}
