// Command compare runs the workflows of bench/workflows side by side on
// aws-local-stepfunctions (an in-memory JavaScript interpreter of the
// Amazon States Language) and on aslrun — through the engine API without a
// store, on the memory store, on bbolt in strict and batched durability,
// on PostgreSQL, and with `aslrun run` — and the loop on aslrun's peers
// too: LangGraph JS on its memory, SQLite and PostgreSQL checkpointers
// (bench/langgraph) and DBOS Transact (bench/dbos). The runners take turns
// (run 1 of each, then run 2, …), and it prints the date, the machine and
// markdown tables of the median times with their ranges, the ratios of
// the medians ("about even" where the ranges overlap) and the targets.
// bench/compare.sh installs the JavaScript packages and runs it from the
// repository's root:
//
//	go run ./bench/compare -node NODE -modules DIR [-langgraph SCRIPT] [-postgres URL -dbos DIR]
//		[-quick] [-runs 5] [-only loop,map]
//
// Every run is a process of its own (this program with -child, the CLI,
// node or the DBOS program), so that its peak RSS and the bytes it writes
// are its own; every run on PostgreSQL gets a fresh database. Without
// -node, only aslrun runs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	workflows string // the workflows folder
	tmp       string // where databases and inputs go
	runs      int
	timeout   time.Duration // of one run
	only      []string      // workloads to run; nil: all
	// node runs aws-local-stepfunctions ("": not at all) with script,
	// from modules, its node_modules folder.
	node, script, modules string
	// aslrun is the CLI ("": build it; "-": do not run it).
	aslrun string
	// langgraph is the script running the loop on LangGraph JS (with
	// node, from modules; "": not at all), dbosSource the folder of the
	// DBOS program ("": not at all) and dbos its binary, built from it.
	langgraph, dbosSource, dbos string
	// postgres is the URL of a PostgreSQL server without a database: each
	// run on PostgreSQL gets a fresh database there ("": no such runs).
	postgres string
	// sizes: the loop's turns, the turns of the loop the peers run, the
	// Maps' items, the turns of each concurrent execution and how many
	// run at once.
	turns, peerTurns, items, discardItems, concurrentTurns, executions int
}

func main() {
	// Stopped, it removes its databases and ends its runs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// run is the program: a comparison, or with -child one measured run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.workflows, "workflows", "bench/workflows", "the workflows `folder`")
	fs.StringVar(&cfg.tmp, "tmp", "", "where the databases and inputs go: a `folder` on the disk to measure (default the system's temporary folder)")
	fs.IntVar(&cfg.runs, "runs", 5, "runs of each workload by each runner, taking turns; the median, the fastest and the slowest are shown")
	fs.DurationVar(&cfg.timeout, "timeout", defaultTimeout, "the longest one run may take")
	only := fs.String("only", "", "comma-separated workloads to run: "+strings.Join(allWorkloads, ", ")+" (default all)")
	fs.StringVar(&cfg.node, "node", "", "the node `binary` to run aws-local-stepfunctions with (default: do not run it)")
	fs.StringVar(&cfg.script, "script", "bench/aws-local/run.mjs", "the `script` running a workflow on aws-local-stepfunctions")
	fs.StringVar(&cfg.modules, "modules", "bench/.node/node_modules", "the node_modules `folder` aws-local-stepfunctions and LangGraph's packages are installed in")
	fs.StringVar(&cfg.aslrun, "aslrun", "", "the aslrun `binary` (default: build ./cmd/aslrun; -: do not run the CLI)")
	fs.StringVar(&cfg.langgraph, "langgraph", "", "the `script` running the loop on LangGraph JS, with -node, from -modules (default: do not run LangGraph)")
	fs.StringVar(&cfg.dbosSource, "dbos", "", "the `folder` of the program running the loop on DBOS, a Go module of its own, needs -postgres (default: do not run DBOS)")
	fs.StringVar(&cfg.postgres, "postgres", "", "the `URL` of a PostgreSQL server, without a database: each run on PostgreSQL makes a fresh database there and drops it (default: no runs on PostgreSQL)")
	quick := fs.Bool("quick", false, "small sizes, to check that everything runs")
	fs.IntVar(&cfg.turns, "turns", 0, "turns of the loop (default 20000; -quick 200)")
	fs.IntVar(&cfg.peerTurns, "peer-turns", 0, "turns of the loop the peers run (default 200; -quick 20)")
	fs.IntVar(&cfg.items, "items", 0, "items of the Map that keeps its results (default 100000; -quick 1000)")
	fs.IntVar(&cfg.discardItems, "discard-items", 0, "items of the Map that discards them (default 1000000; -quick 2000)")
	fs.IntVar(&cfg.concurrentTurns, "concurrent-turns", 0, "turns of each concurrent execution (default 200; -quick 20)")
	fs.IntVar(&cfg.executions, "executions", 0, "concurrent executions (default 64; -quick 8)")
	child := fs.Bool("child", false, "run one workload in one mode and print the measurement as JSON (used by the program itself)")
	mode := fs.String("mode", "", "with -child: "+strings.Join(apiModes, ", "))
	name := fs.String("workload", "", "with -child: the workload")
	n := fs.Int("n", 0, "with -child: the workload's turns or items")
	pgURL := fs.String("pg", "", "with -child -mode postgres: the `URL` of the empty database")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if cfg.tmp == "" {
		cfg.tmp = os.TempDir()
	}
	if *child {
		w, err := newWorkload(cfg.workflows, *name, *n, cfg.executions)
		if err != nil {
			return err
		}
		mt, err := runAPI(ctx, cfg.workflows, cfg.tmp, *pgURL, w, *mode, nil)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(mt)
	}
	if cfg.runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", cfg.runs)
	}
	if *only != "" {
		cfg.only = strings.Split(*only, ",")
		for _, w := range cfg.only {
			if !slices.Contains(allWorkloads, w) {
				return fmt.Errorf("-only: unknown workload %q (want %s)", w, strings.Join(allWorkloads, ", "))
			}
		}
	}
	sizes := [][3]*int{ // flag, default, -quick default
		{&cfg.turns, ptr(20000), ptr(200)},
		{&cfg.peerTurns, ptr(200), ptr(20)},
		{&cfg.items, ptr(100000), ptr(1000)},
		{&cfg.discardItems, ptr(1000000), ptr(2000)},
		{&cfg.concurrentTurns, ptr(200), ptr(20)},
		{&cfg.executions, ptr(64), ptr(8)},
	}
	for _, s := range sizes {
		if *s[0] == 0 {
			*s[0] = *s[1]
			if *quick {
				*s[0] = *s[2]
			}
		}
	}
	return compare(ctx, &cfg, stdout, stderr)
}

func ptr(n int) *int { return &n }

// defaultTimeout is how long one run may take: aws-local-stepfunctions
// takes over a minute for a million Map items.
const defaultTimeout = 10 * time.Minute

// allWorkloads are the workloads, in the order they run and are printed.
var allWorkloads = []string{wLoop, wMap, wMapDiscard, "concurrent"}

// groups are the workloads each name of -only runs.
var groups = map[string][]string{
	wLoop:        {wLoop, wPeers},
	wMap:         {wMap},
	wMapDiscard:  {wMapDiscard},
	"concurrent": {wConcurrent1, wConcurrentN},
}

// plan is which runners run which workload: the Map without its results
// skips the memory store and batched mode (each run is long, and the
// target is bbolt's), and the CLI runs one execution per process. The
// peers run a shorter loop (-peer-turns: LangGraph takes milliseconds a
// turn), beside the aslrun runners each is compared with.
var plan = []struct {
	workload string
	runners  []string
}{
	{wLoop, []string{rNode, rNone, rMemory, rStrict, rStrictLog, rPebble, rBatched, rCLI}},
	{wPeers, []string{rNode, rMemory, rLGMemory, rStrict, rLGSQLite, rPostgres, rLGPostgres, rDBOS}},
	{wMap, []string{rNode, rNone, rMemory, rStrict, rBatched, rCLI}},
	{wMapDiscard, []string{rNode, rNone, rStrict, rCLI}},
	{wConcurrent1, []string{rNode, rNone, rMemory, rStrict, rStrictLog, rPebble, rBatched}},
	{wConcurrentN, []string{rNode, rNone, rMemory, rStrict, rStrictLog, rPebble, rBatched}},
}

// A result is a runner's runs of a workload, in the order they ran, or
// why it has none.
type result struct {
	runs []measurement
	err  error
}

// compare runs the plan and prints the report.
func compare(ctx context.Context, cfg *config, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp(cfg.tmp, "aslrun-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.tmp = tmp
	if cfg.aslrun == "" {
		cfg.aslrun = filepath.Join(tmp, "aslrun")
		fmt.Fprintln(stderr, "building aslrun")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", cfg.aslrun, "github.com/aslrun/aslrun/cmd/aslrun").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/aslrun: %w: %s", err, out)
		}
	}
	if cfg.dbosSource != "" && cfg.postgres != "" && (cfg.only == nil || slices.Contains(cfg.only, wLoop)) {
		fmt.Fprintln(stderr, "building", cfg.dbosSource)
		if cfg.dbos, err = buildDBOS(ctx, cfg.dbosSource, tmp); err != nil {
			return err
		}
	}
	var m machine
	m.read(ctx, cfg)

	results := make(map[string]map[string]result)
	workloads := make(map[string]*workload)
	for _, p := range plan {
		if cfg.only != nil && !slices.ContainsFunc(cfg.only, func(g string) bool { return slices.Contains(groups[g], p.workload) }) {
			continue
		}
		w, err := newWorkload(cfg.workflows, p.workload, cfg.sizeOf(p.workload), cfg.executions)
		if err != nil {
			return err
		}
		workloads[p.workload] = w
		input := filepath.Join(tmp, p.workload+".json")
		if err := os.WriteFile(input, w.input, 0o600); err != nil {
			return err
		}
		runners := slices.DeleteFunc(slices.Clone(p.runners), func(r string) bool { return !cfg.canRun(r) })
		results[p.workload] = runAll(ctx, cfg, w, input, runners, stderr)
		os.Remove(input)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	report(stdout, cfg, &m, workloads, results)
	return nil
}

// canRun reports whether runner r can run with cfg: the node runners need
// node (and LangGraph its script), the runners on PostgreSQL a server,
// DBOS its program, the CLI its binary.
func (cfg *config) canRun(r string) bool {
	switch r {
	case rNode:
		return cfg.node != ""
	case rLGMemory, rLGSQLite:
		return cfg.node != "" && cfg.langgraph != ""
	case rLGPostgres:
		return cfg.node != "" && cfg.langgraph != "" && cfg.postgres != ""
	case rPostgres:
		return cfg.postgres != ""
	case rDBOS:
		return cfg.dbos != "" && cfg.postgres != ""
	case rCLI:
		return cfg.aslrun != "-"
	}
	return true
}

// sizeOf is a workload's turns or items.
func (cfg *config) sizeOf(name string) int {
	switch name {
	case wLoop:
		return cfg.turns
	case wPeers:
		return cfg.peerTurns
	case wMap:
		return cfg.items
	case wMapDiscard:
		return cfg.discardItems
	}
	return cfg.concurrentTurns
}

// runAll runs w cfg.runs times by each runner, the runners taking turns
// (run 1 of every runner, then run 2, …) so that a slower stretch of a
// shared machine does not fall on one of them, and keeps every run. A
// runner that fails once is not run again.
func runAll(ctx context.Context, cfg *config, w *workload, input string, runners []string, progress io.Writer) map[string]result {
	res := make(map[string]result, len(runners))
	for i := range cfg.runs {
		for _, r := range runners {
			if prev, ok := res[r]; ok && prev.err != nil {
				continue
			}
			var (
				mt  measurement
				err error
			)
			switch r {
			case rNode:
				mt, err = runNode(ctx, cfg, w, input)
			case rCLI:
				mt, err = runCLI(ctx, cfg, w, input)
			case rLGMemory:
				mt, err = runLangGraph(ctx, cfg, w, input, "memory", "")
			case rLGSQLite:
				mt, err = runLangGraph(ctx, cfg, w, input, "sqlite", "")
			case rLGPostgres:
				mt, err = withDatabase(ctx, cfg.postgres, func(db string) (measurement, error) {
					return runLangGraph(ctx, cfg, w, input, "postgres", db)
				})
			case rDBOS:
				mt, err = withDatabase(ctx, cfg.postgres, func(db string) (measurement, error) {
					return runDBOS(ctx, cfg, w, input, db)
				})
			case rPostgres:
				mt, err = withDatabase(ctx, cfg.postgres, func(db string) (measurement, error) {
					return runChild(ctx, cfg, w, r, db)
				})
			default:
				mt, err = runChild(ctx, cfg, w, r, "")
			}
			if err != nil {
				fmt.Fprintf(progress, "%s, %s, run %d/%d: %v\n", w.name, r, i+1, cfg.runs, err)
				res[r] = result{err: err}
				continue
			}
			fmt.Fprintf(progress, "%s, %s, run %d/%d: %.3f s\n", w.name, r, i+1, cfg.runs, mt.Seconds)
			res[r] = result{runs: append(res[r].runs, mt)}
		}
	}
	return res
}

// machine is what the report says of the machine it ran on.
type machine struct {
	date, cpu, memory, arch, goVersion, nodeVersion, revision string
	cores                                                     int
}

// read fills m in; what cannot be read is left empty.
func (m *machine) read(ctx context.Context, cfg *config) {
	m.date = time.Now().UTC().Format("2006-01-02 15:04 UTC")
	m.cores, m.arch, m.goVersion = runtime.NumCPU(), runtime.GOARCH, runtime.Version()
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kib); err == nil {
			m.memory = fmt.Sprintf("%.0f GiB", float64(kib)/(1<<20))
		}
	}
	if cfg.node != "" {
		if out, err := exec.CommandContext(ctx, cfg.node, "--version").Output(); err == nil {
			m.nodeVersion = "Node " + strings.TrimSpace(string(out))
		}
	}
	if out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output(); err == nil {
		m.revision = strings.TrimSpace(string(out))
	}
}

// nodePackageVersion is the version of aws-local-stepfunctions installed
// in modules, "" when it cannot be read.
func nodePackageVersion(modules string) string {
	data, err := os.ReadFile(filepath.Join(modules, "aws-local-stepfunctions", "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct{ Version string }
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&pkg); err != nil {
		return ""
	}
	return pkg.Version
}
