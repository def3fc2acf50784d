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

// Bolt's outbox: the records under their ids in bucket outbox, and three
// indexes of empty values: by status (status NUL id, so that a claim
// reads the pending deliveries in id order and nothing else), by
// execution (execution NUL id) and, for the DELIVERED ones, by delivery
// time (deliveredAt NUL id, which pruning reads from its start).
var (
	bucketOutbox       = []byte("outbox")
	bucketOutboxStatus = []byte("outboxstatus")
	bucketOutboxExec   = []byte("outboxexec")
	bucketOutboxDone   = []byte("outboxdone")

	// outboxBuckets are the outbox's buckets (format 8 added them).
	outboxBuckets = [][]byte{bucketOutbox, bucketOutboxStatus, bucketOutboxExec, bucketOutboxDone}
)

// boltOutbox is a transaction's outbox buckets.
type boltOutbox struct {
	entries, status, execs, done *bbolt.Bucket
}

// outbox returns the transaction's outbox buckets; a missing one means
// the database is damaged.
func (x *tx) outbox() (*boltOutbox, error) {
	t := x.heads.Tx()
	o := &boltOutbox{}
	for _, b := range []struct {
		dst  **bbolt.Bucket
		name []byte
	}{{&o.entries, bucketOutbox}, {&o.status, bucketOutboxStatus}, {&o.execs, bucketOutboxExec}, {&o.done, bucketOutboxDone}} {
		if *b.dst = t.Bucket(b.name); *b.dst == nil {
			return nil, fmt.Errorf("bucket %s is missing", b.name)
		}
	}
	// Ids are UUIDv7: they grow, as the history's keys do.
	o.entries.FillPercent, o.execs.FillPercent = appendFill, appendFill
	return o, nil
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
func (o *boltOutbox) prunable(now time.Time) bool {
	k, _ := o.done.Cursor().First()
	return len(k) >= 8 && binary.BigEndian.Uint64(k) <= timeKey(now.Add(-DeliveredRetention))
}

// prune removes up to pruneBatch deliveries delivered DeliveredRetention
// before now, oldest delivery first.
func (o *boltOutbox) prune(now time.Time) error {
	limit := timeKey(now.Add(-DeliveredRetention))
	var keys [][]byte
	c := o.done.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < pruneBatch; k, _ = c.Next() {
		if len(k) < 9 || binary.BigEndian.Uint64(k) > limit {
			break
		}
		keys = append(keys, bytes.Clone(k))
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
			b *bbolt.Bucket
			k []byte
		}{{o.entries, []byte(id)}, {o.status, idKey(r.Status, id)}, {o.execs, idKey(r.Execution, id)}} {
			if err := del.b.Delete(del.k); err != nil {
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
	c := o.status.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(ids) < n; k, _ = c.Next() {
		id := string(k[len(prefix):])
		r, err := o.get(id)
		if err != nil {
			return nil, nil, err
		}
		if r == nil {
			return nil, nil, fmt.Errorf("bucket %s: delivery %q has no record", bucketOutboxStatus, id)
		}
		if r.claimable(now) {
			ids, recs = append(ids, id), append(recs, r)
		}
	}
	return ids, recs, nil
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
		work = len(ids) > 0 || o.prunable(now)
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
		bkt, name, prefix := o.entries, bucketOutbox, []byte(nil)
		switch {
		case f.Execution != "":
			bkt, name, prefix = o.execs, bucketOutboxExec, idKey(f.Execution, "")
		case f.Status != "":
			bkt, name, prefix = o.status, bucketOutboxStatus, idKey(f.Status, "")
		}
		c := bkt.Cursor()
		start := append(bytes.Clone(prefix), f.After...)
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Next() {
			if f.After != "" && bytes.Equal(k, start) {
				continue
			}
			id := string(k[len(prefix):])
			r, err := o.get(id)
			if err != nil {
				return err
			}
			if r == nil {
				return fmt.Errorf("bucket %s: delivery %q has no record", name, id)
			}
			if r.listed(f) {
				out = append(out, r.delivery(id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}
