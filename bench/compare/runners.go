package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"go.etcd.io/bbolt"
	"golang.org/x/sync/errgroup"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

// The runners: aws-local-stepfunctions, the engine API in five modes, the
// CLI, and the peers (LangGraph JS on three checkpointers, DBOS).
const (
	rNode       = "aws-local-stepfunctions"
	rNone       = "none"
	rMemory     = "memory"
	rStrict     = "strict"
	rStrictLog  = "strict-log"
	rPebble     = "pebble"
	rBatched    = "batched"
	rPostgres   = "postgres"
	rCLI        = "cli"
	rLGMemory   = "langgraph-memory"
	rLGSQLite   = "langgraph-sqlite"
	rLGPostgres = "langgraph-postgres"
	rDBOS       = "dbos"
)

// apiModes are the runners that run in this program, through the engine
// API (rPebble only in a build with the pebble tag: pebble.go).
var apiModes = []string{rNone, rMemory, rStrict, rStrictLog, rBatched, rPostgres}

// openPebble opens a Pebble store in folder dir; nil in a build without
// the pebble tag.
var openPebble func(dir string) (store.Store, error)

// A measurement is what one run of a workload measured. A figure a runner
// cannot measure is -1.
type measurement struct {
	// Seconds is the time the executions took: from their start to their
	// end in the process (API, aws-local-stepfunctions), the process's
	// wall time for the CLI (its start, reading the input, opening the
	// database included).
	Seconds float64 `json:"seconds"`
	// Mallocs is the number of heap allocations during the executions.
	Mallocs int64 `json:"mallocs"`
	// Commits is the number of Store.Commit calls.
	Commits int64 `json:"commits"`
	// DBBytes is the database's size at the end, as bbolt counts it (its
	// highest page in use times the page size; the file is grown ahead of
	// it, in steps).
	DBBytes int64 `json:"dbBytes"`
	// WriteBytes is the bytes the process caused to be written to disk
	// (write_bytes of /proc/PID/io).
	WriteBytes int64 `json:"writeBytes"`
	// MaxRSS is the process's peak resident set in bytes.
	MaxRSS int64 `json:"maxRSS"`
	// WALBytes is the PostgreSQL write-ahead log written during the run
	// (pg_current_wal_lsn before and after it: the whole server's, other
	// databases' writes included), TableBytes the size of the run's
	// database's tables after it (pg_total_relation_size: indexes and
	// TOAST included).
	WALBytes   int64 `json:"walBytes"`
	TableBytes int64 `json:"tableBytes"`
}

// unmeasured is a measurement with nothing measured yet.
func unmeasured() measurement {
	return measurement{Mallocs: -1, Commits: -1, DBBytes: -1, WriteBytes: -1, MaxRSS: -1, WALBytes: -1, TableBytes: -1}
}

// runAPI runs w through the engine API in mode (none, memory, strict,
// batched, or postgres on the empty database at pgURL, strict) in this
// process, with a bbolt database under tmp, and checks what the
// executions return. exited, when set, is the executor's
// Hooks.StateExited.
func runAPI(ctx context.Context, dir, tmp, pgURL string, w *workload, mode string, exited func(id, state string)) (measurement, error) {
	mt := unmeasured()
	def, err := os.ReadFile(filepath.Join(dir, w.file))
	if err != nil {
		return mt, err
	}
	m, err := states.Parse(def)
	if err != nil {
		return mt, fmt.Errorf("%s: %w", w.file, err)
	}
	mockData, err := os.ReadFile(filepath.Join(dir, mockFile))
	if err != nil {
		return mt, err
	}
	mocks, err := agents.ParseMocks(mockData)
	if err != nil {
		return mt, fmt.Errorf("%s: %w", mockFile, err)
	}
	reg := agents.NewRegistry()
	if err := mocks.Register(reg); err != nil {
		return mt, err
	}
	input, err := jsonvalue.Decode(w.input)
	if err != nil {
		return mt, err
	}
	var commits atomic.Int64
	// 100,000 items are far beyond AWS's payload limit, which
	// aws-local-stepfunctions does not apply.
	cfg := engine.Config{Agents: reg, MaxPayloadSize: -1, Hooks: engine.Hooks{StateExited: exited}}
	var (
		db       string
		bolt     *store.Bolt
		pebbleDB store.Store
		pgConn   *pgx.Conn
		mark     pgMark
	)
	defer func() {
		if bolt != nil {
			bolt.Close()
		}
		if pebbleDB != nil {
			pebbleDB.Close()
		}
	}()
	switch mode {
	case rPostgres:
		if pgURL == "" {
			return mt, fmt.Errorf("mode %s: no database (-pg)", mode)
		}
		pg, err := postgres.Open(ctx, pgURL, postgres.Options{Migrate: true})
		if err != nil {
			return mt, err
		}
		defer pg.Close()
		cfg.Store = pg
		if pgConn, err = pgx.Connect(ctx, pgURL); err != nil {
			return mt, err
		}
		defer pgConn.Close(context.WithoutCancel(ctx))
		if mark, err = markPG(ctx, pgConn); err != nil {
			return mt, err
		}
	case rNone:
	case rMemory:
		cfg.Store = store.NewMemory()
	case rStrict, rStrictLog, rBatched:
		if db, err = newDBPath(tmp); err != nil {
			return mt, err
		}
		defer os.RemoveAll(filepath.Dir(db))
		if bolt, err = store.OpenBolt(db, store.BoltOptions{Log: mode == rStrictLog}); err != nil {
			return mt, err
		}
		cfg.Store = bolt
		if mode == rBatched {
			cfg.Durability = engine.DurabilityBatched
		}
	case rPebble:
		if openPebble == nil {
			return mt, errors.New("this build has no Pebble store: build with -tags pebble (bench/compare.sh does)")
		}
		if db, err = newDBPath(tmp); err != nil {
			return mt, err
		}
		defer os.RemoveAll(filepath.Dir(db))
		if pebbleDB, err = openPebble(db); err != nil {
			return mt, err
		}
		cfg.Store = pebbleDB
	default:
		return mt, fmt.Errorf("unknown mode %q (want %s)", mode, strings.Join(apiModes, ", "))
	}
	if cfg.Store != nil {
		cfg.Hooks.Committed = func(time.Duration, error) { commits.Add(1) }
	}
	x := engine.New(cfg)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	writtenBefore := writeBytes()
	outputs := make([]any, w.executions)
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for i := range outputs {
		g.Go(func() error {
			res, err := x.Run(gctx, m, input, engine.StartOptions{})
			if err != nil {
				return err
			}
			if res.Status != engine.StatusSucceeded {
				return fmt.Errorf("execution %s: %s: %s: %s", res.ID, res.Status, res.Error, res.Cause)
			}
			outputs[i] = res.Output
			return nil
		})
	}
	err = g.Wait()
	mt.Seconds = time.Since(start).Seconds()
	runtime.ReadMemStats(&after)
	if err != nil {
		return mt, fmt.Errorf("%s, %s: %w", w.name, mode, err)
	}
	if err := w.check(outputs); err != nil {
		return mt, fmt.Errorf("%s: %w", mode, err)
	}
	mt.Mallocs = int64(after.Mallocs - before.Mallocs)
	if cfg.Store != nil {
		mt.Commits = commits.Load()
	}
	if pgConn != nil {
		if err := mark.since(ctx, pgConn, &mt); err != nil {
			return mt, err
		}
	}
	if bolt != nil {
		err := bolt.Close()
		bolt = nil
		if err != nil {
			return mt, err
		}
		if writtenAfter := writeBytes(); writtenBefore >= 0 && writtenAfter >= 0 {
			mt.WriteBytes = writtenAfter - writtenBefore
		}
		if mt.DBBytes, err = dbSize(db); err != nil {
			return mt, err
		}
	}
	if pebbleDB != nil {
		err := pebbleDB.Close()
		pebbleDB = nil
		if err != nil {
			return mt, err
		}
		if writtenAfter := writeBytes(); writtenBefore >= 0 && writtenAfter >= 0 {
			mt.WriteBytes = writtenAfter - writtenBefore
		}
		mt.DBBytes = folderBytes(db)
	}
	return mt, nil
}

// folderBytes is the total size of the files in folder dir (a Pebble
// database: its WAL, tables and manifests).
func folderBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// newDBPath returns the path of a database that does not exist yet, in a
// new directory under tmp.
func newDBPath(tmp string) (string, error) {
	d, err := os.MkdirTemp(tmp, "db-")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "aslrun.db"), nil
}

// writeBytes is write_bytes of /proc/self/io: what this process caused to
// be written to disk so far; -1 where it cannot be read.
func writeBytes() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// dbSize is the size of the bbolt database at path as bbolt counts it:
// its highest page in use times the page size.
func dbSize(path string) (int64, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return -1, fmt.Errorf("size of %s: %w", path, err)
	}
	defer db.Close()
	var size int64
	err = db.View(func(tx *bbolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return size, err
}

// runProcess runs name with args, at most timeout, and returns its
// standard output, its wall time and its resource usage. An error names
// the command and ends with its standard error.
func runProcess(ctx context.Context, timeout time.Duration, name string, args ...string) ([]byte, time.Duration, *syscall.Rusage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, wall, nil, fmt.Errorf("stopped after %v", timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 400 {
			msg = "…" + msg[len(msg)-400:]
		}
		return nil, wall, nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args[:min(len(args), 2)], " "), err, msg)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return stdout.Bytes(), wall, ru, nil
}

// maxRSS is a process's peak resident set in bytes (Linux counts it in
// KiB).
func maxRSS(ru *syscall.Rusage) int64 {
	if ru == nil {
		return -1
	}
	return ru.Maxrss * 1024
}

// runChild runs w in mode through the engine API in a child process (this
// program with -child), so that its peak RSS and bytes written are its
// own.
func runChild(ctx context.Context, cfg *config, w *workload, mode, pgURL string) (measurement, error) {
	self, err := os.Executable()
	if err != nil {
		return unmeasured(), err
	}
	out, _, ru, err := runProcess(ctx, cfg.timeout, self, "-child", "-mode", mode, "-workload", w.name,
		"-n", strconv.Itoa(w.n), "-executions", strconv.Itoa(w.executions), "-workflows", cfg.workflows, "-tmp", cfg.tmp, "-pg", pgURL)
	if err != nil {
		return unmeasured(), err
	}
	mt := unmeasured()
	if err := json.Unmarshal(out, &mt); err != nil {
		return mt, fmt.Errorf("child %s %s: %w", w.name, mode, err)
	}
	mt.MaxRSS = maxRSS(ru)
	return mt, nil
}

// runCLI runs w with `aslrun run` on a new bbolt database, its agents
// mocked by the mock file, and checks what it prints.
func runCLI(ctx context.Context, cfg *config, w *workload, input string) (measurement, error) {
	mt := unmeasured()
	if w.executions != 1 {
		return mt, fmt.Errorf("%s: aslrun run runs one execution", w.name)
	}
	db, err := newDBPath(cfg.tmp)
	if err != nil {
		return mt, err
	}
	defer os.Remove(db)
	out, wall, ru, err := runProcess(ctx, cfg.timeout, cfg.aslrun, "run", filepath.Join(cfg.workflows, w.file),
		"--input", "@"+input, "--mock", filepath.Join(cfg.workflows, mockFile), "--max-payload", "-1", "--db", db)
	if err != nil {
		return mt, err
	}
	output, err := jsonvalue.Decode(out)
	if err != nil {
		return mt, fmt.Errorf("aslrun run printed %w", err)
	}
	if err := w.check([]any{output}); err != nil {
		return mt, fmt.Errorf("aslrun run: %w", err)
	}
	mt.Seconds = wall.Seconds()
	mt.MaxRSS = maxRSS(ru)
	if ru != nil {
		// Linux counts a process's writes (write_bytes) in 512-byte blocks
		// here.
		mt.WriteBytes = ru.Oublock * 512
	}
	mt.DBBytes, err = dbSize(db)
	return mt, err
}

// runNode runs w on aws-local-stepfunctions (bench/aws-local/run.mjs) and
// checks what it returns.
func runNode(ctx context.Context, cfg *config, w *workload, input string) (measurement, error) {
	mt := unmeasured()
	out, _, ru, err := runProcess(ctx, cfg.timeout, cfg.node, cfg.script, "--modules", cfg.modules,
		"--workflow", filepath.Join(cfg.workflows, w.file), "--mock", filepath.Join(cfg.workflows, mockFile),
		"--input", input, "--executions", strconv.Itoa(w.executions))
	if err != nil {
		return mt, err
	}
	v, err := jsonvalue.Decode(bytes.TrimSpace(out))
	if err != nil {
		return mt, fmt.Errorf("run.mjs printed %w", err)
	}
	res, _ := v.(map[string]any)
	secs, _ := res["seconds"].(json.Number)
	if mt.Seconds, err = strconv.ParseFloat(string(secs), 64); err != nil {
		return mt, fmt.Errorf("run.mjs printed no seconds: %w", err)
	}
	outputs := []any{res["output"]}
	if w.executions > 1 {
		outputs, _ = res["output"].([]any)
	}
	if err := w.check(outputs); err != nil {
		return mt, fmt.Errorf("aws-local-stepfunctions: %w", err)
	}
	mt.MaxRSS = maxRSS(ru)
	return mt, nil
}
