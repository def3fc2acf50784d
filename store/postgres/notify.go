package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The notification channels of the store in schema public: on
// WakeChannel, the transactions that leave an execution with something to
// run for any process announce it (a start no process runs yet, a lease
// released with work left); on StopChannel, RequestStop announces an
// execution to stop. Both carry the execution's id. Notifications are per
// database, so the store in another schema uses channels of its own
// (Channels), and deployments sharing a database do not wake each other.
const (
	WakeChannel = "aslrun_wake"
	StopChannel = "aslrun_stop"
	// LiveChannel carries the live feeds relayed between servers
	// (package liverelay): what a server asks for and what it publishes.
	LiveChannel = "aslrun_live"
)

// channelsOf returns the wake and stop channels of the store in schema:
// WakeChannel and StopChannel in public, else theirs with ":" and the
// schema, or a hash of it where that would pass the 63 bytes a channel's
// name may have.
func channelsOf(schema string) (wake, stop string) {
	suffix := channelSuffix(schema)
	return WakeChannel + suffix, StopChannel + suffix
}

// channelSuffix is what the channels of the store in schema add to
// their names: nothing in public, else ":" and the schema, or a hash of
// it where that would pass the 63 bytes a channel's name may have.
func channelSuffix(schema string) string {
	if schema == "public" {
		return ""
	}
	suffix := ":" + schema
	if len(StopChannel)+len(suffix) > 63 {
		sum := sha256.Sum256([]byte(schema))
		suffix = ":" + hex.EncodeToString(sum[:16])
	}
	return suffix
}

// Channels returns the channels this store notifies and listens on:
// WakeChannel and StopChannel in schema public (see channelsOf).
func (db *DB) Channels() (wake, stop string) {
	return db.wakeCh, db.stopCh
}

// LiveChannelName returns the channel live feeds are relayed on:
// LiveChannel in schema public, else with the schema's suffix (see
// channelsOf).
func (db *DB) LiveChannelName() string {
	return LiveChannel + db.suffix
}

// Wake is what a Notifier delivers: an execution to look at, or word that
// notifications may have been missed.
type Wake struct {
	// Channel is the channel the notification came on; "" when Missed.
	Channel string
	// Execution is the id a notification carried (the payload, on
	// channels that carry something else than ids); "" when Missed.
	Execution string
	// Missed says that notifications may have been lost (the connection
	// dropped and was made again, or the receiver fell behind): look for
	// work the way polling does, once.
	Missed bool
}

// Reconnection pauses of a Notifier, and how long it waits for a
// notification before it checks that its connection is alive (a
// connection cut without a reset would otherwise wait for ever).
const (
	notifyFirstBackoff = 50 * time.Millisecond
	notifyMaxBackoff   = 5 * time.Second
	notifyIdleCheck    = 30 * time.Second
	// notifyBuffer is how many wakes wait for the receiver before more are
	// replaced by one Missed.
	notifyBuffer = 256
)

// Notifier listens on a channel, on a connection of its own (not one of
// the pool's), and delivers what it hears on C. When the connection
// drops it connects again, with growing pauses, and then delivers a
// Missed wake: what was notified meanwhile is lost, so the receiver
// looks for work once, as polling does. Polling stays the fallback: a
// notification is a hint that work is there sooner, never the only way it
// is found. It is safe for concurrent use.
type Notifier struct {
	db       *DB
	channels []string
	c        chan Wake
	stop     context.CancelFunc
	done     chan struct{}
	// dropped counts the notifications dropped for want of room on c
	// (each stands behind the Missed owed or delivered for it).
	dropped atomic.Int64
}

// Listen starts a Notifier on channels (at least one). It connects and
// listens before it returns, so that a database it cannot reach is an
// error here; later failures are retried until Close or ctx ends.
func (db *DB) Listen(ctx context.Context, channels ...string) (*Notifier, error) {
	if len(channels) == 0 {
		return nil, errors.New("listen: no channel")
	}
	for _, ch := range channels {
		if ch == "" {
			return nil, errors.New("listen: a channel without a name")
		}
	}
	conn, err := db.listenConn(ctx, channels)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	n := &Notifier{db: db, channels: channels, c: make(chan Wake, notifyBuffer), stop: cancel, done: make(chan struct{})}
	go n.loop(ctx, conn)
	return n, nil
}

// listenConn connects and listens on channels.
func (db *DB) listenConn(ctx context.Context, channels []string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("database %s: listening on %s: %w", db.url, strings.Join(channels, ", "), err)
	}
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			closeConn(conn)
			return nil, fmt.Errorf("database %s: listening on %s: %w", db.url, ch, err)
		}
	}
	return conn, nil
}

// C delivers the wakes. It is closed when the Notifier stops.
func (n *Notifier) C() <-chan Wake { return n.c }

// Close stops listening, closes the connection and waits for it.
func (n *Notifier) Close() {
	n.stop()
	<-n.done
}

func (n *Notifier) loop(ctx context.Context, conn *pgx.Conn) {
	defer close(n.done)
	defer close(n.c)
	missed := false
	backoff := notifyFirstBackoff
	for ctx.Err() == nil {
		if conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			var err error
			if conn, err = n.db.listenConn(ctx, n.channels); err != nil {
				backoff = min(2*backoff, notifyMaxBackoff)
				continue
			}
			backoff = notifyFirstBackoff
			missed = true
		}
		if missed {
			select {
			case n.c <- Wake{Missed: true}:
				missed = false
			default:
			}
		}
		wait := notifyIdleCheck
		if missed {
			wait = notifyFirstBackoff // deliver it as soon as there is room
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		note, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
		case err == nil:
			// A Missed still owed goes first: what was dropped came
			// before this.
			if missed {
				select {
				case n.c <- Wake{Missed: true}:
					missed = false
				default:
				}
			}
			if !missed {
				select {
				case n.c <- Wake{Channel: note.Channel, Execution: note.Payload}:
				default:
					missed = true
				}
			}
			if missed {
				n.dropped.Add(1)
			}
			continue
		case pgconn.Timeout(err) && !conn.IsClosed():
			// Quiet for a while: check that the server is still there.
			pctx, cancel := context.WithTimeout(ctx, notifyIdleCheck)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		closeConn(conn)
		conn = nil
	}
	if conn != nil {
		closeConn(conn)
	}
}

// closeConn closes conn, waiting a moment at most for the server to hear
// it: the connection may be dead already.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Close(ctx)
}

// MaxPayload is the longest payload a notification carries (PostgreSQL
// refuses one of 8000 bytes or more).
const MaxPayload = 7999

// Publish sends each of payloads on channel now, in order, in one round
// trip (one transaction, so that listeners get them together). A payload
// longer than MaxPayload is an error, and nothing is sent.
func (db *DB) Publish(ctx context.Context, channel string, payloads []string) error {
	if len(payloads) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for i, p := range payloads {
		if len(p) > MaxPayload {
			return fmt.Errorf("notifying %s: payload %d is %d bytes, more than %d", channel, i, len(p), MaxPayload)
		}
		b.Queue(`SELECT pg_notify($1, $2)`, channel, p)
	}
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("database %s: notifying %s: %w", db.url, channel, err)
	}
	return nil
}

// Notify sends execution on channel when tx commits (nothing if it rolls
// back), to every Notifier listening on the database.
func Notify(ctx context.Context, tx pgx.Tx, channel, execution string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, execution); err != nil {
		return fmt.Errorf("notifying %s of execution %s: %w", channel, execution, err)
	}
	return nil
}
