package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden")

// workflows is the workflows folder seen from this package's folder.
const workflows = "../../bench/workflows"

// TestQuick runs every workload, small, through the engine API in every
// mode, and checks that each execution returns the expected output and
// runs exactly the state transitions the tables divide by. The runs are
// parallel: on bbolt they mostly wait for fsync.
func TestQuick(t *testing.T) {
	t.Parallel()
	sizes := map[string]int{wLoop: 200, wMap: 300, wMapDiscard: 300, wConcurrent1: 10, wConcurrentN: 10}
	for _, name := range []string{wLoop, wMap, wMapDiscard, wConcurrent1, wConcurrentN} {
		for _, mode := range apiModes {
			t.Run(name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				w, err := newWorkload(workflows, name, sizes[name], 8)
				if err != nil {
					t.Fatal(err)
				}
				pgURL := ""
				if mode == rPostgres {
					pgURL = pgtest.Fresh(t)
				}
				var exited atomic.Int64
				mt, err := runAPI(context.Background(), workflows, t.TempDir(), pgURL, w, mode, func(string, string) { exited.Add(1) })
				if err != nil {
					t.Fatal(err)
				}
				if got, want := exited.Load(), int64(w.states*w.executions); got != want {
					t.Errorf("%d state transitions, want %d", got, want)
				}
				if mt.Seconds <= 0 || mt.Mallocs <= 0 {
					t.Errorf("measurement %+v: want a time and allocations", mt)
				}
				durable := mode == rStrict || mode == rStrictLog || mode == rBatched || mode == rPebble
				if durable != (mt.DBBytes > 0) {
					t.Errorf("database size %d in mode %s", mt.DBBytes, mode)
				}
				if (mode == rNone) != (mt.Commits < 0) {
					t.Errorf("%d commits in mode %s", mt.Commits, mode)
				}
				if onPG := mode == rPostgres; onPG != (mt.WALBytes > 0) || onPG != (mt.TableBytes > 0) {
					t.Errorf("WAL %d B, tables grown by %d B in mode %s", mt.WALBytes, mt.TableBytes, mode)
				}
			})
		}
	}
}

// TestQuickCLI runs the loop with `aslrun run` and checks what it prints.
func TestQuickCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds ./cmd/aslrun")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "aslrun")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/aslrun/aslrun/cmd/aslrun").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	w, err := newWorkload(workflows, wLoop, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(tmp, "input.json")
	if err := os.WriteFile(input, w.input, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config{workflows: workflows, tmp: tmp, timeout: defaultTimeout, aslrun: bin}
	mt, err := runCLI(context.Background(), cfg, w, input)
	if err != nil {
		t.Fatal(err)
	}
	if mt.DBBytes <= 0 || mt.MaxRSS <= 0 {
		t.Errorf("measurement %+v: want a database size and a peak RSS", mt)
	}
}

// TestWithDatabase checks that a run on PostgreSQL gets a database of its
// own, which is gone after it.
func TestWithDatabase(t *testing.T) {
	t.Parallel()
	server := pgtest.Fresh(t)
	ctx := context.Background()
	var name string
	mt, err := withDatabase(ctx, server, func(dbURL string) (measurement, error) {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return unmeasured(), err
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
			return unmeasured(), err
		}
		return measurement{Seconds: 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if mt.Seconds != 1 {
		t.Errorf("withDatabase = %+v, want fn's measurement", mt)
	}
	if !strings.HasPrefix(name, "aslrun_compare_") {
		t.Fatalf("the run's database is %q, want a fresh aslrun_compare_ one", name)
	}
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s is still there after the run", name)
	}

	want := errors.New("boom")
	if _, err := withDatabase(ctx, server, func(string) (measurement, error) { return unmeasured(), want }); !errors.Is(err, want) {
		t.Errorf("withDatabase = %v, want fn's error", err)
	}
}

// TestStats checks the median, the range and the comparison of runs.
func TestStats(t *testing.T) {
	runs := func(secs ...float64) result {
		var x result
		for i, s := range secs {
			x.runs = append(x.runs, measurement{Seconds: s, Commits: int64(i)})
		}
		return x
	}
	tests := []struct {
		name     string
		x        result
		median   float64
		commits  int64 // which run the median is
		lo, hi   float64
		timeText string
	}{
		{"one", runs(2), 2, 0, 2, 2, "2.00 s"},
		{"odd", runs(3, 1, 2), 2, 2, 1, 3, "2.00 s (1.00 s–3.00 s)"},
		{"even", runs(4, 1, 2, 3), 2.5, 2, 1, 4, "2.50 s (1.00 s–4.00 s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.x.median()
			if m.Seconds != tt.median || m.Commits != tt.commits {
				t.Errorf("median = %v s (run %d), want %v s (run %d)", m.Seconds, m.Commits, tt.median, tt.commits)
			}
			if lo, hi := tt.x.span(); lo != tt.lo || hi != tt.hi {
				t.Errorf("span = %v, %v, want %v, %v", lo, hi, tt.lo, tt.hi)
			}
			if got := timeRange(tt.x); got != tt.timeText {
				t.Errorf("timeRange = %q, want %q", got, tt.timeText)
			}
		})
	}
	versusTests := []struct {
		base, x result
		want    string
	}{
		{runs(4, 5, 6), runs(1, 2, 3), "2.5× faster"},
		{runs(4, 5, 6), runs(3, 4, 4.5), "about even (1.2× faster)"},
		{runs(1, 2, 3), runs(3, 4, 5), "about even (2.0× slower)"},
		{runs(1, 2, 3), runs(4, 5, 6), "2.5× slower"},
		{runs(5), runs(4), "1.2× faster"},
	}
	for _, tt := range versusTests {
		if got := versus(tt.base, tt.x); got != tt.want {
			t.Errorf("versus(%v, %v) = %q, want %q", tt.base.runs, tt.x.runs, got, tt.want)
		}
	}
	if got, want := versusNamed(runs(1, 2), runs(1.5, 3), "P"), "about even with P (1.5× slower)"; got != want {
		t.Errorf("versusNamed = %q, want %q", got, want)
	}
}

// TestCheck refuses an output that is not the expected one.
func TestCheck(t *testing.T) {
	w, err := newWorkload(workflows, wLoop, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := w.want.(map[string]any)
	wrong := make(map[string]any, len(want))
	for k, v := range want {
		wrong[k] = v
	}
	delete(wrong, "review")
	tests := []struct {
		name    string
		outputs []any
		ok      bool
	}{
		{"expected", []any{w.want}, true},
		{"a field missing", []any{wrong}, false},
		{"no output", nil, false},
		{"two outputs", []any{w.want, w.want}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := w.check(tt.outputs); (err == nil) != tt.ok {
				t.Errorf("check = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestRefused checks the command line and workloads that are refused.
func TestRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no runs", []string{"-runs", "0"}, "-runs 0"},
		{"unknown workload", []string{"-only", "loop,maps"}, `unknown workload "maps"`},
		{"arguments", []string{"loop"}, "unexpected arguments: loop"},
		{"unknown flag", []string{"-fast"}, "-fast"},
		{"child of an unknown workload", []string{"-child", "-workload", "nope", "-n", "3", "-workflows", workflows}, `unknown workload "nope"`},
		{"child without n", []string{"-child", "-workload", "loop", "-workflows", workflows}, "n must be at least 1"},
		{"child of an unknown mode", []string{"-child", "-workload", "loop", "-n", "1", "-mode", "fast", "-workflows", workflows}, `unknown mode "fast"`},
		{"no workflows", []string{"-child", "-workload", "loop", "-n", "1", "-workflows", "nowhere"}, "nowhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if err == nil {
				t.Fatalf("run(%q) succeeded, want an error containing %q", tt.args, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("run(%q) printed %q", tt.args, stdout.String())
			}
		})
	}
}

// TestMockedResult refuses mock files the JavaScript side could not read
// the same way.
func TestMockedResult(t *testing.T) {
	tests := []struct {
		name, mock, want string
	}{
		{"not an object", `[]`, "exactly one response"},
		{"agent missing", `{"Item": {"0-9": {"Return": 1}}}`, "exactly one response"},
		{"two responses", `{"Work": {"0": {"Return": 1}, "1-9": {"Return": 2}}}`, "exactly one response"},
		{"a throw", `{"Work": {"0-9": {"Throw": {"Error": "E"}}}}`, "/Work/0-9 must Return"},
		{"not JSON", `{"Work": `, "mock.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, mockFile), []byte(tt.mock), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := mockedResult(dir, "Work")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("mockedResult = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestReport prints the tables of made-up measurements and compares them
// with testdata/report.golden (go test ./bench/compare -run Report
// -update rewrites it).
func TestReport(t *testing.T) {
	cfg := &config{runs: 3, modules: "testdata/none", dbosSource: "testdata/none", executions: 64}
	m := &machine{date: "2026-01-02 03:04 UTC", cpu: "Some CPU", memory: "8 GiB", arch: "amd64",
		goVersion: "go1.26.0", nodeVersion: "Node v22.0.0", revision: "abc1234", cores: 2}
	// The sizes of a full run, without their inputs (the report needs
	// none).
	workloads := map[string]*workload{
		wLoop:        {name: wLoop, n: 20000, executions: 1, states: 100001, tasks: 20000},
		wPeers:       {name: wPeers, n: 200, executions: 1, states: 1001, tasks: 200},
		wMap:         {name: wMap, n: 100000, executions: 1, states: 100001, tasks: 100000},
		wMapDiscard:  {name: wMapDiscard, n: 1000000, executions: 1, states: 1000001, tasks: 1000000},
		wConcurrent1: {name: wConcurrent1, n: 200, executions: 1, states: 1001, tasks: 200},
		wConcurrentN: {name: wConcurrentN, n: 200, executions: 64, states: 1001, tasks: 200},
	}
	ms := func(seconds float64, mallocs, commits, db, written, rss int64) result {
		return result{runs: []measurement{{Seconds: seconds, Mallocs: mallocs, Commits: commits, DBBytes: db, WriteBytes: written, MaxRSS: rss, WALBytes: -1, TableBytes: -1}}}
	}
	// times gives a result runs of the times given, each with pg's WAL
	// and table bytes (-1: not measured) and the commits.
	times := func(commits, wal, tables int64, secs ...float64) result {
		var x result
		for _, s := range secs {
			x.runs = append(x.runs, measurement{Seconds: s, Mallocs: -1, Commits: commits, DBBytes: -1, WriteBytes: -1, MaxRSS: 100 << 20, WALBytes: wal, TableBytes: tables})
		}
		return x
	}
	results := map[string]map[string]result{
		wPeers: {
			rNode:       times(-1, -1, -1, 0.05, 0.04, 0.06),
			rMemory:     times(201, -1, -1, 0.01, 0.012, 0.011),
			rLGMemory:   times(-1, -1, -1, 2.2, 2.0, 2.4),
			rStrict:     times(201, -1, -1, 1.2, 0.5, 0.9),
			rLGSQLite:   times(-1, -1, -1, 1.0, 1.1, 7),
			rPostgres:   times(201, 2_000_000, 900_000, 0.8, 0.9, 1.0),
			rLGPostgres: times(-1, 20_000_000, 3_000_000, 18, 19, 20),
			rDBOS:       {err: errors.New("dbos: exit status 1: no database")},
		},
		wLoop: {
			rNode:    ms(1.6, -1, -1, -1, -1, 120<<20),
			rNone:    ms(0.16, 800_000, -1, -1, -1, 20<<20),
			rMemory:  ms(2.6, 10_600_000, 80_000, -1, -1, 40<<20),
			rStrict:  ms(33, 30_000_000, 80_000, 570<<20, 5600<<20, 60<<20),
			rBatched: ms(0.9, 30_000_000, 20_000, 50<<20, 90<<20, 60<<20),
			rCLI:     {err: errors.New("aslrun run: exit status 1: boom | here")},
		},
		wMap: {
			rNode: ms(4, -1, -1, -1, -1, 550<<20),
			rNone: ms(0.3, 3_700_000, -1, -1, -1, 90<<20),
		},
		wMapDiscard: {
			rNode:   {err: errors.New("stopped after 10m0s")},
			rStrict: ms(69, 37_000_000, 1000, 2<<30, 3<<30, 2200<<20),
		},
		wConcurrent1: {
			rNode:   ms(0.05, -1, -1, -1, -1, 90<<20),
			rStrict: ms(0.4, 1, 800, 1, 1, 1),
		},
		wConcurrentN: {
			rNode:   ms(2.5, -1, -1, -1, -1, 90<<20),
			rStrict: ms(5, 1, 1, 1, 1, 1),
		},
	}
	var out bytes.Buffer
	report(&out, cfg, m, workloads, results)
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

// TestFormats checks the numbers as the tables show them.
func TestFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{thousands(0), "0"},
		{thousands(999), "999"},
		{thousands(1000), "1,000"},
		{thousands(100001), "100,001"},
		{thousands(-1234567), "-1,234,567"},
		{ratio(10.54), "10.5× faster"},
		{ratio(1), "1.0× faster"},
		{ratio(0.05), "20.0× slower"},
		{seconds(0.1534), "153 ms"},
		{seconds(31.456), "31.46 s"},
		{bytesOrDash(-1), "—"},
		{bytesOrDash(5700), "5,700 B"},
		{bytesOrDash(70 << 10), "70.0 KiB"},
		{bytesOrDash(453 << 20), "453 MiB"},
		{bytesOrDash(2200<<20 + 1<<19), "2,201 MiB"},
		{perState(-1, 10, " B"), "—"},
		{perState(57_000_000, 10_000, " B"), "5,700 B"},
		{cell("a | b\nc"), `a \| b c`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
