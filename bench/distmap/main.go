// Command distmap measures a Distributed Map over a large CSV file: each
// batch of rows a child execution, the results written to a bucket by a
// ResultWriter. It runs one Map in this process (so that the peak RSS it
// prints is the run's own) on bbolt (strict or batched) or PostgreSQL and
// prints one JSON line: rows, time, rows per second, peak RSS, the
// database's size and its bytes per row, and what the process wrote to
// disk. bench/distmap.sh makes the file and runs it on each store.
//
//	go run ./bench/distmap -rows 1000000 -batch 100 -store bolt -durability batched -dir /tmp/dm
//
// The agent is an in-process function answering at once, so the figures
// are the engine's and the store's, not an agent's.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "distmap:", err)
		os.Exit(1)
	}
}

// definition is the measured workflow: %d is the batch size, %s the
// ResultPath clause.
const definition = `{"StartAt":"Rows","States":{"Rows":{"Type":"Map","Label":"rows",
	"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{"Bucket":"in","Key":"rows.csv"}},
	"ItemBatcher":{"MaxItemsPerBatch":%d,"BatchInput":{"run.$":"$.run"}},
	"MaxConcurrency":%d,%s
	"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"Work","States":{
		"Work":{"Type":"Task","Agent":"Work","Parameters":{"first.$":"$.Items[0].id","n.$":"States.ArrayLength($.Items)","run.$":"$.BatchInput.run"},"End":true}}},
	"End":true}}}`

// result is what one run prints.
type result struct {
	Store       string  `json:"store"`
	Durability  string  `json:"durability"`
	Rows        int     `json:"rows"`
	Batch       int     `json:"batch"`
	Writer      bool    `json:"resultWriter"`
	Seconds     float64 `json:"seconds"`
	RowsPerSec  float64 `json:"rowsPerSecond"`
	PeakRSS     int64   `json:"peakRSSBytes"`
	DBBytes     int64   `json:"dbBytes"`
	DBPerRow    float64 `json:"dbBytesPerRow"`
	Written     int64   `json:"writtenBytes"`
	Status      string  `json:"status"`
	ResultBytes int64   `json:"resultBytes"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("distmap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int("rows", 1000000, "rows of the CSV file")
	batch := fs.Int("batch", 100, "rows per batch (child execution)")
	concurrency := fs.Int("concurrency", 64, "MaxConcurrency")
	storeName := fs.String("store", "bolt", "bolt or postgres")
	durability := fs.String("durability", "batched", "strict or batched")
	dir := fs.String("dir", "", "the `folder` for the CSV file, the results and the bbolt database (required)")
	pgURL := fs.String("postgres", "", "the PostgreSQL `URL` of an empty database (-store postgres)")
	writer := fs.Bool("writer", true, "write the results with a ResultWriter; false: ResultPath null and no ResultWriter")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *rows <= 0 || *batch <= 0 || *concurrency <= 0 {
		return errors.New("-dir is required, -rows, -batch and -concurrency must be positive")
	}
	in, out := filepath.Join(*dir, "in"), filepath.Join(*dir, "out")
	if err := writeRows(in, *rows); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	clause := `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"results"}},`
	if !*writer {
		clause = `"ResultPath":null,`
	}
	m, err := states.Parse([]byte(fmt.Sprintf(definition, *batch, *concurrency, clause)))
	if err != nil {
		return err
	}
	reg := agents.NewRegistry()
	if err := reg.RegisterBucket("in", itemio.Dir(in)); err != nil {
		return err
	}
	if err := reg.RegisterBucket("out", itemio.Dir(out)); err != nil {
		return err
	}
	reg.Register("Work", agents.DirectFunc(func(_ context.Context, req *agents.Request) (any, error) {
		return map[string]any{"ok": true, "first": req.Input.(map[string]any)["first"]}, nil
	}))
	cfg := engine.Config{Agents: reg}
	switch *durability {
	case "strict":
	case "batched":
		cfg.Durability = engine.DurabilityBatched
	default:
		return fmt.Errorf("-durability %q: want strict or batched", *durability)
	}
	var size func() (int64, error)
	switch *storeName {
	case "bolt":
		path := filepath.Join(*dir, "aslrun.db")
		os.Remove(path)
		b, err := store.OpenBolt(path, store.BoltOptions{})
		if err != nil {
			return err
		}
		defer b.Close()
		cfg.Store = b
		size = func() (int64, error) {
			st, err := os.Stat(path)
			if err != nil {
				return 0, err
			}
			return st.Size(), nil
		}
	case "postgres":
		db, err := postgres.Open(ctx, *pgURL, postgres.Options{Migrate: true})
		if err != nil {
			return err
		}
		defer db.Close()
		cfg.Store = db
		size = func() (int64, error) { return postgresSize(ctx, *pgURL) }
	default:
		return fmt.Errorf("-store %q: want bolt or postgres", *storeName)
	}
	input, err := jsonvalue.Decode([]byte(`{"run":"r1"}`))
	if err != nil {
		return err
	}
	x := engine.New(cfg)
	written := writeBytes()
	start := time.Now()
	res, err := x.Run(ctx, m, input, engine.StartOptions{})
	took := time.Since(start)
	if err != nil {
		return err
	}
	r := result{Store: *storeName, Durability: *durability, Rows: *rows, Batch: *batch, Writer: *writer,
		Seconds: took.Seconds(), RowsPerSec: float64(*rows) / took.Seconds(), Status: string(res.Status)}
	if res.Status != engine.StatusSucceeded {
		return fmt.Errorf("execution %s: %s: %s: %s", res.ID, res.Status, res.Error, res.Cause)
	}
	if w := writeBytes(); w >= 0 && written >= 0 {
		r.Written = w - written
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.PeakRSS = ru.Maxrss * 1024
	}
	if r.DBBytes, err = size(); err != nil {
		return err
	}
	r.DBPerRow = float64(r.DBBytes) / float64(*rows)
	if *writer {
		r.ResultBytes = folderSize(out)
	}
	return json.NewEncoder(stdout).Encode(r)
}

// writeRows writes dir/rows.csv with n rows, unless it is there already
// with as many.
func writeRows(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "rows.csv")
	marker := filepath.Join(dir, "rows.count")
	if b, err := os.ReadFile(marker); err == nil && string(b) == strconv.Itoa(n) {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.WriteString("id,fail,text\n")
	for i := range n {
		fmt.Fprintf(w, "row%d,no,\"text, %d\"\n", i, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.WriteFile(marker, []byte(strconv.Itoa(n)), 0o644)
}

// folderSize is the total size of the regular files under dir.
func folderSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// postgresSize is the size of the database at url.
func postgresSize(ctx context.Context, url string) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

// writeBytes is write_bytes of /proc/self/io: what this process caused
// to be written to disk so far; -1 where it cannot be read.
func writeBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
