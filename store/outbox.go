package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
)

// The outbox (engine.OutboxStore): a commit's Outbox entries are checked
// and encoded by prepareCommit, outside any transaction, and written by
// the commit's transaction, pending and due at once (NextAt is their
// CreatedAt): an entry exists exactly when its commit does. Deliveries are
// then claimed under a lease, finished, listed and retried. The outbox is
// not history: no hash chain covers it, VerifyHistory does not read it and
// Export does not copy it (its deliveries belong to the servers of the
// database they were committed to).
//
// Retention: a DELIVERED entry is pruned once DeliveredRetention has
// passed since its delivery, by the ClaimDeliveries and FinishDelivery
// calls that write (at most pruneBatch entries a call, oldest delivery
// first); PENDING and FAILED entries are never pruned.

// Bounds of the outbox.
const (
	// MaxOutboxBody bounds an outbox entry's Body: a commit carrying a
	// larger one is refused (ErrOutboxEntry).
	MaxOutboxBody = 256 << 10
	// DeliveredRetention is how long a DELIVERED entry is kept after its
	// delivery.
	DeliveredRetention = 7 * 24 * time.Hour
	// MaxDeliveryError bounds the LastError a delivery keeps, in bytes.
	MaxDeliveryError = 2048
	// DefaultDeliveryLimit is how many deliveries ListDeliveries returns
	// when its filter sets no Limit, and MaxDeliveryLimit the largest
	// Limit it takes.
	DefaultDeliveryLimit = 100
	MaxDeliveryLimit     = 1000
)

// pruneBatch bounds the DELIVERED entries one call prunes.
const pruneBatch = 256

// ErrOutboxEntry reports a commit's outbox entry that a store refuses (the
// error names the entry and the field).
var ErrOutboxEntry = errors.New("invalid outbox entry")

// outboxRecord is a delivery as Bolt and Memory store it, under its id.
type outboxRecord struct {
	Execution   string    `json:"execution"`
	Channel     string    `json:"channel"`
	URL         string    `json:"url"`
	SecretEnv   string    `json:"secretEnv,omitempty"`
	Type        string    `json:"type"`
	Body        []byte    `json:"body"`
	CreatedAt   time.Time `json:"createdAt"`
	Status      string    `json:"status"`
	Attempts    int       `json:"attempts,omitempty"`
	LastError   string    `json:"lastError,omitempty"`
	NextAt      time.Time `json:"nextAt,omitzero"`
	DeliveredAt time.Time `json:"deliveredAt,omitzero"`
	Owner       string    `json:"owner,omitempty"`
	LeaseUntil  time.Time `json:"leaseUntil,omitzero"`
}

// outboxWrite is a commit's outbox entry, checked and encoded.
type outboxWrite struct {
	id, execution string
	record        []byte
}

// CheckOutbox checks a commit's outbox entries (every backend refuses the
// same ones) and returns them as the commit writes them: Execution set
// to the commit's execution id when empty, times in UTC, bodies copied.
// An entry is refused (ErrOutboxEntry, naming it and the field) for an
// empty or over-long id, a NUL byte or text that is not UTF-8, another
// execution, an empty channel, URL or type, a zero CreatedAt, a body that
// is not JSON or is larger than MaxOutboxBody, or an id another entry of
// the commit has.
func CheckOutbox(execution string, entries []engine.OutboxEntry) ([]engine.OutboxEntry, error) {
	out := make([]engine.OutboxEntry, len(entries))
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("outbox entry %d (%q): %s: %w", i+1, e.ID, fmt.Sprintf(format, args...), ErrOutboxEntry)
		}
		if err := checkName("id", e.ID); err != nil {
			return nil, bad("%v", err)
		}
		if seen[e.ID] {
			return nil, bad("the commit has another entry of this id")
		}
		seen[e.ID] = true
		if e.Execution == "" {
			e.Execution = execution
		} else if e.Execution != execution {
			return nil, bad("execution %q is not the commit's (%q)", e.Execution, execution)
		}
		for _, f := range []struct{ name, v string }{{"id", e.ID}, {"channel", e.Channel}, {"url", e.URL}, {"type", e.Type}} {
			switch {
			case f.v == "":
				return nil, bad("empty %s", f.name)
			case !utf8.ValidString(f.v) || strings.IndexByte(f.v, 0) >= 0:
				return nil, bad("%s %q is not UTF-8 text without NUL", f.name, f.v)
			}
		}
		switch {
		case e.CreatedAt.IsZero():
			return nil, bad("zero createdAt")
		case len(e.Body) > MaxOutboxBody:
			return nil, bad("body of %d bytes is larger than %d", len(e.Body), MaxOutboxBody)
		case !json.Valid(e.Body):
			return nil, bad("body is not JSON")
		}
		e.CreatedAt = e.CreatedAt.UTC()
		e.Body = slices.Clone(e.Body)
		out[i] = e
	}
	return out, nil
}

// prepareOutbox checks and encodes a commit's outbox entries.
func prepareOutbox(execution string, entries []engine.OutboxEntry) ([]engine.OutboxEntry, []outboxWrite, error) {
	es, err := CheckOutbox(execution, entries)
	if err != nil {
		return nil, nil, err
	}
	ws := make([]outboxWrite, len(es))
	for i, e := range es {
		r := outboxRecord{
			Execution: e.Execution, Channel: e.Channel, URL: e.URL, SecretEnv: e.SecretEnv, Type: e.Type, Body: e.Body,
			CreatedAt: e.CreatedAt, Status: engine.DeliveryPending, NextAt: e.CreatedAt,
		}
		data, err := marshalRecord(&r)
		if err != nil {
			return nil, nil, fmt.Errorf("outbox entry %q: %w", e.ID, err)
		}
		ws[i] = outboxWrite{id: e.ID, execution: e.Execution, record: data}
	}
	return es, ws, nil
}

// outboxExists is the error of a commit whose outbox entry's id is taken.
func outboxExists(id string) error {
	return fmt.Errorf("outbox entry %q: %w", id, engine.ErrExists)
}

// CheckClaim checks ClaimDeliveries' arguments.
func CheckClaim(owner string, n int, lease time.Duration) error {
	switch {
	case owner == "":
		return errors.New("claim deliveries: empty owner")
	case !utf8.ValidString(owner) || strings.IndexByte(owner, 0) >= 0:
		return fmt.Errorf("claim deliveries: owner %q is not UTF-8 text without NUL", owner)
	case n <= 0:
		return fmt.Errorf("claim deliveries: n is %d, want 1 or more", n)
	case lease <= 0:
		return fmt.Errorf("claim deliveries: lease is %v, want more than 0", lease)
	}
	return nil
}

// CheckFinish checks FinishDelivery's arguments and returns the error
// text to keep: valid UTF-8 without NUL (each replaced by U+FFFD), cut to
// MaxDeliveryError bytes at a character boundary.
func CheckFinish(id, owner, errText string, retryAt time.Time, park bool) (string, error) {
	where := fmt.Sprintf("finish delivery %q", id)
	switch {
	case owner == "":
		return "", fmt.Errorf("%s: empty owner", where)
	case errText == "" && park:
		return "", fmt.Errorf("%s: park set for a delivery that succeeded (errText is empty)", where)
	case errText != "" && !park && retryAt.IsZero():
		return "", fmt.Errorf("%s: failed without a retryAt (set park to park it)", where)
	}
	if errText == "" {
		return "", nil
	}
	s := strings.ToValidUTF8(strings.ReplaceAll(errText, "\x00", "\uFFFD"), "\uFFFD")
	if len(s) > MaxDeliveryError {
		cut := MaxDeliveryError
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s, nil
}

// CheckDeliveryFilter checks ListDeliveries' filter and returns how many
// deliveries to list.
func CheckDeliveryFilter(f engine.DeliveryFilter) (int, error) {
	switch f.Status {
	case "", engine.DeliveryPending, engine.DeliveryDelivered, engine.DeliveryFailed:
	default:
		return 0, fmt.Errorf("list deliveries: status %q, want %s, %s or %s", f.Status, engine.DeliveryPending, engine.DeliveryDelivered, engine.DeliveryFailed)
	}
	switch {
	case f.Limit < 0 || f.Limit > MaxDeliveryLimit:
		return 0, fmt.Errorf("list deliveries: limit %d, want 0 (%d) to %d", f.Limit, DefaultDeliveryLimit, MaxDeliveryLimit)
	case f.Limit == 0:
		return DefaultDeliveryLimit, nil
	}
	return f.Limit, nil
}

// RetryRefused is RetryDelivery's error for a delivery of status that is
// not parked.
func RetryRefused(id, status string) error {
	return fmt.Errorf("retry delivery %q: it is %s, only a %s delivery is retried: %w", id, status, engine.DeliveryFailed, engine.ErrNotParked)
}

// deliveryNotFound is the error for an unknown delivery id.
func deliveryNotFound(id string) error {
	return fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
}

// decodeOutbox decodes the record of delivery id.
func decodeOutbox(id string, data []byte) (*outboxRecord, error) {
	var r outboxRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("outbox record %q: %w", id, err)
	}
	return &r, nil
}

// delivery is the record of delivery id as the store's callers see it.
func (r *outboxRecord) delivery(id string) engine.Delivery {
	return engine.Delivery{
		OutboxEntry: engine.OutboxEntry{ID: id, Execution: r.Execution, Channel: r.Channel, URL: r.URL, SecretEnv: r.SecretEnv, Type: r.Type, Body: slices.Clone(r.Body), CreatedAt: r.CreatedAt},
		Status:      r.Status, Attempts: r.Attempts, LastError: r.LastError,
		NextAt: r.NextAt, DeliveredAt: r.DeliveredAt, Owner: r.Owner, LeaseUntil: r.LeaseUntil,
	}
}

// claimable reports whether the delivery may be claimed at now: pending,
// due, and its lease free or run out.
func (r *outboxRecord) claimable(now time.Time) bool {
	return r.Status == engine.DeliveryPending && !r.NextAt.After(now) && (r.Owner == "" || !r.LeaseUntil.After(now))
}

// finish records an attempt's outcome (CheckFinish checked the
// arguments); ErrDeliveryLease when owner does not hold the lease.
func (r *outboxRecord) finish(id, owner string, now time.Time, errText string, retryAt time.Time, park bool) error {
	if r.Status != engine.DeliveryPending || r.Owner != owner {
		held := r.Owner
		if held == "" {
			held = "no one"
		}
		return fmt.Errorf("finish delivery %q (%s, leased to %s) by %q: %w", id, r.Status, held, owner, engine.ErrDeliveryLease)
	}
	r.Owner, r.LeaseUntil = "", time.Time{}
	switch {
	case errText == "":
		r.Status, r.DeliveredAt, r.LastError, r.NextAt = engine.DeliveryDelivered, now.UTC(), "", time.Time{}
	case park:
		r.Status, r.LastError, r.NextAt = engine.DeliveryFailed, errText, time.Time{}
	default:
		r.LastError, r.NextAt = errText, retryAt.UTC()
	}
	return nil
}

// retry makes a parked delivery pending, due at now.
func (r *outboxRecord) retry(id string, now time.Time) error {
	if r.Status != engine.DeliveryFailed {
		return RetryRefused(id, r.Status)
	}
	r.Status, r.NextAt = engine.DeliveryPending, now.UTC()
	return nil
}

// listed reports whether the delivery passes filter f (whose After the
// caller applied).
func (r *outboxRecord) listed(f engine.DeliveryFilter) bool {
	return (f.Status == "" || r.Status == f.Status) && (f.Execution == "" || r.Execution == f.Execution)
}

// pruned reports whether a delivery is pruned at now.
func (r *outboxRecord) pruned(now time.Time) bool {
	return r.Status == engine.DeliveryDelivered && !r.DeliveredAt.After(now.Add(-DeliveredRetention))
}

var _ engine.OutboxStore = (*Memory)(nil)

// writeOutbox stores a commit's outbox entries with m.mu held, after
// checkOutbox.
func (m *Memory) writeOutbox(ws []outboxWrite) {
	for _, w := range ws {
		m.outbox[w.id] = w.record
	}
}

// checkOutbox refuses a commit's outbox entries whose ids are taken, with
// m.mu held.
func (m *Memory) checkOutbox(ws []outboxWrite) error {
	for _, w := range ws {
		if _, ok := m.outbox[w.id]; ok {
			return outboxExists(w.id)
		}
	}
	return nil
}

// outboxIDs returns the outbox's ids in order, with m.mu held.
func (m *Memory) outboxIDs() []string {
	return slices.Sorted(maps.Keys(m.outbox))
}

// ClaimDeliveries leases to owner, until now+lease, up to n pending
// deliveries due at now, oldest first, whose lease is free or ran out,
// counting an attempt on each.
func (m *Memory) ClaimDeliveries(ctx context.Context, owner string, n int, now time.Time, lease time.Duration) ([]engine.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckClaim(owner, n, lease); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []engine.Delivery
	for _, id := range m.outboxIDs() {
		if len(out) == n {
			break
		}
		r, err := decodeOutbox(id, m.outbox[id])
		if err != nil {
			return nil, err
		}
		if !r.claimable(now) {
			continue
		}
		r.Owner, r.LeaseUntil = owner, now.Add(lease).UTC()
		r.Attempts++
		data, err := marshalRecord(r)
		if err != nil {
			return nil, err
		}
		m.outbox[id] = data
		out = append(out, r.delivery(id))
	}
	return out, m.pruneOutbox(now)
}

// FinishDelivery records the outcome of the attempt owner made (see
// engine.OutboxStore).
func (m *Memory) FinishDelivery(ctx context.Context, id, owner string, now time.Time, errText string, retryAt time.Time, park bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	errText, err := CheckFinish(id, owner, errText, retryAt, park)
	if err != nil {
		return err
	}
	return m.changeDelivery(id, now, func(r *outboxRecord) error { return r.finish(id, owner, now, errText, retryAt, park) })
}

// RetryDelivery makes a parked delivery pending and due at now.
func (m *Memory) RetryDelivery(ctx context.Context, id string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.changeDelivery(id, now, func(r *outboxRecord) error { return r.retry(id, now) })
}

// changeDelivery applies change to delivery id and prunes at now.
func (m *Memory) changeDelivery(id string, now time.Time, change func(*outboxRecord) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	data, ok := m.outbox[id]
	if !ok {
		return deliveryNotFound(id)
	}
	r, err := decodeOutbox(id, data)
	if err != nil {
		return err
	}
	if err := change(r); err != nil {
		return err
	}
	if data, err = marshalRecord(r); err != nil {
		return err
	}
	m.outbox[id] = data
	return m.pruneOutbox(now)
}

// pruneOutbox removes up to pruneBatch deliveries delivered
// DeliveredRetention before now, oldest delivery first, with m.mu held.
func (m *Memory) pruneOutbox(now time.Time) error {
	type done struct {
		id string
		at time.Time
	}
	var old []done
	for id, data := range m.outbox {
		r, err := decodeOutbox(id, data)
		if err != nil {
			return err
		}
		if r.pruned(now) {
			old = append(old, done{id, r.DeliveredAt})
		}
	}
	slices.SortFunc(old, func(a, b done) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, d := range old[:min(len(old), pruneBatch)] {
		delete(m.outbox, d.id)
	}
	return nil
}

// ListDeliveries lists deliveries by ID order.
func (m *Memory) ListDeliveries(ctx context.Context, f engine.DeliveryFilter) ([]engine.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit, err := CheckDeliveryFilter(f)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []engine.Delivery
	for _, id := range m.outboxIDs() {
		if len(out) == limit {
			break
		}
		if id <= f.After {
			continue
		}
		r, err := decodeOutbox(id, m.outbox[id])
		if err != nil {
			return nil, err
		}
		if r.listed(f) {
			out = append(out, r.delivery(id))
		}
	}
	return out, nil
}
