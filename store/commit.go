package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// prepared is an engine.Commit encoded outside any transaction, by the
// committing goroutine: the store's critical section only chains hashes
// and writes bytes. It keeps nothing of the Commit (the engine reuses it).
type prepared struct {
	id           string
	seq          int64
	status       engine.Status
	output       json.RawMessage
	errMsg       string
	cause        string
	stoppedAt    time.Time
	wakeAt       time.Time
	waitingFor   string
	invocations  map[string]int
	addInv       map[string]int
	usage        *engine.Usage
	addUsage     *engine.Usage
	notices      []string
	lastEvent    int64
	lastOwnEvent int64
	drop         []string
	scopes       []scopeWrite
	history      preparedHistory
	rollback     *engine.Rollback
	checkpoint   *preparedCheckpoint
	memory       []memWrite
	namespaces   []string
	outbox       []outboxWrite
	outboxed     []engine.OutboxEntry // outbox, as AppliedCommit gives it
	redriven     time.Time
	// dropHistory drops the execution's history and checkpoints
	// (engine.Commit.DropHistory): the commit has no history and no
	// checkpoint of its own.
	dropHistory bool

	// docs and memo are what the commit's history record holds, for the
	// docCache once the commit succeeded.
	docs *docWriter
	memo *docMemo

	// base is the head the commit was applied to and its history sealed
	// after before Bolt's commit loop took it, and head the result
	// (Bolt.preseal); nil when it was not.
	base, head *headRecord
}

// preparedCheckpoint is a checkpoint encoded for writing: its record and
// the record's hash (checkpointHash), the index of the commit's event that
// records the hash (-1: none), and its document as a snapshot blob under
// the blob's key.
type preparedCheckpoint struct {
	name      string
	record    []byte
	hash      string
	event     int
	expiresAt time.Time
	blob      string
	data      []byte
}

// prepareCommit encodes c, a checkpoint's document with codecs and codec;
// cache says which documents the execution's history holds.
func prepareCommit(c *engine.Commit, codecs *Codecs, codec Codec, cache *docCache) (*prepared, error) {
	if err := checkName("execution id", c.Execution); err != nil {
		return nil, err
	}
	known := cache.get(c.Execution)
	defer known.mu.Unlock()
	memo := known.memo()
	p := &prepared{
		id: c.Execution, seq: c.Seq, status: c.Status, errMsg: c.Error, cause: c.Cause,
		stoppedAt: utc(c.StoppedAt), wakeAt: utc(c.WakeAt), waitingFor: c.WaitingFor,
		invocations: maps.Clone(c.Invocations), addInv: maps.Clone(c.AddInvocations), lastEvent: c.LastEvent, lastOwnEvent: c.LastOwnEvent,
		drop: slices.Clone(c.DropScopes), notices: slices.Clone(c.Notices), redriven: utc(c.Redriven),
	}
	if c.Usage != nil {
		u := *c.Usage
		p.usage = &u
	}
	if c.AddUsage != nil {
		u := *c.AddUsage
		p.addUsage = &u
	}
	var err error
	if c.Output != nil {
		if p.output, err = memo.raw(c.Output); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
	}
	if p.scopes, err = encodeScopes(c.Scopes, memo); err != nil {
		return nil, err
	}
	if c.DropHistory {
		// Its events and checkpoint would be dropped with the rest: they
		// are not encoded.
		p.dropHistory = true
	} else if c.Checkpoint != nil {
		if p.checkpoint, err = prepareCheckpoint(c.Execution, c.Checkpoint, memo, codecs, codec); err != nil {
			return nil, err
		}
	}
	var events []engine.Event
	if !p.dropHistory {
		events = c.Events
	}
	p.docs, p.memo = newDocWriter(memo, known, len(events)), memo
	ew := eventWriter{values: make([]byte, 0, 128*len(events)), digests: make([]byte, 0, 400*len(events)), spans: make([][2][2]int, 0, len(events))}
	for i := range events {
		if err = ew.add(&events[i], memo, p.docs); err != nil {
			return nil, fmt.Errorf("event %d (%s): %w", i+1, events[i].Type, err)
		}
	}
	prepared := ew.events()
	if cp := p.checkpoint; cp != nil {
		// One of the commit's events records the checkpoint's hash, in
		// the chain (integrity.go).
		if cp.event = bindingEvent(events, cp.name); cp.event >= 0 {
			e := &prepared[cp.event]
			e.value = setEventCheckpoint(e.value, cp.hash)
			e.digest = appendCheckpointDigest(e.digest, cp.hash)
		}
	}
	p.history = newPreparedHistory(c.Execution, prepared, p.docs.buf, p.docs.n)
	if rb := c.Rollback; rb != nil && !p.dropHistory {
		p.rollback = &engine.Rollback{ToEvent: rb.ToEvent, ToOwnEvent: rb.ToOwnEvent}
	}
	if len(c.Memory) > 0 {
		if p.memory, err = prepareMemory(c.Memory, memo); err != nil {
			return nil, err
		}
	}
	for _, ns := range c.AddNamespaces {
		if err := engine.CheckMemoryName("memory namespace", ns); err != nil {
			return nil, err
		}
	}
	p.namespaces = slices.Clone(c.AddNamespaces)
	if len(c.Outbox) > 0 {
		if p.outboxed, p.outbox, err = prepareOutbox(c.Execution, c.Outbox); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// prepareCheckpoint encodes a checkpoint of execution id.
func prepareCheckpoint(id string, cp *engine.Checkpoint, memo *docMemo, codecs *Codecs, codec Codec) (*preparedCheckpoint, error) {
	if cp.Execution != "" && cp.Execution != id {
		return nil, fmt.Errorf("checkpoint %q belongs to execution %s", cp.Name, cp.Execution)
	}
	if err := checkName("checkpoint name", cp.Name); err != nil {
		return nil, err
	}
	where := func(what string, err error) error {
		return fmt.Errorf("checkpoint %q: %s: %w", cp.Name, what, err)
	}
	r := checkpointRecord{
		State: cp.State, Next: cp.Next, Visits: cp.Visits, Invocations: cp.Invocations,
		LastEvent: cp.LastEvent, LastOwnEvent: cp.LastOwnEvent, CreatedAt: utc(cp.CreatedAt), ExpiresAt: utc(cp.ExpiresAt),
	}
	raw, err := memo.raw(cp.Document)
	if err != nil {
		return nil, where("document", err)
	}
	r.Blob = blobKey(raw)
	if r.DocHash, err = memo.hashHex(cp.Document); err != nil {
		return nil, where("document", err)
	}
	if r.Variables, err = encodeVars(cp.Variables); err != nil {
		return nil, where("variables", err)
	}
	for _, f := range []struct {
		dst *json.RawMessage
		v   any
		n   string
	}{{&r.Context, cp.Context, "context"}, {&r.Memory, cp.Memory, "memory"}, {&r.Budget, cp.Budget, "budget"}} {
		if f.v == nil {
			continue
		}
		if *f.dst, err = memo.raw(f.v); err != nil {
			return nil, where(f.n, err)
		}
	}
	p := &preparedCheckpoint{name: cp.Name, expiresAt: r.ExpiresAt, blob: r.Blob}
	if p.record, err = marshalRecord(&r); err != nil {
		return nil, where("record", err)
	}
	p.hash, p.event = checkpointHash(id, cp.Name, p.record), -1
	if p.data, err = codecs.Encode(cp.Document, codec); err != nil {
		return nil, where("snapshot", err)
	}
	return p, nil
}

// committed tells cache what the commit, which succeeded, wrote: nothing
// of an execution that ended or whose history the commit dropped.
func (p *prepared) committed(cache *docCache) {
	if p.status.Ended() || p.dropHistory {
		cache.forget(p.id)
		return
	}
	if p.memo == nil {
		return
	}
	e := cache.get(p.id)
	grown := e.committed(p.docs, p.memo)
	e.mu.Unlock()
	cache.grew(grown)
}

// applyHead sets what the commit changes in the execution's head (its
// history is appended apart). A commit without a Status leaves the status
// and what goes with it (output, error, cause, stop and wake times) as
// they are; one with a Status replaces them all. Invocations and Usage are
// replaced only when the commit carries them, then AddInvocations,
// AddUsage and Notices are added; the
// event counters and Seq never go backwards. A commit that drops the
// history empties it (no events, no last hash or record, no checkpoint
// bound to the head) and marks the head HistoryDropped.
func (p *prepared) applyHead(h *headRecord) {
	if p.dropHistory {
		h.Events, h.LastHash, h.LastRecord, h.Unbound = 0, "", 0, nil
		h.HistoryDropped = true
	}
	if p.status != "" {
		h.Status = p.status
		h.Output, h.Error, h.Cause, h.StoppedAt = p.output, p.errMsg, p.cause, p.stoppedAt
		h.WakeAt, h.WaitingFor = p.wakeAt, p.waitingFor
	}
	if p.invocations != nil {
		h.Invocations = p.invocations
	}
	if len(p.addInv) > 0 {
		inv := maps.Clone(h.Invocations)
		if inv == nil {
			inv = make(map[string]int, len(p.addInv))
		}
		for agent, n := range p.addInv {
			inv[agent] += n
		}
		h.Invocations = inv
	}
	if p.usage != nil {
		h.Usage = *p.usage
	}
	if a := p.addUsage; a != nil {
		u := h.Usage
		u.Add(a)
		h.Usage = u
	}
	for _, n := range p.notices {
		if !slices.Contains(h.Notices, n) {
			h.Notices = append(slices.Clip(h.Notices), n)
		}
	}
	if !p.redriven.IsZero() {
		h.RedriveCount++
		h.RedrivenAt = p.redriven
	}
	h.LastEvent, h.LastOwnEvent, h.Seq = max(h.LastEvent, p.lastEvent), max(h.LastOwnEvent, p.lastOwnEvent), max(h.Seq, p.seq)
}

// dropped reports whether scope key is removed by one of the prefixes.
func dropped(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// sortScopeWrites orders scope writes by key.
func sortScopeWrites(w []scopeWrite) {
	slices.SortFunc(w, func(a, b scopeWrite) int { return strings.Compare(a.key, b.key) })
}

// waitingAt is when the execution of head h is due, zero when it is not
// waiting for a time.
func waitingAt(h *headRecord) time.Time {
	if h.Status != engine.StatusWaiting {
		return time.Time{}
	}
	return h.WakeAt
}

// blobKey is the key of a snapshot blob: the hex SHA-256 of the document's
// Marshal form, so that identical documents share one blob and each comes
// back exactly as written.
func blobKey(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
