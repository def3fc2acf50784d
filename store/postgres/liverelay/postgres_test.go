package liverelay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/liverelay"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// pgPair opens the database at url twice (two servers) and relays an
// executor of each through it: a, whose agent Writer streams what texts
// sends, and b.
func pgPair(t testing.TB, url string, texts <-chan string) (a, b *engine.Executor, ra, rb *liverelay.Relay) {
	t.Helper()
	ctx := context.Background()
	var relays []*liverelay.Relay
	for i := range 2 {
		db, err := postgres.Open(ctx, url, postgres.Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		tr, err := liverelay.Postgres(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Close)
		var x *engine.Executor
		if i == 0 {
			x, _ = streamingExecutor(t, texts)
		} else {
			x = engine.New(engine.Config{})
		}
		r := liverelay.New(x, tr, fmt.Sprintf("server%d", i), nil)
		t.Cleanup(r.Close)
		relays = append(relays, r)
		if i == 0 {
			a = x
		} else {
			b = x
		}
	}
	return a, b, relays[0], relays[1]
}

// TestRelayPostgres: through PostgreSQL's NOTIFY, a follower on one
// server gets every chunk an execution streams on another, in order,
// large ones in fragments, and all of them by the time it settled after
// the execution ended.
func TestRelayPostgres(t *testing.T) {
	url := pgtest.Fresh(t)
	texts := make(chan string)
	a, b, ra, rb := pgPair(t, url, texts)
	_, def := streamingExecutor(t, nil)
	release := b.FollowLive("pg1")
	defer release()
	asked(t, ra)
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), def, map[string]any{}, engine.StartOptions{ID: "pg1"})
		done <- err
	}()
	var want strings.Builder
	for i := range 200 {
		s := fmt.Sprintf("token%d ", i)
		if i == 100 {
			s = strings.Repeat("é", 9000) // 18 KB: three payloads
		}
		want.WriteString(s)
		texts <- s
	}
	close(texts)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.SettleLive(context.Background(), "pg1"); err != nil {
		t.Fatal(err)
	}
	ea, _, ka, _ := feedOf(a, "pg1")
	eb, tb, kb, r := feedOf(b, "pg1")
	if eb != ea || tb != want.String() || kb != ka || r.Missed != 0 {
		t.Errorf("the mirror is not the feed: epochs %s %s, kinds %d %d, missed %d, text %d bytes of %d", ea, eb, len(ka), len(kb), r.Missed, len(tb), want.Len())
	}
	if st := rb.Stats(); st.Mirrored != 202 || st.Dropped != 0 {
		t.Errorf("follower stats %+v", st)
	}
}

// BenchmarkRelayPostgres measures a chunk's way from the writer's feed to
// a follower's mirror on another server through PostgreSQL: latency
// (one chunk at a time, op = one chunk) and the NOTIFY payloads and bytes
// per chunk.
func BenchmarkRelayPostgres(b *testing.B) {
	url := pgtest.Fresh(b)
	texts := make(chan string)
	a, f, ra, _ := pgPair(b, url, texts)
	release := f.FollowLive("bench")
	defer release()
	_, def := streamingExecutor(b, nil)
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), def, map[string]any{}, engine.StartOptions{ID: "bench"})
		done <- err
	}()
	// The stream is open and relayed once the first chunk arrives.
	texts <- "warm "
	waitMirror(b, f, "bench", 2)
	before := ra.Stats()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		texts <- "tok "
		waitMirror(b, f, "bench", int64(i)+3)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	after := ra.Stats()
	close(texts)
	<-done
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(after.Published-before.Published)/float64(b.N), "notifies/chunk")
	b.ReportMetric(float64(after.PublishedBytes-before.PublishedBytes)/float64(b.N), "B/chunk")
}

// waitMirror waits until x's feed of id holds chunk seq.
func waitMirror(b testing.TB, x *engine.Executor, id string, seq int64) {
	deadline := time.After(10 * time.Second)
	for {
		_, got := x.LivePosition(id)
		if got >= seq {
			return
		}
		select {
		case <-x.Live(id, "", got).Changed:
		case <-deadline:
			b.Fatalf("chunk %d never reached the mirror (at %d)", seq, got)
		}
	}
}
