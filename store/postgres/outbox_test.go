package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// TestOutboxTwoServers: two processes (two DBs on one database) claiming
// the same outbox at once never take the same delivery, and take all of
// them.
func TestOutboxTwoServers(t *testing.T) {
	ctx := context.Background()
	url := testServer.Schema(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, url, Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	t0 := time.Unix(1_700_000_000, 0)
	if err := dbs[0].Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: t0, Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	c := benchStoreCommit("e1", 1)
	for i := range n {
		c.Outbox = append(c.Outbox, engine.OutboxEntry{ID: fmt.Sprintf("ev-%04d", i), Channel: "c", URL: "https://example.com",
			Type: "t", Body: []byte(`{}`), CreatedAt: t0})
	}
	if err := dbs[0].Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	claimed := make(map[string]string)
	var twice []string
	var wg sync.WaitGroup
	for i, db := range dbs {
		for w := range 4 {
			owner := fmt.Sprintf("server-%d/%d", i, w)
			wg.Go(func() {
				for {
					ds, err := db.ClaimDeliveries(ctx, owner, 7, t0, time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					if len(ds) == 0 {
						return
					}
					mu.Lock()
					for _, d := range ds {
						if prev, ok := claimed[d.ID]; ok {
							twice = append(twice, d.ID+" by "+prev+" and "+owner)
						}
						claimed[d.ID] = owner
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(twice) > 0 {
		t.Errorf("claimed twice: %q", twice)
	}
	if len(claimed) != n {
		t.Errorf("claimed %d deliveries, want %d", len(claimed), n)
	}
}

// BenchmarkOutboxCommit measures a durable commit with no outbox entry
// and with one.
func BenchmarkOutboxCommit(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, Options{})
	runs := 0
	for _, n := range []int{0, 1} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			runs++
			id := fmt.Sprintf("bench-%d", runs)
			if err := db.Create(ctx, &engine.Execution{ID: id, MachineName: "bench", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			seq := int64(0)
			for b.Loop() {
				seq++
				c := benchStoreCommit(id, seq)
				for i := range n {
					c.Outbox = append(c.Outbox, engine.OutboxEntry{ID: fmt.Sprintf("%s-%012d-%d", id, seq, i), Channel: "hooks", URL: "https://example.com/hook",
						Type: "state.entered", Body: []byte(`{"type":"state.entered","execution":"bench","state":"A"}`), CreatedAt: time.Now()})
				}
				if err := db.Commit(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
