package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// listed is an execution of the listing tests, as the test made it.
type listed struct {
	id, machine string
	status      engine.Status
	start       time.Time
}

// makeListed creates executions of three machines and three statuses,
// two started at each minute (so that ties are ordered by id).
func makeListed(t *testing.T, s store.Store, n int) []listed {
	machines := []string{"alpha", "beta", "alpha-2"}
	statuses := []engine.Status{engine.StatusSucceeded, engine.StatusFailed, engine.StatusRunning}
	var out []listed
	for i := range n {
		x := listed{
			id: fmt.Sprintf("x%02d", (i*7)%n), machine: machines[i%3], status: statuses[(i/3)%3],
			start: at(time.Duration(i/2) * time.Minute),
		}
		e := newExecution(t, x.id)
		e.MachineName, e.StartedAt = x.machine, x.start
		create(t, s, e)
		if x.status != engine.StatusRunning {
			commit(t, s, &engine.Commit{Execution: x.id, Seq: 1, Status: x.status})
		}
		out = append(out, x)
	}
	return out
}

// want lists what List(opts) should return, worked out from xs.
func want(xs []listed, opts store.ListOptions) []string {
	xs = slices.Clone(xs)
	slices.SortFunc(xs, func(a, b listed) int {
		if c := b.start.Compare(a.start); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	var out []string
	past := opts.After == ""
	for _, x := range xs {
		switch {
		case !past:
			past = x.id == opts.After
		case opts.Status != "" && x.status != opts.Status,
			opts.MachineName != "" && x.machine != opts.MachineName,
			!opts.StartedAfter.IsZero() && !x.start.After(opts.StartedAfter),
			!opts.StartedBefore.IsZero() && !x.start.Before(opts.StartedBefore):
		default:
			out = append(out, x.id)
		}
	}
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out
}

func list(t *testing.T, s store.Store, opts store.ListOptions) ([]string, []store.Summary) {
	t.Helper()
	got, err := s.List(t.Context(), opts)
	if err != nil {
		t.Fatalf("List(%+v) = %v", opts, err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ID)
	}
	return ids, got
}

func testListFilters(t *testing.T, s store.Store) {
	xs := makeListed(t, s, 18)
	// The oracle, checked by hand once.
	if got, w := want(xs, store.ListOptions{Limit: 4}), []string{"x11", "x04", "x15", "x08"}; !slices.Equal(got, w) {
		t.Fatalf("the test's own order = %q, want %q", got, w)
	}
	after, before := at(2*time.Minute), at(6*time.Minute) // exclusive: starts at 3, 4 and 5 minutes
	cases := []store.ListOptions{
		{},
		{Limit: 5},
		{Status: engine.StatusFailed},
		{MachineName: "alpha"},
		{MachineName: "alpha-2"},
		{MachineName: "alph"},
		{MachineName: "gamma"},
		{StartedAfter: after},
		{StartedBefore: before},
		{StartedAfter: after, StartedBefore: before},
		{StartedAfter: before, StartedBefore: after},
		{StartedAfter: at(3*time.Minute - 1), StartedBefore: at(3*time.Minute + 1)}, // to the nanosecond
		{After: "x06"},
		{After: "x17", Limit: 3},
		{After: "x00"},
		{Status: engine.StatusRunning, MachineName: "beta"},
		{Status: engine.StatusSucceeded, MachineName: "alpha", StartedAfter: at(time.Minute)},
		{MachineName: "alpha", StartedBefore: before, Limit: 2},
		{MachineName: "beta", After: "x10"},
		{Status: engine.StatusFailed, After: "x13"},
		{Status: engine.StatusFailed, MachineName: "alpha-2", StartedAfter: after, StartedBefore: at(time.Hour), After: "x15", Limit: 1},
	}
	for _, opts := range cases {
		got, _ := list(t, s, opts)
		if w := want(xs, opts); !slices.Equal(got, w) {
			t.Errorf("List(%+v) = %q, want %q", opts, got, w)
		}
	}
	_, all := list(t, s, store.ListOptions{})
	if h := hash(t, Doc(t, definition)); len(all) == 0 || all[0].DefinitionHash != h {
		t.Errorf("List()[0] = %+v, want DefinitionHash %s", all, h)
	}
	if _, err := s.List(t.Context(), store.ListOptions{After: "nobody"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("List(After: nobody) = %v, want ErrNotFound", err)
	}
}

// testListPaging pages through 25 executions 7 at a time while others
// start and statuses change between pages: every execution there was
// before the first page is listed once, in order, and so is each one
// started later whose start is past the cursor.
func testListPaging(t *testing.T, s store.Store) {
	xs := makeListed(t, s, 25)
	var running []string // to be set WAITING, one per page
	for _, x := range xs {
		if x.status == engine.StatusRunning {
			running = append(running, x.id)
		}
	}
	n := 0 // executions started between pages
	for _, opts := range []store.ListOptions{{}, {MachineName: "alpha"}, {Status: engine.StatusSucceeded}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			w := want(xs, opts)
			var got []string
			opts.Limit = 7
			for page := 0; ; page++ {
				ids, _ := list(t, s, opts)
				got = append(got, ids...)
				if len(ids) < opts.Limit || page > 10 {
					break
				}
				opts.After = ids[len(ids)-1]
				// A newer execution starts (it comes before the cursor),
				// and one started earlier than all the others (it comes
				// last).
				for _, d := range []time.Duration{time.Hour, -time.Hour} {
					n++
					x := listed{id: fmt.Sprintf("new%02d", n), machine: "alpha", status: engine.StatusRunning, start: at(d + time.Duration(n)*d/time.Hour*time.Minute)}
					if opts.Status != "" {
						x.status = opts.Status
					}
					e := newExecution(t, x.id)
					e.MachineName, e.StartedAt, e.Status = x.machine, x.start, x.status
					create(t, s, e)
					xs = append(xs, x)
					if d < 0 {
						w = append(w, x.id)
					}
				}
				// A status changes, which moves nothing in the order.
				if len(running) > 0 {
					commit(t, s, &engine.Commit{Execution: running[0], Seq: 1, Status: engine.StatusWaiting})
					running = running[1:]
				}
			}
			if !slices.Equal(got, w) {
				t.Errorf("pages of 7 = %q, want %q", got, w)
			}
		})
	}
}
