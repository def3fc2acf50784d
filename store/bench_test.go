package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store/internal/commitbench"
)

// commitBenchDoc is an agent-like document of about 1 KiB.
const commitBenchDoc = commitbench.Doc

// benchCommit returns a realistic transition commit of execution id: the
// document, variables, visits and three history events.
func benchCommit(tb testing.TB, id string) *engine.Commit {
	d, err := jsonvalue.Decode([]byte(commitBenchDoc))
	if err != nil {
		tb.Fatal(err)
	}
	return &engine.Commit{
		Execution: id, Status: engine.StatusRunning,
		Scopes: map[string]*engine.Scope{"": {
			Next: "Review", Doc: d,
			Vars:   map[string]any{"attempts": jsonvalue.IntNumber(1), "customer": "C-99812"},
			Visits: map[string]int{"Classify": 1, "Draft": 1},
		}},
		Invocations: map[string]int{"Drafter": 1},
		Events: []engine.Event{
			{Type: engine.EventTaskSucceeded, State: "Draft", Output: map[string]any{"draft": "…"}, Document: d},
			{Type: "TaskStateExited", State: "Draft", Output: d, Document: d},
			{Type: "TaskStateEntered", State: "Review", Input: d, Document: d},
		},
	}
}

// benchStep makes the successive commits of one execution from one
// Commit, reused as the engine reuses its own.
type benchStep struct {
	c   *engine.Commit
	seq int64
}

// next numbers the commit as the execution's next one, with its events
// numbered and timestamped.
func (st *benchStep) next() *engine.Commit {
	st.seq++
	c := st.c
	c.Seq = st.seq
	c.LastEvent = 3 * st.seq
	now := time.Now()
	for i := range c.Events {
		c.Events[i].ID = 3*(st.seq-1) + int64(i) + 1
		c.Events[i].Timestamp = now
	}
	return c
}

// openBench opens a Bolt in a temporary directory with executions
// created.
func openBench(b *testing.B, ids ...string) *Bolt {
	s, err := OpenBolt(filepath.Join(b.TempDir(), "bench.db"), BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, id := range ids {
		if err := s.Create(b.Context(), &engine.Execution{ID: id, Definition: []byte(`{}`), StartedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkCommitDurable(b *testing.B) {
	s := openBench(b, "bench")
	st := &benchStep{c: benchCommit(b, "bench")}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Commit(b.Context(), st.next()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitDurable50KiB is BenchmarkCommitDurable with a document of
// about 50 KiB (the 1 KiB one plus 490 task items), the size the
// governance benchmarks compare against.
func BenchmarkCommitDurable50KiB(b *testing.B) {
	s := openBench(b, "bench")
	c := benchCommit(b, "bench")
	doc := c.Scopes[""].Doc.(map[string]any)
	tasks := make([]any, 490)
	for i := range tasks {
		tasks[i] = map[string]any{"id": fmt.Sprintf("task-%d", i+1), "label": fmt.Sprintf("Check the customer's order history, step %d", i+1),
			"done": i%3 == 0, "owner": "triage"}
	}
	doc["tasks"] = tasks
	for i := range c.Events {
		c.Events[i].Document = doc
	}
	st := &benchStep{c: c}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Commit(b.Context(), st.next()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(jsonvalue.Size(doc)), "doc-bytes")
}

// commitWrites returns the keys and values one bench commit writes after
// the first: the head, the scope and the history record of its three
// events (whose key, taken from the bucket's sequence, bareWriter takes
// the same way).
func commitWrites(b *testing.B) (keys, values [][]byte, buckets []string) {
	s := openBench(b, "bench")
	st := &benchStep{c: benchCommit(b, "bench")}
	for range 2 {
		if err := s.Commit(b.Context(), st.next()); err != nil {
			b.Fatal(err)
		}
	}
	err := s.db.View(func(t *bbolt.Tx) error {
		add := func(bucket []byte, k []byte) {
			keys = append(keys, bytes.Clone(k))
			values = append(values, bytes.Clone(t.Bucket(bucket).Get(k)))
			buckets = append(buckets, string(bucket))
		}
		add(bucketHeads, []byte("bench"))
		add(bucketScopes, idKey("bench", ""))
		h, err := decodeSealedHead("bench", t.Bucket(bucketHeads).Get([]byte("bench")))
		if err != nil {
			return err
		}
		add(bucketEvents, recordKey(h.LastRecord))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return keys, values, buckets
}

// BenchmarkBareUpdate is the floor for BenchmarkCommitDurable: one bbolt
// Update, with the same options, writing the same bytes to the same keys
// as one of its commits (the history record's key advancing as it does).
func BenchmarkBareUpdate(b *testing.B) {
	bare := openBare(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := bare.update(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bare.bytes), "bytes/update")
}

// BenchmarkCommitVsBare alternates one Commit and one bare Update on the
// same disk, so that both see the same fsync latency (which varies a lot
// on a shared machine), and reports their mean times and ratio.
func BenchmarkCommitVsBare(b *testing.B) {
	s := openBench(b, "bench")
	st := &benchStep{c: benchCommit(b, "bench")}
	bare := openBare(b)
	var commit, update time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := s.Commit(b.Context(), st.next()); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := bare.update(); err != nil {
			b.Fatal(err)
		}
		commit += t1.Sub(t0)
		update += time.Since(t1)
	}
	b.ReportMetric(float64(commit.Nanoseconds())/float64(b.N), "commit-ns/op")
	b.ReportMetric(float64(update.Nanoseconds())/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(commit)/float64(update), "ratio")
}

// bareWriter writes what a bench commit writes, with bare bbolt.
type bareWriter struct {
	db           *bbolt.DB
	keys, values [][]byte
	buckets      []string
	bytes        int
}

// openBare opens a bbolt database beside the bench's, with the store's
// options and buckets.
func openBare(b *testing.B) *bareWriter {
	w := &bareWriter{}
	w.keys, w.values, w.buckets = commitWrites(b)
	for i := range w.keys {
		w.bytes += len(w.keys[i]) + len(w.values[i])
	}
	var err error
	w.db, err = bbolt.Open(filepath.Join(b.TempDir(), "bare.db"), 0o600, boltOptions(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.db.Close() })
	if err := w.db.Update(createBuckets); err != nil {
		b.Fatal(err)
	}
	return w
}

// update writes one commit's bytes in one Update, the history record
// under the next key of its bucket's sequence, as the store does.
func (w *bareWriter) update() error {
	return w.db.Update(func(t *bbolt.Tx) error {
		for i, k := range w.keys {
			bkt := t.Bucket([]byte(w.buckets[i]))
			if w.buckets[i] == string(bucketEvents) {
				bkt.FillPercent = appendFill
				n, err := bkt.NextSequence()
				if err != nil {
					return err
				}
				k = recordKey(n)
			}
			if err := bkt.Put(k, w.values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkGroupCommit commits transitions from N goroutines, each to its
// own execution, and reports committed transitions per second and how many
// commits shared a transaction.
func BenchmarkGroupCommit(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("executions=%d", n), func(b *testing.B) { groupCommit(b, n, 1, benchCommit) })
	}
}

// BenchmarkGroupCommitSpread is BenchmarkGroupCommit/executions=64 with
// 4096 executions, each goroutine committing to 64 of them in turn: the
// executions that commit together are spread over the database, as when
// many executions run at once, each committing now and then.
func BenchmarkGroupCommitSpread(b *testing.B) {
	groupCommit(b, 64, 64, benchCommit)
}

// BenchmarkGroupCommitSmall is BenchmarkGroupCommit with a tiny document
// and events without input or output: it shows the commit loop's own
// limits rather than the disk's bandwidth.
func BenchmarkGroupCommitSmall(b *testing.B) {
	small := func(tb testing.TB, id string) *engine.Commit {
		c := benchCommit(tb, id)
		d := map[string]any{"n": "x"}
		c.Scopes[""].Doc = d
		for i := range c.Events {
			c.Events[i].Document, c.Events[i].Input, c.Events[i].Output = d, nil, nil
		}
		return c
	}
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("executions=%d", n), func(b *testing.B) { groupCommit(b, n, 1, small) })
	}
}

// groupCommit runs b.N commits made by newCommit from n goroutines, each
// committing to its own each executions in turn.
func groupCommit(b *testing.B, n, each int, newCommit func(testing.TB, string) *engine.Commit) {
	ids := make([]string, n*each)
	for i := range ids {
		ids[i] = fmt.Sprintf("exec-%04d", i)
	}
	s := openBench(b, ids...)
	steps := make([][]*benchStep, n)
	for i := range steps {
		for _, id := range ids[i*each : (i+1)*each] {
			steps[i] = append(steps[i], &benchStep{c: newCommit(b, id)})
		}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	s.batches.Store(0)
	s.batched.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, mine := range steps {
		wg.Go(func() {
			for i := 0; left.Add(-1) >= 0; i++ {
				if err := s.Commit(b.Context(), mine[i%each].next()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(s.batched.Load())/float64(s.batches.Load()), "commits/tx")
}

// BenchmarkMemoryCommit is the cost of one transition commit in the memory
// store: encoding, hashing and the copy it keeps.
func BenchmarkMemoryCommit(b *testing.B) {
	m := NewMemory()
	if err := m.Create(b.Context(), &engine.Execution{ID: "bench"}); err != nil {
		b.Fatal(err)
	}
	st := &benchStep{c: benchCommit(b, "bench")}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Commit(b.Context(), st.next()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitRejected commits to an unknown execution in a database
// of 256 executions with 40 commits each: a commit that fails without
// writing anything.
func BenchmarkCommitRejected(b *testing.B) {
	ids := make([]string, 256)
	for i := range ids {
		ids[i] = fmt.Sprintf("exec-%04d", i)
	}
	s := openBench(b, ids...)
	var wg sync.WaitGroup
	for _, id := range ids {
		st := &benchStep{c: benchCommit(b, id)}
		wg.Go(func() {
			for range 40 {
				if err := s.Commit(b.Context(), st.next()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c := benchCommit(b, "nobody")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Commit(b.Context(), c); !errors.Is(err, engine.ErrNotFound) {
			b.Fatalf("Commit(nobody) = %v, want ErrNotFound", err)
		}
	}
}

// openLoadBench opens a Bolt holding execution "bench" with ten commits
// and a checkpoint, ended with its output, for the read benchmarks.
func openLoadBench(b *testing.B) *Bolt {
	s := openBench(b, "bench")
	st := &benchStep{c: benchCommit(b, "bench")}
	for range 10 {
		if err := s.Commit(b.Context(), st.next()); err != nil {
			b.Fatal(err)
		}
	}
	d := st.c.Scopes[""].Doc
	now := time.Now()
	end := &engine.Commit{
		Execution: "bench", Seq: st.seq + 1, Status: engine.StatusSucceeded, Output: d, StoppedAt: now,
		Checkpoint: &engine.Checkpoint{Name: "cp", State: "Save", Document: d, Context: map[string]any{"State": "Save"}, CreatedAt: now},
		Events: []engine.Event{
			{Own: 1, Type: engine.EventCheckpointSaved, State: "Save", Timestamp: now, Document: d, Detail: map[string]any{"name": "cp"}},
			{ID: 3*st.seq + 1, Type: engine.EventExecutionSucceeded, Timestamp: now, Output: d, Document: d},
		},
	}
	if err := s.Commit(b.Context(), end); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkLoad loads an ended execution (head, scopes, definition).
func BenchmarkLoad(b *testing.B) {
	s := openLoadBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Load(b.Context(), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList lists one ended execution.
func BenchmarkList(b *testing.B) {
	s := openLoadBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.List(b.Context(), ListOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpoint loads a checkpoint with its document.
func BenchmarkCheckpoint(b *testing.B) {
	s := openLoadBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Checkpoint(b.Context(), "bench", "cp"); err != nil {
			b.Fatal(err)
		}
	}
}

// openListBench opens a Bolt holding 10,000 executions of four machines,
// started a second apart, one in ten FAILED and the others SUCCEEDED,
// written in one transaction.
func openListBench(b *testing.B) *Bolt {
	s := openBench(b)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var cs []*created
	for i := range 10_000 {
		e := &engine.Execution{
			ID: fmt.Sprintf("exec-%05d", i), MachineName: fmt.Sprintf("machine-%d", i%4), Definition: []byte(`{}`),
			Status: engine.StatusSucceeded, StartedAt: start.Add(time.Duration(i) * time.Second),
		}
		if i%10 == 0 {
			e.Status = engine.StatusFailed
		}
		c, err := newExecution(e)
		if err != nil {
			b.Fatal(err)
		}
		cs = append(cs, c)
	}
	err := s.write(b.Context(), func(x *tx) error {
		for _, c := range cs {
			if err := x.create(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkListPage lists a page of 50 of 10,000 executions: the newest,
// the newest FAILED ones, the newest of one machine, a page deep in the
// listing (after the 5,000th), and one between two start times.
func BenchmarkListPage(b *testing.B) {
	s := openListBench(b)
	for _, bc := range []struct {
		name string
		opts ListOptions
	}{
		{"newest", ListOptions{Limit: 50}},
		{"status", ListOptions{Limit: 50, Status: engine.StatusFailed}},
		{"machine", ListOptions{Limit: 50, MachineName: "machine-1"}},
		{"after", ListOptions{Limit: 50, After: "exec-05000"}},
		{"between", ListOptions{Limit: 50, StartedAfter: time.Date(2025, 1, 1, 1, 0, 0, 0, time.UTC), StartedBefore: time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.List(b.Context(), bc.opts)
				if err != nil || len(got) != 50 {
					b.Fatalf("List(%+v) = %d summaries, %v, want 50", bc.opts, len(got), err)
				}
			}
		})
	}
}

// statesPerCommit is how many states each commit of the effect-sized
// benchmarks carries.
const statesPerCommit = commitbench.StatesPerCommit

// stateLoop makes the commits of the effect-sized benchmarks.
type stateLoop struct{ *commitbench.Loop }

func newStateLoop(tb testing.TB, id string) stateLoop { return stateLoop{commitbench.NewLoop(tb, id)} }

func (l stateLoop) next() *engine.Commit { return l.Next() }

// BenchmarkMemoryCommitStates is BenchmarkMemoryCommit with commits of
// statesPerCommit states of a 1 KiB document that changes one field per
// state.
func BenchmarkMemoryCommitStates(b *testing.B) {
	m := NewMemory()
	if err := m.Create(b.Context(), &engine.Execution{ID: "bench"}); err != nil {
		b.Fatal(err)
	}
	l := newStateLoop(b, "bench")
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Commit(b.Context(), l.next()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*statesPerCommit), "ns/state")
}

// BenchmarkCommitStates is BenchmarkCommitDurable with the commits of
// BenchmarkMemoryCommitStates. It reports the database's growth per state
// (the pages in use, free pages excepted) and the bytes the process wrote
// per commit (write calls, from /proc/self/io) against the bytes the
// database grew by.
func BenchmarkCommitStates(b *testing.B) {
	commitStates(b, openBench(b, "bench"), newStateLoop(b, "bench"))
}

// commitStates runs BenchmarkCommitStates on s.
func commitStates(b *testing.B, s *Bolt, l stateLoop) {
	for range 10 {
		if err := s.Commit(b.Context(), l.next()); err != nil {
			b.Fatal(err)
		}
	}
	used0, written0 := dbInUse(b, s), bytesWritten(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Commit(b.Context(), l.next()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	grown, written := float64(dbInUse(b, s)-used0), float64(bytesWritten(b)-written0)
	b.ReportMetric(grown/float64(b.N*statesPerCommit), "db-B/state")
	b.ReportMetric(written/float64(b.N), "written-B/commit")
	if grown > 0 {
		b.ReportMetric(written/grown, "written/stored")
	}
}

// dbInUse is the size of the database's pages in use: its size less its
// free pages.
func dbInUse(b *testing.B, s *Bolt) int64 {
	var size int64
	if err := s.db.View(func(t *bbolt.Tx) error { size = t.Size(); return nil }); err != nil {
		b.Fatal(err)
	}
	st := s.db.Stats()
	return size - int64(st.FreePageN+st.PendingPageN)*int64(s.db.Info().PageSize)
}

// bytesWritten is the bytes the process has handed to write calls.
func bytesWritten(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io")
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Skip("no wchar in /proc/self/io")
	return 0
}

// BenchmarkBoltOptions is BenchmarkCommitStates under bbolt options other
// than the store's: page sizes, the array freelist, the freelist synced,
// and an initial mmap of 256 MiB.
func BenchmarkBoltOptions(b *testing.B) {
	variant := func(change func(o *bbolt.Options)) *bbolt.Options {
		o := boltOptions(time.Second)
		change(o)
		return o
	}
	for _, v := range []struct {
		name string
		o    *bbolt.Options
	}{
		{"store", boltOptions(time.Second)},
		{"page=4KiB", variant(func(o *bbolt.Options) { o.PageSize = 4 << 10 })},
		{"page=8KiB", variant(func(o *bbolt.Options) { o.PageSize = 8 << 10 })},
		{"page=32KiB", variant(func(o *bbolt.Options) { o.PageSize = 32 << 10 })},
		{"freelist=array", variant(func(o *bbolt.Options) { o.FreelistType = bbolt.FreelistArrayType })},
		{"freelist-synced", variant(func(o *bbolt.Options) { o.NoFreelistSync = false })},
		{"mmap=256MiB", variant(func(o *bbolt.Options) { o.InitialMmapSize = 256 << 20 })},
	} {
		b.Run(v.name, func(b *testing.B) {
			s, err := OpenBolt(filepath.Join(b.TempDir(), "bench.db"), BoltOptions{bbolt: v.o})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(b.Context(), &engine.Execution{ID: "bench"}); err != nil {
				b.Fatal(err)
			}
			commitStates(b, s, newStateLoop(b, "bench"))
		})
	}
}
