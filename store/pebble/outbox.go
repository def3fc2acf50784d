//go:build pebble

package pebble

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// The outbox (engine.OutboxStore): a delivery is an engine.Delivery as
// JSON under 'o' id, written by its commit's batch, pending and due at its
// CreatedAt; the rules are the memory store's (store/outbox.go): claims in
// id order, DELIVERED entries pruned DeliveredRetention after delivery by
// the calls that write (at most pruneBatch a call, oldest delivery first).

// kindOutbox is the kind of the outbox's keys.
const kindOutbox = 'o'

// pruneBatch bounds the DELIVERED entries one call prunes.
const pruneBatch = 256

var _ engine.OutboxStore = (*Store)(nil)

// putOutbox adds a commit's outbox entries to b; an id already stored is
// an error wrapping engine.ErrExists.
func (s *Store) putOutbox(b *pebble.Batch, entries []engine.OutboxEntry) error {
	for _, e := range entries {
		k := key(kindOutbox, e.ID)
		_, ok, err := get(s.db, k)
		switch {
		case err != nil:
			return s.dbErr("reading the outbox", err)
		case ok:
			return fmt.Errorf("outbox entry %q: %w", e.ID, engine.ErrExists)
		}
		data, err := json.Marshal(engine.Delivery{OutboxEntry: e, Status: engine.DeliveryPending, NextAt: e.CreatedAt})
		if err != nil {
			return fmt.Errorf("outbox entry %q: %w", e.ID, err)
		}
		b.Set(k, data, nil)
	}
	return nil
}

// deliveries calls f with every delivery in id order until f returns
// false.
func (s *Store) deliveries(r pebble.Reader, after string, f func(d *engine.Delivery) bool) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{kindOutbox}, UpperBound: []byte{kindOutbox + 1}})
	if err != nil {
		return s.dbErr("reading the outbox", err)
	}
	defer it.Close()
	ok := it.First()
	if after != "" {
		ok = it.SeekGE(append(key(kindOutbox, after), 0))
	}
	for ; ok; ok = it.Next() {
		var d engine.Delivery
		if err := json.Unmarshal(it.Value(), &d); err != nil {
			return fmt.Errorf("outbox record %q: %w: %w", it.Key()[1:], store.ErrDatabaseCorrupt, err)
		}
		if !f(&d) {
			break
		}
	}
	return it.Error()
}

// setDelivery adds d's record to b.
func setDelivery(b *pebble.Batch, d *engine.Delivery) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("delivery %q: %w", d.ID, err)
	}
	return b.Set(key(kindOutbox, d.ID), data, nil)
}

// ClaimDeliveries leases to owner, until now+lease, up to n pending
// deliveries due at now, in id order, whose lease is free or ran out,
// counting an attempt on each.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, n int, now time.Time, lease time.Duration) ([]engine.Delivery, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	if err := store.CheckClaim(owner, n, lease); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	var out []engine.Delivery
	var werr error
	err := s.deliveries(s.db, "", func(d *engine.Delivery) bool {
		if d.Status != engine.DeliveryPending || d.NextAt.After(now) || d.Owner != "" && d.LeaseUntil.After(now) {
			return true
		}
		d.Owner, d.LeaseUntil = owner, now.Add(lease).UTC()
		d.Attempts++
		if werr = setDelivery(b, d); werr != nil {
			return false
		}
		out = append(out, *d)
		return len(out) < n
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	if err := s.pruneOutbox(b, now, nil); err != nil {
		return nil, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, s.dbErr("claiming deliveries", err)
	}
	return out, nil
}

// FinishDelivery records the outcome of the attempt owner made (see
// engine.OutboxStore).
func (s *Store) FinishDelivery(ctx context.Context, id, owner string, now time.Time, errText string, retryAt time.Time, park bool) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	errText, err := store.CheckFinish(id, owner, errText, retryAt, park)
	if err != nil {
		return err
	}
	return s.changeDelivery(id, now, func(d *engine.Delivery) error {
		if d.Status != engine.DeliveryPending || d.Owner != owner {
			held := d.Owner
			if held == "" {
				held = "no one"
			}
			return fmt.Errorf("finish delivery %q (%s, leased to %s) by %q: %w", id, d.Status, held, owner, engine.ErrDeliveryLease)
		}
		d.Owner, d.LeaseUntil = "", time.Time{}
		switch {
		case errText == "":
			d.Status, d.DeliveredAt, d.LastError, d.NextAt = engine.DeliveryDelivered, now.UTC(), "", time.Time{}
		case park:
			d.Status, d.LastError, d.NextAt = engine.DeliveryFailed, errText, time.Time{}
		default:
			d.LastError, d.NextAt = errText, retryAt.UTC()
		}
		return nil
	})
}

// RetryDelivery makes a parked delivery pending and due at now.
func (s *Store) RetryDelivery(ctx context.Context, id string, now time.Time) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	return s.changeDelivery(id, now, func(d *engine.Delivery) error {
		if d.Status != engine.DeliveryFailed {
			return store.RetryRefused(id, d.Status)
		}
		d.Status, d.NextAt = engine.DeliveryPending, now.UTC()
		return nil
	})
}

// changeDelivery applies change to delivery id and prunes at now, in one
// batch.
func (s *Store) changeDelivery(id string, now time.Time, change func(*engine.Delivery) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	notFound := fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
	if !nameOK(id) {
		return notFound
	}
	data, ok, err := get(s.db, key(kindOutbox, id))
	switch {
	case err != nil:
		return s.dbErr("reading the outbox", err)
	case !ok:
		return notFound
	}
	var d engine.Delivery
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("outbox record %q: %w: %w", id, store.ErrDatabaseCorrupt, err)
	}
	if err := change(&d); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := setDelivery(b, &d); err != nil {
		return err
	}
	if err := s.pruneOutbox(b, now, &d); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return s.dbErr("writing delivery "+id, err)
	}
	return nil
}

// pruneOutbox adds to b the deletion of up to pruneBatch deliveries
// delivered DeliveredRetention before now, oldest delivery first; changed
// is a delivery b writes (nil: none), seen as b leaves it.
func (s *Store) pruneOutbox(b *pebble.Batch, now time.Time, changed *engine.Delivery) error {
	type done struct {
		id string
		at time.Time
	}
	var old []done
	limit := now.Add(-store.DeliveredRetention)
	err := s.deliveries(s.db, "", func(d *engine.Delivery) bool {
		if changed != nil && d.ID == changed.ID {
			d = changed
		}
		if d.Status == engine.DeliveryDelivered && !d.DeliveredAt.After(limit) {
			old = append(old, done{d.ID, d.DeliveredAt})
		}
		return true
	})
	if err != nil {
		return err
	}
	slices.SortFunc(old, func(a, b done) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, d := range old[:min(len(old), pruneBatch)] {
		b.Delete(key(kindOutbox, d.id), nil)
	}
	return nil
}

// ListDeliveries lists deliveries by id order.
func (s *Store) ListDeliveries(ctx context.Context, f engine.DeliveryFilter) ([]engine.Delivery, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	limit, err := store.CheckDeliveryFilter(f)
	if err != nil {
		return nil, err
	}
	var out []engine.Delivery
	err = s.deliveries(s.db, f.After, func(d *engine.Delivery) bool {
		if (f.Status == "" || d.Status == f.Status) && (f.Execution == "" || d.Execution == f.Execution) {
			out = append(out, *d)
		}
		return len(out) < limit
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
