package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aslrun/aslrun/engine"
)

// Listing executions. List's order is total: newest first by the start
// time's index key (timeKey: Unix nanoseconds, times before 1970 as 0),
// then by ID, descending. A cursor (ListOptions.After) is the position of
// an execution in that order, which never changes (an execution's start
// and ID never do), so paging is exact.

// listPos is a position in List's order.
type listPos struct {
	at uint64 // timeKey of the start
	id string
}

// before reports whether p comes before q in List's order (is newer).
func (p listPos) before(q listPos) bool {
	if p.at != q.at {
		return p.at > q.at
	}
	return p.id > q.id
}

// listFilter is ListOptions ready to test summaries; after is the
// cursor's position (nil: none).
type listFilter struct {
	opts  ListOptions
	after *listPos
}

// keep reports whether s is listed (the limit aside).
func (f *listFilter) keep(s *Summary) bool {
	o := &f.opts
	at := timeKey(s.StartedAt)
	switch {
	case o.Status != "" && s.Status != o.Status,
		o.MachineName != "" && s.MachineName != o.MachineName,
		!o.StartedAfter.IsZero() && at <= timeKey(o.StartedAfter),
		!o.StartedBefore.IsZero() && at >= timeKey(o.StartedBefore),
		f.after != nil && !f.after.before(listPos{at, s.ID}):
		return false
	}
	return true
}

// sortListed orders summaries in List's order and applies the limit.
func sortListed(s []Summary, limit int) []Summary {
	slices.SortFunc(s, func(a, b Summary) int {
		if ka, kb := timeKey(a.StartedAt), timeKey(b.StartedAt); ka != kb {
			if ka > kb {
				return -1
			}
			return 1
		}
		return strings.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(s) > limit {
		s = s[:limit]
	}
	return s
}

// cursorError is the error of a cursor that names no execution.
func cursorError(id string) error {
	return fmt.Errorf("list after execution %s: %w", id, engine.ErrNotFound)
}

// List returns summaries of the executions in List's order; it filters
// them all.
func (m *Memory) List(ctx context.Context, opts ListOptions) ([]Summary, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	f := listFilter{opts: opts}
	if opts.After != "" {
		x, ok := m.execs[opts.After]
		if !ok {
			return nil, cursorError(opts.After)
		}
		rec, err := decodeExec(opts.After, x.exec)
		if err != nil {
			return nil, err
		}
		f.after = &listPos{timeKey(rec.StartedAt), opts.After}
	}
	var out []Summary
	for id, x := range m.execs {
		h, err := decodeHead(id, x.head)
		if err != nil {
			return nil, err
		}
		rec, err := decodeExec(id, x.exec)
		if err != nil {
			return nil, err
		}
		if s := summary(id, rec, h); f.keep(&s) {
			out = append(out, s)
		}
	}
	return sortListed(out, opts.Limit), nil
}

// fewStatus is the most executions of one status that Bolt's List reads
// whole to list that status; with more, it scans the start-time index
// and skips the executions of other statuses.
const fewStatus = 256

// List returns summaries of the executions in List's order: a backward
// scan of the start-time index (of all executions, or of the machines
// index for one machine), from the cursor or StartedBefore, down to
// StartedAfter, reading only the executions it lists. A status held by
// few executions (fewStatus) is listed from the status index instead.
func (b *Bolt) List(ctx context.Context, opts ListOptions) ([]Summary, error) {
	var out []Summary
	err := b.view(func(x *tx) error {
		var err error
		out, err = x.list(opts)
		return err
	})
	return out, err
}

func (x *tx) list(opts ListOptions) ([]Summary, error) {
	f := listFilter{opts: opts}
	if opts.After != "" {
		xv := x.executions.Get([]byte(opts.After))
		if xv == nil {
			return nil, cursorError(opts.After)
		}
		rec, err := decodeExec(opts.After, xv)
		if err != nil {
			return nil, err
		}
		f.after = &listPos{timeKey(rec.StartedAt), opts.After}
	}
	if opts.Status != "" {
		if ids, few := x.fewWithStatus(opts.Status); few {
			return x.listFew(ids, &f)
		}
	}
	idx, prefix := x.started, []byte(nil)
	if opts.MachineName != "" {
		idx, prefix = x.machines, machinePrefix(opts.MachineName)
	}
	// The scan starts at the last key before end.
	end := binary.BigEndian.AppendUint64(bytes.Clone(prefix), math.MaxUint64)
	if !opts.StartedBefore.IsZero() {
		end = binary.BigEndian.AppendUint64(bytes.Clone(prefix), timeKey(opts.StartedBefore))
	}
	if f.after != nil {
		k := append(bytes.Clone(prefix), binary.BigEndian.AppendUint64(nil, f.after.at)...)
		k = append(append(k, 0), f.after.id...)
		if bytes.Compare(k, end) < 0 {
			end = k
		}
	}
	low, bounded := timeKey(opts.StartedAfter), !opts.StartedAfter.IsZero()
	// One cursor, and one buffer for its keys, check the statuses.
	status, sc := statusKey(opts.Status, ""), x.status.Cursor()
	var out []Summary
	c := idx.Cursor()
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && (opts.Limit <= 0 || len(out) < opts.Limit); k, _ = c.Prev() {
		rest := k[len(prefix):]
		if len(rest) < 9 {
			return nil, fmt.Errorf("bucket %s: malformed key %q", bucketStarted, k)
		}
		if bounded && binary.BigEndian.Uint64(rest) <= low {
			break
		}
		if opts.Status != "" {
			status = append(status[:len(opts.Status)+1], rest[9:]...)
			if k, _ := sc.Seek(status); !bytes.Equal(k, status) {
				continue
			}
		}
		id := string(rest[9:])
		rec, h, err := x.execution(id)
		if err != nil {
			return nil, err
		}
		// The machines index is keyed by a hash of the name.
		if opts.MachineName != "" && rec.MachineName != opts.MachineName {
			continue
		}
		out = append(out, summary(id, rec, h))
	}
	return out, nil
}

// fewWithStatus returns the executions with status s and true when there
// are at most fewStatus of them, else false.
func (x *tx) fewWithStatus(s engine.Status) ([]string, bool) {
	prefix := statusKey(s, "")
	var ids []string
	c := x.status.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(ids) == fewStatus {
			return nil, false
		}
		ids = append(ids, string(k[len(prefix):]))
	}
	return ids, true
}

// listFew lists the executions ids that f keeps.
func (x *tx) listFew(ids []string, f *listFilter) ([]Summary, error) {
	var out []Summary
	for _, id := range ids {
		rec, h, err := x.execution(id)
		if err != nil {
			return nil, err
		}
		if s := summary(id, rec, h); f.keep(&s) {
			out = append(out, s)
		}
	}
	return sortListed(out, f.opts.Limit), nil
}

// machinePrefix is the machines index's prefix of a machine's keys: the
// FNV-1a hash of its name, 8 bytes, so that any name makes a short key
// (List checks the names of what it finds).
func machinePrefix(name string) []byte {
	h := uint64(14695981039346656037)
	for i := range len(name) {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), h)
}

// machineKey is the machines index's key of an execution: its machine's
// prefix, then its start-time index key.
func machineKey(s *Summary) []byte {
	return append(machinePrefix(s.MachineName), timedKey(s.StartedAt, s.ID)...)
}
