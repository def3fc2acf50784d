package postgres

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aslrun/aslrun/engine"
)

// openOther opens db's schema again as another process, leasing as owner.
func openOther(t *testing.T, db *DB, owner string) *DB {
	t.Helper()
	other, err := Open(context.Background(), schemaURL(t, db), Options{LeaseOwner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// listenWakes listens on db's wake channel (its schema's own) until the
// test ends, and returns the channel's name.
func listenWakes(t *testing.T, db *DB) (*Notifier, string) {
	t.Helper()
	wake, _ := db.Channels()
	n, err := db.Listen(context.Background(), wake)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, wake
}

// readyRows lists the executions in the ready queue.
func readyRows(t *testing.T, db *DB) []string {
	t.Helper()
	ids, err := db.ids(context.Background(), "reading the ready queue", `SELECT execution FROM ready ORDER BY execution`)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestReadyQueue: a start left to any server is queued; the claim that
// takes it dequeues it; a release with work left queues it again, one
// without work (ended) does not; the commit that ends an execution
// dequeues it.
func TestReadyQueue(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	createAt(t, db, "a", time.Now().Add(-time.Minute))
	createAt(t, db, "b", time.Now())
	if got := readyRows(t, db); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("ready after two starts left to any server = %v, want [a b]", got)
	}
	cs, _, err := db.Claim(ctx, 1, time.Now())
	if err != nil || len(cs) != 1 || cs[0].Execution != "a" {
		t.Fatalf("Claim(1) = %v, %v; want [a], the older", claimedIDs(cs), err)
	}
	if got := readyRows(t, db); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("ready after a's claim = %v, want [b]", got)
	}
	cs[0].Release()
	if got := readyRows(t, db); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("ready after a was released RUNNING = %v, want [a b]", got)
	}
	// b ends while this process holds it: nothing is queued at its release.
	cs, _, err = db.Claim(ctx, 2, time.Now())
	if err != nil || !slices.Equal(claimedIDs(cs), []string{"a", "b"}) {
		t.Fatalf("Claim(2) = %v, %v; want [a b]", claimedIDs(cs), err)
	}
	for _, c := range cs {
		if c.Execution == "b" {
			commitStatus(t, db, "b", 1, "SUCCEEDED", time.Time{})
		}
		c.Release()
	}
	if got := readyRows(t, db); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("ready after a's release and b's end = %v, want [a]", got)
	}
	// Ending an execution dequeues it, whoever commits it.
	commitStatus(t, db, "a", 1, "FAILED", time.Time{})
	if got := readyRows(t, db); len(got) != 0 {
		t.Fatalf("ready after a ended = %v, want none", got)
	}
}

// TestReadyStaleRows: a ready row of an execution a live lease holds (a
// sweep that raced a claim) is removed by the claim that reads it, which
// does not take the execution; the holder's release queues it again.
func TestReadyStaleRows(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	other := openOther(t, db, "other")
	createAt(t, db, "x", time.Now())
	l, err := other.Acquire(ctx, "x", "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := readyRows(t, db); len(got) != 0 {
		t.Fatalf("ready after Acquire = %v, want none (the lease takes the row)", got)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO ready (execution, since) VALUES ('x', 0)`); err != nil {
		t.Fatal(err)
	}
	cs, _, err := db.Claim(ctx, 5, time.Now())
	if err != nil || len(cs) != 0 {
		t.Fatalf("Claim of an execution another process holds = %v, %v; want none", claimedIDs(cs), err)
	}
	if got := readyRows(t, db); len(got) != 0 {
		t.Fatalf("ready after the claim read a held execution's row = %v, want none", got)
	}
	if err := other.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	cs, _, err = db.Claim(ctx, 5, time.Now())
	if err != nil || !slices.Equal(claimedIDs(cs), []string{"x"}) {
		t.Fatalf("Claim after the holder released x RUNNING = %v, %v; want [x]", claimedIDs(cs), err)
	}
	cs[0].Release()
}

// TestReadySweep: a RUNNING execution nobody holds that is not queued (left
// so by a path that did not queue it) is queued by the sweep a claim runs
// every sweepEvery, and claimed.
func TestReadySweep(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	createAt(t, db, "lost", time.Now())
	if _, err := db.pool.Exec(ctx, `DELETE FROM ready`); err != nil {
		t.Fatal(err)
	}
	cs, _, err := db.Claim(ctx, 5, time.Now())
	if err != nil || len(cs) != 0 {
		t.Fatalf("first Claim = %v, %v; want none (no sweep yet)", claimedIDs(cs), err)
	}
	cs, _, err = db.Claim(ctx, 5, time.Now().Add(sweepEvery/2))
	if err != nil || len(cs) != 0 {
		t.Fatalf("Claim before sweepEvery = %v, %v; want none", claimedIDs(cs), err)
	}
	cs, _, err = db.Claim(ctx, 5, time.Now().Add(sweepEvery+time.Second))
	if err != nil || !slices.Equal(claimedIDs(cs), []string{"lost"}) {
		t.Fatalf("Claim after sweepEvery = %v, %v; want [lost]", claimedIDs(cs), err)
	}
	cs[0].Release()
}

// TestReadyMigration: migration 0004 queues the RUNNING executions of a
// database made before it that no live lease holds, and only those.
func TestReadyMigration(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testServer.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := &DB{pool: pool, url: "test"}
	ms := mustMigrations(t)
	if ms[3].name != "ready" {
		t.Fatalf("migration 4 is %q, want ready", ms[3].name)
	}
	for range 3 {
		if _, _, err := db.migrateStep(ctx, ms[:3]); err != nil {
			t.Fatal(err)
		}
	}
	setup := []string{
		`INSERT INTO definitions (hash, body) VALUES ('h', '{}')`,
		`INSERT INTO executions (id, machine_name, definition_hash, status, started_ns, input_hash, spec, head)
SELECT id, 'm', 'h', status, n, '\x00', '\x00', '\x00' FROM (VALUES ('free', 'RUNNING', 1), ('held', 'RUNNING', 2), ('released', 'RUNNING', 3),
  ('expired', 'RUNNING', 4), ('waiting', 'WAITING', 5), ('done', 'SUCCEEDED', 6)) AS t(id, status, n)`,
		`INSERT INTO leases (execution, owner, epoch, acquired_at, expires_at) VALUES
  ('held', 'p', 1, now(), now() + interval '1 hour'), ('released', '', 1, now(), now()),
  ('expired', 'p', 1, now() - interval '1 hour', now() - interval '1 minute'), ('done', '', 1, now(), now())`,
	}
	for _, q := range setup {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if v, _, err := db.migrateStep(ctx, ms); err != nil || v != 4 {
		t.Fatalf("migrateStep = %d, %v; want 4 applied", v, err)
	}
	if got, want := readyRows(t, db), []string{"expired", "free", "released"}; !slices.Equal(got, want) {
		t.Errorf("ready after the migration = %v, want %v", got, want)
	}
}

// TestClaimReads: the first Load of an execution this process claimed is
// what the claim read with its lease, the same as a Load from the
// database; one after a commit reads the commit.
func TestClaimReads(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	other := openOther(t, db, "other")
	for _, id := range []string{"read", "committed"} {
		createAt(t, other, id, time.Now())
	}
	cs, _, err := db.Claim(ctx, 2, time.Now())
	if err != nil || len(cs) != 2 {
		t.Fatalf("Claim(2) = %v, %v", claimedIDs(cs), err)
	}
	defer func() {
		for _, c := range cs {
			c.Release()
		}
	}()
	db.fenceMu.Lock()
	kept := db.held["read"] != nil && db.held["read"].read != nil
	db.fenceMu.Unlock()
	if !kept {
		t.Fatal("the claim did not keep what it read of the execution")
	}
	claimed, err := db.Load(ctx, "read")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := other.Load(ctx, "read")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(claimed, stored) {
		t.Errorf("Load after Claim = %+v, want what the database holds, %+v", claimed, stored)
	}
	if r := db.claimedLoad("read"); r != nil {
		t.Error("the claim's read is kept after the first Load")
	}
	// A commit makes the claim's read stale: the next Load reads the
	// database.
	commitStatus(t, db, "committed", 1, engine.StatusWaiting, time.Time{})
	e, err := db.Load(ctx, "committed")
	if err != nil || e.Status != engine.StatusWaiting {
		t.Fatalf("Load after a commit = %+v, %v; want it WAITING, as committed", e, err)
	}
}

// TestQueuedStartWakes: a start left to any server wakes the servers while
// the ready queue is short, and not once it holds more than shortQueue
// executions. (Notifications arrive in commit order: the one that must
// not come is sent before one that must.)
func TestQueuedStartWakes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me"})
	n, _ := listenWakes(t, db)
	for i := range shortQueue + 1 {
		createAt(t, db, fmt.Sprintf("q%02d", i), time.Now())
	}
	createAt(t, db, "quiet", time.Now())
	if _, err := db.pool.Exec(ctx, `DELETE FROM ready`); err != nil {
		t.Fatal(err)
	}
	createAt(t, db, "loud", time.Now())
	var woken []string
	for {
		w := next(t, n)
		if w.Missed {
			t.Fatalf("notifications missed: %+v", w)
		}
		woken = append(woken, w.Execution)
		if w.Execution == "loud" {
			break
		}
	}
	if len(woken) != shortQueue+2 || slices.Contains(woken, "quiet") {
		t.Errorf("woken for %v; want the %d starts that found the queue short and loud, not quiet", woken, shortQueue+1)
	}
}
