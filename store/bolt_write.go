package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// Group commit. Every write (Create, Commit, GC) is a request handed to one
// goroutine, the commit loop, which owns writing. The loop takes a request,
// then every request queued behind it (those that arrived while the
// previous transaction was being written and fsynced), at most maxBatch,
// and applies them all in one bbolt Update. A lone request is written at
// once: there is no delay to wait for company (waiting a little for more
// requests under load was tried, and lost throughput). A request that
// fails is answered with its error, and one bad commit never fails
// another: a request that fails before writing anything (a rejection)
// leaves the transaction to the others, and when one fails after writing
// part of itself the others are applied again without it.
//
// The loop keeps the heads it wrote, decoded (headCache): heads are
// written nowhere else, so a commit finds its execution's head without
// reading and decoding it. A committing goroutine applies its commit to
// the head the cache holds and seals its history record before it hands
// the commit to the loop (preseal), so that the loop, which every commit
// waits for, only checks that the head is still the one the commit was
// sealed against; when it is not (another commit of the execution came
// first), the loop applies and seals the commit again.
const (
	queueLen = 1024
	maxBatch = 1024

	// maxCachedHeads bounds the head cache; it is emptied when full.
	maxCachedHeads = 4096
)

// headCache holds heads as the commit loop wrote them: committed, as of
// the last transaction that committed, and pending, as the transaction
// under way leaves them. A head in the cache is never modified: a commit
// changes a copy and puts that.
type headCache struct {
	// mu guards committed against the committing goroutines' reads
	// (lookup); only the loop changes it, and it reads it without mu.
	mu        sync.Mutex
	committed map[string]*headRecord
	pending   map[string]*headRecord
}

func newHeadCache() headCache {
	return headCache{committed: make(map[string]*headRecord), pending: make(map[string]*headRecord)}
}

// settle ends a transaction: its heads are committed when ok, forgotten
// otherwise.
func (c *headCache) settle(ok bool) {
	if ok && len(c.pending) > 0 {
		c.mu.Lock()
		if len(c.committed)+len(c.pending) > maxCachedHeads {
			clear(c.committed)
		}
		for id, h := range c.pending {
			c.committed[id] = h
		}
		c.mu.Unlock()
	}
	clear(c.pending)
}

// lookup returns the committed head of execution id, nil when the cache
// does not hold it; a committing goroutine calls it.
func (c *headCache) lookup(id string) *headRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed[id]
}

// current returns the head of execution id as the transaction under way
// leaves it, nil when the cache does not hold it; the loop calls it.
func (c *headCache) current(id string) *headRecord {
	if h, ok := c.pending[id]; ok {
		return h
	}
	return c.committed[id]
}

// headForWrite returns a copy of an execution's head for the caller to
// change and put (putHead); engine.ErrNotFound when there is none.
func (x *tx) headForWrite(id string) (*headRecord, error) {
	if x.cache != nil {
		h, ok := x.cache.pending[id]
		if !ok {
			h, ok = x.cache.committed[id]
		}
		if ok {
			c := *h
			return &c, nil
		}
	}
	v := x.heads.Get([]byte(id))
	if v == nil {
		return nil, engine.ErrNotFound
	}
	return decodeSealedHead(id, v)
}

// putHead writes an execution's head, sealed; the caller no longer
// changes h.
func (x *tx) putHead(id string, h *headRecord) error {
	if err := x.put(x.heads, []byte(id), encodeSealedHead(id, h)); err != nil {
		return err
	}
	if x.cache != nil {
		x.cache.pending[id] = h
	}
	return nil
}

// writeReq is one write waiting for the loop.
type writeReq struct {
	ctx   context.Context
	apply func(x *tx) error
	done  chan error
	// logged says that apply writes only through x.put, x.del and
	// x.nextSequence, so that its writes may go through the log. [log]
	logged bool
}

// write hands apply to the commit loop and waits for its outcome. A request
// whose ctx ends before the loop takes it is not applied; once it is
// applied, write reports how the transaction went, whatever ctx does.
func (b *Bolt) write(ctx context.Context, apply func(x *tx) error) error {
	return b.submit(ctx, apply, false)
}

// submit is write, for a request that may go through the log when logged.
func (b *Bolt) submit(ctx context.Context, apply func(x *tx) error, logged bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, apply: apply, done: make(chan error, 1), logged: logged}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return ErrClosed
	}
	b.queue <- r
	b.mu.RUnlock()
	return <-r.done
}

// loop is the commit loop; it ends when Close has closed the queue and
// every request in it is answered.
func (b *Bolt) loop() {
	defer close(b.loopDone)
	batch := make([]*writeReq, 0, maxBatch)
	for r := range b.queue {
		batch = append(batch[:0], r)
	more:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-b.queue:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		b.commitBatch(batch)
		b.batches.Add(1)
		b.batched.Add(int64(len(batch)))
		clear(batch)
	}
}

// rejection is the error of a request that failed before it wrote
// anything: the request fails alone and its transaction goes on without
// it, the other requests applied once. (A request whose apply fails
// otherwise may have written part of itself: its transaction is rolled
// back and the others are applied again without it.) Apply functions
// check what can fail before they write.
type rejection struct{ err error }

func (r *rejection) Error() string { return r.err.Error() }

func (r *rejection) Unwrap() error { return r.err }

// reject marks err as a rejection.
func reject(err error) error { return &rejection{err: err} }

// errAllRejected ends a transaction in which every request was rejected:
// it is rolled back (which is cheap) rather than committed empty (which
// costs two fsyncs).
var errAllRejected = errors.New("every request was rejected")

// commitBatch applies requests in one transaction. A rejected request is
// answered with its error; one that fails otherwise (or meets a damaged
// page) is answered with its error and the others are applied again
// without it.
func (b *Bolt) commitBatch(batch []*writeReq) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	forceSync := false // [log] a write set was incomplete: no log for this batch
	for len(live) > 0 {
		if b.log != nil && b.log.err != nil { // [log] a failed sync ends writing
			for _, r := range live {
				r.done <- b.log.err
			}
			return
		}
		ws := b.logTx(live, forceSync)
		rejected := make([]error, len(live))
		failed, failErr := -1, error(nil)
		appended := 0
		err := guard(b.path, func() error {
			return b.db.Update(func(t *bbolt.Tx) error {
				// The loop is the only writer: the step set here is the one
				// this transaction grows the file by (growStep).
				b.db.AllocSize = growStep(t.Size())
				if b.log != nil {
					b.log.size = t.Size()
				}
				x, err := bucketsOf(t)
				if err != nil {
					return err
				}
				x.cache, x.ws = &b.heads, ws
				applied := 0
				for i, r := range live {
					failed = i // until it returns
					err := r.apply(x)
					var rej *rejection
					switch {
					case errors.As(err, &rej):
						rejected[i] = dbError(b.path, rej.err)
					case err != nil:
						failErr = dbError(b.path, err)
						return err
					default:
						applied++
					}
				}
				failed = -1
				if applied == 0 {
					return errAllRejected
				}
				if ws != nil { // [log] durable in the log before bbolt commits
					if ws.bad {
						return errUnlogged
					}
					if err := b.log.append(ws.buf); err != nil {
						return err
					}
					appended = logFrameLen + len(ws.buf)
				}
				return nil
			})
		})
		if err != nil && appended > 0 {
			b.log.unappend(appended) // bbolt did not commit it
		}
		if errors.Is(err, errUnlogged) {
			b.heads.settle(false)
			forceSync = true
			continue
		}
		if errors.Is(err, errAllRejected) {
			err = nil
		} else if err == nil && b.log != nil {
			err = b.logCommitted(ws != nil)
		}
		b.heads.settle(err == nil)
		if err != nil && failed < 0 {
			// The transaction itself failed (a full disk, a failed fsync):
			// nothing of it was written.
			if !errors.Is(err, ErrDatabaseCorrupt) {
				err = &DatabaseError{Path: b.path, Err: err}
			}
		}
		next := live[:0]
		for i, r := range live {
			switch {
			case rejected[i] != nil:
				r.done <- rejected[i]
			case err == nil:
				r.done <- nil
			case failed < 0:
				r.done <- err
			case i == failed:
				if failErr == nil {
					failErr = err // it met a damaged page
				}
				r.done <- failErr
			default:
				next = append(next, r)
			}
		}
		live = next
	}
}

// Create records a new execution; ErrExists when the id is taken.
func (b *Bolt) Create(ctx context.Context, e *engine.Execution) error {
	c, err := newExecution(e)
	if err != nil {
		return fmt.Errorf("create execution %s: %w", e.ID, err)
	}
	if err := b.submit(ctx, func(x *tx) error { return x.create(c) }, true); err != nil {
		return fmt.Errorf("create execution %s: %w", e.ID, err)
	}
	return nil
}

// create writes a new execution; a taken id is a rejection.
func (x *tx) create(c *created) error {
	id := []byte(c.id)
	if x.heads.Get(id) != nil {
		return reject(engine.ErrExists)
	}
	if c.definitionHash != "" && len(c.definition) > 0 && x.definitions.Get([]byte(c.definitionHash)) == nil {
		if err := x.put(x.definitions, []byte(c.definitionHash), c.definition); err != nil {
			return err
		}
	}
	puts := []struct {
		bkt  *bbolt.Bucket
		k, v []byte
	}{
		{x.executions, id, c.exec},
		{x.status, statusKey(c.head.Status, c.id), nil},
		{x.started, timedKey(c.summary.StartedAt, c.id), nil},
		{x.machines, machineKey(&c.summary), nil},
	}
	for _, p := range puts {
		if err := x.put(p.bkt, p.k, p.v); err != nil {
			return err
		}
	}
	if at := waitingAt(&c.head); !at.IsZero() {
		if err := x.put(x.timers, timedKey(at, c.id), nil); err != nil {
			return err
		}
	}
	for _, w := range c.scopes {
		if w.value != nil {
			if err := x.put(x.scopes, idKey(c.id, w.key), w.value); err != nil {
				return err
			}
		}
	}
	h := c.head
	return x.putHead(c.id, &h)
}

// Commit applies one step of an execution atomically and durably,
// sharing the transaction with concurrent commits.
func (b *Bolt) Commit(ctx context.Context, c *engine.Commit) error {
	p, err := prepareCommit(c, &b.codecs, b.codec, &b.docs)
	if err != nil {
		return fmt.Errorf("commit execution %s: %w", c.Execution, err)
	}
	b.preseal(p)
	// Agent memory and the outbox are written by code of their own, not
	// through x.put and x.del: such a commit is not logged. [log]
	logged := len(p.memory) == 0 && len(p.outbox) == 0
	if err := b.submit(ctx, func(x *tx) error { return x.apply(p) }, logged); err != nil {
		return fmt.Errorf("commit execution %s: %w", p.id, err)
	}
	p.committed(&b.docs)
	return nil
}

// preseal applies p to the head of its execution the head cache holds,
// and seals its history record after it, outside the loop; the loop uses
// the result when that head is still the execution's (apply). A commit
// that rolls back, or whose head is not cached, is left to the loop.
func (b *Bolt) preseal(p *prepared) {
	if p.rollback != nil {
		return
	}
	base := b.heads.lookup(p.id)
	if base == nil {
		return
	}
	h := *base
	p.applyHead(&h)
	if p.history.seal(&h) != nil {
		return // the loop seals it again, and reports the error
	}
	p.base, p.head = base, &h
}

// apply writes a prepared commit. What can fail is checked before
// anything is written, and is a rejection; then only bbolt's writes can
// fail.
func (x *tx) apply(p *prepared) error {
	var h *headRecord
	var oldStatus engine.Status
	var oldWake time.Time
	var oldRecord uint64 // the last history record before the commit
	var superseded []storedRecord
	if p.base != nil && x.cache != nil && x.cache.current(p.id) == p.base {
		// Sealed against the execution's head (preseal). A copy, as the
		// transaction may be applied again.
		c := *p.head
		h, oldStatus, oldWake, oldRecord = &c, p.base.Status, waitingAt(p.base), p.base.LastRecord
	} else {
		var err error
		if h, err = x.headForWrite(p.id); err != nil {
			return reject(err)
		}
		oldStatus, oldWake, oldRecord = h.Status, waitingAt(h), h.LastRecord
		p.applyHead(h)
		if p.rollback != nil {
			if superseded, err = x.supersede(p.id, h, p.rollback); err != nil {
				return reject(err)
			}
		}
		if err := p.history.seal(h); err != nil {
			return reject(err)
		}
	}
	var err error
	var oldCheckpoint *checkpointRecord
	if cp := p.checkpoint; cp != nil {
		if oldCheckpoint, err = x.checkpointRecord(p.id, cp.name); err != nil {
			return reject(err)
		}
	}
	var drop *droppedHistory
	if p.dropHistory {
		if drop, err = x.historyToDrop(p.id, oldRecord); err != nil {
			return reject(err)
		}
	}
	var memory []memRecord
	if len(p.memory) > 0 {
		if memory, err = applyMemoryWrites(p.memory, x.memory.Get); err != nil {
			return reject(err)
		}
	}
	var outbox *boltOutbox
	if len(p.outbox) > 0 {
		if outbox, err = x.outbox(); err != nil {
			return reject(err)
		}
		if err := outbox.checkOutbox(p.outbox); err != nil {
			return reject(err)
		}
	}

	if h.Status != oldStatus {
		if err := x.del(x.status, statusKey(oldStatus, p.id)); err != nil {
			return err
		}
		if err := x.put(x.status, statusKey(h.Status, p.id), nil); err != nil {
			return err
		}
	}
	if wake := waitingAt(h); !wake.Equal(oldWake) {
		if !oldWake.IsZero() {
			if err := x.del(x.timers, timedKey(oldWake, p.id)); err != nil {
				return err
			}
		}
		if !wake.IsZero() {
			if err := x.put(x.timers, timedKey(wake, p.id), nil); err != nil {
				return err
			}
		}
	}
	if drop != nil {
		if err := x.dropHistory(p.id, drop); err != nil {
			return fmt.Errorf("drop history: %w", err)
		}
	}
	for _, prefix := range p.drop {
		if err := x.deletePrefix(x.scopes, idKey(p.id, prefix)); err != nil {
			return fmt.Errorf("drop scopes %q: %w", prefix, err)
		}
	}
	for _, w := range p.scopes {
		k := idKey(p.id, w.key)
		if w.value == nil {
			err = x.del(x.scopes, k)
		} else {
			err = x.put(x.scopes, k, w.value)
		}
		if err != nil {
			return fmt.Errorf("scope %q: %w", w.key, err)
		}
	}
	for _, r := range superseded {
		if err := x.put(x.events, recordKey(r.key), r.value); err != nil {
			return fmt.Errorf("history record %d: %w", r.key, err)
		}
	}
	if len(p.history.values) > 0 {
		key, err := x.nextSequence(x.events)
		if err != nil {
			return err
		}
		if err := x.put(x.events, recordKey(key), p.history.record); err != nil {
			return fmt.Errorf("history record %d: %w", key, err)
		}
		h.LastRecord = key
	}
	if cp := p.checkpoint; cp != nil {
		// The commit's event cp.event binds the checkpoint; without one,
		// the head does.
		var bd checkpointBinding
		if cp.event >= 0 && len(p.history.values) > 0 {
			bd = checkpointBinding{key: h.LastRecord, pos: h.Events - int64(len(p.history.values)) + 1 + int64(cp.event)}
		}
		if _, listed := h.Unbound[cp.name]; listed || bd.key == 0 {
			h.Unbound = maps.Clone(h.Unbound) // the cached head shares the map
			if bd.key == 0 {
				if h.Unbound == nil {
					h.Unbound = make(map[string]string, 1)
				}
				h.Unbound[cp.name] = cp.hash
			} else {
				delete(h.Unbound, cp.name)
			}
		}
		if err := x.writeCheckpoint(p.id, cp, bd, oldCheckpoint); err != nil {
			return fmt.Errorf("checkpoint %q: %w", cp.name, err)
		}
	}
	if err := x.writeMemory(memory); err != nil {
		return fmt.Errorf("agent memory: %w", err)
	}
	for _, ns := range p.namespaces {
		if err := x.put(x.namespaces, idKey(p.id, ns), nil); err != nil {
			return fmt.Errorf("memory namespace %q: %w", ns, err)
		}
	}
	if outbox != nil {
		if err := outbox.insert(p.outbox); err != nil {
			return err
		}
	}
	return x.putHead(p.id, h)
}

// droppedHistory is what a commit that drops an execution's history
// deletes: its history records, by key, and its checkpoints.
type droppedHistory struct {
	records     []uint64
	checkpoints []droppedCheckpoint
}

// droppedCheckpoint is a checkpoint to delete, with its record.
type droppedCheckpoint struct {
	name string
	r    *checkpointRecord
}

// historyToDrop reads what dropping the history of execution id, whose
// last history record is last, deletes. A history whose links do not
// hold is an error (ErrTampered): the records it would miss would stay.
func (x *tx) historyToDrop(id string, last uint64) (*droppedHistory, error) {
	d := &droppedHistory{}
	records, err := x.historyRecords(id, &headRecord{LastRecord: last})
	if err != nil {
		return nil, err
	}
	for _, r := range records {
		d.records = append(d.records, r.key)
	}
	prefix := idKey(id, "")
	err = scanPrefix(x.checkpoints, prefix, func(k, _ []byte) error {
		name := string(k[len(prefix):])
		r, err := x.checkpointRecord(id, name)
		if err != nil {
			return err
		}
		d.checkpoints = append(d.checkpoints, droppedCheckpoint{name: name, r: r})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// dropHistory deletes what historyToDrop found: the history records, and
// the checkpoints with their expiry entries and their references to
// snapshots (a snapshot no one else references becomes an orphan, which
// GC removes).
func (x *tx) dropHistory(id string, d *droppedHistory) error {
	for _, key := range d.records {
		if err := x.del(x.events, recordKey(key)); err != nil {
			return fmt.Errorf("history record %d: %w", key, err)
		}
	}
	for _, cp := range d.checkpoints {
		if !cp.r.ExpiresAt.IsZero() {
			if err := x.del(x.expiry, timedKey(cp.r.ExpiresAt, id, cp.name)); err != nil {
				return fmt.Errorf("checkpoint %q: %w", cp.name, err)
			}
		}
		if cp.r.Blob != "" {
			if err := x.unref(cp.r.Blob); err != nil {
				return fmt.Errorf("checkpoint %q: %w", cp.name, err)
			}
		}
		if err := x.del(x.checkpoints, idKey(id, cp.name)); err != nil {
			return fmt.Errorf("checkpoint %q: %w", cp.name, err)
		}
	}
	return nil
}

// supersede returns the execution's history records that rollback rb
// changes, with the events it marks superseded.
func (x *tx) supersede(id string, h *headRecord, rb *engine.Rollback) ([]storedRecord, error) {
	records, err := x.historyRecords(id, h)
	if err != nil {
		return nil, err
	}
	var changed []storedRecord
	for _, r := range records {
		var c *storedRecord
		for i, v := range r.events {
			ok, err := supersedes(rb, v)
			if err != nil {
				return nil, fmt.Errorf("execution %s: history event %d: %w", id, r.first+int64(i), err)
			}
			if !ok {
				continue
			}
			if c == nil {
				value := bytes.Clone(r.value)
				parsed, err := parseHistoryRecord(value)
				if err != nil {
					return nil, err
				}
				changed = append(changed, storedRecord{key: r.key, value: value, historyRecord: parsed})
				c = &changed[len(changed)-1]
			}
			c.events[i][1] |= eventSuperseded
		}
	}
	return changed, nil
}

// checkpointRecord returns the record of an execution's checkpoint, nil
// when there is none.
func (x *tx) checkpointRecord(id, name string) (*checkpointRecord, error) {
	v := x.checkpoints.Get(idKey(id, name))
	if v == nil {
		return nil, nil
	}
	_, record, err := splitCheckpointValue(id, name, v)
	if err != nil {
		return nil, err
	}
	_, r, err := decodeCheckpoint(id, name, record, false)
	return r, err
}

// writeCheckpoint writes a checkpoint bound by bd, replacing old, the
// record of the one of the same name (nil when there is none).
func (x *tx) writeCheckpoint(id string, cp *preparedCheckpoint, bd checkpointBinding, old *checkpointRecord) error {
	if old != nil && !old.ExpiresAt.IsZero() {
		if err := x.del(x.expiry, timedKey(old.ExpiresAt, id, cp.name)); err != nil {
			return err
		}
	}
	if err := x.ref(cp.blob, cp.data); err != nil {
		return err
	}
	if old != nil && old.Blob != "" {
		if err := x.unref(old.Blob); err != nil {
			return err
		}
	}
	if !cp.expiresAt.IsZero() {
		if err := x.put(x.expiry, timedKey(cp.expiresAt, id, cp.name), nil); err != nil {
			return err
		}
	}
	return x.put(x.checkpoints, idKey(id, cp.name), encodeCheckpointValue(bd, cp.record))
}

// ref records one more reference to a blob, storing it if it is new.
func (x *tx) ref(key string, data []byte) error {
	k := []byte(key)
	n := refCount(x.blobRefs.Get(k))
	if x.blobs.Get(k) == nil {
		if err := x.put(x.blobs, k, data); err != nil {
			return fmt.Errorf("bucket %s: %w", bucketBlobs, err)
		}
	}
	if err := x.del(x.orphans, k); err != nil {
		return err
	}
	return x.put(x.blobRefs, k, binary.BigEndian.AppendUint64(nil, n+1))
}

// unref drops a reference to a blob; a blob left unreferenced becomes an
// orphan, removed by GC.
func (x *tx) unref(key string) error {
	k := []byte(key)
	n := refCount(x.blobRefs.Get(k))
	if n > 1 {
		return x.put(x.blobRefs, k, binary.BigEndian.AppendUint64(nil, n-1))
	}
	if err := x.del(x.blobRefs, k); err != nil {
		return err
	}
	return x.put(x.orphans, k, nil)
}

func refCount(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// GC removes expired checkpoints (but not the newest of a RUNNING or
// WAITING execution) and unreferenced snapshot blobs, in one transaction:
// a scan of the expiry index up to now, then of the orphan blobs.
func (b *Bolt) GC(ctx context.Context, now time.Time) (GCReport, error) {
	var rep GCReport
	err := b.write(ctx, func(x *tx) error {
		rep = GCReport{}
		return x.gc(now, &rep)
	})
	if err != nil {
		return GCReport{}, fmt.Errorf("gc: %w", err)
	}
	return rep, nil
}

// gc does GC's work in a write transaction.
func (x *tx) gc(now time.Time, rep *GCReport) error {
	type expired struct {
		key      []byte
		id, name string
	}
	var todo []expired
	limit := timeKey(now)
	c := x.expiry.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) < 9 || binary.BigEndian.Uint64(k) > limit {
			break
		}
		id, name, ok := bytes.Cut(k[9:], []byte{0})
		if !ok {
			return fmt.Errorf("bucket %s: malformed key %q", bucketExpiry, k)
		}
		todo = append(todo, expired{bytes.Clone(k), string(id), string(name)})
	}
	keep := make(map[string]string) // execution → its newest checkpoint, when live
	for _, e := range todo {
		newest, ok := keep[e.id]
		if !ok {
			var err error
			if newest, err = x.newestLive(e.id); err != nil {
				return err
			}
			keep[e.id] = newest
		}
		if e.name == newest {
			continue
		}
		if err := x.expiry.Delete(e.key); err != nil {
			return err
		}
		k := idKey(e.id, e.name)
		r, err := x.checkpointRecord(e.id, e.name)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if err := x.checkpoints.Delete(k); err != nil {
			return err
		}
		if err := x.unref(r.Blob); err != nil {
			return err
		}
		rep.Checkpoints++
	}
	var orphans [][]byte
	if err := x.orphans.ForEach(func(k, _ []byte) error {
		orphans = append(orphans, bytes.Clone(k))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range orphans {
		if err := x.blobs.Delete(k); err != nil {
			return err
		}
		if err := x.orphans.Delete(k); err != nil {
			return err
		}
		rep.Blobs++
	}
	return x.gcMemory(now, rep)
}

// newestLive returns the name of the newest checkpoint of an execution
// that is RUNNING or WAITING, "" for any other.
func (x *tx) newestLive(id string) (string, error) {
	hv := x.heads.Get([]byte(id))
	if hv == nil {
		return "", nil
	}
	h, err := decodeSealedHead(id, hv)
	if err != nil || !live(h.Status) {
		return "", err
	}
	var newest string
	var newestRec *checkpointRecord
	prefix := idKey(id, "")
	err = scanPrefix(x.checkpoints, prefix, func(k, v []byte) error {
		name := string(k[len(prefix):])
		r, err := x.checkpointRecord(id, name)
		if err != nil {
			return err
		}
		if newestRec == nil || newer(r, name, newestRec, newest) {
			newest, newestRec = name, r
		}
		return nil
	})
	return newest, err
}
