package engine

import (
	"context"
	"errors"
	"time"
)

// The outbox: events an execution emits to its workflow's webhook
// channels (ASL Events) are written to the store in the same commit as
// the step that caused them, and delivered afterwards, at least once, by
// whichever server claims them (a lease, as executions have). A
// delivery that keeps failing is parked (DeliveryFailed) until someone
// retries it.

// Delivery statuses.
const (
	// DeliveryPending: not delivered yet (due at NextAt).
	DeliveryPending = "PENDING"
	// DeliveryDelivered: the receiver answered 2xx.
	DeliveryDelivered = "DELIVERED"
	// DeliveryFailed: parked after its last attempt failed; Retry makes
	// it pending again.
	DeliveryFailed = "FAILED"
)

// OutboxEntry is one event to deliver, as a commit writes it.
type OutboxEntry struct {
	// ID identifies the event (a UUIDv7, also its webhook-id: a receiver
	// deduplicates by it).
	ID string
	// Execution is the execution that emitted it; Channel the workflow's
	// channel (by name) it goes to, and URL where (the channel's,
	// checked against the owner's hosts when the workflow started).
	Execution string
	Channel   string
	URL       string
	// SecretEnv names the environment variable holding the channel's
	// signing secret ("": the server's default secret).
	SecretEnv string
	// Type is the event's type, like "state.entered", "execution.succeeded".
	Type string
	// Body is the JSON the receiver gets.
	Body []byte
	// CreatedAt is when the step that caused it committed.
	CreatedAt time.Time
}

// Delivery is an outbox entry with where its delivery stands.
type Delivery struct {
	OutboxEntry
	// Status is DeliveryPending, DeliveryDelivered or DeliveryFailed.
	Status string
	// Attempts counts the attempts made; LastError says why the last one
	// failed ("" when none did).
	Attempts  int
	LastError string
	// NextAt is when a pending delivery is due.
	NextAt time.Time
	// DeliveredAt is when it was delivered (zero otherwise).
	DeliveredAt time.Time
	// Owner and LeaseUntil: the server holding it for an attempt, until
	// when ("" and zero when none).
	Owner      string
	LeaseUntil time.Time
}

// DeliveryFilter selects deliveries to list.
type DeliveryFilter struct {
	// Status, when set, is the only status listed.
	Status string
	// Execution, when set, lists only that execution's.
	Execution string
	// After lists the deliveries whose ID sorts after it (ids are
	// UUIDv7: by time); Limit bounds how many (0: 100).
	After string
	Limit int
}

// ErrDeliveryLease reports a delivery whose lease the caller does not
// hold (another server claimed it, or its lease ran out).
var ErrDeliveryLease = errors.New("the delivery is not leased to this owner")

// ErrNotParked reports a retry of a delivery that is not parked
// (DeliveryFailed): it is pending or delivered already.
var ErrNotParked = errors.New("the delivery is not parked")

// OutboxStore is a store that keeps the outbox (memory, bbolt,
// PostgreSQL). A Commit's Outbox entries are written in the same
// transaction as the rest of the commit, pending and due at once.
type OutboxStore interface {
	// ClaimDeliveries leases to owner, until now+lease, up to n pending
	// deliveries due at now (oldest first) whose lease is free or ran
	// out, counting an attempt on each.
	ClaimDeliveries(ctx context.Context, owner string, n int, now time.Time, lease time.Duration) ([]Delivery, error)
	// FinishDelivery records the outcome of the attempt owner made:
	// delivered (errText "") at now; or failed with errText, pending
	// again at retryAt, or parked (DeliveryFailed) when park is set. It
	// fails with ErrDeliveryLease when owner does not hold the lease, and
	// ErrNotFound for an unknown id.
	FinishDelivery(ctx context.Context, id, owner string, now time.Time, errText string, retryAt time.Time, park bool) error
	// ListDeliveries lists deliveries by ID order.
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, error)
	// RetryDelivery makes a parked (DeliveryFailed) delivery pending and
	// due at now; ErrNotFound for an unknown id, and ErrNotParked (in an
	// error naming the status) for one that is not parked.
	RetryDelivery(ctx context.Context, id string, now time.Time) error
}
