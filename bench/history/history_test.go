package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// pageSize is the page read: GET …/history's default limit.
const pageSize = 100

// eventsPerCommit is how many events each commit of the histories made
// here adds: five states entered and exited, as a loop of pure states
// commits them together.
const eventsPerCommit = 10

// payload is the part of every document that stays the same (1 KiB).
var payload = func() string {
	b := make([]byte, 1024)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}()

// fill commits a history of n events to a new execution id: a loop
// whose document changes one counter per state, its 1 KiB payload
// unchanged, each state's input the output of the one before.
func fill(tb testing.TB, st store.Store, id string, n int) {
	tb.Helper()
	ctx := context.Background()
	if err := st.Create(ctx, &engine.Execution{ID: id, MachineName: "Loop", Definition: []byte(`{}`), DefinitionHash: "loop", Status: engine.StatusRunning, StartedAt: time.Now()}); err != nil {
		tb.Fatal(err)
	}
	doc := func(i int) any {
		v, err := jsonvalue.Decode(fmt.Appendf(nil, `{"counter":%d,"payload":%q}`, i, payload))
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	prev := doc(0)
	var seq int64
	for ev := 0; ev < n; {
		var events []engine.Event
		for k := 0; k < eventsPerCommit && ev < n; k += 2 {
			next := doc(ev + 1)
			ts := time.Unix(int64(ev), 0)
			events = append(events,
				engine.Event{ID: int64(ev + 1), Type: "PassStateEntered", Timestamp: ts, State: fmt.Sprint("S", k/2), Document: prev, Input: prev},
				engine.Event{ID: int64(ev + 2), Type: "PassStateExited", Timestamp: ts, State: fmt.Sprint("S", k/2), Document: next, Output: next})
			prev = next
			ev += 2
		}
		seq++
		if err := st.Commit(ctx, &engine.Commit{Execution: id, Seq: seq, Status: engine.StatusRunning, Events: events, LastEvent: int64(ev)}); err != nil {
			tb.Fatal(err)
		}
	}
}

// pgServer is the fresh PostgreSQL database of the run, when
// ASLRUN_TEST_POSTGRES names a server.
var pgServer *pgtest.Server

func TestMain(m *testing.M) {
	if os.Getenv(pgtest.EnvURL) != "" {
		s, err := pgtest.Start(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pgServer = s
	}
	code := m.Run()
	for _, st := range stores.st {
		if st != nil {
			st.Close()
		}
	}
	for _, dir := range stores.dirs {
		os.RemoveAll(dir)
	}
	if pgServer != nil {
		if err := pgServer.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// stores are the stores measured, each made once per run and filled
// with a history of each size.
var stores = struct {
	once map[string]*sync.Once
	st   map[string]store.Store
	err  map[string]error
	dirs []string // removed by TestMain
	mu   sync.Mutex
}{once: map[string]*sync.Once{}, st: map[string]store.Store{}, err: map[string]error{}}

var sizes = []int{100, 100_000}

// open returns the store named kind ("bbolt" or "postgres") holding a
// history of every size, filled on first use; it skips when PostgreSQL
// is not reachable.
func open(b *testing.B, kind string) store.Store {
	stores.mu.Lock()
	once := stores.once[kind]
	if once == nil {
		once = new(sync.Once)
		stores.once[kind] = once
	}
	stores.mu.Unlock()
	once.Do(func() {
		var st store.Store
		var err error
		switch kind {
		case "bbolt":
			dir, derr := os.MkdirTemp("", "history-bench")
			if derr != nil {
				err = derr
				break
			}
			stores.mu.Lock()
			stores.dirs = append(stores.dirs, dir)
			stores.mu.Unlock()
			st, err = store.OpenBolt(filepath.Join(dir, "bench.db"), store.BoltOptions{})
		case "postgres":
			// The binary's fresh database, dropped by TestMain.
			st, err = postgres.Open(context.Background(), pgServer.URL(b), postgres.Options{Migrate: true})
		}
		if err == nil {
			for _, n := range sizes {
				fill(b, st, fmt.Sprint("h", n), n)
			}
		}
		stores.mu.Lock()
		stores.st[kind], stores.err[kind] = st, err
		stores.mu.Unlock()
	})
	stores.mu.Lock()
	defer stores.mu.Unlock()
	if err := stores.err[kind]; err != nil {
		b.Fatal(err)
	}
	return stores.st[kind]
}

// BenchmarkHistoryLastPage reads the last page (100 events) of a history
// of 100 and of 100,000 events: by range (HistoryRange, what GET
// …/history does now) and whole (History then the page, what it did
// before).
func BenchmarkHistoryLastPage(b *testing.B) {
	kinds := []string{"bbolt"}
	if pgServer != nil {
		kinds = append(kinds, "postgres")
	}
	for _, kind := range kinds {
		for _, n := range sizes {
			for _, how := range []string{"range", "whole"} {
				if how == "whole" && n > 10_000 && testing.Short() {
					continue
				}
				b.Run(fmt.Sprintf("%s/events=%d/%s", kind, n, how), func(b *testing.B) {
					st := open(b, kind)
					ctx, id, after := context.Background(), fmt.Sprint("h", n), int64(n-pageSize)
					b.ReportAllocs()
					for b.Loop() {
						var page []engine.Event
						switch how {
						case "range":
							events, total, err := st.HistoryRange(ctx, id, after, pageSize)
							if err != nil || total != int64(n) {
								b.Fatal(total, err)
							}
							page = events
						case "whole":
							events, err := st.History(ctx, id)
							if err != nil {
								b.Fatal(err)
							}
							page = events[after:]
						}
						if len(page) != pageSize || page[pageSize-1].Output == nil {
							b.Fatalf("the last page has %d events", len(page))
						}
					}
				})
			}
		}
	}
}

// BenchmarkHistoryFirstPage reads the first page (100 events) of the
// same histories by range. PostgreSQL finds it by its key; bbolt follows
// the links back from the newest record, reading each record's header
// on the way (not decoding it).
func BenchmarkHistoryFirstPage(b *testing.B) {
	kinds := []string{"bbolt"}
	if pgServer != nil {
		kinds = append(kinds, "postgres")
	}
	for _, kind := range kinds {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/events=%d", kind, n), func(b *testing.B) {
				st := open(b, kind)
				ctx, id := context.Background(), fmt.Sprint("h", n)
				b.ReportAllocs()
				for b.Loop() {
					events, total, err := st.HistoryRange(ctx, id, 0, pageSize)
					if err != nil || total != int64(n) || len(events) != pageSize {
						b.Fatal(len(events), total, err)
					}
				}
			})
		}
	}
}
