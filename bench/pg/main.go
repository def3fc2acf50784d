// Command pg measures aslrun on PostgreSQL next to bbolt: the latency of
// a commit (p50, p99) and state transitions per second on the same
// workflow (-mode latency), and how executions spread and scale over 1, 2
// and 4 `aslrun serve` processes sharing one database (-mode scale), and
// the WAL and table bytes PostgreSQL writes per step of the loop (-mode
// bytes).
// bench/pg.sh runs it with a fresh database and prints the date and the
// machine with the figures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg:", err)
		os.Exit(1)
	}
}

// run is the program.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pg", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", os.Getenv("ASLRUN_BENCH_POSTGRES"), "the PostgreSQL `URL` of an empty database to measure on ($ASLRUN_BENCH_POSTGRES)")
	mode := fs.String("mode", "latency", "what to measure: latency, scale or bytes")
	workflows := fs.String("workflows", "bench/workflows", "the workflows `folder`")
	tmp := fs.String("tmp", os.TempDir(), "where the bbolt databases go")
	turns := fs.Int("turns", 50, "latency, bytes: turns of the loop in each execution (bytes: 2000 unless given)")
	executions := fs.Int("executions", 64, "latency: executions of each row")
	concurrent := fs.Int("concurrent", 16, "latency: executions at once in the concurrent rows")
	jsonOut := fs.String("json", "", "also write the figures as JSON to `FILE`")
	aslrun := fs.String("aslrun", "", "scale: the aslrun `binary` the servers run")
	servers := fs.String("servers", "1,2,4", "scale: the server `counts` to measure")
	delays := fs.String("delays", "20ms,0", "scale: the agents' `delays` to measure")
	perServer := fs.Int("per-server", 64, "scale: executions submitted per server")
	capacity := fs.Int("cap", 16, "scale: each server's --max-concurrent")
	submit := fs.String("submit", "spread", "scale: where starts go: spread (round robin over the servers, as a load balancer would) or one (all to the first server)")
	timeout := fs.Duration("timeout", 5*time.Minute, "scale: the longest one row may take")
	poll := fs.Duration("poll", time.Second, "scale: each server's --poll")
	durability := fs.String("durability", "strict", "scale: each server's --durability (strict or batched)")
	repeat := fs.Int("repeat", 1, "scale: runs of each row; the row printed is the median run by executions per second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mode == "bytes" && !flagGiven(fs, "turns") {
		*turns = 2000
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *db == "" {
		return errors.New("-db: a PostgreSQL URL is required (or $ASLRUN_BENCH_POSTGRES)")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"turns", *turns}, {"executions", *executions}, {"concurrent", *concurrent}, {"per-server", *perServer}, {"cap", *capacity}, {"repeat", *repeat}} {
		if f.v < 1 {
			return fmt.Errorf("-%s %d: want at least 1", f.name, f.v)
		}
	}
	var (
		figures any
		err     error
	)
	switch *mode {
	case "latency":
		figures, err = latencyTable(ctx, stdout, *workflows, *tmp, *db, *turns, *executions, *concurrent)
	case "bytes":
		figures, err = bytesTable(ctx, stdout, *workflows, *db, *turns)
	case "scale":
		if *aslrun == "" {
			return errNoScale
		}
		if *durability != "strict" && *durability != "batched" {
			return fmt.Errorf("-durability %q: want strict or batched", *durability)
		}
		if *submit != "spread" && *submit != "one" {
			return fmt.Errorf("-submit %q: want spread or one", *submit)
		}
		cfg := scaleConfig{aslrun: *aslrun, db: *db, tmp: *tmp, perServer: *perServer, cap: *capacity,
			submit: *submit, timeout: *timeout, stderr: stderr, poll: *poll, tasksInRun: 3, durability: *durability, repeat: *repeat}
		if cfg.servers, err = parseInts(*servers); err != nil {
			return fmt.Errorf("-servers %w", err)
		}
		if cfg.delays, err = parseDelays(*delays); err != nil {
			return fmt.Errorf("-delays %w", err)
		}
		figures, err = scaleTable(ctx, stdout, cfg)
	default:
		return fmt.Errorf("-mode %q: want latency, scale or bytes", *mode)
	}
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		data, err := json.MarshalIndent(figures, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonOut, append(data, '\n'), 0o644)
	}
	return nil
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
