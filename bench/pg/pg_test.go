package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/store/postgres/pgtest"
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
		{[]string{"-db", "postgres://x/y", "-mode", "bytes", "-turns", "0"}, "-turns 0: want at least 1"},
		{[]string{"-db", "postgres://x/y", "extra"}, "unexpected arguments: extra"},
		{[]string{"-db", "postgres://x/y", "-mode", "scale"}, "needs -aslrun"},
		{[]string{"-db", "postgres://x/y", "-mode", "scale", "-aslrun", "x", "-submit", "all"}, `-submit "all"`},
		{[]string{"-db", "postgres://x/y", "-mode", "scale", "-aslrun", "x", "-servers", "1,0"}, "-servers"},
		{[]string{"-db", "postgres://x/y", "-mode", "scale", "-aslrun", "x", "-repeat", "0"}, "-repeat 0: want at least 1"},
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

func TestSumMetric(t *testing.T) {
	text := `# HELP aslrun_executions_finished_total Executions that ended, by status.
# TYPE aslrun_executions_finished_total counter
aslrun_executions_finished_total{status="FAILED"} 2
aslrun_executions_finished_total{status="SUCCEEDED"} 40
aslrun_executions_finished_totally 99
aslrun_executions_started_total 42
`
	got, err := sumMetric(strings.NewReader(text), "aslrun_executions_finished_total")
	if err != nil || got != 42 {
		t.Errorf("sumMetric = %v, %v; want 42", got, err)
	}
	if _, err := sumMetric(strings.NewReader("aslrun_x{a=\"b\"} nope\n"), "aslrun_x"); err == nil {
		t.Error("a sample that is not a number: no error")
	}
}

func TestParseLists(t *testing.T) {
	if got, err := parseInts("1, 2,4"); err != nil || len(got) != 3 || got[2] != 4 {
		t.Errorf("parseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-2"} {
		if _, err := parseInts(bad); err == nil {
			t.Errorf("parseInts(%q): no error", bad)
		}
	}
	if got, err := parseDelays("20ms,0,1s"); err != nil || len(got) != 3 || got[0] != 0.02 || got[1] != 0 || got[2] != 1 {
		t.Errorf("parseDelays = %v, %v", got, err)
	}
	for _, bad := range []string{"", "20", "-1s", "fast"} {
		if _, err := parseDelays(bad); err == nil {
			t.Errorf("parseDelays(%q): no error", bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	got, err := parseProcStat([]byte("cpu  100 5 50 9000 20 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	// user+nice+system+irq+softirq+steal = 100+5+50+3+2+1 ticks.
	if want := 161 * 10 * time.Millisecond; err != nil || got != want {
		t.Errorf("parseProcStat = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n", "cpu 1 2 -3 4 5 6 7 8\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

func TestMedianRun(t *testing.T) {
	rows := func(rates ...float64) []scaleRun {
		var out []scaleRun
		for i, r := range rates {
			out = append(out, scaleRun{PerSecond: r, Executions: i})
		}
		return out
	}
	for _, tc := range []struct {
		runs []scaleRun
		want float64
	}{
		{rows(5), 5},
		{rows(300, 100, 200), 200},
		{rows(4, 1, 3, 2), 2},
	} {
		if got := medianRun(tc.runs); got.PerSecond != tc.want {
			t.Errorf("medianRun(%v) = %v, want the run of %v", tc.runs, got.PerSecond, tc.want)
		}
	}
	if got := runsOf([]float64{212.64, 198, 0.05}); got != "212.6, 198.0, 0.1" {
		t.Errorf("runsOf = %q", got)
	}
}

// TestBytesRuns measures a short loop on a fresh database and checks the
// figures add up: a step per state, an update of the execution and a
// history record per commit, and bytes written.
func TestBytesRuns(t *testing.T) {
	url := pgtest.Fresh(t)
	var out bytes.Buffer
	const turns = 3
	r, err := bytesTable(context.Background(), &out, "../workflows", url, turns)
	if err != nil {
		t.Fatal(err)
	}
	// Five states a turn (Prepare, Work, Review, Tally, Check), and Done.
	if r.Steps != 5*turns+1 {
		t.Errorf("%d steps, want %d:\n%s", r.Steps, 5*turns+1, out.String())
	}
	if r.Commits < turns {
		t.Errorf("%d commits for %d turns, want one a turn at least:\n%s", r.Commits, turns, out.String())
	}
	if r.WALBytes <= 0 || r.TableBytes <= 0 {
		t.Errorf("WAL %d bytes, tables %d bytes, want more than none:\n%s", r.WALBytes, r.TableBytes, out.String())
	}
	tables := make(map[string]tableBytes)
	for _, tb := range r.Tables {
		tables[tb.Name] = tb
	}
	if got := tables["executions"]; got.Inserted != 1 || got.Updated != r.Commits {
		t.Errorf("executions: %d inserted, %d updated, want 1 and %d (a commit each):\n%s", got.Inserted, got.Updated, r.Commits, out.String())
	}
	if got := tables["history_records"]; got.Inserted != r.Commits {
		t.Errorf("history_records: %d inserted, want %d (a commit each):\n%s", got.Inserted, r.Commits, out.String())
	}
	if r.OwnWALBytes > 0 && (tables["history_records"].WAL <= 0 || r.OwnWALBytes > r.WALBytes) {
		t.Errorf("own WAL %d bytes of the server's %d, history_records' %d:\n%s", r.OwnWALBytes, r.WALBytes, tables["history_records"].WAL, out.String())
	}
}
