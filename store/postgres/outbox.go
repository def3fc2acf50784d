package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// The outbox (engine.OutboxStore), in table outbox (migration 0007). A
// commit's entries are inserted by its batch, in its transaction
// (queueOutbox); a claim locks the deliveries it takes FOR UPDATE SKIP
// LOCKED, so that servers claiming at once never take the same delivery
// nor wait for each other. Retention is package store's: a DELIVERED
// entry is deleted once store.DeliveredRetention has passed since its
// delivery, by the claims and finishes that follow (at most pruneLimit a
// statement); PENDING and FAILED entries are never deleted.

var _ engine.OutboxStore = (*DB)(nil)

// pruneLimit bounds the delivered entries one statement prunes.
const pruneLimit = 256

// The outbox's statements.
const (
	insertOutbox = `INSERT INTO outbox (id, execution, channel, url, secret_env, type, body, created_ns, next_ns)
SELECT i, e, c, u, s, t, b, n, n FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::bigint[]) AS x(i, e, c, u, s, t, b, n)`

	deliveryColumns = `id, execution, channel, url, secret_env, type, body, created_ns, status, attempts, last_error, next_ns, delivered_ns, owner, lease_ns`

	// claimOutbox leases to $1 until $2 up to $4 deliveries due at $3.
	claimOutbox = `UPDATE outbox o SET owner = $1, lease_ns = $2, attempts = o.attempts + 1
FROM (SELECT id FROM outbox WHERE status = 'PENDING' AND next_ns <= $3 AND (owner = '' OR lease_ns <= $3)
      ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED) c
WHERE o.id = c.id
RETURNING o.id, o.execution, o.channel, o.url, o.secret_env, o.type, o.body, o.created_ns, o.status, o.attempts, o.last_error, o.next_ns, o.delivered_ns, o.owner, o.lease_ns`

	// pruneOutbox deletes the deliveries delivered at or before $1.
	pruneOutbox = `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE status = 'DELIVERED' AND delivered_ns <= $1
ORDER BY delivered_ns LIMIT $2)`

	// finishOutbox records the attempt of $2 on $1: delivered at $3 ($4
	// NULL), or failed with $4, pending again at $5 or parked ($6).
	finishOutbox = `UPDATE outbox SET owner = '', lease_ns = NULL,
  status = CASE WHEN $4::text IS NULL THEN 'DELIVERED' WHEN $6 THEN 'FAILED' ELSE 'PENDING' END,
  delivered_ns = CASE WHEN $4::text IS NULL THEN $3::bigint END,
  last_error = coalesce($4::text, ''),
  next_ns = CASE WHEN $4::text IS NOT NULL AND NOT $6 THEN $5::bigint END
WHERE id = $1 AND owner = $2 AND status = 'PENDING'`

	retryOutbox = `UPDATE outbox SET status = 'PENDING', next_ns = $2 WHERE id = $1 AND status = 'FAILED'`
)

// queueOutbox queues in b the statement that inserts a commit's outbox
// entries (none when it has none).
func queueOutbox(b *pgx.Batch, es []engine.OutboxEntry) {
	if len(es) == 0 {
		return
	}
	n := len(es)
	ids, execs, chans, urls, secrets, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	bodies, created := make([][]byte, n), make([]int64, n)
	for i, e := range es {
		ids[i], execs[i], chans[i], urls[i], secrets[i], types[i] = e.ID, e.Execution, e.Channel, e.URL, e.SecretEnv, e.Type
		bodies[i], created[i] = e.Body, store.TimeKey(e.CreatedAt)
	}
	b.Queue(insertOutbox, ids, execs, chans, urls, secrets, types, bodies, created)
}

// outboxConflict returns the error of a commit refused because one of its
// outbox entries' id is taken (nil for another error).
func outboxConflict(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "outbox_pkey" {
		return fmt.Errorf("outbox entry: %s: %w", pe.Detail, engine.ErrExists)
	}
	return nil
}

// ClaimDeliveries leases to owner, until now+lease, up to n pending
// deliveries due at now, oldest first, whose lease is free or ran out,
// counting an attempt on each: one statement, whose candidates are locked
// FOR UPDATE SKIP LOCKED.
func (db *DB) ClaimDeliveries(ctx context.Context, owner string, n int, now time.Time, lease time.Duration) ([]engine.Delivery, error) {
	if err := store.CheckClaim(owner, n, lease); err != nil {
		return nil, err
	}
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	b.Queue(claimOutbox, owner, store.TimeKey(now.Add(lease)), store.TimeKey(now), n)
	b.Queue(pruneOutbox, store.TimeKey(now.Add(-store.DeliveredRetention)), pruneLimit)
	br := db.pool.SendBatch(ctx, b)
	rows, err := br.Query()
	var out []engine.Delivery
	if err == nil {
		out, err = collectDeliveries(rows)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, db.dbErr("claiming deliveries", err)
	}
	slices.SortFunc(out, func(a, b engine.Delivery) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// FinishDelivery records the outcome of the attempt owner made (see
// engine.OutboxStore), and prunes.
func (db *DB) FinishDelivery(ctx context.Context, id, owner string, now time.Time, errText string, retryAt time.Time, park bool) error {
	errText, err := store.CheckFinish(id, owner, errText, retryAt, park)
	if err != nil {
		return err
	}
	if err := db.check(ctx); err != nil {
		return err
	}
	var text *string
	if errText != "" {
		text = &errText
	}
	return db.changeDelivery(ctx, id, now, "finishing", finishOutbox, id, owner, store.TimeKey(now), text, store.TimeKey(retryAt), park)
}

// RetryDelivery makes a parked delivery pending and due at now.
func (db *DB) RetryDelivery(ctx context.Context, id string, now time.Time) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	return db.changeDelivery(ctx, id, now, "retrying", retryOutbox, id, store.TimeKey(now))
}

// changeDelivery runs update, which changes delivery id when it may, and
// prunes at now; when it changed nothing, it says why: an unknown id
// (engine.ErrNotFound), a lease not held (engine.ErrDeliveryLease, for a
// finish) or a status that is not parked (for a retry).
func (db *DB) changeDelivery(ctx context.Context, id string, now time.Time, doing, update string, args ...any) error {
	if !storable(id) {
		return fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
	}
	b := &pgx.Batch{}
	b.Queue(update, args...)
	b.Queue(`SELECT status, owner FROM outbox WHERE id = $1`, id)
	b.Queue(pruneOutbox, store.TimeKey(now.Add(-store.DeliveredRetention)), pruneLimit)
	br := db.pool.SendBatch(ctx, b)
	tag, err := br.Exec()
	var status, owner string
	found := true
	if err == nil {
		err = br.QueryRow().Scan(&status, &owner)
		if errors.Is(err, pgx.ErrNoRows) {
			found, err = false, nil
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return db.dbErr(doing+" delivery "+id, err)
	case tag.RowsAffected() == 1:
		return nil
	case !found:
		return fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
	case update == retryOutbox:
		return store.RetryRefused(id, status)
	}
	if owner == "" {
		owner = "no one"
	}
	return fmt.Errorf("finish delivery %q (%s, leased to %s) by %q: %w", id, status, owner, args[1], engine.ErrDeliveryLease)
}

// ListDeliveries lists deliveries by ID order, by the index of status or
// execution when the filter names one.
func (db *DB) ListDeliveries(ctx context.Context, f engine.DeliveryFilter) ([]engine.Delivery, error) {
	limit, err := store.CheckDeliveryFilter(f)
	if err != nil {
		return nil, err
	}
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(f.Execution) || !storable(f.After) {
		return nil, nil // names nothing stored
	}
	rows, err := db.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM outbox
WHERE ($1 = '' OR status = $1) AND ($2 = '' OR execution = $2) AND id > $3
ORDER BY id LIMIT $4`, f.Status, f.Execution, f.After, limit)
	if err != nil {
		return nil, db.dbErr("listing deliveries", err)
	}
	out, err := collectDeliveries(rows)
	if err != nil {
		return nil, db.dbErr("listing deliveries", err)
	}
	return out, nil
}

// collectDeliveries reads rows of deliveryColumns.
func collectDeliveries(rows pgx.Rows) ([]engine.Delivery, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Delivery, error) {
		var d engine.Delivery
		var created int64
		var next, delivered, lease *int64
		err := r.Scan(&d.ID, &d.Execution, &d.Channel, &d.URL, &d.SecretEnv, &d.Type, &d.Body, &created, &d.Status, &d.Attempts, &d.LastError, &next, &delivered, &d.Owner, &lease)
		d.CreatedAt, d.NextAt, d.DeliveredAt, d.LeaseUntil = nsTime(&created), nsTime(next), nsTime(delivered), nsTime(lease)
		return d, err
	})
}

// nsTime is a time stored as Unix nanoseconds, in UTC; zero for NULL.
func nsTime(ns *int64) time.Time {
	if ns == nil {
		return time.Time{}
	}
	return time.Unix(0, *ns).UTC()
}
