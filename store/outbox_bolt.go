package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// Bolt's outbox is one bucket, outbox, so that a commit with entries
// changes the pages of one bucket: the records under 'r' id, and three
// indexes of empty values, by status ('s' status NUL id, so that a claim
// reads the pending deliveries in id order and nothing else), by
// execution ('e' execution NUL id) and, for the DELIVERED ones, by
// delivery time ('d' deliveredAt NUL id, which pruning reads from its
// start). Its keys grow (ids are UUIDv7) within each part.
var (
	bucketOutbox = []byte("outbox")

	// outboxBuckets are the outbox's buckets (format 8 added them).
	outboxBuckets = [][]byte{bucketOutbox}
)

// outboxPart is one part of the outbox bucket: the keys under a prefix.
type outboxPart struct {
	b      *bbolt.Bucket
	prefix byte
}

func (p outboxPart) key(k []byte) []byte {
	return append([]byte{p.prefix}, k...)
}

func (p outboxPart) Get(k []byte) []byte { return p.b.Get(p.key(k)) }

func (p outboxPart) Put(k, v []byte) error { return p.b.Put(p.key(k), v) }

func (p outboxPart) Delete(k []byte) error { return p.b.Delete(p.key(k)) }

// each calls f with the keys of the part (without the prefix) from the
// first at or after from, in order, until f returns false or an error.
func (p outboxPart) each(from []byte, f func(k []byte) (bool, error)) error {
	c := p.b.Cursor()
	for k, _ := c.Seek(p.key(from)); len(k) > 0 && k[0] == p.prefix; k, _ = c.Next() {
		more, err := f(k[1:])
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// boltOutbox is a transaction's outbox: its records and indexes.
type boltOutbox struct {
	entries, status, execs, done outboxPart
}

// outbox returns the transaction's outbox; a missing bucket means the
// database is damaged.
func (x *tx) outbox() (*boltOutbox, error) {
	b := x.heads.Tx().Bucket(bucketOutbox)
	if b == nil {
		return nil, fmt.Errorf("bucket %s is missing", bucketOutbox)
	}
	b.FillPercent = appendFill
	return &boltOutbox{entries: outboxPart{b, 'r'}, status: outboxPart{b, 's'}, execs: outboxPart{b, 'e'}, done: outboxPart{b, 'd'}}, nil
}

// checkOutbox refuses a commit's outbox entries whose ids are taken.
func (o *boltOutbox) checkOutbox(ws []outboxWrite) error {
	for _, w := range ws {
		if o.entries.Get([]byte(w.id)) != nil {
			return outboxExists(w.id)
		}
	}
	return nil
}

// insert writes a commit's outbox entries (pending), after checkOutbox.
func (o *boltOutbox) insert(ws []outboxWrite) error {
	for _, w := range ws {
		if err := o.entries.Put([]byte(w.id), w.record); err != nil {
			return fmt.Errorf("outbox entry %q: %w", w.id, err)
		}
		if err := o.status.Put(idKey(engine.DeliveryPending, w.id), nil); err != nil {
			return err
		}
		if err := o.execs.Put(idKey(w.execution, w.id), nil); err != nil {
			return err
		}
	}
	return nil
}

// get returns the record of delivery id, nil when there is none.
func (o *boltOutbox) get(id string) (*outboxRecord, error) {
	v := o.entries.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	return decodeOutbox(id, v)
}

// put writes the record of delivery id, which was old, and its indexes.
func (o *boltOutbox) put(id string, old, r *outboxRecord) error {
	data, err := marshalRecord(r)
	if err != nil {
		return err
	}
	if err := o.entries.Put([]byte(id), data); err != nil {
		return err
	}
	if old.Status == r.Status {
		return nil
	}
	if err := o.status.Delete(idKey(old.Status, id)); err != nil {
		return err
	}
	if err := o.status.Put(idKey(r.Status, id), nil); err != nil {
		return err
	}
	if old.Status == engine.DeliveryDelivered {
		if err := o.done.Delete(timedKey(old.DeliveredAt, id)); err != nil {
			return err
		}
	}
	if r.Status == engine.DeliveryDelivered {
		return o.done.Put(timedKey(r.DeliveredAt, id), nil)
	}
	return nil
}

// prunable reports whether a delivery is due to be pruned at now.
func (o *boltOutbox) prunable(now time.Time) (bool, error) {
	var due bool
	err := o.done.each(nil, func(k []byte) (bool, error) {
		due = len(k) >= 8 && binary.BigEndian.Uint64(k) <= timeKey(now.Add(-DeliveredRetention))
		return false, nil
	})
	return due, err
}

// prune removes up to pruneBatch deliveries delivered DeliveredRetention
// before now, oldest delivery first.
func (o *boltOutbox) prune(now time.Time) error {
	limit := timeKey(now.Add(-DeliveredRetention))
	var keys [][]byte
	err := o.done.each(nil, func(k []byte) (bool, error) {
		if len(k) < 9 || binary.BigEndian.Uint64(k) > limit || len(keys) == pruneBatch {
			return false, nil
		}
		keys = append(keys, bytes.Clone(k))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		id := string(k[9:])
		r, err := o.get(id)
		if err != nil {
			return err
		}
		if err := o.done.Delete(k); err != nil {
			return err
		}
		if r == nil {
			continue
		}
		for _, del := range []struct {
			p outboxPart
			k []byte
		}{{o.entries, []byte(id)}, {o.status, idKey(r.Status, id)}, {o.execs, idKey(r.Execution, id)}} {
			if err := del.p.Delete(del.k); err != nil {
				return err
			}
		}
	}
	return nil
}

// claimable returns up to n deliveries claimable at now, oldest first.
func (o *boltOutbox) claimable(n int, now time.Time) ([]string, []*outboxRecord, error) {
	var ids []string
	var recs []*outboxRecord
	prefix := idKey(engine.DeliveryPending, "")
	err := o.status.each(prefix, func(k []byte) (bool, error) {
		if !bytes.HasPrefix(k, prefix) || len(ids) == n {
			return false, nil
		}
		id := string(k[len(prefix):])
		r, err := o.get(id)
		switch {
		case err != nil:
			return false, err
		case r == nil:
			return false, fmt.Errorf("bucket %s: pending delivery %q has no record", bucketOutbox, id)
		case r.claimable(now):
			ids, recs = append(ids, id), append(recs, r)
		}
		return true, nil
	})
	return ids, recs, err
}

var _ engine.OutboxStore = (*Bolt)(nil)

// ClaimDeliveries leases to owner, until now+lease, up to n pending
// deliveries due at now, oldest first, whose lease is free or ran out,
// counting an attempt on each. It looks in a read transaction first, and
// writes (and fsyncs) only when there is something to claim or prune.
func (b *Bolt) ClaimDeliveries(ctx context.Context, owner string, n int, now time.Time, lease time.Duration) ([]engine.Delivery, error) {
	if err := CheckClaim(owner, n, lease); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var work bool
	err := b.view(func(x *tx) error {
		o, err := x.outbox()
		if err != nil {
			return err
		}
		ids, _, err := o.claimable(1, now)
		if err != nil || len(ids) > 0 {
			work = len(ids) > 0
			return err
		}
		work, err = o.prunable(now)
		return err
	})
	if err != nil || !work {
		return nil, err
	}
	var out []engine.Delivery
	err = b.write(ctx, func(x *tx) error {
		out = out[:0]
		o, err := x.outbox()
		if err != nil {
			return reject(err)
		}
		ids, recs, err := o.claimable(n, now)
		if err != nil {
			return reject(err)
		}
		for i, r := range recs {
			old := *r
			r.Owner, r.LeaseUntil = owner, now.Add(lease).UTC()
			r.Attempts++
			if err := o.put(ids[i], &old, r); err != nil {
				return err
			}
			out = append(out, r.delivery(ids[i]))
		}
		return o.prune(now)
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, nil
}

// FinishDelivery records the outcome of the attempt owner made (see
// engine.OutboxStore).
func (b *Bolt) FinishDelivery(ctx context.Context, id, owner string, now time.Time, errText string, retryAt time.Time, park bool) error {
	errText, err := CheckFinish(id, owner, errText, retryAt, park)
	if err != nil {
		return err
	}
	return b.changeDelivery(ctx, id, now, func(r *outboxRecord) error { return r.finish(id, owner, now, errText, retryAt, park) })
}

// RetryDelivery makes a parked delivery pending and due at now.
func (b *Bolt) RetryDelivery(ctx context.Context, id string, now time.Time) error {
	return b.changeDelivery(ctx, id, now, func(r *outboxRecord) error { return r.retry(id, now) })
}

// changeDelivery applies change to delivery id and prunes at now, in one
// write transaction.
func (b *Bolt) changeDelivery(ctx context.Context, id string, now time.Time, change func(*outboxRecord) error) error {
	return b.write(ctx, func(x *tx) error {
		o, err := x.outbox()
		if err != nil {
			return reject(err)
		}
		r, err := o.get(id)
		switch {
		case err != nil:
			return reject(err)
		case r == nil:
			return reject(deliveryNotFound(id))
		}
		old := *r
		if err := change(r); err != nil {
			return reject(err)
		}
		if err := o.put(id, &old, r); err != nil {
			return err
		}
		return o.prune(now)
	})
}

// ListDeliveries lists deliveries by ID order, reading the status or
// execution index when the filter names one.
func (b *Bolt) ListDeliveries(ctx context.Context, f engine.DeliveryFilter) ([]engine.Delivery, error) {
	limit, err := CheckDeliveryFilter(f)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []engine.Delivery
	err = b.view(func(x *tx) error {
		o, err := x.outbox()
		if err != nil {
			return err
		}
		part, prefix := o.entries, []byte(nil)
		switch {
		case f.Execution != "":
			part, prefix = o.execs, idKey(f.Execution, "")
		case f.Status != "":
			part, prefix = o.status, idKey(f.Status, "")
		}
		start := append(bytes.Clone(prefix), f.After...)
		return part.each(start, func(k []byte) (bool, error) {
			if !bytes.HasPrefix(k, prefix) || len(out) == limit {
				return false, nil
			}
			if f.After != "" && bytes.Equal(k, start) {
				return true, nil
			}
			id := string(k[len(prefix):])
			r, err := o.get(id)
			switch {
			case err != nil:
				return false, err
			case r == nil:
				return false, fmt.Errorf("bucket %s: delivery %q has no record", bucketOutbox, id)
			case r.listed(f):
				out = append(out, r.delivery(id))
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}
