package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Dispatch: the servers sharing a database hand work to each other
// through it. An execution with something to run that no live process
// holds (started and left for any server, left RUNNING by a server that
// died or drained, due, or with a stop requested) is claimed by a server
// with free slots (Claim), which takes its lease in the same statement;
// the transactions that leave such work notify WakeChannel, which the
// servers hear (Wakes) and claim at once. Polling stays the fallback.

var (
	_ engine.Dispatcher      = (*DB)(nil)
	_ engine.StopRequester   = (*DB)(nil)
	_ engine.RunFailureNoter = (*DB)(nil)
)

// claimQuery takes the leases of up to $2 executions with something to
// run at $1 (Unix ns) for owner $3, for $4 microseconds, oldest first:
// aslrun_claim (migration 0004) says how.
const claimQuery = `SELECT execution, epoch, expires_at, stop, stop_error, stop_cause,
  spec, head, commit_seq, definition, scope_keys, scope_bodies, namespaces
FROM aslrun_claim($1, $2, $3, $4)`

// sweepQuery queues the RUNNING executions that no process holds and
// that are not queued: a backstop, run by Claim every sweepEvery, for an
// execution left so by a path that did not queue it (an earlier aslrun, a
// race between a release and a claim).
const sweepQuery = `INSERT INTO ready (execution, since)
SELECT e.id, e.started_ns FROM executions e
WHERE e.status = 'RUNNING'
  AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.execution = e.id AND l.owner <> '')
ON CONFLICT (execution) DO NOTHING`

// sweepEvery is how often Claim runs sweepQuery.
const sweepEvery = 30 * time.Second

// nextDueQuery is when the earliest WAITING execution not due at $1 falls
// due.
const nextDueQuery = `SELECT min(wake_ns) FROM executions WHERE status = 'WAITING' AND wake_ns > $1`

// Claim makes DB an engine.Dispatcher: it takes, in one statement, the
// leases of up to n executions that have something to run at now and
// that no live process holds (RUNNING, WAITING and due, or with a stop
// requested), for this process, oldest first, and holds each as Lease
// does (fenced, renewed, its stop request delivered on Lost at once),
// until its Release. next is when the earliest WAITING execution not due
// at now falls due (zero when none does). Both are read in one round trip.
func (db *DB) Claim(ctx context.Context, n int, now time.Time) (claims []engine.Claimed, next time.Time, err error) {
	if err = db.check(ctx); err != nil {
		return nil, time.Time{}, err
	}
	if n < 1 {
		return nil, time.Time{}, fmt.Errorf("claiming %d executions: want at least 1", n)
	}
	at := store.TimeKey(now)
	b := &pgx.Batch{}
	sweep := db.sweepDue(now)
	if sweep {
		b.Queue(sweepQuery)
	}
	b.Queue(claimQuery, at, n, db.owner, db.leaseTTL.Microseconds())
	b.Queue(nextDueQuery, at)
	br := db.pool.SendBatch(ctx, b)
	type claimed struct {
		l    Lease
		stop *engine.StopRequest
		read *claimedRead
	}
	var got []claimed
	var sweepErr error
	if sweep {
		_, sweepErr = br.Exec()
	}
	rows, err := br.Query()
	if err == nil && sweepErr != nil {
		rows.Close()
		err = sweepErr
	}
	if err == nil {
		for rows.Next() {
			var c claimed
			var stop bool
			var errName, cause string
			c.l.Owner = db.owner
			var r claimedRead
			var seq *int64
			if err = rows.Scan(&c.l.Execution, &c.l.Epoch, &c.l.Expires, &stop, &errName, &cause,
				&r.spec, &r.head, &seq, &r.def, &r.keys, &r.values, &r.namespaces); err != nil {
				break
			}
			if seq != nil && r.spec != nil && r.head != nil && len(r.keys) == len(r.values) {
				r.seq = *seq
				c.read = &r
			}
			if stop {
				c.stop = &engine.StopRequest{Execution: c.l.Execution, ErrName: errName, Cause: cause}
			}
			got = append(got, c)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	var due *int64
	if err == nil {
		err = br.QueryRow().Scan(&due)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The claim may have been written before its answer was lost: the
		// leases it took expire, and their executions are claimed again.
		return nil, time.Time{}, db.dbErr("claiming executions", err)
	}
	for _, c := range got {
		if c.read != nil {
			// What the execution's Load and first commit would read.
			db.rec.Forget(c.l.Execution)
			db.heads.put(c.l.Execution, cachedHead{head: c.read.head, seq: c.read.seq})
		}
		lost, release, err := db.holdLease(ctx, c.l, c.stop, c.read)
		if err != nil {
			for _, done := range claims {
				done.Release()
			}
			return nil, time.Time{}, err
		}
		claims = append(claims, engine.Claimed{Execution: c.l.Execution, Lost: lost, Release: release})
	}
	if due != nil {
		next = time.Unix(0, *due)
	}
	return claims, next, nil
}

// claimedRead is an execution as the claim that took its lease read it,
// for its first Load (Claim).
type claimedRead struct {
	spec, head, def []byte
	seq             int64
	keys            []string
	values          [][]byte
	namespaces      []string
}

// claimedLoad returns, once, the execution this process claimed as the
// claim read it (nil when there is none): while the lease is held nothing
// else commits to it, so that is how it stands until this process commits.
func (db *DB) claimedLoad(id string) *claimedRead {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	h := db.held[id]
	if h == nil || h.read == nil {
		return nil
	}
	r := h.read
	h.read = nil
	return r
}

// sweepDue reports whether the claim at now runs sweepQuery (one every
// sweepEvery, the first sweepEvery after the first claim: the migration
// that made the queue queued what there was), and notes that it does. A
// sweep that runs beside a claim may queue an execution the claim just
// took (it read the lease before the claim committed); the next claim
// that reads that row removes it, so sweeps stay rare.
func (db *DB) sweepDue(now time.Time) bool {
	db.sweptMu.Lock()
	defer db.sweptMu.Unlock()
	switch {
	case db.swept.IsZero():
		db.swept = now
		return false
	case now.Sub(db.swept) < sweepEvery:
		return false
	}
	db.swept = now
	return true
}

// Wakes makes DB an engine.Dispatcher: it listens (a Notifier) on
// WakeChannel and StopChannel until ctx ends. A wake, or word that some
// may have been missed (a reconnection), is delivered on the channel it
// returns, coalesced; a stop is passed to the lease this process holds of
// the execution, if any, which delivers the request on its lost channel
// (after a reconnection, every lease held is checked).
func (db *DB) Wakes(ctx context.Context) (<-chan struct{}, error) {
	n, err := db.Listen(ctx, db.wakeCh, db.stopCh)
	if err != nil {
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		signal := func() {
			select {
			case out <- struct{}{}:
			default:
			}
		}
		for w := range n.C() {
			switch {
			case w.Missed:
				db.pokeStops(ctx)
				signal()
			case w.Channel == db.stopCh:
				db.pokeStop(w.Execution)
			default:
				signal()
			}
		}
	}()
	return out, nil
}

// pokeStop has the lease this process holds of execution, if any, look
// for its stop request now.
func (db *DB) pokeStop(execution string) {
	db.fenceMu.Lock()
	h := db.held[execution]
	db.fenceMu.Unlock()
	if h != nil {
		h.r.pokeStop()
	}
}

// pokeStops has every lease this process holds whose execution has a stop
// request look for it now.
func (db *DB) pokeStops(ctx context.Context) {
	db.fenceMu.Lock()
	ids := make([]string, 0, len(db.held))
	for id := range db.held {
		ids = append(ids, id)
	}
	db.fenceMu.Unlock()
	if len(ids) == 0 {
		return
	}
	stopped, err := db.ids(ctx, "finding stop requests", `SELECT execution FROM stop_requests WHERE execution = ANY($1::text[])`, ids)
	if err != nil {
		// The renewals look too.
		return
	}
	for _, id := range stopped {
		db.pokeStop(id)
	}
}

// requestStop records a stop request of an execution that is RUNNING or
// WAITING (its row locked, so that a commit ending it meanwhile is seen,
// and removes no request written after it), and returns the execution's
// status ("" when there is no such execution).
const requestStop = `WITH e AS (SELECT id, status FROM executions WHERE id = $1 FOR SHARE),
ins AS (
  INSERT INTO stop_requests (execution, error, cause) SELECT id, $2, $3 FROM e WHERE status IN ('RUNNING', 'WAITING')
  ON CONFLICT (execution) DO UPDATE SET error = EXCLUDED.error, cause = EXCLUDED.cause, requested_at = now()
  RETURNING execution)
SELECT coalesce((SELECT status FROM e), ''), EXISTS (SELECT 1 FROM ins)`

// RequestStop makes DB an engine.StopRequester: it records that execution
// is to be stopped with errName and cause, replacing an earlier request,
// and notifies StopChannel in the same transaction. The process holding
// the execution's lease hears it at once when it listens (Wakes), else at
// its next renewal; a later lease of the execution gets it when taken
// (Lease, Claim). The commit that ends the execution removes it. It fails
// with engine.ErrNotFound when there is no such execution and
// engine.ErrEnded when it has ended.
func (db *DB) RequestStop(ctx context.Context, execution, errName, cause string) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	if !storable(execution) {
		return fmt.Errorf("execution %s: %w", execution, engine.ErrNotFound)
	}
	if !storable(errName) || !storable(cause) {
		return fmt.Errorf("execution %s: stop: the error and cause must be UTF-8 text without NUL", execution)
	}
	b := &pgx.Batch{}
	var status string
	var recorded bool
	b.Queue(requestStop, execution, errName, cause).QueryRow(func(row pgx.Row) error { return row.Scan(&status, &recorded) })
	b.Queue(`SELECT pg_notify($1, execution) FROM stop_requests WHERE execution = $2`, db.stopCh, execution)
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return db.dbErr("requesting a stop of execution "+execution, err)
	}
	switch {
	case status == "":
		return fmt.Errorf("execution %s: %w", execution, engine.ErrNotFound)
	case !recorded:
		return fmt.Errorf("execution %s: %w (%s)", execution, engine.ErrEnded, status)
	}
	return nil
}

// stopRequest reads the stop request of an execution; nil when it has
// none.
func (db *DB) stopRequest(ctx context.Context, execution string) (*engine.StopRequest, error) {
	s := &engine.StopRequest{Execution: execution}
	err := db.pool.QueryRow(ctx, `SELECT error, cause FROM stop_requests WHERE execution = $1`, execution).Scan(&s.ErrName, &s.Cause)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, db.dbErr("reading the stop request of execution "+execution, err)
	}
	return s, nil
}
