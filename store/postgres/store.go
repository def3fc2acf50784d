package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// The store. A DB keeps the records package store encodes (store.Records),
// the same bytes as Bolt's, in the tables of the schema, the history
// records compressed (records.go); the columns beside them are what
// queries filter and order on.
//
// A commit is one round trip: one batch of statements, which PostgreSQL
// runs as one implicit transaction (all of it or nothing). It applies the
// commit to the execution's head as this process last wrote it (headCache)
// and its first statement swaps the head only if it is still that one
// (commit_seq unchanged); when it is not (another process committed to
// the execution, or the head was not cached), the batch fails, the head
// is read and the commit applied again. Commits of different executions
// share nothing but the pool: they run on as many connections at once,
// and PostgreSQL's group commit shares their WAL flushes.

var _ store.Store = (*DB)(nil)

// SQLSTATE codes aslrun_refuse raises (migration 0002).
const (
	codeFenced   = "AR001" // the lease's epoch is not the commit's
	codeConflict = "AR002" // the head (or a memory record) changed since it was read
)

// maxConflicts bounds the times a commit is applied again after finding
// its execution's head changed.
const maxConflicts = 16

// maxCachedHeads bounds the head cache; it is emptied when full.
const maxCachedHeads = 4096

// cachedHead is an execution's head as this process last wrote it.
type cachedHead struct {
	head []byte
	seq  int64
}

// headCache holds the heads this process wrote.
type headCache struct {
	mu    sync.Mutex
	heads map[string]cachedHead
}

func (c *headCache) get(id string) (cachedHead, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.heads[id]
	return h, ok
}

func (c *headCache) put(id string, h cachedHead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heads == nil || len(c.heads) >= maxCachedHeads {
		c.heads = make(map[string]cachedHead)
	}
	c.heads[id] = h
}

func (c *headCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.heads, id)
}

// Fence makes every later commit of l's execution check that l is still
// its lease, in the commit's transaction: once another process took the
// lease over, the commit is refused (a *FencedError) and writes nothing.
func (db *DB) Fence(l Lease) {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	if db.fences == nil {
		db.fences = make(map[string]int64)
	}
	db.fences[l.Execution] = l.Epoch
}

// Unfence stops checking a lease in the commits of an execution (its
// lease was released).
func (db *DB) Unfence(execution string) {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	delete(db.fences, execution)
}

// fence returns the epoch commits of an execution check, 0 for none.
func (db *DB) fence(execution string) int64 {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	return db.fences[execution]
}

// check returns ErrClosed after Close, else ctx's error.
func (db *DB) check(ctx context.Context) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// dbErr wraps an error of the database with its URL.
func (db *DB) dbErr(doing string, err error) error {
	return &dbError{msg: fmt.Sprintf("database %s: %s: %v", db.url, doing, err), err: err}
}

// dbError is an error of the database or of the connection to it, as
// dbErr words it.
type dbError struct {
	msg string
	err error
}

func (e *dbError) Error() string { return e.msg }
func (e *dbError) Unwrap() error { return e.err }

// sqlState returns the SQLSTATE of a database error, "" for another.
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// storable reports whether s can be a text value: valid UTF-8 without
// NUL. A name that is not can name nothing stored.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// nsOrNull is TimeKey(t), NULL for the zero time.
func nsOrNull(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := store.TimeKey(t)
	return &n
}

// Create records a new execution; ErrExists when the id is taken. An
// execution created without this process holding its lease (an
// execution left for any server to claim) wakes the processes serving the
// database (Wakes), in the same transaction.
func (db *DB) Create(ctx context.Context, e *engine.Execution) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	n, err := store.PrepareCreate(e)
	if err != nil {
		return fmt.Errorf("create execution %s: %w", e.ID, err)
	}
	b := &pgx.Batch{}
	if n.Definition != nil && !db.defs.has(n.DefinitionHash) {
		b.Queue(`INSERT INTO definitions (hash, body) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, n.DefinitionHash, n.Definition)
	}
	var def *string
	if n.DefinitionHash != "" {
		def = &n.DefinitionHash
	}
	var parent *string
	if n.Summary.Parent != "" {
		parent = &n.Summary.Parent
	}
	s := &n.Summary
	b.Queue(`INSERT INTO executions (id, machine_name, definition_hash, status, started_ns, stopped_ns, wake_ns, waiting_for, parent, error, history_dropped, spec, head)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		n.ID, s.MachineName, def, string(s.Status), store.TimeKey(s.StartedAt), nsOrNull(s.StoppedAt), nsOrNull(s.WakeAt), s.WaitingFor, parent, s.Error, e.HistoryDropped, n.Spec, n.Head)
	if len(n.Scopes) > 0 {
		keys, values := scopeArrays(n.Scopes)
		b.Queue(`INSERT INTO scopes (execution, key, body) SELECT $1, k, v FROM unnest($2::text[], $3::bytea[]) AS t(k, v)`, n.ID, keys, values)
	}
	if db.fence(n.ID) == 0 {
		// Created without its lease: queued for whichever process claims
		// it, which this wakes while the queue is short (wakeQueued).
		b.Queue(queueStart, db.wakeCh, n.ID, store.TimeKey(s.StartedAt), shortQueue)
	}
	err = db.pool.SendBatch(ctx, b).Close()
	switch {
	case sqlState(err) == "23505":
		return fmt.Errorf("create execution %s: %w", n.ID, engine.ErrExists)
	case err != nil:
		return db.dbErr("create execution "+n.ID, err)
	}
	db.heads.put(n.ID, cachedHead{head: n.Head})
	if n.Definition != nil {
		db.defs.add(n.DefinitionHash)
	}
	return nil
}

// knownDefinitions are the hashes of definitions this process stored (or
// found stored): definitions are never deleted, so a start of one of them
// need not store it again. It is safe for concurrent use.
type knownDefinitions struct {
	mu     sync.Mutex
	hashes map[string]struct{}
}

// maxKnownDefinitions bounds knownDefinitions; past it, it starts afresh.
const maxKnownDefinitions = 4096

func (k *knownDefinitions) has(hash string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.hashes[hash]
	return ok
}

func (k *knownDefinitions) add(hash string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.hashes == nil || len(k.hashes) >= maxKnownDefinitions {
		k.hashes = make(map[string]struct{})
	}
	k.hashes[hash] = struct{}{}
}

// queueStart queues execution $2, started at $3 (Unix ns), in the ready
// queue, and notifies channel $1 of it unless the queue held more than $4
// executions already: a server with free slots was woken by the starts
// that made the queue that long, and the servers that are full claim from
// it whenever a run of theirs ends (see engine.Serve). On a long queue, a
// wake per start only made every server answer a wake-up its slots could
// not use (at 4 servers, a fifth of the database's work). Polling remains
// the fallback for a wake-up lost to a race.
const queueStart = `WITH q AS (INSERT INTO ready (execution, since) VALUES ($2, $3) RETURNING execution)
SELECT pg_notify($1, q.execution) FROM q WHERE (SELECT count(*) FROM (SELECT 1 FROM ready LIMIT $4 + 1) r) <= $4`

// shortQueue is the length of the ready queue up to which a start left to
// any server wakes them all (queueStart).
const shortQueue = 8

// scopeArrays returns the keys and values of scope records.
func scopeArrays(ss []store.ScopeRecord) ([]string, [][]byte) {
	keys, values := make([]string, len(ss)), make([][]byte, len(ss))
	for i, s := range ss {
		keys[i], values[i] = s.Key, s.Value
	}
	return keys, values
}

// Commit applies one step of an execution atomically and durably, in one
// transaction, fenced when the execution's lease was given to Fence.
func (db *DB) Commit(ctx context.Context, c *engine.Commit) error {
	err := db.commit(ctx, c)
	db.noteCommit(c.Execution, err == nil)
	return err
}

// commit is Commit.
func (db *DB) commit(ctx context.Context, c *engine.Commit) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	id := c.Execution
	cached, ok := db.heads.get(id)
	if !ok {
		db.rec.Forget(id)
	}
	p, err := db.rec.PrepareCommit(c)
	if err != nil {
		return fmt.Errorf("commit execution %s: %w", id, err)
	}
	epoch := db.fence(id)
	// The commit that ends an execution this process holds also releases
	// its lease: one transaction less per execution.
	releases := epoch > 0 && db.releasesAtEnd(id)
	for attempt := 0; ; attempt++ {
		var history [][]byte
		var firsts []int64
		if !ok || p.RollsBack() {
			if cached, history, firsts, err = db.readHead(ctx, id, p.RollsBack()); err != nil {
				return fmt.Errorf("commit execution %s: %w", id, err)
			}
		}
		a, err := p.Apply(cached.head, history, func(ns, key string) ([]byte, error) { return db.memoryRecord(ctx, ns, key) })
		if err != nil {
			return fmt.Errorf("commit execution %s: %w", id, err)
		}
		if err := db.packCommit(id, a); err != nil {
			return fmt.Errorf("commit execution %s: %w", id, err)
		}
		seq := cached.seq
		err = db.sendCommit(ctx, len(a.MemoryRead) > 0, func(b *pgx.Batch) { queueCommit(b, id, seq, epoch, releases, c.DropHistory, a, firsts) })
		code := sqlState(err)
		if err != nil && code == "" {
			// The batch failed outside the database (the connection was
			// cut, ctx ended): it may have committed before the answer was
			// lost. The run takes an error for "nothing was written" and
			// keeps the commit's events for its next commit, so the
			// outcome must be known: read it back.
			switch applied, cerr := db.commitApplied(ctx, id, cached.seq, a.Head); {
			case cerr != nil:
				// Unknown: refuse the execution's later commits here,
				// so that none writes these events a second time; the
				// next run of it (after the lease is released) loads
				// what the database holds.
				db.doubt(id)
				db.heads.drop(id)
				return db.dbErr("commit execution "+id+" (its outcome is unknown: "+cerr.Error()+")", err)
			case applied:
				err = nil
			}
		}
		switch {
		case err == nil:
			if a.Status.Ended() {
				db.heads.drop(id)
				if releases {
					db.noteEnded(id)
				}
			} else {
				db.heads.put(id, cachedHead{head: a.Head, seq: cached.seq + 1})
			}
			db.rec.Committed(p)
			return nil
		case code == codeFenced && epoch == doubtEpoch:
			db.heads.drop(id)
			return fmt.Errorf("commit execution %s: %w: the outcome of an earlier commit of it is unknown (its connection was lost): its run stops, and the next one goes on from what the database holds", id, ErrFenced)
		case code == codeFenced:
			db.heads.drop(id)
			return fmt.Errorf("commit execution %s: %w", id, db.fenced(context.WithoutCancel(ctx), db.pool, id, epoch))
		case outboxConflict(err) != nil:
			db.heads.drop(id)
			return fmt.Errorf("commit execution %s: %w", id, outboxConflict(err))
		case code == codeConflict && attempt < maxConflicts:
			// Another process committed to the execution since this one
			// last did: what the execution's history holds is read again.
			db.heads.drop(id)
			db.rec.Forget(id)
			if p, err = db.rec.PrepareCommit(c); err != nil {
				return fmt.Errorf("commit execution %s: %w", id, err)
			}
			ok = false
		default:
			db.heads.drop(id)
			return db.dbErr("commit execution "+id, err)
		}
	}
}

// packCommit replaces the history records of a, the commit's and those
// a rollback changed, with their stored form (recordCodec.pack).
func (db *DB) packCommit(id string, a *store.AppliedCommit) error {
	var err error
	if a.History, err = db.hist.pack(id, a.History); err != nil {
		return err
	}
	for i, rec := range a.Superseded {
		if a.Superseded[i], err = db.hist.pack(id, rec); err != nil {
			return err
		}
	}
	return nil
}

// appliedChecks bounds the attempts to learn a commit's outcome, and
// appliedWait is the pause between them (the pool connects again).
const (
	appliedChecks = 5
	appliedWait   = 200 * time.Millisecond
)

// commitApplied reports whether the commit that swaps the head of commit seq
// seq for head was written: only the lease's holder commits, so the
// head that follows seq being head is that commit.
func (db *DB) commitApplied(ctx context.Context, id string, seq int64, head []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appliedChecks*(appliedWait+time.Second))
	defer cancel()
	var err error
	for range appliedChecks {
		var cur []byte
		var curSeq int64
		err = db.pool.QueryRow(ctx, `SELECT head, commit_seq FROM executions WHERE id = $1`, id).Scan(&cur, &curSeq)
		if err == nil {
			return curSeq == seq+1 && bytes.Equal(cur, head), nil
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		time.Sleep(appliedWait)
	}
	return false, err
}

// doubtEpoch is the fence of an execution whose last commit's outcome is
// unknown: no lease has it, so every later commit is refused as fenced
// off until the lease is released (Unfence).
const doubtEpoch = -1

// doubt fences off the commits of an execution (doubtEpoch).
func (db *DB) doubt(execution string) {
	db.fenceMu.Lock()
	defer db.fenceMu.Unlock()
	if db.fences == nil {
		db.fences = make(map[string]int64)
	}
	db.fences[execution] = doubtEpoch
}

// readHead reads an execution's head and, with history, its history
// records and their first events, in one statement (one snapshot).
func (db *DB) readHead(ctx context.Context, id string, history bool) (cachedHead, [][]byte, []int64, error) {
	var h cachedHead
	var records [][]byte
	var firsts []int64
	var err error
	if history {
		err = db.pool.QueryRow(ctx, `SELECT head, commit_seq,
  ARRAY(SELECT body FROM history_records WHERE execution = $1 ORDER BY first_event),
  ARRAY(SELECT first_event FROM history_records WHERE execution = $1 ORDER BY first_event)
FROM executions WHERE id = $1`, id).Scan(&h.head, &h.seq, &records, &firsts)
	} else {
		err = db.pool.QueryRow(ctx, `SELECT head, commit_seq FROM executions WHERE id = $1`, id).Scan(&h.head, &h.seq)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return h, nil, nil, engine.ErrNotFound
	case err != nil:
		return h, nil, nil, db.dbErr("reading execution "+id, err)
	}
	if err := db.hist.unpackAll(id, records); err != nil {
		return h, nil, nil, err
	}
	return h, records, firsts, nil
}

// memoryRecord reads an agent memory record, nil when there is none.
func (db *DB) memoryRecord(ctx context.Context, namespace, key string) ([]byte, error) {
	var v []byte
	err := db.pool.QueryRow(ctx, `SELECT value FROM agent_memory WHERE namespace = $1 AND key = $2`, namespace, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.dbErr("reading agent memory", err)
	}
	return v, nil
}

// The statements of a commit's batch besides aslrun_commit (migration
// 0012), which writes the rest.
const (
	commitQuery = `SELECT aslrun_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`
	checkMemory = `SELECT aslrun_refuse('AR002', 'agent memory changed since it was read')
WHERE (SELECT value FROM agent_memory WHERE namespace = $1 AND key = $2 FOR UPDATE) IS DISTINCT FROM $3::bytea`
)

// queueCommit queues in b the statements that write a applied to the
// head of commit seq seq of execution id, fenced by epoch (0: not fenced),
// releasing the lease when it ends the execution and release is set, and
// dropping the execution's history (its records and checkpoints) first
// when drop is set; firsts are the first events of the history records a
// rollback was applied to.
func queueCommit(b *pgx.Batch, id string, seq, epoch int64, release, drop bool, a *store.AppliedCommit, firsts []int64) {
	lastHash, _ := store.HashBytes(a.LastHash)
	var put, del []store.ScopeRecord
	for _, s := range a.Scopes {
		if s.Value == nil {
			del = append(del, s)
		} else {
			put = append(put, s)
		}
	}
	delKeys, _ := scopeArrays(del)
	putKeys, putBodies := scopeArrays(put)
	var first *int64
	if a.History != nil {
		first = &a.FirstEvent
	}
	b.Queue(commitQuery, id, seq, epoch, a.Head, string(a.Status), nsOrNull(a.StoppedAt), nsOrNull(a.WakeAt), a.WaitingFor, a.Error,
		a.Events, lastHash, first, a.History, a.DropScopes, delKeys, putKeys, putBodies, release && a.Status.Ended(), drop)
	for _, m := range a.MemoryRead {
		b.Queue(checkMemory, m.Namespace, m.Key, m.Record)
	}
	for i, rec := range a.Superseded {
		b.Queue(`UPDATE history_records SET body = $3 WHERE execution = $1 AND first_event = $2`, id, firsts[i], rec)
	}
	if cp := a.Checkpoint; cp != nil {
		blob, _ := store.HashBytes(cp.Blob)
		doc, _ := store.HashBytes(cp.DocHash)
		codec, format, _ := store.SnapshotCodec(cp.Snapshot)
		var event *int64
		if cp.Event > 0 {
			event = &cp.Event
		}
		// A snapshot blob may be shared: GC, which deletes the blobs no
		// checkpoint names, waits for the commits that name one (and
		// they for it), or it could delete the blob this commit found
		// there and names.
		b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, snapshotLock)
		b.Queue(`INSERT INTO snapshot_blobs (key, codec, format, body) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING`, blob, string(codec), format, cp.Snapshot)
		b.Queue(`INSERT INTO checkpoints (execution, name, blob, doc_hash, event_seq, created_ns, expires_ns, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (execution, name) DO UPDATE SET blob = EXCLUDED.blob, doc_hash = EXCLUDED.doc_hash, event_seq = EXCLUDED.event_seq,
  created_ns = EXCLUDED.created_ns, expires_ns = EXCLUDED.expires_ns, body = EXCLUDED.body`,
			id, cp.Name, blob, doc, event, store.TimeKey(cp.CreatedAt), nsOrNull(cp.ExpiresAt), cp.Record)
	}
	if len(a.Namespaces) > 0 {
		b.Queue(`INSERT INTO memory_namespaces (execution, namespace) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, id, a.Namespaces)
	}
	for _, m := range a.Memory {
		if m.Record == nil {
			b.Queue(`DELETE FROM agent_memory WHERE namespace = $1 AND key = $2`, m.Namespace, m.Key)
			continue
		}
		b.Queue(`INSERT INTO agent_memory (namespace, key, value, updated_ns, expires_ns, execution) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, updated_ns = EXCLUDED.updated_ns, expires_ns = EXCLUDED.expires_ns, execution = EXCLUDED.execution`,
			m.Namespace, m.Key, m.Record, store.TimeKey(m.UpdatedAt), nsOrNull(m.ExpiresAt), m.Execution)
	}
	queueOutbox(b, a.Outbox)
}

// Load returns an execution as last committed; ErrNotFound when there is
// none. It reads it in one statement, so as of one commit.
func (db *DB) Load(ctx context.Context, id string) (*engine.Execution, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(id) {
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	if r := db.claimedLoad(id); r != nil {
		return loadedExecution(id, r.spec, r.head, r.def, r.keys, r.values, r.namespaces)
	}
	var spec, head, def []byte
	var keys, namespaces []string
	var values [][]byte
	err := db.pool.QueryRow(ctx, `SELECT e.spec, e.head, d.body,
  ARRAY(SELECT key FROM scopes WHERE execution = e.id ORDER BY key),
  ARRAY(SELECT body FROM scopes WHERE execution = e.id ORDER BY key),
  ARRAY(SELECT namespace FROM memory_namespaces WHERE execution = e.id ORDER BY namespace)
FROM executions e LEFT JOIN definitions d ON d.hash = e.definition_hash WHERE e.id = $1`, id).Scan(&spec, &head, &def, &keys, &values, &namespaces)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	case err != nil:
		return nil, db.dbErr("loading execution "+id, err)
	}
	if len(keys) != len(values) {
		return nil, db.dbErr("loading execution "+id, fmt.Errorf("%d scope keys, %d scopes", len(keys), len(values)))
	}
	return loadedExecution(id, spec, head, def, keys, values, namespaces)
}

// loadedExecution decodes an execution read as Load reads it (keys and
// values are its scopes, as many of each).
func loadedExecution(id string, spec, head, def []byte, keys []string, values [][]byte, namespaces []string) (*engine.Execution, error) {
	scopes := make([]store.ScopeRecord, len(keys))
	for i := range keys {
		scopes[i] = store.ScopeRecord{Key: keys[i], Value: values[i]}
	}
	return store.LoadExecution(id, spec, head, def, scopes, namespaces)
}

// historyOf reads an execution's head and history records in one
// statement.
func (db *DB) historyOf(ctx context.Context, id string) ([]byte, [][]byte, error) {
	if !storable(id) {
		return nil, nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	var head []byte
	var records [][]byte
	err := db.pool.QueryRow(ctx, `SELECT head, ARRAY(SELECT body FROM history_records WHERE execution = $1 ORDER BY first_event)
FROM executions WHERE id = $1`, id).Scan(&head, &records)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	case err != nil:
		return nil, nil, db.dbErr("reading the history of execution "+id, err)
	}
	if err := db.hist.unpackAll(id, records); err != nil {
		return nil, nil, err
	}
	return head, records, nil
}

// History returns an execution's history in order.
func (db *DB) History(ctx context.Context, id string) ([]engine.Event, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	_, records, err := db.historyOf(ctx, id)
	if err != nil {
		return nil, err
	}
	return store.ReadHistory(id, records)
}

// VerifyHistory checks an execution's history, its head and its
// checkpoints, all read in one statement (as of one commit): every
// event's hash and link (ErrTampered names the first event that does not
// verify), then the head and the checkpoints against the chain (an
// *IntegrityError names the record and the field; store.VerifyCheckpoints
// says what a checkpoint's row must agree with).
func (db *DB) VerifyHistory(ctx context.Context, id string) error {
	if err := db.check(ctx); err != nil {
		return err
	}
	head, records, cps, err := db.verifiable(ctx, id)
	if err != nil {
		return err
	}
	if err := store.VerifyHistory(id, head, records); err != nil {
		return err
	}
	return store.VerifyCheckpoints(id, records, cps)
}

// verifiable reads an execution's head, its history records and its
// checkpoints' rows (without their snapshots) in one statement.
func (db *DB) verifiable(ctx context.Context, id string) ([]byte, [][]byte, []store.CheckpointWrite, error) {
	if !storable(id) {
		return nil, nil, nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	var head []byte
	var records, bodies, blobs, docs [][]byte
	var names []string
	var events, created []int64
	var expires []*int64
	err := db.pool.QueryRow(ctx, `SELECT head, ARRAY(SELECT body FROM history_records WHERE execution = $1 ORDER BY first_event),
  ARRAY(SELECT name FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT body FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT coalesce(event_seq, 0) FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT doc_hash FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT blob FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT created_ns FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT expires_ns FROM checkpoints WHERE execution = $1 ORDER BY name)
FROM executions WHERE id = $1`, id).Scan(&head, &records, &names, &bodies, &events, &docs, &blobs, &created, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil, nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	case err != nil:
		return nil, nil, nil, db.dbErr("reading the history and checkpoints of execution "+id, err)
	}
	if err := db.hist.unpackAll(id, records); err != nil {
		return nil, nil, nil, err
	}
	n := len(names)
	if len(bodies) != n || len(events) != n || len(docs) != n || len(blobs) != n || len(created) != n || len(expires) != n {
		return nil, nil, nil, db.dbErr("reading the checkpoints of execution "+id, fmt.Errorf("%d checkpoint names, columns of %d, %d, %d, %d, %d, %d rows",
			n, len(bodies), len(events), len(docs), len(blobs), len(created), len(expires)))
	}
	cps := make([]store.CheckpointWrite, n)
	for i, name := range names {
		row := checkpointRow{body: bodies[i], doc: docs[i], blob: blobs[i], event: events[i], created: created[i], expires: expires[i]}
		cps[i] = row.write(name)
	}
	return head, records, cps, nil
}

// Checkpoint returns the named checkpoint of an execution, its document
// decoded and verified; ErrNotFound when there is none. The checkpoint's
// row and the execution's history records are read in one statement (as
// of one commit), and the row is checked against the history as
// VerifyHistory checks it (store.VerifyCheckpoints): one that does not
// agree is an *IntegrityError naming the checkpoint and the field, and is
// not returned.
func (db *DB) Checkpoint(ctx context.Context, id, name string) (*engine.Checkpoint, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(id) || !storable(name) {
		return nil, fmt.Errorf("execution %s checkpoint %q: %w", id, name, engine.ErrNotFound)
	}
	var row checkpointRow
	var blob []byte
	var found bool
	var records [][]byte
	err := db.pool.QueryRow(ctx, `SELECT c.body, coalesce(c.event_seq, 0), c.doc_hash, c.blob, c.created_ns, c.expires_ns,
  b.body, b.key IS NOT NULL,
  ARRAY(SELECT h.body FROM history_records h WHERE h.execution = $1 ORDER BY h.first_event)
FROM checkpoints c LEFT JOIN snapshot_blobs b ON b.key = c.blob
WHERE c.execution = $1 AND c.name = $2`, id, name).Scan(&row.body, &row.event, &row.doc, &row.blob, &row.created, &row.expires, &blob, &found, &records)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("execution %s checkpoint %q: %w", id, name, engine.ErrNotFound)
	case err != nil:
		return nil, db.dbErr(fmt.Sprintf("reading execution %s checkpoint %q", id, name), err)
	}
	if err := db.hist.unpackAll(id, records); err != nil {
		return nil, err
	}
	cw := row.write(name)
	if err := store.VerifyCheckpoints(id, records, []store.CheckpointWrite{cw}); err != nil {
		return nil, err
	}
	return db.rec.LoadCheckpoint(id, name, cw.Record, blob, found)
}

// ListCheckpoints returns an execution's checkpoints without their
// documents, oldest first. Their rows and, when there are any, the
// execution's history records are read in one statement, and every row
// is checked against the history as Checkpoint checks one (the history
// is read once, not once a checkpoint).
func (db *DB) ListCheckpoints(ctx context.Context, id string) ([]*engine.Checkpoint, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(id) {
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	var names []string
	var bodies, docs, blobs, records [][]byte
	var events, created []int64
	var expires []*int64
	err := db.pool.QueryRow(ctx, `SELECT ARRAY(SELECT name FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT body FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT coalesce(event_seq, 0) FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT doc_hash FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT blob FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT created_ns FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT expires_ns FROM checkpoints WHERE execution = $1 ORDER BY name),
  ARRAY(SELECT h.body FROM history_records h WHERE h.execution = $1 AND EXISTS (SELECT 1 FROM checkpoints WHERE execution = $1) ORDER BY h.first_event)
FROM executions WHERE id = $1`, id).Scan(&names, &bodies, &events, &docs, &blobs, &created, &expires, &records)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	case err != nil:
		return nil, db.dbErr("listing the checkpoints of execution "+id, err)
	}
	if err := db.hist.unpackAll(id, records); err != nil {
		return nil, err
	}
	n := len(names)
	if len(bodies) != n || len(events) != n || len(docs) != n || len(blobs) != n || len(created) != n || len(expires) != n {
		return nil, db.dbErr("listing the checkpoints of execution "+id, fmt.Errorf("%d checkpoint names, columns of %d, %d, %d, %d, %d, %d rows",
			n, len(bodies), len(events), len(docs), len(blobs), len(created), len(expires)))
	}
	cws := make([]store.CheckpointWrite, n)
	for i, name := range names {
		row := checkpointRow{body: bodies[i], event: events[i], doc: docs[i], blob: blobs[i], created: created[i], expires: expires[i]}
		cws[i] = row.write(name)
	}
	if err := store.VerifyCheckpoints(id, records, cws); err != nil {
		return nil, err
	}
	out := make([]*engine.Checkpoint, 0, n)
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

// checkpointRow is a row of table checkpoints, without its execution and
// name: its record (body), the position of the event that binds it (0 for
// none), its document hash and snapshot key (raw), and its times (Unix
// nanoseconds; expires nil for none).
type checkpointRow struct {
	body, doc, blob []byte
	event, created  int64
	expires         *int64
}

// write returns the row of checkpoint name as Apply's CheckpointWrite
// gave it, for store.VerifyCheckpoints (without the snapshot).
func (r *checkpointRow) write(name string) store.CheckpointWrite {
	cw := store.CheckpointWrite{
		Name: name, Record: r.body, Event: r.event,
		DocHash: fmt.Sprintf("%x", r.doc), Blob: fmt.Sprintf("%x", r.blob),
		CreatedAt: time.Unix(0, r.created).UTC(),
	}
	if r.expires != nil {
		cw.ExpiresAt = time.Unix(0, *r.expires).UTC()
	}
	return cw
}

// ids runs a query of execution ids.
func (db *DB) ids(ctx context.Context, doing, query string, args ...any) ([]string, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, db.dbErr(doing, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, db.dbErr(doing, err)
	}
	return out, nil
}

// Due returns the WAITING executions whose WakeAt is at or before now,
// earliest first, but those a live process holds the lease of (a decision
// or a resume is being applied to them).
func (db *DB) Due(ctx context.Context, now time.Time) ([]string, error) {
	return db.ids(ctx, "finding due executions", `SELECT id FROM executions e
WHERE status = 'WAITING' AND wake_ns IS NOT NULL AND wake_ns <= $1 AND `+unleased+`
ORDER BY wake_ns, id`, store.TimeKey(now))
}

// Unfinished returns the RUNNING executions, by id, but those a live
// process holds the lease of (it is running them).
func (db *DB) Unfinished(ctx context.Context) ([]string, error) {
	return db.ids(ctx, "finding running executions", `SELECT id FROM executions e
WHERE status = 'RUNNING' AND `+unleased+` ORDER BY id`)
}

// unleased is the condition that no live process holds the lease of the
// execution e: it has none, or it was released, or it expired.
const unleased = `NOT EXISTS (SELECT 1 FROM leases l
WHERE l.execution = e.id AND l.owner <> '' AND l.expires_at > clock_timestamp())`

// List returns summaries of the executions, newest first, filtered in
// the database by the indexed columns.
func (db *DB) List(ctx context.Context, opts store.ListOptions) ([]store.Summary, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if opts.After != "" {
		if !storable(opts.After) {
			return nil, store.CursorError(opts.After)
		}
		var at int64
		err := db.pool.QueryRow(ctx, `SELECT started_ns FROM executions WHERE id = $1`, opts.After).Scan(&at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, store.CursorError(opts.After)
		case err != nil:
			return nil, db.dbErr("listing executions", err)
		}
		where = append(where, "(started_ns, id) < ("+arg(at)+", "+arg(opts.After)+")")
	}
	if opts.Status != "" {
		where = append(where, "status = "+arg(string(opts.Status)))
	}
	if opts.MachineName != "" {
		where = append(where, "machine_name = "+arg(opts.MachineName))
	}
	if !opts.StartedAfter.IsZero() {
		where = append(where, "started_ns > "+arg(store.TimeKey(opts.StartedAfter)))
	}
	if !opts.StartedBefore.IsZero() {
		where = append(where, "started_ns < "+arg(store.TimeKey(opts.StartedBefore)))
	}
	q := "SELECT id, spec, head FROM executions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY started_ns DESC, id DESC"
	if opts.Limit > 0 {
		q += " LIMIT " + arg(opts.Limit)
	}
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, db.dbErr("listing executions", err)
	}
	defer rows.Close()
	var out []store.Summary
	for rows.Next() {
		var id string
		var spec, head []byte
		if err := rows.Scan(&id, &spec, &head); err != nil {
			return nil, db.dbErr("listing executions", err)
		}
		s, err := store.ExecutionSummary(id, spec, head)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.dbErr("listing executions", err)
	}
	return out, nil
}

// Definition returns the definition text stored under hash.
func (db *DB) Definition(ctx context.Context, hash string) ([]byte, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if !storable(hash) {
		return nil, fmt.Errorf("definition %s: %w", hash, engine.ErrNotFound)
	}
	var def []byte
	err := db.pool.QueryRow(ctx, `SELECT body FROM definitions WHERE hash = $1`, hash).Scan(&def)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("definition %s: %w", hash, engine.ErrNotFound)
	case err != nil:
		return nil, db.dbErr("reading definition "+hash, err)
	}
	return def, nil
}

// snapshotLock is the key of the advisory lock GC holds while it deletes
// snapshot blobs, and commits naming a blob share ("aslrunsn").
const snapshotLock int64 = 0x61736c72756e736e

// GC removes the expired checkpoints (but not the newest of a RUNNING or
// WAITING execution), the snapshot blobs no checkpoint refers to and the
// expired agent memory, in one transaction.
func (db *DB) GC(ctx context.Context, now time.Time) (store.GCReport, error) {
	if err := db.check(ctx); err != nil {
		return store.GCReport{}, err
	}
	at := store.TimeKey(now)
	b := &pgx.Batch{}
	// The batch is one transaction: the lock holds off the commits that
	// name a snapshot blob until the blobs no checkpoint names are gone.
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, snapshotLock)
	b.Queue(`WITH newest AS (
  SELECT DISTINCT ON (c.execution) c.execution, c.name FROM checkpoints c JOIN executions e ON e.id = c.execution
  WHERE e.status IN ('RUNNING', 'WAITING') ORDER BY c.execution, c.created_ns DESC, c.name DESC)
DELETE FROM checkpoints c WHERE c.expires_ns IS NOT NULL AND c.expires_ns <= $1
  AND NOT EXISTS (SELECT 1 FROM newest n WHERE n.execution = c.execution AND n.name = c.name)`, at)
	b.Queue(`DELETE FROM snapshot_blobs b WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.blob = b.key)`)
	b.Queue(`DELETE FROM agent_memory WHERE expires_ns IS NOT NULL AND expires_ns <= $1`, at)
	br := db.pool.SendBatch(ctx, b)
	var rep store.GCReport
	if _, err := br.Exec(); err != nil {
		br.Close()
		return store.GCReport{}, db.dbErr("gc", err)
	}
	for _, n := range []*int{&rep.Checkpoints, &rep.Blobs, &rep.Memory} {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return store.GCReport{}, db.dbErr("gc", err)
		}
		*n = int(tag.RowsAffected())
	}
	if err := br.Close(); err != nil {
		return store.GCReport{}, db.dbErr("gc", err)
	}
	return rep, nil
}

// ReadMemory returns the live entries of keys in namespace.
func (db *DB) ReadMemory(ctx context.Context, namespace string, keys []string, now time.Time) (map[string]*engine.MemoryEntry, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT namespace, key, value FROM agent_memory WHERE namespace = $1 AND key = ANY($2::text[])`, namespace, keys)
	if err != nil {
		return nil, db.dbErr("reading agent memory", err)
	}
	es, err := db.memoryEntries(rows, now)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*engine.MemoryEntry, len(es))
	for _, e := range es {
		out[e.Key] = e
	}
	return out, nil
}

// MemoryFingerprint returns a fingerprint of namespace's entries that
// changes when any is written or removed, by any server
// (engine.MemoryFingerprinter): their count and the sum of their rows'
// transaction ids, read without their values.
func (db *DB) MemoryFingerprint(ctx context.Context, namespace string) (string, error) {
	if err := db.check(ctx); err != nil {
		return "", err
	}
	var n, sum int64
	if err := db.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(xmin::text::bigint), 0) FROM agent_memory WHERE namespace = $1`, namespace).Scan(&n, &sum); err != nil {
		return "", db.dbErr("reading agent memory", err)
	}
	return fmt.Sprintf("%d:%d", n, sum), nil
}

// ListMemory returns the live entries of namespace ("" for all), by
// namespace and key.
func (db *DB) ListMemory(ctx context.Context, namespace string, now time.Time) ([]*engine.MemoryEntry, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT namespace, key, value FROM agent_memory WHERE $1 = '' OR namespace = $1 ORDER BY namespace, key`, namespace)
	if err != nil {
		return nil, db.dbErr("listing agent memory", err)
	}
	return db.memoryEntries(rows, now)
}

// memoryEntries decodes rows of namespace, key and record, leaving out the
// entries expired at now.
func (db *DB) memoryEntries(rows pgx.Rows, now time.Time) ([]*engine.MemoryEntry, error) {
	defer rows.Close()
	var out []*engine.MemoryEntry
	for rows.Next() {
		var ns, key string
		var rec []byte
		if err := rows.Scan(&ns, &key, &rec); err != nil {
			return nil, db.dbErr("reading agent memory", err)
		}
		e, err := store.DecodeMemory(ns, key, rec, now)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, db.dbErr("reading agent memory", err)
	}
	return out, nil
}

// historyBatch is how many history records HistoryRange reads per
// statement while it goes back for the documents of its page.
const historyBatch = 32

// HistoryRange's statements: the head and the newest records whose first
// event is at or before $2, then older batches, newest first, by the
// primary key (execution, first_event).
const (
	historyRangeFirst = `SELECT e.head,
       ARRAY(SELECT first_event FROM history_records WHERE execution = $1 AND first_event <= $2 ORDER BY first_event DESC LIMIT $3),
       ARRAY(SELECT body FROM history_records WHERE execution = $1 AND first_event <= $2 ORDER BY first_event DESC LIMIT $3)
FROM executions e WHERE e.id = $1`
	historyRangeOlder = `SELECT ARRAY(SELECT first_event FROM history_records WHERE execution = $1 AND first_event <= $2 ORDER BY first_event DESC LIMIT $3),
       ARRAY(SELECT body FROM history_records WHERE execution = $1 AND first_event <= $2 ORDER BY first_event DESC LIMIT $3)`
)

// HistoryRange returns the events of an execution's history after
// position after, at most limit of them (0 or less: all), and the number
// of events of the whole history. It reads the head, then the records
// from the newest that holds an event of the page backwards, by the
// primary key (execution, first_event), a batch at a time, only as far
// as the page's events and their documents need.
func (db *DB) HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error) {
	if err := db.check(ctx); err != nil {
		return nil, 0, err
	}
	if !storable(id) {
		return nil, 0, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	if after < 0 {
		return nil, 0, fmt.Errorf("execution %s: history after event %d: want 0 or more", id, after)
	}
	// The head and the first batch of records in one statement: those
	// whose first event is at or before the page's last (after+limit;
	// fewer exist when the history is shorter). An after that no history
	// reaches (a caller asking only for the length) reads the head alone.
	upTo := int64(math.MaxInt64)
	switch {
	case after >= math.MaxInt64/2:
		upTo = 0
	case limit > 0 && after+int64(limit) > after:
		upTo = after + int64(limit)
	}
	var head []byte
	var firsts []int64
	var batch [][]byte
	err := db.pool.QueryRow(ctx, historyRangeFirst, id, upTo, historyBatch).Scan(&head, &firsts, &batch)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, 0, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	case err != nil:
		return nil, 0, db.dbErr("reading the history of execution "+id, err)
	}
	total, err := store.HistoryLength(id, head)
	if err != nil {
		return nil, 0, err
	}
	end := store.RangeEnd(after, limit, total)
	if end <= after {
		return nil, total, nil
	}
	// before bounds the next batch: records whose first event is at or
	// before it.
	before, done := int64(0), len(firsts) < historyBatch
	if len(firsts) > 0 {
		before = firsts[len(firsts)-1] - 1
	}
	next := func() ([]byte, error) {
		if len(batch) == 0 && !done {
			err := db.pool.QueryRow(ctx, historyRangeOlder, id, before, historyBatch).Scan(&firsts, &batch)
			if err != nil {
				return nil, db.dbErr("reading the history of execution "+id, err)
			}
			done = len(firsts) < historyBatch
			if len(firsts) > 0 {
				before = firsts[len(firsts)-1] - 1
			}
		}
		if len(batch) == 0 {
			return nil, nil
		}
		v := batch[0]
		batch = batch[1:]
		return db.hist.unpack(id, v)
	}
	events, err := store.ReadHistoryTail(id, after, end, next)
	return events, total, err
}

var _ engine.MemoryFingerprinter = (*DB)(nil)
