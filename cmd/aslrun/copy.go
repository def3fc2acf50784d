package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

// copyCounts are what a copy wrote, for its summary.
type copyCounts struct {
	executions, skipped, events, checkpoints, memory, feedback, workflows, versions, definitions int
}

// maxNamed bounds the execution ids a refusal lists.
const maxNamed = 10

// cmdCopy copies a bbolt database into a migrated PostgreSQL database and
// verifies the copy there.
func cmdCopy(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("copy", flag.ContinueOnError)
	from := fs.String("from", "", "the bbolt database `FILE` to copy (required); no process may hold it while it is copied")
	to := fs.String("to", "", "the PostgreSQL database `URL` to copy into, migrated (`aslrun migrate`): postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?…] (required)")
	skip := fs.Bool("skip-existing", false, "leave out the executions the target already has, instead of refusing to copy")
	pos, err := parseFlags(fs, "copy", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usageErrorf("copy: unexpected argument %q", pos[0])
	case *from == "":
		return usageErrorf("copy: --from FILE is required (see \"aslrun copy --help\")")
	case postgres.IsURL(*from):
		return usageErrorf("copy: --from %s: copy reads a bbolt database file", postgres.Redact(*from))
	case *to == "":
		return usageErrorf("copy: --to postgres://… is required (see \"aslrun copy --help\")")
	case !postgres.IsURL(*to):
		return usageErrorf("copy: --to %s: copy writes into a PostgreSQL database (postgres://…)", postgres.Redact(*to))
	}

	src, err := store.OpenBolt(*from, store.BoltOptions{ReadOnly: true, LockTimeout: lockTimeout})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			who := "another process"
			if h, known := readHolder(*from); known {
				who = fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
			}
			return usageErrorf("copy: database %s is held by %s: stop it first, so that nothing changes while it is copied", *from, who)
		}
		return usageErrorf("copy: %v", err)
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, *to, postgres.Options{})
	if err != nil {
		return usageErrorf("copy: %v", err)
	}
	defer dst.Close()

	// A first pass reads and verifies the whole source and finds the
	// executions the target has, before anything is written.
	var ids []string
	err = src.Export(ctx, func(it store.ExportItem) error {
		if it.Execution != nil {
			ids = append(ids, it.Execution.ID)
		}
		return nil
	})
	if err != nil {
		return copyError(ctx, fmt.Errorf("copy: reading %s: %w", *from, err))
	}
	existing, err := dst.ExistingExecutions(ctx, ids)
	if err != nil {
		return copyError(ctx, fmt.Errorf("copy: %w", err))
	}
	if len(existing) > 0 && !*skip {
		named := existing[:min(len(existing), maxNamed)]
		more := ""
		if len(existing) > len(named) {
			more = fmt.Sprintf(" and %d more", len(existing)-len(named))
		}
		return usageErrorf("copy: %s already has execution %s%s: nothing was copied (--skip-existing copies the others)",
			dst.URL(), strings.Join(named, ", "), more)
	}
	skipped := make(map[string]bool, len(existing))
	for _, id := range existing {
		skipped[id] = true
	}

	var n copyCounts
	var copied []copiedExecution
	workflows := make(map[string]bool)
	err = src.Export(ctx, func(it store.ExportItem) error {
		if e := it.Execution; e != nil && skipped[e.ID] {
			n.skipped++
			return nil
		}
		if err := dst.Import(ctx, it); err != nil {
			return err
		}
		switch {
		case it.Definition != nil:
			n.definitions++
		case it.Workflow != nil:
			n.versions++
			workflows[it.Workflow.Name] = true
		case it.Execution != nil:
			e := it.Execution
			n.executions++
			n.events += int(e.Events)
			n.checkpoints += len(e.Checkpoints)
			ce := copiedExecution{id: e.ID, events: e.Events, lastHash: e.LastHash}
			for _, cp := range e.Checkpoints {
				ce.checkpoints = append(ce.checkpoints, cp.Name)
			}
			copied = append(copied, ce)
		case it.Memory != nil:
			n.memory++
		case it.Feedback != nil:
			n.feedback++
		}
		return nil
	})
	n.workflows = len(workflows)
	if err != nil {
		if errors.Is(err, engine.ErrExists) {
			return copyError(ctx, &exitError{code: exitUsage, msg: fmt.Sprintf("copy: %v (copied %d executions before it; copy again with --skip-existing to go on)", err, n.executions)})
		}
		return copyError(ctx, fmt.Errorf("copy: %w (copied %d executions before it; copy again with --skip-existing to go on)", err, n.executions))
	}
	if err := verifyCopy(ctx, dst, copied); err != nil {
		return copyError(ctx, fmt.Errorf("copy: verifying %s: %w", dst.URL(), err))
	}
	fmt.Fprintf(c.stdout, "copied %s to %s: %d executions (%d events, %d checkpoints), %d memory entries, %d feedback, %d workflows (%d versions), %d definitions",
		*from, dst.URL(), n.executions, n.events, n.checkpoints, n.memory, n.feedback, n.workflows, n.versions, n.definitions)
	if n.skipped > 0 {
		fmt.Fprintf(c.stdout, "; skipped %d executions the target had", n.skipped)
	}
	fmt.Fprintln(c.stdout, "; every history and checkpoint verified")
	return nil
}

// copiedExecution is what the verification of a copied execution needs
// of the source: where its history ends, and its checkpoints' names.
type copiedExecution struct {
	id          string
	events      int64
	lastHash    string
	checkpoints []string
}

// verifyCopy checks the copied executions on the target: each history's
// hashes and chain up to the event count and last hash of the source, and
// each checkpoint, loaded (which verifies its snapshot).
func verifyCopy(ctx context.Context, dst *postgres.DB, copied []copiedExecution) error {
	for _, e := range copied {
		if err := dst.VerifyHistory(ctx, e.id); err != nil {
			return err
		}
		events, err := dst.History(ctx, e.id)
		if err != nil {
			return err
		}
		if int64(len(events)) != e.events || (len(events) > 0 && events[len(events)-1].Hash != e.lastHash) {
			return fmt.Errorf("execution %s: %d events on the target, %d in the source: %w", e.id, len(events), e.events, store.ErrTampered)
		}
		for _, name := range e.checkpoints {
			if _, err := dst.Checkpoint(ctx, e.id, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyError is err, or the exit of a signal that stopped the copy.
func copyError(ctx context.Context, err error) error {
	if e := interrupted(ctx, ""); e != nil {
		return e
	}
	return err
}
