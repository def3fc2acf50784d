package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// DefaultLeaseTTL is how long a lease lasts unless renewed: a crashed
// server's executions are taken over this long after its last renewal.
const DefaultLeaseTTL = 15 * time.Second

// Lease is the right of one process (Owner) to run an execution and
// commit its steps, until Expires (by the database's clock, the one clock
// every server shares). Epoch grows by one at every takeover: every commit
// checks it (CheckFence), so a process whose lease was taken over can
// never commit again.
type Lease struct {
	Execution string
	Owner     string
	Epoch     int64
	Expires   time.Time
}

// Errors of leases.
var (
	// ErrHeld reports a lease that another owner holds and has not let
	// expire (a *HeldError says whose and until when).
	ErrHeld = errors.New("execution is leased by another process")
	// ErrFenced reports a lease that is no longer the caller's: taken over
	// by another process, released, or never taken (a *FencedError says
	// which). A commit that gets it must not be retried.
	ErrFenced = errors.New("lease lost")
)

// HeldError is the error of Acquire when the execution's lease is held.
type HeldError struct {
	// Holder is the lease as it stands.
	Holder Lease
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("execution %s is leased by %s (epoch %d) until %s",
		e.Holder.Execution, e.Holder.Owner, e.Holder.Epoch, e.Holder.Expires.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrHeld) true, and errors.Is(err,
// engine.ErrBusy): the execution is busy in another process.
func (e *HeldError) Is(target error) bool { return target == ErrHeld || target == engine.ErrBusy }

// FencedError is the error of a lease operation or a fence check whose
// lease (Execution, Epoch) is no longer current.
type FencedError struct {
	Execution string
	Epoch     int64
	// Current is the lease as it stands: Owner "" when it was released,
	// Epoch 0 when the execution has no lease at all.
	Current Lease
}

func (e *FencedError) Error() string {
	switch {
	case e.Current.Epoch == 0:
		return fmt.Sprintf("execution %s: lease epoch %d is fenced off: the execution has no lease", e.Execution, e.Epoch)
	case e.Current.Epoch != e.Epoch:
		owner := e.Current.Owner
		if owner == "" {
			owner = "a process that has released it since"
		}
		return fmt.Sprintf("execution %s: lease epoch %d is fenced off: the lease was taken over by %s (epoch %d)", e.Execution, e.Epoch, owner, e.Current.Epoch)
	case e.Current.Owner == "":
		return fmt.Sprintf("execution %s: lease epoch %d is fenced off: the lease was released", e.Execution, e.Epoch)
	}
	return fmt.Sprintf("execution %s: lease epoch %d is fenced off: it is held by %s", e.Execution, e.Epoch, e.Current.Owner)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// leaseTTL checks ttl: 0 means DefaultLeaseTTL.
func leaseTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return DefaultLeaseTTL, nil
	case ttl < time.Millisecond:
		return 0, fmt.Errorf("lease ttl %v: want at least 1ms (0 for the default, %v)", ttl, DefaultLeaseTTL)
	}
	return ttl, nil
}

// acquireLease takes the lease when there is none, or when it has expired
// or was released, raising the epoch. Concurrent acquirers are ordered by
// the row (or the primary key's index entry): the second sees the first's
// lease, live, and gets no row.
// The execution's row in the ready queue, if any, goes with it: the holder
// queues it again when it releases it with work left.
const acquireLease = `WITH a AS (
  INSERT INTO leases AS l (execution, owner, epoch, acquired_at, expires_at)
  VALUES ($1, $2, 1, clock_timestamp(), clock_timestamp() + $3 * interval '1 microsecond')
  ON CONFLICT (execution) DO UPDATE
     SET owner = EXCLUDED.owner, epoch = l.epoch + 1, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
   WHERE l.owner = '' OR l.expires_at <= clock_timestamp()
  RETURNING epoch, expires_at
), dequeued AS (
  DELETE FROM ready WHERE execution = $1 AND EXISTS (SELECT 1 FROM a)
)
SELECT epoch, expires_at, EXISTS (SELECT 1 FROM stop_requests s WHERE s.execution = $1) FROM a`

// Acquire takes the lease of an execution for owner, for ttl (0 means
// DefaultLeaseTTL), when nobody holds it: never leased, released, or
// expired. Otherwise it fails with a *HeldError (ErrHeld), the holder
// itself included: a holder renews. Of concurrent acquirers, one wins.
func (db *DB) Acquire(ctx context.Context, execution, owner string, ttl time.Duration) (Lease, error) {
	ttl, err := leaseTTL(ttl)
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("acquiring execution %s: %w", execution, err)
	case execution == "":
		return Lease{}, errors.New("acquiring a lease: no execution id")
	case owner == "":
		return Lease{}, fmt.Errorf("acquiring execution %s: no owner", execution)
	}
	l, _, err := db.acquire(ctx, execution, owner, ttl)
	return l, err
}

// acquire is Acquire, which also reports whether a stop is requested for
// the execution (RequestStop).
func (db *DB) acquire(ctx context.Context, execution, owner string, ttl time.Duration) (Lease, bool, error) {
	for attempt := 0; ; attempt++ {
		l := Lease{Execution: execution, Owner: owner}
		var stop bool
		err := db.pool.QueryRow(ctx, acquireLease, execution, owner, ttl.Microseconds()).Scan(&l.Epoch, &l.Expires, &stop)
		if err == nil {
			return l, stop, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Lease{}, false, fmt.Errorf("database %s: acquiring execution %s: %w", db.url, execution, err)
		}
		cur, err := db.currentLease(ctx, db.pool, execution)
		if err != nil {
			return Lease{}, false, err
		}
		// Released between the two statements: try again, a few times.
		if cur.Owner != "" || attempt == 2 {
			return Lease{}, false, &HeldError{Holder: cur}
		}
	}
}

// currentLease reads an execution's lease; Epoch 0 when it has none.
func (db *DB) currentLease(ctx context.Context, q querier, execution string) (Lease, error) {
	l := Lease{Execution: execution}
	err := q.QueryRow(ctx, `SELECT owner, epoch, expires_at FROM leases WHERE execution = $1`, execution).Scan(&l.Owner, &l.Epoch, &l.Expires)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, fmt.Errorf("database %s: reading the lease of execution %s: %w", db.url, execution, err)
	}
	return l, nil
}

// fenced returns the *FencedError of lease l, reading the lease as it
// stands.
func (db *DB) fenced(ctx context.Context, q querier, execution string, epoch int64) error {
	cur, err := db.currentLease(ctx, q, execution)
	if err != nil {
		return err
	}
	return &FencedError{Execution: execution, Epoch: epoch, Current: cur}
}

// Renew extends l by ttl (0 means DefaultLeaseTTL) from now and returns it
// with its new expiry. A lease that expired is renewed as long as nobody
// took it over; one that was taken over (or released) fails with a
// *FencedError (ErrFenced).
func (db *DB) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	ttl, err := leaseTTL(ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("renewing execution %s: %w", l.Execution, err)
	}
	l, _, err = db.renew(ctx, l, ttl)
	return l, err
}

// renew is Renew, which also reports whether a stop is requested for the
// execution (RequestStop).
func (db *DB) renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, bool, error) {
	var stop bool
	err := db.pool.QueryRow(ctx, `UPDATE leases SET expires_at = clock_timestamp() + $4 * interval '1 microsecond'
WHERE execution = $1 AND owner = $2 AND epoch = $3
RETURNING expires_at, EXISTS (SELECT 1 FROM stop_requests s WHERE s.execution = $1)`, l.Execution, l.Owner, l.Epoch, ttl.Microseconds()).Scan(&l.Expires, &stop)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, false, db.fenced(ctx, db.pool, l.Execution, l.Epoch)
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("database %s: renewing execution %s: %w", db.url, l.Execution, err)
	}
	return l, stop, nil
}

// Release gives l up, so that another process may acquire it at once. The
// row stays, without an owner, so that epochs keep growing. Releasing a
// lease that was taken over fails with a *FencedError (ErrFenced).
func (db *DB) Release(ctx context.Context, l Lease) error {
	return db.release(ctx, l, false, true)
}

// releaseLease gives the lease $2 of owner $3 and epoch $4 up, in one
// statement. An execution left RUNNING is queued (ready) for a process to
// claim. With $5, the processes serving the database are woken (Wakes)
// when the execution has work left: RUNNING, due at $6, or with a stop
// requested. Without $7, a RUNNING execution is not queued (its run
// failed: the sweep queues it later). It returns whether the lease was
// released. The queueing is an
// upsert, not an insert that does nothing on a conflict: a claim that read
// the execution's ready row (held then) and deletes it has the row locked,
// and the upsert waits for that claim, then queues the execution again.
const releaseLease = `WITH rel AS (
  UPDATE leases SET owner = '', expires_at = clock_timestamp()
  WHERE execution = $2 AND owner = $3 AND epoch = $4
  RETURNING execution
), work AS (
  SELECT e.id, e.status, e.started_ns FROM executions e
  WHERE e.id IN (SELECT execution FROM rel) AND e.status IN ('RUNNING', 'WAITING')
    AND (e.status = 'RUNNING' OR e.wake_ns <= $6 OR EXISTS (SELECT 1 FROM stop_requests s WHERE s.execution = e.id))
), queued AS (
  INSERT INTO ready (execution, since) SELECT id, started_ns FROM work WHERE status = 'RUNNING' AND $7
  ON CONFLICT (execution) DO UPDATE SET since = EXCLUDED.since
)
SELECT EXISTS (SELECT 1 FROM rel), (SELECT count(*) FROM (SELECT pg_notify($1, id) FROM work WHERE $5) n)`

// release is Release; with wake, the release also wakes the processes
// serving the database (Wakes) when the execution has work left, in the
// same transaction; without queue, it leaves a RUNNING execution out of
// the ready queue.
func (db *DB) release(ctx context.Context, l Lease, wake, queue bool) error {
	var released bool
	var woken int64
	err := db.pool.QueryRow(ctx, releaseLease, db.wakeCh, l.Execution, l.Owner, l.Epoch, wake, store.TimeKey(time.Now()), queue).Scan(&released, &woken)
	if err != nil {
		return fmt.Errorf("database %s: releasing execution %s: %w", db.url, l.Execution, err)
	}
	if !released {
		return db.fenced(ctx, db.pool, l.Execution, l.Epoch)
	}
	return nil
}

// CheckFence checks, inside tx, that epoch is still the current epoch of
// the execution's lease, and keeps it so until tx ends: the lease row is
// locked FOR SHARE, so a takeover waits for tx, and a tx that comes after
// a takeover fails with a *FencedError (ErrFenced). A commit calls it
// before it writes anything and rolls back on its error.
//
// The lease's expiry is not checked: a lease that expired and was not
// taken over is still the only one, and nobody else can have committed
// since. FOR SHARE is enough: Renew and Acquire update the row, so they
// wait; the holder's own commits, which only read it, do not.
func CheckFence(ctx context.Context, tx pgx.Tx, execution string, epoch int64) error {
	return fence(tx.QueryRow(ctx, fenceQuery, execution), execution, epoch)
}

// QueueFence queues CheckFence's check first in b, a batch a commit sends
// inside its transaction, saving the check's round trip: the check locks
// the lease row before the batch's writes run, and its failure (a
// *FencedError) is the batch's error, after which the commit must roll
// back. Queue it before anything else.
func QueueFence(b *pgx.Batch, execution string, epoch int64) {
	b.Queue(fenceQuery, execution).QueryRow(func(row pgx.Row) error { return fence(row, execution, epoch) })
}

// fenceQuery reads and locks an execution's lease for a commit.
const fenceQuery = `SELECT owner, epoch FROM leases WHERE execution = $1 FOR SHARE`

// fence checks the lease row of fenceQuery against epoch.
func fence(row pgx.Row, execution string, epoch int64) error {
	var owner string
	var cur int64
	err := row.Scan(&owner, &cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &FencedError{Execution: execution, Epoch: epoch}
	case err != nil:
		return fmt.Errorf("checking the lease of execution %s: %w", execution, err)
	case cur != epoch || owner == "":
		return &FencedError{Execution: execution, Epoch: epoch, Current: Lease{Execution: execution, Owner: owner, Epoch: cur}}
	}
	return nil
}

// Renewer keeps a lease renewed in a goroutine of its own. It is safe for
// concurrent use.
type Renewer struct {
	db   *DB
	ttl  time.Duration
	lost chan error
	stop context.CancelFunc
	done chan struct{}
	// poke asks the renewer to look for a stop request now; stopSent is
	// set once one was delivered (by the renewer's goroutine only, after
	// it starts).
	poke     chan struct{}
	stopSent bool
	// ended is set once the commit that ended the execution released the
	// lease (noteEnded): nothing is left to renew.
	ended atomic.Bool

	mu    sync.Mutex
	lease Lease
}

// KeepRenewed renews l every ttl/3 (ttl 0 means DefaultLeaseTTL) until
// Stop is called, ctx ends, or the lease is lost. A renewal that fails for
// another reason than a takeover (a lost connection, a slow server) is
// logged (Options.Logger, with the execution and the error) and tried
// again at the next tick: two may fail in a row before the lease
// expires, and even then it is lost only if another process takes it over,
// which the next renewal reports and every commit's fence refuses.
//
// A stop requested for the execution (RequestStop) is delivered on Lost
// too, once, as an *engine.StopRequest, without stopping the renewer: it
// is looked for at each renewal, and at once when the process hears of it
// (Wakes).
func (db *DB) KeepRenewed(ctx context.Context, l Lease, ttl time.Duration) (*Renewer, error) {
	return db.keepRenewed(ctx, l, ttl, nil)
}

// keepRenewed is KeepRenewed, delivering stop first when it is not nil
// (a stop request found when the lease was taken).
func (db *DB) keepRenewed(ctx context.Context, l Lease, ttl time.Duration, stop *engine.StopRequest) (*Renewer, error) {
	ttl, err := leaseTTL(ttl)
	if err != nil {
		return nil, fmt.Errorf("renewing execution %s: %w", l.Execution, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	// Room for a stop request and a loss: sends never block.
	r := &Renewer{db: db, ttl: ttl, lost: make(chan error, 2), stop: cancel, done: make(chan struct{}), poke: make(chan struct{}, 1), lease: l}
	if stop != nil {
		r.lost <- stop
		r.stopSent = true
	}
	go r.loop(ctx)
	return r, nil
}

func (r *Renewer) loop(ctx context.Context) {
	defer close(r.done)
	defer close(r.lost)
	tick := time.NewTicker(r.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.poke:
			r.deliverStop(ctx)
			continue
		case <-tick.C:
		}
		if r.ended.Load() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, r.ttl/3)
		l0 := r.Lease()
		l, stop, err := r.db.renew(rctx, l0, r.ttl)
		cancel()
		switch {
		case r.ended.Load():
			// Released by the commit that ended the execution meanwhile.
		case err == nil:
			r.mu.Lock()
			r.lease = l
			r.mu.Unlock()
			if stop {
				r.deliverStop(ctx)
			}
		case errors.Is(err, ErrFenced):
			r.lost <- err
			return
		case ctx.Err() != nil:
			// Stopped while renewing: the error is the stop's.
			return
		default:
			// Tried again at the next tick; the lease is lost only if
			// another process takes it over meanwhile.
			r.db.log.Warn("renewing a lease failed; trying again at the next renewal",
				"execution", l0.Execution, "epoch", l0.Epoch, "expires", l0.Expires, "error", err)
		}
	}
}

// deliverStop delivers the execution's stop request on lost, once, if it
// has one. A read that fails is tried again at the next renewal.
func (r *Renewer) deliverStop(ctx context.Context) {
	if r.stopSent {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, r.ttl/3)
	defer cancel()
	stop, err := r.db.stopRequest(rctx, r.Lease().Execution)
	switch {
	case err == nil && stop != nil:
		r.lost <- stop
		r.stopSent = true
	case err != nil && ctx.Err() == nil:
		r.db.log.Warn("reading a lease's stop request failed; trying again at the next renewal",
			"execution", r.Lease().Execution, "error", err)
	}
}

// pokeStop asks the renewer to look for a stop request now.
func (r *Renewer) pokeStop() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Lease returns the lease as last renewed.
func (r *Renewer) Lease() Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// Lost is closed when the renewer stops; when it stopped because the
// lease was lost, it first delivers the *FencedError that said so.
func (r *Renewer) Lost() <-chan error { return r.lost }

// Stop stops renewing and waits for the goroutine to end. It does not
// release the lease. It may be called more than once.
func (r *Renewer) Stop() {
	r.stop()
	<-r.done
}

// defaultOwner names this process: host name, process id and a random
// suffix (a process id is reused after a restart, a lease must not be).
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Owner returns the name this process takes leases under
// (Options.LeaseOwner).
func (db *DB) Owner() string { return db.owner }

// releaseTimeout bounds giving a lease up, on a context of its own (the
// run's has ended by then).
const releaseTimeout = 5 * time.Second

// leasePoll returns how often Lease tries again while another process
// holds the lease: a tenth of the ttl, between 10 ms and a second.
func leasePoll(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 10*time.Millisecond), time.Second)
}

// Lease makes DB an engine.Leaser: it acquires the execution's lease for
// this process (Options.LeaseOwner, Options.LeaseTTL), trying again while
// another process holds it, until ctx ends, when wait is set (else failing
// with a *HeldError, which is also an engine.ErrBusy); then it fences the
// execution's commits with it (Fence) and keeps it renewed (KeepRenewed)
// until release, which releases it and lifts the fence. When a renewal
// finds it taken over, lost receives the *FencedError; the fence stays,
// so that the commits still in flight are refused. A stop requested for
// the execution (RequestStop) is delivered on lost as an
// *engine.StopRequest: before Lease returns when it was requested before.
// When the process wrote commits under the lease, the last of them
// succeeded, and the execution has work left (RUNNING, due, or a stop
// requested), release wakes the processes serving the database (Wakes),
// in the release's own transaction: a decision recorded and left to any
// server, a server that drained.
func (db *DB) Lease(ctx context.Context, execution string, wait bool) (lost <-chan error, release func(), err error) {
	if err := db.check(ctx); err != nil {
		return nil, nil, err
	}
	var l Lease
	var stop bool
	var held error
	for {
		l, stop, err = db.acquire(ctx, execution, db.owner, db.leaseTTL)
		if err == nil {
			break
		}
		if held != nil && ctx.Err() != nil {
			// ctx ended while asking again: still held, as far as known.
			return nil, nil, fmt.Errorf("%w: %w", held, context.Cause(ctx))
		}
		if !errors.Is(err, ErrHeld) || !wait {
			return nil, nil, err
		}
		held = err
		t := time.NewTimer(leasePoll(db.leaseTTL))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("%w: %w", err, context.Cause(ctx))
		case <-t.C:
		}
	}
	var req *engine.StopRequest
	if stop {
		if req, err = db.stopRequest(ctx, execution); err != nil {
			_ = db.Release(context.WithoutCancel(ctx), l)
			return nil, nil, err
		}
	}
	return db.holdLease(ctx, l, req, nil)
}

// heldLease is a lease this process holds through Lease or Claim.
type heldLease struct {
	r *Renewer
	// wrote is set once a commit under the lease was written, and failed
	// while the last commit failed.
	wrote, failed bool
	// read is the execution as the claim that took the lease read it,
	// until its first Load (claimedLoad) or a commit.
	read *claimedRead
	// released is set once the commit that ended the execution released
	// the lease in its transaction (noteEnded): releasing it costs no
	// round trip then.
	released bool
	// runFailed is set when the run under the lease failed (RunFailed):
	// the release neither queues the execution nor wakes anyone.
	runFailed bool
}

// holdLease fences the execution's commits with l, keeps l renewed, and
// returns what Lease returns; stop, when not nil, is delivered on lost
// first.
func (db *DB) holdLease(ctx context.Context, l Lease, stop *engine.StopRequest, read *claimedRead) (lost <-chan error, release func(), err error) {
	db.Fence(l)
	// Renewals outlive the context the lease was asked for in: release
	// stops them.
	r, err := db.keepRenewed(context.WithoutCancel(ctx), l, db.leaseTTL, stop)
	if err != nil {
		db.Unfence(l.Execution)
		return nil, nil, err
	}
	h := &heldLease{r: r, read: read}
	db.fenceMu.Lock()
	if db.held == nil {
		db.held = make(map[string]*heldLease)
	}
	db.held[l.Execution] = h
	db.fenceMu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			r.Stop()
			db.fenceMu.Lock()
			wake := h.wrote && !h.failed && !h.runFailed
			queue := !h.runFailed
			released := h.released
			if db.held[l.Execution] == h {
				delete(db.held, l.Execution)
			}
			db.fenceMu.Unlock()
			if !released {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
				defer cancel()
				// A lease taken over needs no releasing; one that cannot
				// be released (the database is away) expires.
				_ = db.release(rctx, r.Lease(), wake, queue)
			}
			db.Unfence(l.Execution)
		})
	}
	return r.Lost(), release, nil
}

// releasesAtEnd reports whether the commit that ends execution is to
// release its lease in the same transaction: when this process holds it
// through Lease or Claim, whose release then has nothing left to do.
func (db *DB) releasesAtEnd(execution string) bool {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	return db.held[execution] != nil
}

// noteEnded records that the commit that ended execution released its
// lease (releasesAtEnd).
func (db *DB) noteEnded(execution string) {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	if h := db.held[execution]; h != nil {
		h.released = true
		h.r.ended.Store(true)
	}
}

// RunFailed makes DB an engine.RunFailureNoter: the release of the lease
// this process holds of execution will leave it out of the ready queue and
// wake nobody, unless err is the database's way of saying "not now" (a
// lost connection, a conflict, a lack of resources). A run that fails on
// its own (a definition that no longer parses, history that fails its
// checks, data the database refuses) would fail the same way at once
// wherever it is claimed: the sweep (sweepEvery) queues it again.
func (db *DB) RunFailed(execution string, err error) {
	if passing(err) {
		return
	}
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	if h := db.held[execution]; h != nil {
		h.runFailed = true
	}
}

// passing reports whether err is a failure of the database that another
// try may not meet: an error of the connection (no SQLSTATE), or one whose
// SQLSTATE class says so (08 connection, 40 transaction rollback, 53
// insufficient resources, 57 operator intervention, 58 system error), or
// aslrun's own refusals of a commit (AR: a lease lost, a head changed,
// which the next claim reads afresh). The other classes (22 data, 23
// integrity, 42 a statement the schema refuses, …) fail again, and so does
// 57014 (query_canceled) of class 57: a statement cancelled by the
// statement timeout is too slow for it, and a commit that timed out once
// times out again when tried at once.
func passing(err error) bool {
	var de *dbError
	if !errors.As(err, &de) {
		return false
	}
	code := sqlState(err)
	if len(code) < 2 {
		return true
	}
	if code == codeQueryCanceled {
		return false
	}
	switch code[:2] {
	case "08", "40", "53", "57", "58", "AR":
		return true
	}
	return false
}

// codeQueryCanceled is PostgreSQL's query_canceled: a statement cancelled
// by statement_timeout (or by a cancel request, which aslrun sends only
// when the statement's context ended).
const codeQueryCanceled = "57014"

// noteCommit records the outcome of a commit of an execution whose lease
// this process holds (Lease, Claim).
func (db *DB) noteCommit(execution string, ok bool) {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	if h := db.held[execution]; h != nil {
		h.wrote = h.wrote || ok
		h.failed = !ok
		h.read = nil
	}
}
