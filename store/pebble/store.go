//go:build pebble

package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// nameOK reports whether s can name something stored: no NUL byte.
func nameOK(s string) bool { return s != "" && strings.IndexByte(s, 0) < 0 }

// Create records a new execution; engine.ErrExists when the id is taken.
func (s *Store) Create(ctx context.Context, e *engine.Execution) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	n, err := store.PrepareCreate(e)
	if err != nil {
		return fmt.Errorf("create execution %s: %w", e.ID, err)
	}
	defer s.lockExec(n.ID, false)()
	_, exists, err := get(s.db, key(kindHead, n.ID))
	switch {
	case err != nil:
		return s.dbErr("create execution "+n.ID, err)
	case exists:
		return fmt.Errorf("create execution %s: %w", n.ID, engine.ErrExists)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if n.Definition != nil {
		dk := key(kindDefinition, n.DefinitionHash)
		_, ok, err := get(s.db, dk)
		if err != nil {
			return s.dbErr("create execution "+n.ID, err)
		}
		if !ok {
			b.Set(dk, n.Definition, nil)
		}
	}
	env := envelope{sync: syncOf(e.Durability), wake: wakeKey(n.Summary.WakeAt), status: n.Summary.Status, head: n.Head}
	b.Set(key(kindSpec, n.ID), n.Spec, nil)
	b.Set(key(kindHead, n.ID), env.encode(), nil)
	b.Set(timeIDKey(kindList, store.TimeKey(n.Summary.StartedAt), n.ID), nil, nil)
	indexHead(b, n.ID, nil, &env)
	for _, sc := range n.Scopes {
		b.Set(pair(kindScope, n.ID, sc.Key), sc.Value, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return s.dbErr("create execution "+n.ID, err)
	}
	return nil
}

// indexHead updates the Due and Unfinished indexes of an execution whose
// head goes from old (nil for a new execution) to now.
func indexHead(b *pebble.Batch, id string, old, now *envelope) {
	if old != nil && old.wake != 0 && (now.wake != old.wake || now.status != engine.StatusWaiting) {
		b.Delete(timeIDKey(kindDue, old.wake, id), nil)
	}
	if now.wake != 0 && now.status == engine.StatusWaiting && (old == nil || old.wake != now.wake || old.status != engine.StatusWaiting) {
		b.Set(timeIDKey(kindDue, now.wake, id), nil, nil)
	}
	wasRunning := old != nil && old.status == engine.StatusRunning
	switch isRunning := now.status == engine.StatusRunning; {
	case isRunning && !wasRunning:
		b.Set(key(kindRunning, id), nil, nil)
	case !isRunning && wasRunning:
		b.Delete(key(kindRunning, id), nil)
	}
}

// Commit applies one step of an execution atomically, in one Pebble
// batch, durable on return unless the execution's durability is batched
// (see the package doc).
func (s *Store) Commit(ctx context.Context, c *engine.Commit) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	p, err := s.rec.PrepareCommit(c)
	if err != nil {
		return fmt.Errorf("commit execution %s: %w", c.Execution, err)
	}
	id := p.Execution()
	// A commit that reads or writes agent memory, or writes the outbox,
	// excludes every other write: what it reads must not change before it
	// is written.
	unlock := s.lockExec(id, len(c.Memory) > 0 || len(c.Outbox) > 0)
	err = s.commit(id, p)
	unlock()
	if err != nil {
		return fmt.Errorf("commit execution %s: %w", id, err)
	}
	s.rec.Committed(p)
	return nil
}

// commit writes a prepared commit with the execution locked (lockExec).
func (s *Store) commit(id string, p *store.PreparedCommit) error {
	raw, ok, err := get(s.db, key(kindHead, id))
	switch {
	case err != nil:
		return s.dbErr("reading the head", err)
	case !ok:
		return engine.ErrNotFound
	}
	old, err := decodeEnvelope(id, raw)
	if err != nil {
		return err
	}
	var history, historyKeys [][]byte
	if p.RollsBack() {
		err := scan(s.db, under(kindHistory, id), func(k, v []byte) error {
			historyKeys = append(historyKeys, append(under(kindHistory, id), k...))
			history = append(history, v)
			return nil
		})
		if err != nil {
			return s.dbErr("reading the history", err)
		}
	}
	a, err := p.Apply(old.head, history, func(ns, k string) ([]byte, error) {
		v, _, err := get(s.db, pair(kindMemory, ns, k))
		return v, err
	})
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.putOutbox(b, a.Outbox); err != nil {
		return err
	}
	now := envelope{sync: old.sync, wake: wakeKey(a.WakeAt), status: a.Status, head: a.Head}
	b.Set(key(kindHead, id), now.encode(), nil)
	indexHead(b, id, old, &now)
	if a.DropHistory {
		// The snapshots only the checkpoints referred to are left to GC,
		// which deletes those no checkpoint refers to.
		for _, kind := range []byte{kindHistory, kindCheckpoint} {
			start := under(kind, id)
			b.DeleteRange(start, prefixEnd(start), nil)
		}
	}
	for _, prefix := range a.DropScopes {
		start := pair(kindScope, id, prefix)
		b.DeleteRange(start, prefixEnd(start), nil)
	}
	for _, sc := range a.Scopes {
		if sc.Value == nil {
			b.Delete(pair(kindScope, id, sc.Key), nil)
		} else {
			b.Set(pair(kindScope, id, sc.Key), sc.Value, nil)
		}
	}
	for i, rec := range a.Superseded {
		b.Set(historyKeys[i], rec, nil)
	}
	if a.History != nil {
		b.Set(numbered(kindHistory, id, uint64(a.FirstEvent)), a.History, nil)
	}
	if cp := a.Checkpoint; cp != nil {
		blob, err := store.HashBytes(cp.Blob)
		if err != nil {
			return err
		}
		bk := append([]byte{kindBlob}, blob...)
		_, ok, err := get(s.db, bk)
		if err != nil {
			return s.dbErr("reading a snapshot", err)
		}
		if !ok {
			b.Set(bk, cp.Snapshot, nil)
		}
		b.Set(pair(kindCheckpoint, id, cp.Name), encodeRow(cp), nil)
	}
	for _, ns := range a.Namespaces {
		b.Set(pair(kindNamespace, id, ns), nil, nil)
	}
	for _, m := range a.Memory {
		if m.Record == nil {
			b.Delete(pair(kindMemory, m.Namespace, m.Key), nil)
		} else {
			b.Set(pair(kindMemory, m.Namespace, m.Key), m.Record, nil)
		}
	}
	opt := pebble.Sync
	if old.sync == syncAtPause && a.Status == engine.StatusRunning && a.Checkpoint == nil {
		opt = pebble.NoSync
	}
	if err := b.Commit(opt); err != nil {
		return s.dbErr("writing", err)
	}
	return nil
}

// encodeRow encodes a checkpoint's row: its record, blob and document
// hashes, event, times (store.TimeKey; expires 0 for none, else plus 1)
// as uvarint-prefixed fields.
func encodeRow(cp *store.CheckpointWrite) []byte {
	var b []byte
	for _, f := range []string{string(cp.Record), cp.Blob, cp.DocHash} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	var expires int64
	if !cp.ExpiresAt.IsZero() {
		expires = store.TimeKey(cp.ExpiresAt) + 1
	}
	b = binary.AppendVarint(b, cp.Event)
	b = binary.AppendVarint(b, store.TimeKey(cp.CreatedAt))
	return binary.AppendVarint(b, expires)
}

// decodeRow decodes the row of checkpoint name of execution id.
func decodeRow(id, name string, b []byte) (store.CheckpointWrite, error) {
	cw := store.CheckpointWrite{Name: name}
	bad := fmt.Errorf("execution %s checkpoint %q: row of %d bytes does not decode: %w", id, name, len(b), store.ErrDatabaseCorrupt)
	var fields [3][]byte
	for i := range fields {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return cw, bad
		}
		fields[i], b = b[k:k+int(n)], b[k+int(n):]
	}
	var nums [3]int64
	for i := range nums {
		n, k := binary.Varint(b)
		if k <= 0 {
			return cw, bad
		}
		nums[i], b = n, b[k:]
	}
	cw.Record, cw.Blob, cw.DocHash = fields[0], string(fields[1]), string(fields[2])
	cw.Event, cw.CreatedAt = nums[0], time.Unix(0, nums[1]).UTC()
	if nums[2] != 0 {
		cw.ExpiresAt = time.Unix(0, nums[2]-1).UTC()
	}
	return cw, nil
}

// snapshot returns a snapshot of the database, to read as of one commit.
func (s *Store) snapshot() *pebble.Snapshot { return s.db.NewSnapshot() }

// headOf reads an execution's head; an error wrapping engine.ErrNotFound
// when there is none.
func (s *Store) headOf(r pebble.Reader, id string) (*envelope, error) {
	if !nameOK(id) {
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	raw, ok, err := get(r, key(kindHead, id))
	switch {
	case err != nil:
		return nil, s.dbErr("reading execution "+id, err)
	case !ok:
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	return decodeEnvelope(id, raw)
}

// records reads an execution's history records in order.
func (s *Store) records(r pebble.Reader, id string) ([][]byte, error) {
	var out [][]byte
	err := scan(r, under(kindHistory, id), func(_, v []byte) error {
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, s.dbErr("reading the history of execution "+id, err)
	}
	return out, nil
}

// Load returns an execution as last committed; engine.ErrNotFound when
// there is none.
func (s *Store) Load(ctx context.Context, id string) (*engine.Execution, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	env, err := s.headOf(snap, id)
	if err != nil {
		return nil, err
	}
	spec, _, err := get(snap, key(kindSpec, id))
	if err != nil {
		return nil, s.dbErr("loading execution "+id, err)
	}
	sum, err := store.ExecutionSummary(id, spec, env.head)
	if err != nil {
		return nil, err
	}
	var def []byte
	if sum.DefinitionHash != "" {
		if def, _, err = get(snap, key(kindDefinition, sum.DefinitionHash)); err != nil {
			return nil, s.dbErr("loading execution "+id, err)
		}
	}
	var scopes []store.ScopeRecord
	err = scan(snap, under(kindScope, id), func(k, v []byte) error {
		scopes = append(scopes, store.ScopeRecord{Key: string(k), Value: v})
		return nil
	})
	if err != nil {
		return nil, s.dbErr("loading execution "+id, err)
	}
	var namespaces []string
	err = scan(snap, under(kindNamespace, id), func(k, _ []byte) error {
		namespaces = append(namespaces, string(k))
		return nil
	})
	if err != nil {
		return nil, s.dbErr("loading execution "+id, err)
	}
	return store.LoadExecution(id, spec, env.head, def, scopes, namespaces)
}

// History returns an execution's history in order.
func (s *Store) History(ctx context.Context, id string) ([]engine.Event, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	if _, err := s.headOf(snap, id); err != nil {
		return nil, err
	}
	records, err := s.records(snap, id)
	if err != nil {
		return nil, err
	}
	return store.ReadHistory(id, records)
}

// HistoryRange returns the events of an execution's history after
// position after, at most limit of them (0 or less: all), and the number
// of events of the whole history. It reads the records from the newest
// that holds an event of the page backwards, only as far as the page's
// events and their documents need.
func (s *Store) HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error) {
	if err := s.begin(ctx); err != nil {
		return nil, 0, err
	}
	defer s.end()
	if after < 0 {
		return nil, 0, fmt.Errorf("execution %s: history after event %d: want 0 or more", id, after)
	}
	snap := s.snapshot()
	defer snap.Close()
	env, err := s.headOf(snap, id)
	if err != nil {
		return nil, 0, err
	}
	total, err := store.HistoryLength(id, env.head)
	if err != nil {
		return nil, 0, err
	}
	end := store.RangeEnd(after, limit, total)
	if end <= after {
		return nil, total, nil
	}
	upper := prefixEnd(under(kindHistory, id))
	if end < math.MaxInt64 {
		upper = numbered(kindHistory, id, uint64(end)+1)
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: under(kindHistory, id), UpperBound: upper})
	if err != nil {
		return nil, 0, s.dbErr("reading the history of execution "+id, err)
	}
	defer it.Close()
	valid := it.Last()
	next := func() ([]byte, error) {
		if !valid {
			return nil, it.Error()
		}
		v := bytes.Clone(it.Value())
		valid = it.Prev()
		return v, nil
	}
	events, err := store.ReadHistoryTail(id, after, end, next)
	return events, total, err
}

// checkpointRows reads an execution's checkpoint rows, by name.
func (s *Store) checkpointRows(r pebble.Reader, id string) ([]store.CheckpointWrite, error) {
	var out []store.CheckpointWrite
	err := scan(r, under(kindCheckpoint, id), func(k, v []byte) error {
		cw, err := decodeRow(id, string(k), v)
		out = append(out, cw)
		return err
	})
	return out, err
}

// VerifyHistory checks an execution's history, its head and its
// checkpoints, all read from one snapshot.
func (s *Store) VerifyHistory(ctx context.Context, id string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	env, err := s.headOf(snap, id)
	if err != nil {
		return err
	}
	records, err := s.records(snap, id)
	if err != nil {
		return err
	}
	if err := store.VerifyHistory(id, env.head, records); err != nil {
		return err
	}
	cps, err := s.checkpointRows(snap, id)
	if err != nil {
		return err
	}
	return store.VerifyCheckpoints(id, records, cps)
}

// Checkpoint returns the named checkpoint of an execution, its document
// decoded and verified; engine.ErrNotFound when there is none. Its row is
// checked against the history (store.VerifyCheckpoints).
func (s *Store) Checkpoint(ctx context.Context, id, name string) (*engine.Checkpoint, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	if _, err := s.headOf(snap, id); err != nil {
		return nil, err
	}
	notFound := fmt.Errorf("execution %s checkpoint %q: %w", id, name, engine.ErrNotFound)
	if !nameOK(name) {
		return nil, notFound
	}
	raw, ok, err := get(snap, pair(kindCheckpoint, id, name))
	switch {
	case err != nil:
		return nil, s.dbErr(fmt.Sprintf("reading execution %s checkpoint %q", id, name), err)
	case !ok:
		return nil, notFound
	}
	cw, err := decodeRow(id, name, raw)
	if err != nil {
		return nil, err
	}
	records, err := s.records(snap, id)
	if err != nil {
		return nil, err
	}
	if err := store.VerifyCheckpoints(id, records, []store.CheckpointWrite{cw}); err != nil {
		return nil, err
	}
	blob, err := store.HashBytes(cw.Blob)
	if err != nil {
		return nil, fmt.Errorf("execution %s checkpoint %q: %w", id, name, err)
	}
	snapshot, found, err := get(snap, append([]byte{kindBlob}, blob...))
	if err != nil {
		return nil, s.dbErr(fmt.Sprintf("reading execution %s checkpoint %q", id, name), err)
	}
	return s.rec.LoadCheckpoint(id, name, cw.Record, snapshot, found)
}

// ListCheckpoints returns an execution's checkpoints without their
// documents, oldest first, each checked against the history.
func (s *Store) ListCheckpoints(ctx context.Context, id string) ([]*engine.Checkpoint, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	if _, err := s.headOf(snap, id); err != nil {
		return nil, err
	}
	cws, err := s.checkpointRows(snap, id)
	if err != nil {
		return nil, err
	}
	out := make([]*engine.Checkpoint, 0, len(cws))
	if len(cws) == 0 {
		return out, nil
	}
	records, err := s.records(snap, id)
	if err != nil {
		return nil, err
	}
	if err := store.VerifyCheckpoints(id, records, cws); err != nil {
		return nil, err
	}
	for i := range cws {
		cp, err := store.CheckpointInfo(id, cws[i].Name, cws[i].Record)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	store.SortCheckpoints(out)
	return out, nil
}

// Due returns the WAITING executions whose WakeAt is at or before now,
// earliest first (then by id), from the Due index.
func (s *Store) Due(ctx context.Context, now time.Time) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	var out []string
	upper := binary.BigEndian.AppendUint64([]byte{kindDue}, uint64(store.TimeKey(now)+2))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindDue}, UpperBound: upper})
	if err != nil {
		return nil, s.dbErr("finding due executions", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key()[9:]))
	}
	if err := it.Close(); err != nil {
		return nil, s.dbErr("finding due executions", err)
	}
	return out, nil
}

// Unfinished returns the RUNNING executions, by id.
func (s *Store) Unfinished(ctx context.Context) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	var out []string
	err := scan(s.db, []byte{kindRunning}, func(k, _ []byte) error {
		out = append(out, string(k))
		return nil
	})
	if err != nil {
		return nil, s.dbErr("finding running executions", err)
	}
	return out, nil
}

// List returns summaries of the executions, newest first, walking the
// List index backwards from the cursor.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.Summary, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	upper := []byte{kindList + 1}
	if opts.After != "" {
		env, err := s.headOf(snap, opts.After)
		if errors.Is(err, engine.ErrNotFound) {
			return nil, store.CursorError(opts.After)
		}
		if err != nil {
			return nil, err
		}
		sum, err := s.summary(snap, opts.After, env)
		if err != nil {
			return nil, err
		}
		upper = timeIDKey(kindList, store.TimeKey(sum.StartedAt), opts.After)
	}
	if !opts.StartedBefore.IsZero() {
		if b := binary.BigEndian.AppendUint64([]byte{kindList}, uint64(store.TimeKey(opts.StartedBefore))); bytes.Compare(b, upper) < 0 {
			upper = b
		}
	}
	lower := []byte{kindList}
	if !opts.StartedAfter.IsZero() {
		lower = binary.BigEndian.AppendUint64([]byte{kindList}, uint64(store.TimeKey(opts.StartedAfter))+1)
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, s.dbErr("listing executions", err)
	}
	defer it.Close()
	var out []store.Summary
	for ok := it.Last(); ok && (opts.Limit <= 0 || len(out) < opts.Limit); ok = it.Prev() {
		id := string(it.Key()[9:])
		env, err := s.headOf(snap, id)
		if err != nil {
			return nil, err
		}
		if opts.Status != "" && env.status != opts.Status {
			continue
		}
		sum, err := s.summary(snap, id, env)
		if err != nil {
			return nil, err
		}
		if opts.MachineName != "" && sum.MachineName != opts.MachineName {
			continue
		}
		out = append(out, sum)
	}
	if err := it.Error(); err != nil {
		return nil, s.dbErr("listing executions", err)
	}
	return out, nil
}

// summary is List's summary of an execution whose head is env.
func (s *Store) summary(r pebble.Reader, id string, env *envelope) (store.Summary, error) {
	spec, _, err := get(r, key(kindSpec, id))
	if err != nil {
		return store.Summary{}, s.dbErr("reading execution "+id, err)
	}
	return store.ExecutionSummary(id, spec, env.head)
}

// Definition returns the definition text stored under hash.
func (s *Store) Definition(ctx context.Context, hash string) ([]byte, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	def, ok, err := get(s.db, key(kindDefinition, hash))
	switch {
	case err != nil:
		return nil, s.dbErr("reading definition "+hash, err)
	case !ok:
		return nil, fmt.Errorf("definition %s: %w", hash, engine.ErrNotFound)
	}
	return def, nil
}

// GC removes the expired checkpoints (but the newest of a RUNNING or
// WAITING execution), the snapshot blobs no checkpoint refers to and the
// expired agent memory, in one batch.
func (s *Store) GC(ctx context.Context, now time.Time) (store.GCReport, error) {
	if err := s.begin(ctx); err != nil {
		return store.GCReport{}, err
	}
	defer s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	var rep store.GCReport
	type row struct {
		key     []byte
		name    string
		created time.Time
		expires time.Time
		blob    string
	}
	byExec := make(map[string][]row)
	var order []string
	err := scan(s.db, []byte{kindCheckpoint}, func(k, v []byte) error {
		id, name, _ := bytes.Cut(k, []byte{0})
		cw, err := decodeRow(string(id), string(name), v)
		if err != nil {
			return err
		}
		if _, ok := byExec[string(id)]; !ok {
			order = append(order, string(id))
		}
		byExec[string(id)] = append(byExec[string(id)], row{append([]byte{kindCheckpoint}, k...), cw.Name, cw.CreatedAt, cw.ExpiresAt, cw.Blob})
		return nil
	})
	if err != nil {
		return rep, s.dbErr("gc", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	referenced := make(map[string]bool)
	for _, id := range order {
		rows := byExec[id]
		env, err := s.headOf(s.db, id)
		if err != nil {
			return rep, err
		}
		newest := 0
		for i, r := range rows {
			if c := r.created.Compare(rows[newest].created); c > 0 || c == 0 && r.name > rows[newest].name {
				newest = i
			}
		}
		for i, r := range rows {
			if r.expires.IsZero() || r.expires.After(now) || i == newest && store.Live(env.status) {
				referenced[r.blob] = true
				continue
			}
			b.Delete(r.key, nil)
			rep.Checkpoints++
		}
	}
	err = scan(s.db, []byte{kindBlob}, func(k, _ []byte) error {
		if !referenced[fmt.Sprintf("%x", k)] {
			b.Delete(append([]byte{kindBlob}, k...), nil)
			rep.Blobs++
		}
		return nil
	})
	if err != nil {
		return rep, s.dbErr("gc", err)
	}
	err = scan(s.db, []byte{kindMemory}, func(k, v []byte) error {
		ns, mk, _ := bytes.Cut(k, []byte{0})
		e, err := store.DecodeMemory(string(ns), string(mk), v, now)
		if err != nil {
			return err
		}
		if e == nil {
			b.Delete(append([]byte{kindMemory}, k...), nil)
			rep.Memory++
		}
		return nil
	})
	if err != nil {
		return rep, s.dbErr("gc", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return store.GCReport{}, s.dbErr("gc", err)
	}
	return rep, nil
}

// ReadMemory returns the live entries of keys in namespace.
func (s *Store) ReadMemory(ctx context.Context, namespace string, keys []string, now time.Time) (map[string]*engine.MemoryEntry, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	snap := s.snapshot()
	defer snap.Close()
	out := make(map[string]*engine.MemoryEntry, len(keys))
	if !nameOK(namespace) {
		return out, nil
	}
	for _, k := range keys {
		if !nameOK(k) {
			continue
		}
		v, ok, err := get(snap, pair(kindMemory, namespace, k))
		if err != nil {
			return nil, s.dbErr("reading agent memory", err)
		}
		if !ok {
			continue
		}
		e, err := store.DecodeMemory(namespace, k, v, now)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out[k] = e
		}
	}
	return out, nil
}

// ListMemory returns the live entries of namespace ("" for all), by
// namespace and key.
func (s *Store) ListMemory(ctx context.Context, namespace string, now time.Time) ([]*engine.MemoryEntry, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	prefix := []byte{kindMemory}
	if namespace != "" {
		if !nameOK(namespace) {
			return nil, nil
		}
		prefix = under(kindMemory, namespace)
	}
	var out []*engine.MemoryEntry
	err := scan(s.db, prefix, func(k, v []byte) error {
		full := append(bytes.Clone(prefix[1:]), k...)
		ns, mk, _ := bytes.Cut(full, []byte{0})
		e, err := store.DecodeMemory(string(ns), string(mk), v, now)
		if e != nil {
			out = append(out, e)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing agent memory: %w", err)
	}
	slices.SortStableFunc(out, func(a, b *engine.MemoryEntry) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out, nil
}
