package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

// gcEvery is how often serve removes expired checkpoints.
const gcEvery = 10 * time.Minute

// socketPath is the unix socket beside db where the process holding it
// serves the API.
func socketPath(db string) string {
	if postgres.IsURL(db) {
		// Every process opens the database itself: none serves it to others.
		return ""
	}
	return db + ".sock"
}

// cmdWorker is the old name of serve: it says so and runs serve with the
// flags the two share (--poll, --max-payload, --db).
func cmdWorker(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	poll := fs.Duration("poll", time.Second, "how often to look for due executions")
	maxPayload := payloadFlag(fs)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "worker", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("worker: unexpected argument %q", pos[0])
	}
	fmt.Fprintln(c.stderr, "aslrun: worker is another name for `aslrun serve` now: it wakes and recovers executions and serves the API on DB.sock (docs/api.md)")
	return cmdServe(ctx, c, []string{"--poll", poll.String(), "--max-payload", strconv.Itoa(*maxPayload), "--db", *db})
}

// collectGarbage removes expired checkpoints, unreferenced snapshots and
// expired memory now and every gcEvery until ctx ends.
func collectGarbage(ctx context.Context, st store.Store, log *slog.Logger) {
	t := time.NewTicker(gcEvery)
	defer t.Stop()
	for {
		if rep, err := st.GC(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Error("gc", "error", err)
		} else if rep.Checkpoints+rep.Blobs+rep.Memory > 0 {
			log.Info("gc", "checkpoints", rep.Checkpoints, "snapshots", rep.Blobs, "memory", rep.Memory)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
