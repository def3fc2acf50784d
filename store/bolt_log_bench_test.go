package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// BenchmarkCommitLog compares strict commits on bbolt as it is and through
// the log (BoltOptions.Log), with the commits of BenchmarkCommitStates:
// one execution committing in a loop, and 64 executions committing
// concurrently. It reports, per commit, the bytes the process caused to
// be written to storage (write_bytes of /proc/self/io, counted when a
// page of the page cache is dirtied) and handed to write calls (wchar),
// each against the bytes the database grew by; the fdatasyncs (bbolt:
// two per write transaction; the log: its own, checkpoints included);
// and the latency of a commit, p50 and p99.
func BenchmarkCommitLog(b *testing.B) {
	for _, conc := range []int{1, 64} {
		for _, logged := range []bool{false, true} {
			name := fmt.Sprintf("execs=%d/bbolt", conc)
			if logged {
				name = fmt.Sprintf("execs=%d/log", conc)
			}
			b.Run(name, func(b *testing.B) { benchCommitLog(b, conc, logged) })
		}
	}
}

func benchCommitLog(b *testing.B, conc int, logged bool) {
	s, err := OpenBolt(filepath.Join(b.TempDir(), "bench.db"), BoltOptions{Log: logged})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	loops := make([]stateLoop, conc)
	for i := range loops {
		id := fmt.Sprintf("bench-%d", i)
		if err := s.Create(b.Context(), &engine.Execution{ID: id}); err != nil {
			b.Fatal(err)
		}
		loops[i] = newStateLoop(b, id)
		for range 3 {
			if err := s.Commit(b.Context(), loops[i].next()); err != nil {
				b.Fatal(err)
			}
		}
	}
	used0, io0 := dbInUse(b, s), procIO(b)
	tx0, syncs0 := s.batches.Load(), int64(0)
	if s.log != nil {
		syncs0 = s.log.syncs.Load()
	}
	lat := make([][]time.Duration, conc)
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := s.Commit(b.Context(), loops[i].next()); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	io := procIO(b)
	n := float64(b.N)
	grown := float64(dbInUse(b, s) - used0)
	written, wchar := float64(io["write_bytes"]-io0["write_bytes"]), float64(io["wchar"]-io0["wchar"])
	b.ReportMetric(written/n, "written-B/commit")
	if grown > 0 {
		b.ReportMetric(grown/n, "stored-B/commit")
		b.ReportMetric(written/grown, "written/stored")
		b.ReportMetric(wchar/grown, "wchar/stored")
	}
	if s.log != nil {
		b.ReportMetric(float64(s.log.syncs.Load()-syncs0)/n, "fdatasync/commit")
	} else {
		b.ReportMetric(2*float64(s.batches.Load()-tx0)/n, "fdatasync/commit")
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

// procIO reads the counters of /proc/self/io.
func procIO(b *testing.B) map[string]int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io")
	}
	out := make(map[string]int64)
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}
