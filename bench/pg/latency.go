package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

// latencyRun is one row of the latency table: a store, a durability, and
// how many executions run at once.
type latencyRun struct {
	Store      string  `json:"store"`
	Durability string  `json:"durability"`
	Concurrent int     `json:"concurrent"`
	Executions int     `json:"executions"`
	Commits    int64   `json:"commits"`
	P50        float64 `json:"p50Millis"`
	P99        float64 `json:"p99Millis"`
	// Transitions is state transitions (states run to their end) per
	// second, over all the executions.
	Transitions float64 `json:"transitionsPerSecond"`
	// TaskTransitions is the Task states among them, per second.
	TaskTransitions float64 `json:"taskTransitionsPerSecond"`
}

// loopFixture is the loop workflow of bench/workflows, its mocked agents,
// and its input for a number of turns.
type loopFixture struct {
	machine *states.Machine
	agents  *agents.Registry
	input   any
	turns   int
}

// newLoopFixture reads the loop workflow and its mocks from dir.
func newLoopFixture(dir string, turns int) (*loopFixture, error) {
	def, err := os.ReadFile(filepath.Join(dir, "loop.json"))
	if err != nil {
		return nil, err
	}
	m, err := states.Parse(def)
	if err != nil {
		return nil, fmt.Errorf("loop.json: %w", err)
	}
	mockData, err := os.ReadFile(filepath.Join(dir, "mock.json"))
	if err != nil {
		return nil, err
	}
	mocks, err := agents.ParseMocks(mockData)
	if err != nil {
		return nil, fmt.Errorf("mock.json: %w", err)
	}
	reg := agents.NewRegistry()
	if err := mocks.Register(reg); err != nil {
		return nil, err
	}
	doc, err := os.ReadFile(filepath.Join(dir, "document.json"))
	if err != nil {
		return nil, err
	}
	in := fmt.Appendf(nil, `{"doc":%s,"i":0,"n":%d}`, doc, turns)
	input, err := jsonvalue.Decode(in)
	if err != nil {
		return nil, err
	}
	return &loopFixture{machine: m, agents: reg, input: input, turns: turns}, nil
}

// measureLatency runs executions of the loop, concurrent at a time, on st
// with durability d, and measures every commit.
func measureLatency(ctx context.Context, f *loopFixture, st engine.Store, storeName string, d engine.Durability, concurrent, executions int) (latencyRun, error) {
	row := latencyRun{Store: storeName, Durability: string(d), Concurrent: concurrent, Executions: executions}
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, executions*(f.turns+2))
		exited    atomic.Int64
		tasks     atomic.Int64
	)
	x := engine.New(engine.Config{
		Agents:     f.agents,
		Store:      st,
		Durability: d,
		Hooks: engine.Hooks{
			Committed: func(took time.Duration, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				latencies = append(latencies, took)
				mu.Unlock()
			},
			StateExited: func(_, state string) {
				exited.Add(1)
				if state == "Work" {
					tasks.Add(1)
				}
			},
		},
	})
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrent)
	start := time.Now()
	for range executions {
		g.Go(func() error {
			res, err := x.Run(gctx, f.machine, f.input, engine.StartOptions{})
			if err != nil {
				return err
			}
			if res.Status != engine.StatusSucceeded {
				return fmt.Errorf("execution %s: %s: %s: %s", res.ID, res.Status, res.Error, res.Cause)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return row, fmt.Errorf("%s %s ×%d: %w", storeName, d, concurrent, err)
	}
	took := time.Since(start).Seconds()
	slices.Sort(latencies)
	row.Commits = int64(len(latencies))
	row.P50 = millis(percentile(latencies, 0.50))
	row.P99 = millis(percentile(latencies, 0.99))
	row.Transitions = float64(exited.Load()) / took
	row.TaskTransitions = float64(tasks.Load()) / took
	return row, nil
}

// percentile is the p-th quantile of sorted (nearest rank); 0 when it is
// empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// latencyTable measures the loop on bbolt (a new file under tmp) and on
// the PostgreSQL database at pgURL (emptied of executions first is not
// needed: every execution has a new id), strict and batched, one
// execution at a time and concurrent at once, and prints the table to w.
func latencyTable(ctx context.Context, w io.Writer, dir, tmp, pgURL string, turns, executions, concurrent int) ([]latencyRun, error) {
	f, err := newLoopFixture(dir, turns)
	if err != nil {
		return nil, err
	}
	var rows []latencyRun
	for _, name := range []string{"bbolt", "postgres"} {
		for _, d := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched} {
			for _, c := range []int{1, concurrent} {
				st, closeStore, err := openStore(ctx, name, tmp, pgURL)
				if err != nil {
					return rows, err
				}
				row, err := measureLatency(ctx, f, st, name, d, c, executions)
				if cerr := closeStore(); err == nil {
					err = cerr
				}
				if err != nil {
					return rows, err
				}
				rows = append(rows, row)
				fmt.Fprintf(w, "%-9s %-8s ×%-3d %6d commits  p50 %7.3f ms  p99 %7.3f ms  %8.0f transitions/s  %7.0f task transitions/s\n",
					row.Store, row.Durability, row.Concurrent, row.Commits, row.P50, row.P99, row.Transitions, row.TaskTransitions)
			}
		}
	}
	return rows, nil
}

// openStore opens a new bbolt database under tmp, or the PostgreSQL
// database at pgURL (migrated).
func openStore(ctx context.Context, name, tmp, pgURL string) (engine.Store, func() error, error) {
	switch name {
	case "bbolt":
		d, err := os.MkdirTemp(tmp, "db-")
		if err != nil {
			return nil, nil, err
		}
		b, err := store.OpenBolt(filepath.Join(d, "aslrun.db"), store.BoltOptions{})
		if err != nil {
			return nil, nil, err
		}
		return b, func() error { err := b.Close(); os.RemoveAll(d); return err }, nil
	case "postgres":
		db, err := postgres.Open(ctx, pgURL, postgres.Options{Migrate: true})
		if err != nil {
			return nil, nil, err
		}
		return db, db.Close, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", name)
}
