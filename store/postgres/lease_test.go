package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// expire makes the execution's lease expire now, as if its holder had
// stopped renewing it ttl ago.
func expire(t *testing.T, db *DB, execution string) {
	t.Helper()
	if _, err := db.pool.Exec(context.Background(), `UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE execution = $1`, execution); err != nil {
		t.Fatal(err)
	}
}

func TestAcquire(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	a, err := db.Acquire(ctx, "e1", "server-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Epoch != 1 || a.Owner != "server-a" || a.Execution != "e1" {
		t.Errorf("Acquire = %+v, want e1 by server-a at epoch 1", a)
	}
	var dbNow time.Time
	if err := db.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if left := a.Expires.Sub(dbNow); left <= DefaultLeaseTTL-5*time.Second || left > DefaultLeaseTTL {
		t.Errorf("Acquire(ttl 0) expires in %v, want the default %v", left, DefaultLeaseTTL)
	}
	for _, owner := range []string{"server-b", "server-a"} {
		_, err := db.Acquire(ctx, "e1", owner, time.Second)
		var held *HeldError
		if !errors.Is(err, ErrHeld) || !errors.As(err, &held) || held.Holder.Owner != "server-a" || held.Holder.Epoch != 1 {
			t.Errorf("Acquire(held, by %s) = %v, want ErrHeld naming server-a at epoch 1", owner, err)
		}
	}
	// Another execution is another lease.
	if l, err := db.Acquire(ctx, "e2", "server-b", time.Second); err != nil || l.Epoch != 1 {
		t.Errorf("Acquire(e2) = %+v, %v, want epoch 1", l, err)
	}
}

func TestAcquireRefuses(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	tests := []struct {
		execution, owner string
		ttl              time.Duration
		want             string
	}{
		{"", "a", time.Second, "no execution id"},
		{"e", "", time.Second, "acquiring execution e: no owner"},
		{"e", "a", -time.Second, "lease ttl -1s: want at least 1ms"},
		{"e", "a", time.Microsecond, "lease ttl 1µs: want at least 1ms"},
	}
	for _, tt := range tests {
		if _, err := db.Acquire(ctx, tt.execution, tt.owner, tt.ttl); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Acquire(%q, %q, %v) = %v, want %q", tt.execution, tt.owner, tt.ttl, err, tt.want)
		}
	}
	if _, err := db.Renew(ctx, Lease{Execution: "e", Owner: "a", Epoch: 1}, -1); err == nil || !strings.Contains(err.Error(), "lease ttl") {
		t.Errorf("Renew(ttl -1) = %v, want a ttl error", err)
	}
	if _, err := db.KeepRenewed(ctx, Lease{Execution: "e", Owner: "a", Epoch: 1}, -1); err == nil || !strings.Contains(err.Error(), "lease ttl") {
		t.Errorf("KeepRenewed(ttl -1) = %v, want a ttl error", err)
	}
}

// TestTakeoverAfterExpiry: a lease that expired is taken over with the
// next epoch, and its old holder can neither renew nor release it.
func TestTakeoverAfterExpiry(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	a, err := db.Acquire(ctx, "e1", "server-a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Really wait for the expiry once, by the database's clock.
	for {
		_, err := db.Acquire(ctx, "e1", "server-b", time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrHeld) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := db.currentLease(ctx, db.pool, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if b.Owner != "server-b" || b.Epoch != 2 {
		t.Fatalf("after the takeover the lease is %+v, want server-b at epoch 2", b)
	}
	want := "execution e1: lease epoch 1 is fenced off: the lease was taken over by server-b (epoch 2)"
	if _, err := db.Renew(ctx, a, time.Minute); !errors.Is(err, ErrFenced) || err.Error() != want {
		t.Errorf("Renew(old holder) = %v, want %q", err, want)
	}
	if err := db.Release(ctx, a); !errors.Is(err, ErrFenced) {
		t.Errorf("Release(old holder) = %v, want ErrFenced", err)
	}
	// Expired again: the next takeover raises the epoch again.
	expire(t, db, "e1")
	c, err := db.Acquire(ctx, "e1", "server-c", time.Minute)
	if err != nil || c.Epoch != 3 {
		t.Errorf("Acquire(expired again) = %+v, %v, want epoch 3", c, err)
	}
}

// TestRenewAfterExpiry: a lease that expired and that nobody took over is
// still its holder's.
func TestRenewAfterExpiry(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	a, err := db.Acquire(ctx, "e1", "server-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	expire(t, db, "e1")
	r, err := db.Renew(ctx, a, time.Minute)
	if err != nil || r.Epoch != 1 || !r.Expires.After(a.Expires.Add(-time.Minute)) {
		t.Fatalf("Renew(expired, not taken) = %+v, %v, want it renewed at epoch 1", r, err)
	}
	if _, err := db.Acquire(ctx, "e1", "server-b", time.Minute); !errors.Is(err, ErrHeld) {
		t.Errorf("Acquire(renewed) = %v, want ErrHeld", err)
	}
}

func TestRelease(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	a, err := db.Acquire(ctx, "e1", "server-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	// Released, not taken yet: the old epoch is fenced off all the same.
	err = inTx(t, db, func(tx pgx.Tx) error { return CheckFence(ctx, tx, "e1", a.Epoch) })
	if want := "execution e1: lease epoch 1 is fenced off: the lease was released"; !errors.Is(err, ErrFenced) || err.Error() != want {
		t.Errorf("CheckFence(released) = %v, want %q", err, want)
	}
	if _, err := db.Renew(ctx, a, time.Minute); !errors.Is(err, ErrFenced) {
		t.Errorf("Renew(released) = %v, want ErrFenced", err)
	}
	// Released: taken at once, at the next epoch, by anyone.
	b, err := db.Acquire(ctx, "e1", "server-b", time.Minute)
	if err != nil || b.Epoch != 2 {
		t.Errorf("Acquire(released) = %+v, %v, want epoch 2", b, err)
	}
	if err := db.Release(ctx, a); !errors.Is(err, ErrFenced) {
		t.Errorf("Release(twice) = %v, want ErrFenced", err)
	}
}

// inTx runs f in a transaction, committed when f returns nil.
func inTx(t testing.TB, db *DB, f func(pgx.Tx) error) error {
	t.Helper()
	ctx := context.Background()
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// fencedCommits are the two ways a commit checks its fence: a statement
// of its own, or the first of the commit's batch.
var fencedCommits = []struct {
	name   string
	commit func(ctx context.Context, tx pgx.Tx, l Lease, write string) error
}{
	{"CheckFence", func(ctx context.Context, tx pgx.Tx, l Lease, write string) error {
		if err := CheckFence(ctx, tx, l.Execution, l.Epoch); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO definitions (hash, body) VALUES ($1, '{}')`, write)
		return err
	}},
	{"QueueFence", func(ctx context.Context, tx pgx.Tx, l Lease, write string) error {
		b := &pgx.Batch{}
		QueueFence(b, l.Execution, l.Epoch)
		b.Queue(`INSERT INTO definitions (hash, body) VALUES ($1, '{}')`, write)
		return tx.SendBatch(ctx, b).Close()
	}},
}

// TestFenceRefusesAfterTakeover: a commit by the holder passes its fence;
// once the lease is taken over, the old holder's commits are refused and
// write nothing, and the new holder's pass.
func TestFenceRefusesAfterTakeover(t *testing.T) {
	for _, fc := range fencedCommits {
		t.Run(fc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openTest(t, Options{})
			a, err := db.Acquire(ctx, "e1", "server-a", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			commit := func(l Lease, write string) error {
				return inTx(t, db, func(tx pgx.Tx) error { return fc.commit(ctx, tx, l, write) })
			}
			if err := commit(a, "by-a-before"); err != nil {
				t.Fatalf("commit by the holder = %v", err)
			}
			expire(t, db, "e1")
			b, err := db.Acquire(ctx, "e1", "server-b", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			err = commit(a, "by-a-after")
			var fenced *FencedError
			if !errors.As(err, &fenced) || fenced.Current.Owner != "server-b" || fenced.Current.Epoch != 2 {
				t.Errorf("commit by the old holder = %v, want a FencedError naming server-b at epoch 2", err)
			}
			if err := commit(b, "by-b"); err != nil {
				t.Errorf("commit by the new holder = %v", err)
			}
			got := definitionsIn(t, db)
			if want := "by-a-before by-b"; got != want {
				t.Errorf("written: %s, want %s", got, want)
			}
			err = commit(Lease{Execution: "never-leased", Epoch: 1}, "by-nobody")
			if !errors.Is(err, ErrFenced) || err.Error() != "execution never-leased: lease epoch 1 is fenced off: the execution has no lease" {
				t.Errorf("commit(never leased) = %v, want ErrFenced saying there is no lease", err)
			}
		})
	}
}

// definitionsIn lists the hashes in definitions, which the fence tests
// use as a table to write to.
func definitionsIn(t *testing.T, db *DB) string {
	t.Helper()
	var got string
	if err := db.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(hash, ' ' ORDER BY hash), '') FROM definitions`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFenceHoldsTakeover: a takeover that comes while a commit holds the
// fence waits for that commit to end, so the new holder sees it, and the
// old holder's next commit is refused.
func TestFenceHoldsTakeover(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	a, err := db.Acquire(ctx, "e1", "server-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Expired but not taken over: the holder's commit passes the fence.
	expire(t, db, "e1")
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := CheckFence(ctx, tx, "e1", a.Epoch); err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   Lease
		err error
	}
	took := make(chan result, 1)
	go func() {
		l, err := db.Acquire(ctx, "e1", "server-b", time.Minute)
		took <- result{l, err}
	}()
	waitForLockWait(t, db, "INSERT INTO leases")
	select {
	case r := <-took:
		t.Fatalf("Acquire returned %+v, %v while a commit held the fence", r.l, r.err)
	default:
	}
	if _, err := tx.Exec(ctx, `INSERT INTO definitions (hash, body) VALUES ('by-a', '{}')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-took
	if r.err != nil || r.l.Epoch != 2 {
		t.Fatalf("Acquire after the commit = %+v, %v, want epoch 2", r.l, r.err)
	}
	if got := definitionsIn(t, db); got != "by-a" {
		t.Errorf("written: %q, want the held commit's", got)
	}
	if err := inTx(t, db, func(tx pgx.Tx) error { return CheckFence(ctx, tx, "e1", a.Epoch) }); !errors.Is(err, ErrFenced) {
		t.Errorf("CheckFence(old epoch) = %v, want ErrFenced", err)
	}
}

// waitForLockWait waits until a backend of the test database waits for a
// lock, running a statement that starts with prefix.
func waitForLockWait(t *testing.T, db *DB, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := db.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, text).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no statement holding %q waited for a lock within 30s", text)
}

// TestConcurrentAcquirers: of many processes acquiring one execution at
// once, free or expired, exactly one wins.
func TestConcurrentAcquirers(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{MaxConns: 16})
	for round, epoch := range []int64{1, 2, 3} {
		if round > 0 {
			expire(t, db, "e1")
		}
		const n = 16
		leases := make([]Lease, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				leases[i], errs[i] = db.Acquire(ctx, "e1", fmt.Sprintf("server-%d", i), time.Minute)
			})
		}
		close(start)
		wg.Wait()
		var won []Lease
		for i := range n {
			switch {
			case errs[i] == nil:
				won = append(won, leases[i])
			case !errors.Is(errs[i], ErrHeld):
				t.Errorf("round %d: Acquire #%d = %v, want ErrHeld or success", round, i, errs[i])
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d acquirers won (%+v), want exactly 1", round, len(won), won)
		}
		if won[0].Epoch != epoch {
			t.Errorf("round %d: the winner has epoch %d, want %d", round, won[0].Epoch, epoch)
		}
	}
}

// TestRenewerKeepsLease: a lease renewed in the background outlives its
// ttl many times over, and lapses once the renewer stops.
func TestRenewerKeepsLease(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	const ttl = 300 * time.Millisecond
	a, err := db.Acquire(ctx, "e1", "server-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.KeepRenewed(ctx, a, ttl)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		time.Sleep(ttl)
		if _, err := db.Acquire(ctx, "e1", "server-b", time.Minute); !errors.Is(err, ErrHeld) {
			t.Fatalf("Acquire while renewed = %v, want ErrHeld", err)
		}
	}
	if got := r.Lease(); !got.Expires.After(a.Expires) || got.Epoch != a.Epoch {
		t.Errorf("renewed lease %+v, want epoch %d expiring after %v", got, a.Epoch, a.Expires)
	}
	r.Stop()
	r.Stop()
	if err, ok := <-r.Lost(); ok {
		t.Errorf("Lost after Stop delivered %v, want it closed", err)
	}
	for {
		_, err := db.Acquire(ctx, "e1", "server-b", time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrHeld) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRenewerReportsLoss: a renewer whose lease was taken over says so and
// stops.
func TestRenewerReportsLoss(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	const ttl = 150 * time.Millisecond
	a, err := db.Acquire(ctx, "e1", "server-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.KeepRenewed(ctx, a, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	expire(t, db, "e1")
	if _, err := db.Acquire(ctx, "e1", "server-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.Lost():
		var fenced *FencedError
		if !errors.As(err, &fenced) || fenced.Current.Owner != "server-b" {
			t.Errorf("Lost delivered %v, want a FencedError naming server-b", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the renewer did not report the takeover within 30s")
	}
	if _, ok := <-r.Lost(); ok {
		t.Error("Lost delivered twice")
	}
}

// logRecords is an io.Writer under a slog.JSONHandler that hands each
// record on, decoded, to records (dropping those that do not fit).
type logRecords chan map[string]any

func (w logRecords) Write(p []byte) (int, error) {
	var rec map[string]any
	if err := json.Unmarshal(p, &rec); err != nil {
		return 0, err
	}
	select {
	case w <- rec:
	default:
	}
	return len(p), nil
}

// TestRenewerLogsFailure: a renewal that fails for another reason than a
// takeover (here the lease's row stays locked past the renewal's time) is
// logged with the execution and the error, and the renewer goes on: the
// next renewal after the lock goes keeps the lease.
func TestRenewerLogsFailure(t *testing.T) {
	ctx := context.Background()
	records := make(logRecords, 16)
	db := openTest(t, Options{Logger: slog.New(slog.NewJSONHandler(records, nil))})
	const ttl = 300 * time.Millisecond
	a, err := db.Acquire(ctx, "e1", "server-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM leases WHERE execution = 'e1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	r, err := db.KeepRenewed(ctx, a, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	select {
	case rec := <-records:
		if rec["level"] != "WARN" || rec["execution"] != "e1" || rec["error"] == nil || rec["error"] == "" {
			t.Errorf("logged %v, want a warning naming execution e1 and the error", rec)
		}
	case <-time.After(notifyTimeout):
		t.Fatal("the failed renewal was not logged")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The lock gone, the renewer renews again: its lease moves on.
	for {
		select {
		case err := <-r.Lost():
			t.Fatalf("the renewer stopped after a failed renewal: %v", err)
		case <-time.After(ttl / 3):
		}
		if got := r.Lease(); got.Expires.After(a.Expires) {
			break
		}
	}
}
