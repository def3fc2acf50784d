package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// TestEndingCommitReleases: the commit that ends an execution this process
// holds through Lease releases the lease in its transaction (another
// process may take it at once), and the release after it has nothing left
// to do; a lease given to Fence directly stays the caller's to release.
func TestEndingCommitReleases(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{LeaseOwner: "me", LeaseTTL: time.Minute})
	other := openOther(t, db, "other")
	for _, id := range []string{"held", "fenced"} {
		createAt(t, db, id, time.Now())
	}

	lost, release, err := db.Lease(ctx, "held", false)
	if err != nil {
		t.Fatal(err)
	}
	commitStatus(t, db, "held", 1, engine.StatusRunning, time.Time{})
	if l, _ := db.currentLease(ctx, db.pool, "held"); l.Owner != "me" {
		t.Fatalf("after a commit that does not end it, lease %+v, want me's", l)
	}
	commitStatus(t, db, "held", 2, engine.StatusSucceeded, time.Time{})
	if l, _ := db.currentLease(ctx, db.pool, "held"); l.Owner != "" {
		t.Errorf("after the commit that ended it, lease %+v, want released", l)
	}
	if _, err := other.Acquire(ctx, "held", "other", time.Minute); err != nil {
		t.Errorf("another process acquiring it after its end: %v", err)
	}
	release()
	if _, ok := <-lost; ok {
		t.Error("lost received a value; want it closed by the release")
	}
	if l, _ := db.currentLease(ctx, db.pool, "held"); l.Owner != "other" || l.Epoch != 2 {
		t.Errorf("after the first holder's release, lease %+v, want other's, epoch 2 (the release wrote nothing)", l)
	}

	l, err := db.Acquire(ctx, "fenced", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	db.Fence(l)
	commitStatus(t, db, "fenced", 1, engine.StatusFailed, time.Time{})
	if cur, _ := db.currentLease(ctx, db.pool, "fenced"); cur.Owner != "me" {
		t.Errorf("a lease given to Fence, after the commit that ended it: %+v, want still me's", cur)
	}
	if err := db.Release(ctx, l); err != nil {
		t.Errorf("Release of a lease given to Fence after the end: %v", err)
	}
}
