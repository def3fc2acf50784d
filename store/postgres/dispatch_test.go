package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// createAt creates a RUNNING execution started at start, with no lease
// (as a start left for any server).
func createAt(t *testing.T, db *DB, id string, start time.Time) {
	t.Helper()
	e := &engine.Execution{ID: id, MachineName: "m", Status: engine.StatusRunning, StartedAt: start, Input: map[string]any{}}
	if err := db.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// commitStatus commits execution id's step seq, leaving it in status
// (WAITING until wake, when given).
func commitStatus(t *testing.T, db *DB, id string, seq int64, status engine.Status, wake time.Time) {
	t.Helper()
	c := &engine.Commit{Execution: id, Seq: seq, Status: status, WakeAt: wake}
	switch {
	case status == engine.StatusWaiting:
		c.WaitingFor = "Wait"
	case status.Ended():
		c.StoppedAt = time.Now()
	}
	if err := db.Commit(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func claimedIDs(cs []engine.Claimed) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.Execution
	}
	sort.Strings(ids)
	return ids
}

// TestClaim: Claim takes what has something to run and no live holder,
// oldest first, up to n, with leases that fence and renew as Lease's do;
// it says when the next WAITING execution falls due.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	// Another process on the same schema.
	other := openOther(t, db, "other")

	base := time.Now().Add(-time.Hour)
	later := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	for i, id := range []string{"r1", "r2", "r3", "held", "expired", "w-due", "w-later", "w-approval", "stop-me", "done"} {
		createAt(t, db, id, base.Add(time.Duration(i)*time.Second))
	}
	commitStatus(t, db, "w-due", 1, engine.StatusWaiting, time.Now().Add(-time.Minute))
	commitStatus(t, db, "w-later", 1, engine.StatusWaiting, later)
	commitStatus(t, db, "w-approval", 1, engine.StatusWaiting, time.Time{})
	commitStatus(t, db, "stop-me", 1, engine.StatusWaiting, time.Time{})
	commitStatus(t, db, "done", 1, engine.StatusSucceeded, time.Time{})
	if _, err := other.Acquire(ctx, "held", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "expired", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	expire(t, db, "expired")
	if err := other.RequestStop(ctx, "stop-me", "Halted", "by the test"); err != nil {
		t.Fatal(err)
	}

	if _, _, err := db.Claim(ctx, 0, time.Now()); err == nil || !strings.Contains(err.Error(), "want at least 1") {
		t.Errorf("Claim(0) = %v, want a refusal", err)
	}
	// The two oldest first.
	first, next, err := db.Claim(ctx, 2, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := claimedIDs(first); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Errorf("Claim(2) = %v, want the two oldest, [r1 r2]", got)
	}
	if !next.Equal(later) {
		t.Errorf("next = %v, want %v (w-later's wake)", next, later)
	}
	rest, _, err := db.Claim(ctx, 100, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"expired", "r3", "stop-me", "w-due"}
	if got := claimedIDs(rest); !slices.Equal(got, want) {
		t.Errorf("Claim(100) = %v, want %v", got, want)
	}
	all := append(first, rest...)
	for _, c := range all {
		l, err := db.currentLease(ctx, db.pool, c.Execution)
		wantEpoch := int64(1)
		if c.Execution == "expired" {
			wantEpoch = 2
		}
		if err != nil || l.Owner != "me" || l.Epoch != wantEpoch {
			t.Errorf("%s: lease %+v, %v; want me's, epoch %d", c.Execution, l, err, wantEpoch)
		}
		if db.fence(c.Execution) != wantEpoch {
			t.Errorf("%s: commits fenced with epoch %d, want %d", c.Execution, db.fence(c.Execution), wantEpoch)
		}
	}
	// The stop request comes with the claim.
	for _, c := range all {
		var stop *engine.StopRequest
		select {
		case err := <-c.Lost:
			if !errors.As(err, &stop) {
				t.Errorf("%s: lost = %v, want nothing or a stop request", c.Execution, err)
			}
		default:
		}
		switch {
		case c.Execution == "stop-me" && (stop == nil || *stop != engine.StopRequest{Execution: "stop-me", ErrName: "Halted", Cause: "by the test"}):
			t.Errorf("stop-me: stop request %+v, want Halted by the test", stop)
		case c.Execution != "stop-me" && stop != nil:
			t.Errorf("%s: stop request %+v, want none", c.Execution, stop)
		}
	}
	// Nothing is left; a released one can be claimed again.
	if again, _, err := db.Claim(ctx, 100, time.Now()); err != nil || len(again) != 0 {
		t.Errorf("Claim with everything held = %v, %v; want nothing", claimedIDs(again), err)
	}
	for _, c := range all {
		if c.Execution == "r1" {
			c.Release()
		}
	}
	again, _, err := other.Claim(ctx, 100, time.Now())
	if err != nil || !slices.Equal(claimedIDs(again), []string{"r1"}) {
		t.Errorf("Claim by another process after r1's release = %v, %v; want [r1]", claimedIDs(again), err)
	}
	for _, c := range append(all, again...) {
		c.Release()
	}
}

// TestClaimConcurrent: many processes claiming at once share the work out:
// every execution is claimed exactly once, and no claim fails.
func TestClaimConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	url := schemaURL(t, db)
	const executions, claimers, batch = 60, 8, 3
	for i := range executions {
		createAt(t, db, fmt.Sprintf("c%02d", i), time.Now())
	}
	var (
		mu  sync.Mutex
		got = map[string][]string{}
		wg  sync.WaitGroup
	)
	start := make(chan struct{})
	for i := range claimers {
		p, err := Open(ctx, url, Options{LeaseOwner: fmt.Sprintf("p%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		wg.Go(func() {
			<-start
			for {
				cs, _, err := p.Claim(ctx, batch, time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					got[c.Execution] = append(got[c.Execution], p.Owner())
				}
				mu.Unlock()
				// Held until the test ends: claimed once.
				t.Cleanup(func() {
					for _, c := range cs {
						c.Release()
					}
				})
			}
		})
	}
	close(start)
	wg.Wait()
	if len(got) != executions {
		t.Errorf("%d executions claimed, want %d", len(got), executions)
	}
	for id, by := range got {
		if len(by) != 1 {
			t.Errorf("%s claimed by %v, want one", id, by)
		}
	}
}

// TestWakesOnStartAndRelease: the transactions that leave work for any
// process notify WakeChannel: a start created without its lease, and a
// lease released after commits with the execution still RUNNING; a start
// created under its lease, and a lease released with nothing written, do
// not. (Notifications arrive in commit order: the one that must not come
// is sent before one that must.)
func TestWakesOnStartAndRelease(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me"})
	n, wake := listenWakes(t, db)
	expectWake := func(want string) {
		t.Helper()
		if w := next(t, n); w != (Wake{Channel: wake, Execution: want}) {
			t.Fatalf("wake = %+v, want %s", w, want)
		}
	}
	// A start under its lease: no wake.
	lost, release, err := db.Lease(ctx, "leased", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = lost
	createAt(t, db, "leased", time.Now())
	createAt(t, db, "queued", time.Now())
	expectWake("queued")

	// Released with nothing written: no wake; after a commit, RUNNING:
	// a wake.
	release()
	_, release, err = db.Lease(ctx, "queued", false)
	if err != nil {
		t.Fatal(err)
	}
	release()
	_, release, err = db.Lease(ctx, "leased", false)
	if err != nil {
		t.Fatal(err)
	}
	commitStatus(t, db, "leased", 1, engine.StatusRunning, time.Time{})
	release()
	expectWake("leased")
	// Parked WAITING (not due): no wake; ended: none either.
	_, release, err = db.Lease(ctx, "leased", false)
	if err != nil {
		t.Fatal(err)
	}
	commitStatus(t, db, "leased", 2, engine.StatusWaiting, time.Now().Add(time.Hour))
	release()
	_, release, err = db.Lease(ctx, "queued", false)
	if err != nil {
		t.Fatal(err)
	}
	commitStatus(t, db, "queued", 1, engine.StatusSucceeded, time.Time{})
	release()
	createAt(t, db, "last", time.Now())
	expectWake("last")
}

// TestStopRequest: RequestStop reaches the lease's holder on its lost
// channel, at once where it listens (Wakes), at its next renewal
// otherwise; it does not end the lease; the commit ending the execution
// removes it; and what it refuses.
func TestStopRequest(t *testing.T) {
	ctx := context.Background()
	url := testServer.Schema(t)
	open := func(owner string, ttl time.Duration) *DB {
		db, err := Open(ctx, url, Options{Migrate: true, LeaseOwner: owner, LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	// The listener's lease lasts an hour: it renews every 20 minutes, so
	// only the notification can tell it within the test.
	listening := open("listening", time.Hour)
	renewing := open("renewing", 300*time.Millisecond)
	requester := open("requester", time.Minute)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := listening.Wakes(wctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		db   *DB
	}{{"notified", listening}, {"renewal", renewing}} {
		t.Run(tc.name, func(t *testing.T) {
			id := "stop-" + tc.name
			createAt(t, requester, id, time.Now())
			lost, release, err := tc.db.Lease(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if err := requester.RequestStop(ctx, id, "Halted", "by "+tc.name); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-lost:
				var stop *engine.StopRequest
				if !errors.As(err, &stop) || *stop != (engine.StopRequest{Execution: id, ErrName: "Halted", Cause: "by " + tc.name}) {
					t.Fatalf("lost = %v, want the stop request", err)
				}
			case <-time.After(notifyTimeout):
				t.Fatal("the holder did not hear of the stop request")
			}
			// The lease is still the holder's: it commits the end, which
			// removes the request.
			commitStatus(t, tc.db, id, 1, engine.StatusAborted, time.Time{})
			if s, err := requester.stopRequest(ctx, id); err != nil || s != nil {
				t.Errorf("stop request after the end = %+v, %v; want none", s, err)
			}
		})
	}
	createAt(t, requester, "ended", time.Now())
	commitStatus(t, requester, "ended", 1, engine.StatusSucceeded, time.Time{})
	for _, tc := range []struct {
		id, errName string
		want        error
		msg         string
	}{
		{"nope", "", engine.ErrNotFound, ""},
		{"bad\x00id", "", engine.ErrNotFound, ""},
		{"ended", "", engine.ErrEnded, "SUCCEEDED"},
		{"stop-notified", "Bad\x00Name", nil, "UTF-8 text without NUL"},
	} {
		err := requester.RequestStop(ctx, tc.id, tc.errName, "")
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("RequestStop(%q, %q) = %v, want %v %q", tc.id, tc.errName, err, tc.want, tc.msg)
		}
	}
}
