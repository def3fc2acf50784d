package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
)

// cmdCache lists (ls) or purges (purge KEY, purge --all) the result cache
// of Tasks, from the database or through the API of the process holding
// it.
func cmdCache(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("cache", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "ls: print JSON")
	workflow := fs.String("workflow", "", "ls: only the entries of this workflow")
	all := fs.Bool("all", false, "purge: remove every entry")
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "cache", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("cache: give ls or purge")
	}
	verb, rest := pos[0], pos[1:]
	switch {
	case verb != "ls" && verb != "purge":
		return usageErrorf("cache: %q is not ls or purge", verb)
	case verb == "ls" && (len(rest) > 0 || *all):
		return usageErrorf("cache ls takes no argument and no --all")
	case verb == "purge" && (*asJSON || *workflow != ""):
		return usageErrorf("cache purge takes neither --json nor --workflow")
	case verb == "purge" && *all == (len(rest) == 1):
		return usageErrorf("cache purge: give one KEY or --all")
	case len(rest) > 1:
		return usageErrorf("cache: unexpected argument %q", rest[1])
	}
	// Through a server's API, or the database itself once a run
	// holding it ends.
	h, err := c.open(ctx, *db, accessRun, holderInfo{})
	if err != nil {
		return err
	}
	defer h.close()
	if verb == "purge" {
		key := ""
		if len(rest) == 1 {
			key = rest[0]
		}
		var n int
		if h.api != nil {
			n, err = h.api.PurgeCache(ctx, key)
			err = remoteError(h, err)
		} else if cs, ok := h.st.(engine.CacheStore); ok {
			n, err = cs.PurgeCache(ctx, key, time.Now())
		} else {
			err = fmt.Errorf("cache: database %s keeps no result cache", *db)
		}
		if err != nil {
			return err
		}
		printf(c.stdout, "removed %d\n", n)
		return nil
	}
	var list []*engine.CacheEntry
	if h.api != nil {
		q := client.CacheQuery{Workflow: *workflow, Limit: 1000}
		for {
			page, err := h.api.Cache(ctx, q)
			if err != nil {
				return remoteError(h, err)
			}
			for _, e := range page.Entries {
				ce := &engine.CacheEntry{Key: e.Key, Scope: e.Scope, Workflow: e.Workflow, State: e.State, Agent: e.Agent, Execution: e.Execution,
					Size: e.Size, Hits: e.Hits, CreatedAt: e.CreatedAt}
				if e.ExpiresAt != nil {
					ce.ExpiresAt = *e.ExpiresAt
				}
				if e.LastHitAt != nil {
					ce.LastHitAt = *e.LastHitAt
				}
				list = append(list, ce)
			}
			if page.Next == "" {
				break
			}
			q.After = page.Next
		}
	} else if cs, ok := h.st.(engine.CacheStore); ok {
		if list, err = cs.ListCache(ctx, engine.CacheFilter{Workflow: *workflow}, time.Now()); err != nil {
			return err
		}
	} else {
		return fmt.Errorf("cache: database %s keeps no result cache", *db)
	}
	if *asJSON {
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = map[string]any{"key": e.Key, "scope": e.Scope, "workflow": e.Workflow, "state": e.State, "agent": e.Agent,
				"execution": e.Execution, "size": e.Size, "hits": e.Hits, "createdAt": timeJSON(e.CreatedAt), "expiresAt": timeJSON(e.ExpiresAt), "lastHitAt": timeJSON(e.LastHitAt)}
		}
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("KEY", "WORKFLOW", "STATE", "AGENT", "SCOPE", "HITS", "SIZE", "EXPIRES")
	for _, e := range list {
		exp := "never"
		if !e.ExpiresAt.IsZero() {
			exp = timeText(e.ExpiresAt)
		}
		w.row(e.Key[:16], termSafe(e.Workflow), termSafe(e.State), termSafe(e.Agent), e.Scope, strconv.FormatInt(e.Hits, 10), strconv.FormatInt(e.Size, 10), exp)
	}
	return w.flush()
}
