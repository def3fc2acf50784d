package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.5, 5 * time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestRefusedFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-db", ""}, "-db: a PostgreSQL URL is required"},
		{[]string{"-db", "postgres://x/y", "-mode", "fast"}, `-mode "fast"`},
		{[]string{"-db", "postgres://x/y", "-turns", "0"}, "-turns 0: want at least 1"},
		{[]string{"-db", "postgres://x/y", "extra"}, "unexpected arguments: extra"},
	} {
		t.Setenv("ASLRUN_BENCH_POSTGRES", "")
		var out, errs bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestLatencyRuns runs the latency table small on the PostgreSQL of
// ASLRUN_TEST_POSTGRES and checks every row measured commits.
func TestLatencyRuns(t *testing.T) {
	url := os.Getenv("ASLRUN_TEST_POSTGRES")
	if url == "" {
		t.Skip("ASLRUN_TEST_POSTGRES is not set: no PostgreSQL to measure on")
	}
	var out bytes.Buffer
	rows, err := latencyTable(context.Background(), &out, "../workflows", t.TempDir(), url, 2, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8:\n%s", len(rows), out.String())
	}
	for _, r := range rows {
		if r.Commits == 0 || r.P50 <= 0 || r.P99 < r.P50 || r.Transitions <= 0 {
			t.Errorf("row not measured: %+v", r)
		}
		if r.Durability == "strict" && r.Commits < int64(r.Executions*3) {
			t.Errorf("%s strict ×%d: %d commits for %d executions of 2 turns, want one per turn and more", r.Store, r.Concurrent, r.Commits, r.Executions)
		}
	}
}
