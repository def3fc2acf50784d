package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/aslrun/aslrun/api"
)

// Bounds of map-runs --follow.
const (
	// minFollowEvery is the shortest --every.
	minFollowEvery = 100 * time.Millisecond
	// barWidth is the width of a map run's bar on a terminal.
	barWidth = 24
)

// mapRunRate follows how fast a map run's children end, from the first
// time it was read running.
type mapRunRate struct {
	since time.Time
	done  int
}

// mapRunsFollower prints map runs' progress as they move: on a terminal,
// one line per map run (a bar, counts, rate and an estimated end)
// rewritten in place; elsewhere, a plain line per map run whenever its
// counts changed.
type mapRunsFollower struct {
	w      io.Writer
	styled bool
	now    func() time.Time
	rates  map[string]*mapRunRate
	// last is what was printed of each map run (plain), and shown how
	// many lines the terminal shows (styled).
	last  map[string]string
	shown int
	// width is the terminal's (0: ask it).
	width int
}

// newMapRunsFollower returns a follower printing to w.
func newMapRunsFollower(w io.Writer) *mapRunsFollower {
	f, ok := w.(*os.File)
	styled := ok && term.IsTerminal(int(f.Fd()))
	return &mapRunsFollower{w: w, styled: styled, now: time.Now, rates: make(map[string]*mapRunRate), last: make(map[string]string)}
}

// ended reports whether every map run has ended.
func ended(runs []mapRunView) bool {
	for _, v := range runs {
		if v.run.Status == "RUNNING" {
			return false
		}
	}
	return true
}

// print shows runs as they are now.
func (f *mapRunsFollower) print(runs []mapRunView) {
	now := f.now()
	lines := make([]string, 0, len(runs))
	for _, v := range runs {
		lines = append(lines, f.line(v.run, now))
	}
	if !f.styled {
		for i, v := range runs {
			if f.last[v.run.ID] != lines[i] {
				f.last[v.run.ID] = lines[i]
				fmt.Fprintln(f.w, lines[i])
			}
		}
		return
	}
	if f.shown > 0 {
		fmt.Fprintf(f.w, "\x1b[%dA", f.shown)
	}
	width := f.width
	if width == 0 {
		width = termWidth(f.w)
	}
	width--
	for _, l := range lines {
		fmt.Fprintf(f.w, "\r\x1b[K%s\n", clip(l, width))
	}
	f.shown = len(lines)
}

// line is one map run's line: its id and status, a bar on a terminal,
// its counts, and while it runs how fast its children end and when it
// should be done.
func (f *mapRunsFollower) line(r api.MapRun, now time.Time) string {
	done := r.Succeeded + r.Failed + r.Aborted
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ", termSafe(r.ID), r.Status)
	if f.styled {
		b.WriteString(bar(done, r.Total, barWidth) + " ")
	}
	fmt.Fprintf(&b, "%d/%d done", done, r.Total)
	if r.Total > 0 {
		fmt.Fprintf(&b, " (%d%%)", done*100/r.Total)
	}
	if r.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", r.Failed)
	}
	if r.Aborted > 0 {
		fmt.Fprintf(&b, ", %d aborted", r.Aborted)
	}
	if r.Status != "RUNNING" {
		return b.String()
	}
	rate := f.rates[r.ID]
	if rate == nil || done < rate.done {
		f.rates[r.ID] = &mapRunRate{since: now, done: done}
		return b.String()
	}
	if elapsed := now.Sub(rate.since).Seconds(); elapsed > 0 && done > rate.done {
		perSecond := float64(done-rate.done) / elapsed
		fmt.Fprintf(&b, ", %s/s", formatRate(perSecond))
		if left := r.Total - done; left > 0 {
			eta := time.Duration(float64(left) / perSecond * float64(time.Second))
			fmt.Fprintf(&b, ", about %s left", eta.Round(time.Second))
		}
	}
	return b.String()
}

// bar draws done of total in n cells.
func bar(done, total, n int) string {
	full := 0
	if total > 0 {
		full = min(n, done*n/total)
	}
	return "[" + strings.Repeat("█", full) + strings.Repeat("·", n-full) + "]"
}

// formatRate writes a rate with the digits that matter.
func formatRate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// followMapRuns prints the map runs fetch reads every interval until they
// have all ended (or ctx ends), then the table once more.
func followMapRuns(ctx context.Context, w io.Writer, every time.Duration, fetch func() ([]mapRunView, error)) ([]mapRunView, error) {
	f := newMapRunsFollower(w)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		runs, err := fetch()
		if err != nil {
			return nil, err
		}
		f.print(runs)
		if len(runs) > 0 && ended(runs) {
			return runs, nil
		}
		select {
		case <-ctx.Done():
			if err := interrupted(ctx, ""); err != nil {
				return nil, err
			}
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
