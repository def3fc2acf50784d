package postgres

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyTimeout bounds how long a test waits for a wake that must come.
const notifyTimeout = 30 * time.Second

// notify commits a notification of execution on channel.
func notify(t *testing.T, db *DB, channel, execution string) {
	t.Helper()
	if err := inTx(t, db, func(tx pgx.Tx) error { return Notify(context.Background(), tx, channel, execution) }); err != nil {
		t.Fatal(err)
	}
}

// next returns the next wake.
func next(t *testing.T, n *Notifier) Wake {
	t.Helper()
	select {
	case w, ok := <-n.C():
		if !ok {
			t.Fatal("the notifier stopped")
		}
		return w
	case <-time.After(notifyTimeout):
		t.Fatalf("no wake within %v", notifyTimeout)
	}
	return Wake{}
}

func TestNotifier(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	n, err := db.Listen(ctx, "test_wake")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	notify(t, db, "test_wake", "e1")
	if w := next(t, n); w != (Wake{Channel: "test_wake", Execution: "e1"}) {
		t.Errorf("wake = %+v, want e1", w)
	}
	// A rolled-back transaction notifies nobody; another channel is not
	// heard.
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := Notify(ctx, tx, "test_wake", "rolled-back"); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	notify(t, db, "another_channel", "elsewhere")
	notify(t, db, "test_wake", "e2")
	if w := next(t, n); w != (Wake{Channel: "test_wake", Execution: "e2"}) {
		t.Errorf("wake = %+v, want e2 (not the rolled-back nor the other channel's)", w)
	}
	n.Close()
	if _, ok := <-n.C(); ok {
		t.Error("C is open after Close")
	}
	n.Close()
}

func TestNotifierRefuses(t *testing.T) {
	db := openTest(t, Options{})
	if _, err := db.Listen(context.Background(), ""); err == nil {
		t.Error("Listen(\"\") = nil error, want one")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.Listen(ctx, "test_wake"); !errors.Is(err, context.Canceled) {
		t.Errorf("Listen(cancelled) = %v, want context.Canceled", err)
	}
}

// TestNotifierReconnects terminates the Notifier's connection on the
// server: it connects again, says it may have missed wakes, and hears the
// next ones.
func TestNotifierReconnects(t *testing.T) {
	ctx := context.Background()
	sender := openTest(t, Options{})
	// The listener's connections carry a name of their own, by which the
	// test finds and terminates them.
	u, err := url.Parse(schemaURL(t, sender))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "aslrun_notifier_test")
	u.RawQuery = q.Encode()
	db, err := Open(ctx, u.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Listen(ctx, "test_wake")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for round := range 3 {
		var killed int
		err := sender.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'aslrun_notifier_test'`).Scan(&killed)
		if err != nil {
			t.Fatal(err)
		}
		if killed == 0 {
			t.Fatalf("round %d: no listener connection to terminate", round)
		}
		if w := next(t, n); w != (Wake{Missed: true}) {
			t.Fatalf("round %d: wake after the connection dropped = %+v, want Missed", round, w)
		}
		notify(t, sender, "test_wake", "after")
		if w := next(t, n); w != (Wake{Channel: "test_wake", Execution: "after"}) {
			t.Errorf("round %d: wake = %+v, want the one sent after reconnecting", round, w)
		}
	}
}

// TestNotifierSlowReceiver: wakes that do not fit while nobody receives
// are replaced by one Missed, never block the listener, and nothing after
// them is lost.
func TestNotifierSlowReceiver(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	n, err := db.Listen(ctx, "test_wake")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = inTx(t, db, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_notify('test_wake', 'e' || i) FROM generate_series(1, $1) AS i`, notifyBuffer+10)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The buffer fills with the first ones; the listener goes on, and
	// drops the ten that do not fit (waited for: a wake read before the
	// listener met the full buffer would make room for one of them).
	waitFull(t, n)
	deadline := time.Now().Add(notifyTimeout)
	for n.dropped.Load() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("the listener dropped %d notifications, want 10", n.dropped.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range notifyBuffer {
		if w := next(t, n); w.Missed || w.Execution == "" {
			t.Fatalf("wake %d = %+v, want an execution", i, w)
		}
	}
	if w := next(t, n); w != (Wake{Missed: true}) {
		t.Errorf("wake after a full buffer = %+v, want Missed", w)
	}
	notify(t, db, "test_wake", "later")
	// Those of the batch that came after the Missed may be there first.
	for {
		w := next(t, n)
		if w == (Wake{Channel: "test_wake", Execution: "later"}) {
			break
		}
		if w.Missed || !strings.HasPrefix(w.Execution, "e") {
			t.Fatalf("wake = %+v, want the rest of the batch, then later", w)
		}
	}
}

// waitFull waits until n's buffer is full.
func waitFull(t *testing.T, n *Notifier) {
	t.Helper()
	deadline := time.Now().Add(notifyTimeout)
	for len(n.c) < cap(n.c) {
		if time.Now().After(deadline) {
			t.Fatalf("the buffer holds %d wakes, want %d", len(n.c), cap(n.c))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestChannelsOf(t *testing.T) {
	long := strings.Repeat("s", 63)
	for _, tc := range []struct{ schema, wake, stop string }{
		{"public", "aslrun_wake", "aslrun_stop"},
		{"tenant_a", "aslrun_wake:tenant_a", "aslrun_stop:tenant_a"},
		{"Ünïcode schema", "aslrun_wake:Ünïcode schema", "aslrun_stop:Ünïcode schema"},
	} {
		if wake, stop := channelsOf(tc.schema); wake != tc.wake || stop != tc.stop {
			t.Errorf("channelsOf(%q) = %q, %q; want %q, %q", tc.schema, wake, stop, tc.wake, tc.stop)
		}
	}
	wake, stop := channelsOf(long)
	other, _ := channelsOf(long[1:] + "t")
	if len(wake) > 63 || len(stop) > 63 || wake == other || !strings.HasPrefix(wake, "aslrun_wake:") {
		t.Errorf("channelsOf(63 bytes) = %q, %q (another: %q); want distinct names of at most 63 bytes", wake, stop, other)
	}
}

// TestWakesPerSchema: a start left to any server in one schema wakes the
// servers of that schema, not those of another schema of the database.
func TestWakesPerSchema(t *testing.T) {
	a := openTest(t, Options{LeaseOwner: "a"})
	b := openTest(t, Options{LeaseOwner: "b"})
	wakeA, _ := a.Channels()
	nb, wakeB := listenWakes(t, b)
	if wakeA == wakeB {
		t.Fatalf("two schemas share the wake channel %q", wakeA)
	}
	createAt(t, a, "in-a", time.Now())
	createAt(t, b, "in-b", time.Now())
	// Notifications arrive in commit order: a's would come first.
	if w := next(t, nb); w != (Wake{Channel: wakeB, Execution: "in-b"}) {
		t.Errorf("b's servers were woken by %+v, want only by in-b", w)
	}
}
