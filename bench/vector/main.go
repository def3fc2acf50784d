// Command vector measures memory/vector: for each index size it builds an
// exact index and an HNSW graph over seeded, clustered vectors (the shape
// embeddings of related texts take), then times queries against both and
// reports the HNSW's recall@10 against the exact answers, the build time,
// the query latency (p50, p99) and the memory a vector costs. run.sh runs
// it and prints the date and the machine with the figures.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aslrun/aslrun/memory/vector"

	"github.com/aslrun/aslrun/internal/vectordata"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "vector:", err)
		os.Exit(1)
	}
}

// run is the program.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("n", "10000,100000", "comma-separated index `sizes`")
	dim := fs.Int("dim", 384, "vector dimension")
	queries := fs.Int("queries", 200, "queries per size")
	efs := fs.String("ef", "16,32,64,128", "comma-separated search `breadths` to measure")
	m := fs.Int("m", 0, "HNSW M (0: the package default)")
	efc := fs.Int("efc", 0, "HNSW EfConstruction (0: the package default)")
	seed := fs.Uint64("seed", 1, "seed of the data and of the graph")
	spread := fs.Float64("spread", 1, "standard deviation of the points around their centre (the centres' is 1): larger is harder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, err := ints(*sizes)
	if err != nil {
		return fmt.Errorf("-n: %w", err)
	}
	efList, err := ints(*efs)
	if err != nil {
		return fmt.Errorf("-ef: %w", err)
	}
	cfg := vector.HNSWConfig{M: *m, EfConstruction: *efc, Seed: *seed}
	def := vector.NewHNSW(*dim, cfg).Config()
	fmt.Fprintf(stdout, "data: clustered (n/200 centres, standard normal; points = centre + N(0,%g) noise), %d dims, %d queries from the same distribution, k 10\n", *spread, *dim, *queries)
	fmt.Fprintf(stdout, "hnsw: M %d, EfConstruction %d, default EfSearch %d\n\n", def.M, def.EfConstruction, def.EfSearch)
	fmt.Fprintln(stdout, "| n | index | ef | build (CPU) | p50 | p99 | recall@10 | bytes/vector (Bytes) | heap/vector |")
	fmt.Fprintln(stdout, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, n := range ns {
		if err := measure(stdout, n, *dim, *queries, efList, cfg, *seed, *spread); err != nil {
			return err
		}
	}
	return nil
}

// measure prints the table rows for one index size.
func measure(w io.Writer, n, dim, queries int, efs []int, cfg vector.HNSWConfig, seed uint64, spread float64) error {
	vs := vectordata.Clustered(n+queries, dim, max(n/200, 1), spread, seed)
	data, qs := vs[:n], vs[n:]
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "mem-" + strconv.Itoa(i)
	}

	before := heap()
	start, cpu0 := time.Now(), cpuTime()
	e := vector.NewExact(dim)
	for i, v := range data {
		if err := e.Add(ids[i], v); err != nil {
			return err
		}
	}
	exactBuild, exactCPU := time.Since(start), cpuTime()-cpu0
	exactHeap := heap() - before

	want := make([][]vector.Result, len(qs))
	lat := make([]time.Duration, len(qs))
	for i, q := range qs {
		t := time.Now()
		r, err := e.Search(q, 10, -1, nil)
		lat[i] = time.Since(t)
		if err != nil {
			return err
		}
		want[i] = r
	}
	p50, p99 := percentiles(lat)
	fmt.Fprintf(w, "| %d | exact | – | %s (%s) | %s | %s | 1 | %.0f | %.0f |\n",
		n, round(exactBuild), round(exactCPU), round(p50), round(p99), perVector(e.Bytes(), n), perVector(exactHeap, n))

	before = heap()
	start, cpu0 = time.Now(), cpuTime()
	h := vector.NewHNSW(dim, cfg)
	for i, v := range data {
		if err := h.Add(ids[i], v); err != nil {
			return err
		}
	}
	build, buildCPU := time.Since(start), cpuTime()-cpu0
	graphHeap := heap() - before
	for _, ef := range efs {
		var sum float64
		for i, q := range qs {
			t := time.Now()
			r, err := h.Search(q, 10, -1, ef, nil)
			lat[i] = time.Since(t)
			if err != nil {
				return err
			}
			sum += recall(r, want[i])
		}
		p50, p99 := percentiles(lat)
		fmt.Fprintf(w, "| %d | hnsw | %d | %s (%s) | %s | %s | %.3f | %.0f | %.0f |\n",
			n, ef, round(build), round(buildCPU), round(p50), round(p99), sum/float64(len(qs)), perVector(h.Bytes(), n), perVector(graphHeap, n))
	}

	// A filter that rejects a tenth of the entries (say, expired ones), at
	// the default ef, against the exact filtered answers.
	keep := func(id string) bool { return !strings.HasSuffix(id, "7") }
	var sum float64
	for i, q := range qs {
		wf, _ := e.Search(q, 10, -1, keep)
		t := time.Now()
		r, err := h.Search(q, 10, -1, 0, keep)
		lat[i] = time.Since(t)
		if err != nil {
			return err
		}
		sum += recall(r, wf)
	}
	p50, p99 = percentiles(lat)
	fmt.Fprintf(w, "| %d | hnsw, filter drops 10%% | %d | – | %s | %s | %.3f | – | – |\n",
		n, h.Config().EfSearch, round(p50), round(p99), sum/float64(len(qs)))
	runtime.KeepAlive(e)
	return nil
}

// perVector is b divided by n.
func perVector(b int64, n int) float64 { return float64(b) / float64(n) }

// recall returns the fraction of want's ids that got holds.
func recall(got, want []vector.Result) float64 {
	if len(want) == 0 {
		return 1
	}
	in := make(map[string]bool, len(got))
	for _, r := range got {
		in[r.ID] = true
	}
	n := 0
	for _, r := range want {
		if in[r.ID] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// percentiles returns the 50th and 99th percentiles of d (which it sorts).
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

// heap returns the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapAlloc)
}

// cpuTime returns the CPU time the process has used (user and system, all
// threads, the collector's included), which unlike the wall clock does not
// grow when other processes share the machine.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// round shortens d for the table.
func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(100 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond / 10)
}

// ints parses a comma-separated list of positive integers.
func ints(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
