//go:build pebble

package pebble_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store/internal/commitbench"
	"github.com/aslrun/aslrun/store/pebble"
)

// statesPerCommit is how many states each commit of the loop carries.
const statesPerCommit = commitbench.StatesPerCommit

// procIO returns a counter of /proc/self/io: wchar (bytes handed to
// write calls) or write_bytes (bytes sent to the storage layer).
func procIO(b *testing.B, name string) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io")
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Skipf("no %s in /proc/self/io", name)
	return 0
}

// BenchmarkCommit commits the store package's BenchmarkCommitStates
// commits to one execution, strict (synced) and batched (not synced). It
// reports the latency's p50 and p99, the syncs per commit, and the bytes
// the process wrote per commit (wchar: write calls; disk: write_bytes)
// against the bytes the database grew by (written/stored). Written and
// stored are measured after a flush and a full compaction, so that the
// LSM tree's rewriting of what the commits wrote is counted.
func BenchmarkCommit(b *testing.B) {
	for _, d := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched} {
		b.Run(string(d), func(b *testing.B) {
			var syncs atomic.Int64
			s, err := pebble.OpenCounting(filepath.Join(b.TempDir(), "db"), pebble.Options{}, &syncs)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(b.Context(), &engine.Execution{ID: "bench", Durability: d}); err != nil {
				b.Fatal(err)
			}
			l := commitbench.NewLoop(b, "bench")
			for range 10 {
				if err := s.Commit(b.Context(), l.Next()); err != nil {
					b.Fatal(err)
				}
			}
			stored0, err := pebble.SettledSize(s)
			if err != nil {
				b.Fatal(err)
			}
			written0, disk0, syncs0 := procIO(b, "wchar"), procIO(b, "write_bytes"), syncs.Load()
			lat := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c := l.Next()
				start := time.Now()
				if err := s.Commit(b.Context(), c); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			commitSyncs := syncs.Load() - syncs0
			stored, err := pebble.SettledSize(s)
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			grown := float64(stored - stored0)
			written, disk := float64(procIO(b, "wchar")-written0), float64(procIO(b, "write_bytes")-disk0)
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
			b.ReportMetric(float64(commitSyncs)/n, "syncs/commit")
			b.ReportMetric(grown/float64(b.N*statesPerCommit), "db-B/state")
			b.ReportMetric(written/n, "written-B/commit")
			b.ReportMetric(disk/n, "disk-B/commit")
			if grown > 0 {
				b.ReportMetric(written/grown, "written/stored")
			}
		})
	}
}

// BenchmarkCommitConcurrent commits BenchmarkCommit's strict commits from
// 16 goroutines, each to its own execution: the commits of different
// executions share WAL syncs (syncs/commit below 1).
func BenchmarkCommitConcurrent(b *testing.B) {
	var syncs atomic.Int64
	s, err := pebble.OpenCounting(filepath.Join(b.TempDir(), "db"), pebble.Options{}, &syncs)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var next atomic.Int64
	b.SetParallelism(8) // 16 goroutines on 2 CPUs
	syncs0 := syncs.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := "bench-" + strconv.FormatInt(next.Add(1), 10)
		if err := s.Create(b.Context(), &engine.Execution{ID: id}); err != nil {
			b.Error(err)
			return
		}
		l := commitbench.NewLoop(b, id)
		for pb.Next() {
			if err := s.Commit(b.Context(), l.Next()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(syncs.Load()-syncs0)/float64(b.N), "syncs/commit")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
