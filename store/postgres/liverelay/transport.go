package liverelay

import (
	"context"
	"sync"

	"github.com/aslrun/aslrun/store/postgres"
)

// pgTransport is a Transport on a PostgreSQL database's LiveChannel.
type pgTransport struct {
	db *postgres.DB
	ch string
	n  *postgres.Notifier
	c  chan Message
}

// Postgres returns the Transport of db's live channel: it listens on a
// connection of its own until ctx ends or Close.
func Postgres(ctx context.Context, db *postgres.DB) (interface {
	Transport
	Close()
}, error) {
	ch := db.LiveChannelName()
	n, err := db.Listen(ctx, ch)
	if err != nil {
		return nil, err
	}
	t := &pgTransport{db: db, ch: ch, n: n, c: make(chan Message)}
	go func() {
		defer close(t.c)
		for w := range n.C() {
			t.c <- Message{Payload: w.Execution, Missed: w.Missed}
		}
	}()
	return t, nil
}

func (t *pgTransport) Send(ctx context.Context, payloads []string) error {
	return t.db.Publish(ctx, t.ch, payloads)
}

func (t *pgTransport) Receive() <-chan Message { return t.c }

func (t *pgTransport) MaxPayload() int { return postgres.MaxPayload }

// Close stops listening.
func (t *pgTransport) Close() {
	t.n.Close()
	for range t.c {
	}
}

// Bus is a Transport in memory for the relays of one process (tests, and
// executors that share a process): each Join is one server's end.
type Bus struct {
	mu   sync.Mutex
	ends []*busEnd
	// Max is the longest payload (default postgres.MaxPayload).
	Max int
}

// busEnd is one server's end of a Bus.
type busEnd struct {
	b *Bus
	c chan Message
}

// Join returns a new end of the bus.
func (b *Bus) Join() Transport {
	e := &busEnd{b: b, c: make(chan Message, 1024)}
	b.mu.Lock()
	b.ends = append(b.ends, e)
	b.mu.Unlock()
	return e
}

func (e *busEnd) Send(ctx context.Context, payloads []string) error {
	e.b.mu.Lock()
	defer e.b.mu.Unlock()
	for _, p := range payloads {
		for _, o := range e.b.ends {
			select {
			case o.c <- Message{Payload: p}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

func (e *busEnd) Receive() <-chan Message { return e.c }

func (e *busEnd) MaxPayload() int {
	if e.b.Max > 0 {
		return e.b.Max
	}
	return postgres.MaxPayload
}
