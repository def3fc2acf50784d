package postgres

import (
	"context"
	"fmt"

	"github.com/aslrun/aslrun/engine"
)

var _ engine.StartClaimer = (*DB)(nil)

// claimStartsQuery takes the leases of up to $2 of the executions $1 for
// owner $3, for $4 microseconds: aslrun_claim_starts (migration 0006)
// says how.
const claimStartsQuery = `SELECT execution, epoch, expires_at FROM aslrun_claim_starts($1, $2, $3, $4)`

// ClaimStarts makes DB an engine.StartClaimer: it takes, in one statement,
// the leases of up to n of ids (executions this process created without
// their lease, queued), in the order of ids, skipping those no longer as
// created and queued (claimed by another process meanwhile, stopped, or
// with a stop requested), and holds each as Claim does, until its
// Release. Claimed are in the order of ids.
func (db *DB) ClaimStarts(ctx context.Context, ids []string, n int) ([]engine.Claimed, error) {
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("claiming %d queued starts: want at least 1", n)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	for _, id := range ids {
		if !storable(id) {
			return nil, fmt.Errorf("claiming execution %q: not an execution id this store holds", id)
		}
	}
	rows, err := db.pool.Query(ctx, claimStartsQuery, ids, n, db.owner, db.leaseTTL.Microseconds())
	var got []Lease
	if err == nil {
		for rows.Next() {
			l := Lease{Owner: db.owner}
			if err = rows.Scan(&l.Execution, &l.Epoch, &l.Expires); err != nil {
				break
			}
			got = append(got, l)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		// The leases may have been taken before the answer was lost: they
		// expire, and their executions are claimed again.
		return nil, db.dbErr("claiming queued starts", err)
	}
	claims := make([]engine.Claimed, 0, len(got))
	for _, l := range got {
		lost, release, err := db.holdLease(ctx, l, nil, nil)
		if err != nil {
			for _, done := range claims {
				done.Release()
			}
			return nil, err
		}
		claims = append(claims, engine.Claimed{Execution: l.Execution, Lost: lost, Release: release})
	}
	return claims, nil
}
