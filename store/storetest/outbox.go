package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// runOutbox runs the outbox's tests (engine.OutboxStore), each on a
// fresh store; a store that keeps no outbox skips them.
func runOutbox(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		test func(t *testing.T, s store.Store, o engine.OutboxStore)
	}{
		{"WrittenWithCommit", testOutboxWritten},
		{"FailedCommitWritesNone", testOutboxFailedCommit},
		{"RefusedEntries", testOutboxRefused},
		{"ClaimAndFinish", testOutboxClaimFinish},
		{"LeaseExpiry", testOutboxLeaseExpiry},
		{"ParkAndRetry", testOutboxParkRetry},
		{"ListFiltersAndPaging", testOutboxList},
		{"Retention", testOutboxRetention},
		{"BadArguments", testOutboxBadArguments},
		{"ErrorText", testOutboxErrorText},
		{"ConcurrentClaims", testOutboxConcurrentClaims},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			o, ok := s.(engine.OutboxStore)
			if !ok {
				t.Skipf("%T keeps no outbox", s)
			}
			tt.test(t, s, o)
		})
	}
}

// entry returns an outbox entry of execution exec ("" for the commit's)
// created at c.
func entry(id, exec string, c time.Time) engine.OutboxEntry {
	return engine.OutboxEntry{
		ID: id, Execution: exec, Channel: "hooks", URL: "https://example.com/hook", SecretEnv: "HOOK_SECRET", Type: "state.entered",
		Body: []byte(`{"id":"` + id + `", "n": 1.50}`), CreatedAt: c,
	}
}

// deliveries lists deliveries, failing t on error.
func deliveries(t *testing.T, o engine.OutboxStore, f engine.DeliveryFilter) []engine.Delivery {
	t.Helper()
	ds, err := o.ListDeliveries(t.Context(), f)
	if err != nil {
		t.Fatalf("ListDeliveries(%+v) = %v", f, err)
	}
	return ds
}

// ids returns the deliveries' ids.
func ids(ds []engine.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// claim claims, failing t on error.
func claim(t *testing.T, o engine.OutboxStore, owner string, n int, now time.Time, lease time.Duration) []engine.Delivery {
	t.Helper()
	ds, err := o.ClaimDeliveries(t.Context(), owner, n, now, lease)
	if err != nil {
		t.Fatalf("ClaimDeliveries(%s, %d, %v) = %v", owner, n, now, err)
	}
	return ds
}

// finish finishes a delivery, failing t on error.
func finish(t *testing.T, o engine.OutboxStore, id, owner string, now time.Time, errText string, retryAt time.Time, park bool) {
	t.Helper()
	if err := o.FinishDelivery(t.Context(), id, owner, now, errText, retryAt, park); err != nil {
		t.Fatalf("FinishDelivery(%s, %s, %q) = %v", id, owner, errText, err)
	}
}

// delivery returns one delivery by id, failing t when it is not listed.
func delivery(t *testing.T, o engine.OutboxStore, id string) engine.Delivery {
	t.Helper()
	for _, d := range deliveries(t, o, engine.DeliveryFilter{Limit: store.MaxDeliveryLimit}) {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("delivery %s is not listed", id)
	return engine.Delivery{}
}

// withOutbox creates execution id and commits entries with its first
// step.
func withOutbox(t *testing.T, s store.Store, id string, entries ...engine.OutboxEntry) {
	t.Helper()
	create(t, s, newExecution(t, id))
	c := step(t, id, 1)
	c.Outbox = entries
	commit(t, s, c)
}

func testOutboxWritten(t *testing.T, s store.Store, o engine.OutboxStore) {
	if ds := deliveries(t, o, engine.DeliveryFilter{}); len(ds) != 0 {
		t.Fatalf("a new store lists %d deliveries", len(ds))
	}
	e1 := entry("ev-01", "", at(time.Second))
	e2 := entry("ev-02", "e1", at(2*time.Second))
	e2.Body = []byte(`{"exact": 12345678901234567890123, "spaced" : [ 1.0 ]}`)
	withOutbox(t, s, "e1", e1, e2)
	ds := deliveries(t, o, engine.DeliveryFilter{})
	if got := ids(ds); !equalStrings(got, []string{"ev-01", "ev-02"}) {
		t.Fatalf("deliveries = %q, want ev-01, ev-02", got)
	}
	for i, want := range []engine.OutboxEntry{e1, e2} {
		d := ds[i]
		if d.Execution != "e1" || d.Channel != want.Channel || d.URL != want.URL || d.SecretEnv != want.SecretEnv || d.Type != want.Type || string(d.Body) != string(want.Body) || !d.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("delivery %d = %+v, want the entry %+v of execution e1", i, d.OutboxEntry, want)
		}
		if d.Status != engine.DeliveryPending || d.Attempts != 0 || d.LastError != "" || !d.NextAt.Equal(want.CreatedAt) || !d.DeliveredAt.IsZero() || d.Owner != "" || !d.LeaseUntil.IsZero() {
			t.Errorf("delivery %s = %+v, want pending, due at its creation, never attempted", d.ID, d)
		}
	}
	// What a caller does with a listed body is not the store's.
	ds[0].Body[0] = 'X'
	if d := delivery(t, o, "ev-01"); string(d.Body) != string(e1.Body) {
		t.Errorf("body after the caller changed its copy = %s, want %s", d.Body, e1.Body)
	}
	// A commit without entries adds none; the next one adds its own.
	commit(t, s, step(t, "e1", 2))
	c := step(t, "e1", 3)
	c.Outbox = []engine.OutboxEntry{entry("ev-03", "", at(3*time.Second))}
	commit(t, s, c)
	if got := ids(deliveries(t, o, engine.DeliveryFilter{})); !equalStrings(got, []string{"ev-01", "ev-02", "ev-03"}) {
		t.Errorf("deliveries = %q, want ev-01 to ev-03", got)
	}
}

func testOutboxFailedCommit(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-01", "", t0))
	before := load(t, s, "e1")
	for _, tc := range []struct {
		name string
		c    *engine.Commit
		is   error
	}{
		{"unknown execution", &engine.Commit{Execution: "nobody", Seq: 1, Outbox: []engine.OutboxEntry{entry("ev-02", "", t0)}}, engine.ErrNotFound},
		{"a document that is not JSON", func() *engine.Commit {
			c := step(t, "e1", 2)
			c.Events = []engine.Event{{ID: 13, Type: "PassStateExited", Timestamp: t0, Document: make(chan int)}}
			c.Outbox = []engine.OutboxEntry{entry("ev-02", "", t0)}
			return c
		}(), nil},
		{"an entry id already stored", func() *engine.Commit {
			c := step(t, "e1", 2)
			c.Events = events(t, 1, 2, t0)
			c.Outbox = []engine.OutboxEntry{entry("ev-02", "", t0), entry("ev-01", "", t0)}
			return c
		}(), engine.ErrExists},
	} {
		err := s.Commit(t.Context(), tc.c)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Commit = %v, want an error (%v)", tc.name, err, tc.is)
		}
	}
	if got := ids(deliveries(t, o, engine.DeliveryFilter{})); !equalStrings(got, []string{"ev-01"}) {
		t.Errorf("deliveries after failed commits = %q, want ev-01 alone", got)
	}
	checkExecution(t, load(t, s, "e1"), before)
	if h := history(t, s, "e1"); len(h) != 0 {
		t.Errorf("history after failed commits has %d events, want 0", len(h))
	}
}

func testOutboxRefused(t *testing.T, s store.Store, o engine.OutboxStore) {
	create(t, s, newExecution(t, "e1"))
	big := entry("ev-big", "", t0)
	big.Body = []byte(`"` + strings.Repeat("x", store.MaxOutboxBody-1) + `"`)
	if len(big.Body) <= store.MaxOutboxBody {
		t.Fatalf("the big body has %d bytes", len(big.Body))
	}
	change := func(f func(*engine.OutboxEntry)) engine.OutboxEntry {
		e := entry("ev-x", "", t0)
		f(&e)
		return e
	}
	for _, tc := range []struct {
		name    string
		entries []engine.OutboxEntry
	}{
		{"body over 256 KiB", []engine.OutboxEntry{big}},
		{"body not JSON", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.Body = []byte(`{"a":`) })}},
		{"empty body", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.Body = nil })}},
		{"empty id", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.ID = "" })}},
		{"id with NUL", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.ID = "ev\x00x" })}},
		{"id not UTF-8", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.ID = "ev\xff" })}},
		{"id too long", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.ID = strings.Repeat("i", 1025) })}},
		{"another execution", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.Execution = "e2" })}},
		{"empty channel", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.Channel = "" })}},
		{"empty url", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.URL = "" })}},
		{"empty type", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.Type = "" })}},
		{"type with NUL", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.Type = "a\x00" })}},
		{"zero createdAt", []engine.OutboxEntry{change(func(e *engine.OutboxEntry) { e.CreatedAt = time.Time{} })}},
		{"two entries of one id", []engine.OutboxEntry{entry("ev-x", "", t0), entry("ev-x", "", t0)}},
		{"a good entry and a bad one", []engine.OutboxEntry{entry("ev-good", "", t0), change(func(e *engine.OutboxEntry) { e.Channel = "" })}},
	} {
		c := step(t, "e1", 1)
		c.Outbox = tc.entries
		if err := s.Commit(t.Context(), c); !errors.Is(err, store.ErrOutboxEntry) {
			t.Errorf("%s: Commit = %v, want ErrOutboxEntry", tc.name, err)
		}
	}
	if ds := deliveries(t, o, engine.DeliveryFilter{}); len(ds) != 0 {
		t.Errorf("refused commits wrote %q", ids(ds))
	}
	if e := load(t, s, "e1"); e.Seq != 0 {
		t.Errorf("Seq after refused commits = %d, want 0", e.Seq)
	}
	// A body of exactly the bound is taken.
	ok := entry("ev-max", "", t0)
	ok.Body = []byte(`"` + strings.Repeat("x", store.MaxOutboxBody-2) + `"`)
	c := step(t, "e1", 1)
	c.Outbox = []engine.OutboxEntry{ok}
	commit(t, s, c)
	if d := delivery(t, o, "ev-max"); len(d.Body) != store.MaxOutboxBody {
		t.Errorf("body of %d bytes, want %d", len(d.Body), store.MaxOutboxBody)
	}
}

func testOutboxClaimFinish(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-03", "", at(time.Second)), entry("ev-01", "", at(time.Second)), entry("ev-02", "", at(time.Second)),
		entry("ev-04", "", at(time.Hour))) // not due before an hour
	if ds := claim(t, o, "a", 10, t0, time.Minute); len(ds) != 0 {
		t.Fatalf("claim before the entries are due = %q, want none", ids(ds))
	}
	now := at(time.Minute)
	ds := claim(t, o, "a", 2, now, time.Minute)
	if got := ids(ds); !equalStrings(got, []string{"ev-01", "ev-02"}) {
		t.Fatalf("claim of 2 = %q, want the oldest by id, ev-01, ev-02", got)
	}
	for _, d := range ds {
		if d.Owner != "a" || !d.LeaseUntil.Equal(now.Add(time.Minute)) || d.Attempts != 1 || d.Status != engine.DeliveryPending || string(d.Body) == "" {
			t.Errorf("claimed %+v, want owner a until %v, attempt 1", d, now.Add(time.Minute))
		}
	}
	if got := ids(claim(t, o, "b", 10, now, time.Hour)); !equalStrings(got, []string{"ev-03"}) {
		t.Fatalf("second claim = %q, want ev-03 (the others are leased, ev-04 not due)", got)
	}
	if got := ids(claim(t, o, "c", 10, now, time.Minute)); len(got) != 0 {
		t.Fatalf("third claim = %q, want none", got)
	}

	finish(t, o, "ev-01", "a", at(2*time.Minute), "", time.Time{}, false)
	d := delivery(t, o, "ev-01")
	if d.Status != engine.DeliveryDelivered || !d.DeliveredAt.Equal(at(2*time.Minute)) || d.Owner != "" || !d.LeaseUntil.IsZero() || d.Attempts != 1 {
		t.Errorf("after delivery: %+v, want DELIVERED at %v, no lease", d, at(2*time.Minute))
	}
	for _, tc := range []struct {
		name, id, owner string
		is              error
	}{
		{"finished twice", "ev-01", "a", engine.ErrDeliveryLease},
		{"another owner", "ev-02", "b", engine.ErrDeliveryLease},
		{"never claimed", "ev-04", "a", engine.ErrDeliveryLease},
		{"unknown id", "ev-99", "a", engine.ErrNotFound},
	} {
		if err := o.FinishDelivery(t.Context(), tc.id, tc.owner, now, "", time.Time{}, false); !errors.Is(err, tc.is) {
			t.Errorf("%s: FinishDelivery(%s, %s) = %v, want %v", tc.name, tc.id, tc.owner, err, tc.is)
		}
	}

	// A failure: pending again at retryAt, with its error.
	retryAt := at(10 * time.Minute)
	finish(t, o, "ev-02", "a", at(2*time.Minute), "503 Service Unavailable", retryAt, false)
	d = delivery(t, o, "ev-02")
	if d.Status != engine.DeliveryPending || d.LastError != "503 Service Unavailable" || !d.NextAt.Equal(retryAt) || d.Owner != "" || d.Attempts != 1 {
		t.Errorf("after a failure: %+v, want PENDING at %v with its error", d, retryAt)
	}
	if got := ids(claim(t, o, "a", 10, retryAt.Add(-time.Nanosecond), time.Minute)); len(got) != 0 {
		t.Errorf("claim before retryAt = %q, want none", got)
	}
	ds = claim(t, o, "b", 1, retryAt, time.Minute)
	if len(ds) != 1 || ds[0].ID != "ev-02" || ds[0].Attempts != 2 || ds[0].LastError != "503 Service Unavailable" {
		t.Fatalf("claim at retryAt = %+v, want ev-02 at attempt 2", ds)
	}
	finish(t, o, "ev-02", "b", retryAt, "", time.Time{}, false)
	if d := delivery(t, o, "ev-02"); d.Status != engine.DeliveryDelivered || d.LastError != "" || d.Attempts != 2 {
		t.Errorf("delivered on the second attempt: %+v, want DELIVERED, no error, 2 attempts", d)
	}
}

func testOutboxLeaseExpiry(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-01", "", t0), entry("ev-02", "", t0))
	if got := ids(claim(t, o, "a", 2, t0, time.Minute)); len(got) != 2 {
		t.Fatalf("claim = %q, want both", got)
	}
	if got := ids(claim(t, o, "b", 2, at(time.Minute-time.Nanosecond), time.Minute)); len(got) != 0 {
		t.Fatalf("claim under a's leases = %q, want none", got)
	}
	// a's lease on ev-01 ran out, no one took it: a may still finish it.
	finish(t, o, "ev-01", "a", at(90*time.Second), "", time.Time{}, false)
	// At the lease's end, b takes ev-02 over; a's finish is refused.
	ds := claim(t, o, "b", 2, at(time.Minute), time.Minute)
	if len(ds) != 1 || ds[0].ID != "ev-02" || ds[0].Owner != "b" || ds[0].Attempts != 2 || !ds[0].LeaseUntil.Equal(at(2*time.Minute)) {
		t.Fatalf("claim after a's lease ran out = %+v, want ev-02 leased to b at attempt 2", ds)
	}
	if err := o.FinishDelivery(t.Context(), "ev-02", "a", at(time.Minute), "", time.Time{}, false); !errors.Is(err, engine.ErrDeliveryLease) {
		t.Errorf("a finishing ev-02 after b took it = %v, want ErrDeliveryLease", err)
	}
	finish(t, o, "ev-02", "b", at(time.Minute), "", time.Time{}, false)
	// The same owner may claim again once its own lease ran out.
	withOutbox(t, s, "e2", entry("ev-03", "", t0))
	claim(t, o, "a", 1, t0, time.Minute)
	if ds := claim(t, o, "a", 1, at(time.Minute), time.Minute); len(ds) != 1 || ds[0].Attempts != 2 {
		t.Errorf("a claiming its own expired lease = %+v, want ev-03 at attempt 2", ds)
	}
}

func testOutboxParkRetry(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-01", "", t0), entry("ev-02", "", t0))
	claim(t, o, "a", 2, t0, 2*time.Hour)
	finish(t, o, "ev-01", "a", at(time.Second), "connection refused", time.Time{}, true)
	d := delivery(t, o, "ev-01")
	if d.Status != engine.DeliveryFailed || d.LastError != "connection refused" || d.Owner != "" || !d.LeaseUntil.IsZero() {
		t.Errorf("parked: %+v, want FAILED with its error and no lease", d)
	}
	if got := ids(claim(t, o, "a", 10, at(time.Hour), time.Minute)); len(got) != 0 {
		t.Errorf("claim with a parked delivery = %q, want none", got)
	}
	if err := o.RetryDelivery(t.Context(), "ev-01", at(time.Hour)); err != nil {
		t.Fatalf("RetryDelivery = %v", err)
	}
	d = delivery(t, o, "ev-01")
	if d.Status != engine.DeliveryPending || !d.NextAt.Equal(at(time.Hour)) || d.Attempts != 1 {
		t.Errorf("retried: %+v, want PENDING due at %v, its attempts kept", d, at(time.Hour))
	}
	if ds := claim(t, o, "b", 10, at(time.Hour), time.Minute); len(ds) != 1 || ds[0].ID != "ev-01" || ds[0].Attempts != 2 {
		t.Errorf("claim after the retry = %+v, want ev-01 at attempt 2", ds)
	}
	// Only a parked delivery is retried.
	for _, id := range []string{"ev-01", "ev-02"} {
		if err := o.RetryDelivery(t.Context(), id, at(time.Hour)); !errors.Is(err, engine.ErrNotParked) {
			t.Errorf("RetryDelivery(%s), pending = %v, want an error naming its status", id, err)
		}
	}
	finish(t, o, "ev-01", "b", at(time.Hour), "", time.Time{}, false)
	if err := o.RetryDelivery(t.Context(), "ev-01", at(time.Hour)); !errors.Is(err, engine.ErrNotParked) {
		t.Errorf("RetryDelivery of a delivered one = %v, want an error naming its status", err)
	}
	if err := o.RetryDelivery(t.Context(), "ev-99", at(time.Hour)); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("RetryDelivery(unknown) = %v, want ErrNotFound", err)
	}
}

func testOutboxList(t *testing.T, s store.Store, o engine.OutboxStore) {
	var e1, e2 []engine.OutboxEntry
	for i := range 6 {
		e1 = append(e1, entry(fmt.Sprintf("ev-%02d", 2*i), "", t0))
		e2 = append(e2, entry(fmt.Sprintf("ev-%02d", 2*i+1), "", t0))
	}
	withOutbox(t, s, "e1", e1...)
	withOutbox(t, s, "e2", e2...)
	// ev-00 and ev-01 delivered, ev-02 and ev-03 parked, the rest pending.
	claim(t, o, "a", 4, t0, time.Minute)
	finish(t, o, "ev-00", "a", t0, "", time.Time{}, false)
	finish(t, o, "ev-01", "a", t0, "", time.Time{}, false)
	finish(t, o, "ev-02", "a", t0, "gone", time.Time{}, true)
	finish(t, o, "ev-03", "a", t0, "gone", time.Time{}, true)
	for _, tc := range []struct {
		f    engine.DeliveryFilter
		want []string
	}{
		{engine.DeliveryFilter{}, []string{"ev-00", "ev-01", "ev-02", "ev-03", "ev-04", "ev-05", "ev-06", "ev-07", "ev-08", "ev-09", "ev-10", "ev-11"}},
		{engine.DeliveryFilter{Status: engine.DeliveryDelivered}, []string{"ev-00", "ev-01"}},
		{engine.DeliveryFilter{Status: engine.DeliveryFailed}, []string{"ev-02", "ev-03"}},
		{engine.DeliveryFilter{Status: engine.DeliveryPending, Limit: 3}, []string{"ev-04", "ev-05", "ev-06"}},
		{engine.DeliveryFilter{Status: engine.DeliveryPending, After: "ev-06", Limit: 3}, []string{"ev-07", "ev-08", "ev-09"}},
		{engine.DeliveryFilter{Status: engine.DeliveryPending, After: "ev-09", Limit: 3}, []string{"ev-10", "ev-11"}},
		{engine.DeliveryFilter{Execution: "e2"}, []string{"ev-01", "ev-03", "ev-05", "ev-07", "ev-09", "ev-11"}},
		{engine.DeliveryFilter{Execution: "e2", After: "ev-03", Limit: 2}, []string{"ev-05", "ev-07"}},
		{engine.DeliveryFilter{Execution: "e2", After: "ev-04", Limit: 2}, []string{"ev-05", "ev-07"}},
		{engine.DeliveryFilter{Execution: "e1", Status: engine.DeliveryFailed}, []string{"ev-02"}},
		{engine.DeliveryFilter{Execution: "e1", Status: engine.DeliveryPending, After: "ev-06"}, []string{"ev-08", "ev-10"}},
		{engine.DeliveryFilter{Execution: "e3"}, nil},
		{engine.DeliveryFilter{After: "ev-11"}, nil},
		{engine.DeliveryFilter{After: "a"}, []string{"ev-00", "ev-01", "ev-02", "ev-03", "ev-04", "ev-05", "ev-06", "ev-07", "ev-08", "ev-09", "ev-10", "ev-11"}},
		{engine.DeliveryFilter{Limit: 1, After: "ev-00"}, []string{"ev-01"}},
	} {
		if got := ids(deliveries(t, o, tc.f)); !equalStrings(got, tc.want) {
			t.Errorf("ListDeliveries(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	for _, f := range []engine.DeliveryFilter{
		{Status: "SENT"}, {Status: "pending"}, {Limit: -1}, {Limit: store.MaxDeliveryLimit + 1},
	} {
		if ds, err := o.ListDeliveries(t.Context(), f); err == nil {
			t.Errorf("ListDeliveries(%+v) = %q, nil; want an error", f, ids(ds))
		}
	}
}

func testOutboxRetention(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-01", "", t0), entry("ev-02", "", t0), entry("ev-03", "", t0), entry("ev-04", "", t0), entry("ev-05", "", t0))
	claim(t, o, "a", 5, t0, time.Hour)
	finish(t, o, "ev-01", "a", t0, "", time.Time{}, false)
	finish(t, o, "ev-02", "a", at(time.Minute), "", time.Time{}, false)
	finish(t, o, "ev-03", "a", t0, "down", time.Time{}, true)
	finish(t, o, "ev-04", "a", t0, "down", at(30*24*time.Hour), false)
	keep := store.DeliveredRetention
	// Just before ev-01 is DeliveredRetention old, everything is kept.
	if err := o.RetryDelivery(t.Context(), "ev-03", at(keep-time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	claim(t, o, "a", 1, at(keep-time.Nanosecond), time.Hour) // ev-03 again
	finish(t, o, "ev-03", "a", at(keep-time.Nanosecond), "down", time.Time{}, true)
	if got := ids(deliveries(t, o, engine.DeliveryFilter{})); !equalStrings(got, []string{"ev-01", "ev-02", "ev-03", "ev-04", "ev-05"}) {
		t.Fatalf("before the retention ran out: %q, want all five", got)
	}
	// A finish once ev-01 is that old prunes it, not ev-02 (a minute
	// younger), and never the pending or parked ones.
	finish(t, o, "ev-05", "a", at(keep), "", time.Time{}, false)
	if got := ids(deliveries(t, o, engine.DeliveryFilter{})); !equalStrings(got, []string{"ev-02", "ev-03", "ev-04", "ev-05"}) {
		t.Errorf("after the retention of ev-01: %q, want ev-02 to ev-05", got)
	}
	// A claim that writes prunes too; a month on, the delivered ones are
	// gone and the parked and pending ones stay.
	later := at(31 * 24 * time.Hour)
	if ds := claim(t, o, "b", 5, later, time.Hour); !equalStrings(ids(ds), []string{"ev-04"}) {
		t.Errorf("claim a month on = %q, want ev-04", ids(ds))
	}
	if got := ids(deliveries(t, o, engine.DeliveryFilter{})); !equalStrings(got, []string{"ev-03", "ev-04"}) {
		t.Errorf("a month on: %q, want ev-03 (parked) and ev-04 (pending)", got)
	}
}

func testOutboxBadArguments(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-01", "", t0))
	for _, tc := range []struct {
		owner string
		n     int
		lease time.Duration
	}{{"", 1, time.Minute}, {"a\x00", 1, time.Minute}, {"a", 0, time.Minute}, {"a", -1, time.Minute}, {"a", 1, 0}, {"a", 1, -time.Second}} {
		if ds, err := o.ClaimDeliveries(t.Context(), tc.owner, tc.n, t0, tc.lease); err == nil {
			t.Errorf("ClaimDeliveries(%q, %d, %v) = %q, nil; want an error", tc.owner, tc.n, tc.lease, ids(ds))
		}
	}
	claim(t, o, "a", 1, t0, time.Minute)
	for _, tc := range []struct {
		name, owner, errText string
		retryAt              time.Time
		park                 bool
	}{
		{"no owner", "", "", time.Time{}, false},
		{"parking a success", "a", "", time.Time{}, true},
		{"a failure without retryAt", "a", "500", time.Time{}, false},
	} {
		if err := o.FinishDelivery(t.Context(), "ev-01", tc.owner, t0, tc.errText, tc.retryAt, tc.park); err == nil {
			t.Errorf("%s: FinishDelivery = nil, want an error", tc.name)
		}
	}
	if d := delivery(t, o, "ev-01"); d.Owner != "a" || d.Status != engine.DeliveryPending {
		t.Errorf("after refused finishes: %+v, want it still leased to a", d)
	}
}

func testOutboxErrorText(t *testing.T, s store.Store, o engine.OutboxStore) {
	withOutbox(t, s, "e1", entry("ev-01", "", t0))
	claim(t, o, "a", 1, t0, time.Minute)
	long := "bad\x00\xff " + strings.Repeat("é", store.MaxDeliveryError)
	finish(t, o, "ev-01", "a", t0, long, at(time.Minute), false)
	got := delivery(t, o, "ev-01").LastError
	if len(got) > store.MaxDeliveryError || !strings.HasPrefix(got, "bad\uFFFD\uFFFD é") || strings.ContainsRune(got, 0) || !strings.HasSuffix(got, "é") {
		t.Errorf("LastError = %.40q… (%d bytes), want it cleaned and cut to at most %d bytes at a character", got, len(got), store.MaxDeliveryError)
	}
}

func testOutboxConcurrentClaims(t *testing.T, s store.Store, o engine.OutboxStore) {
	const n = 120
	var es []engine.OutboxEntry
	for i := range n {
		es = append(es, entry(fmt.Sprintf("ev-%03d", i), "", t0))
	}
	withOutbox(t, s, "e1", es...)
	var (
		mu     sync.Mutex
		got    = make(map[string]string)
		dupes  []string
		failed []error
		wg     sync.WaitGroup
	)
	for w := range 6 {
		owner := fmt.Sprintf("server-%d", w)
		wg.Go(func() {
			for {
				ds, err := o.ClaimDeliveries(t.Context(), owner, 4, at(time.Second), time.Hour)
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if prev, ok := got[d.ID]; ok {
						dupes = append(dupes, fmt.Sprintf("%s by %s and %s", d.ID, prev, owner))
					}
					got[d.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("claims failed: %v", failed)
	}
	if len(dupes) > 0 {
		t.Errorf("claimed twice: %q", dupes)
	}
	if len(got) != n {
		t.Errorf("claimed %d deliveries, want %d", len(got), n)
	}
	for _, d := range deliveries(t, o, engine.DeliveryFilter{Limit: store.MaxDeliveryLimit}) {
		if d.Attempts != 1 || d.Owner != got[d.ID] {
			t.Errorf("%s: attempts %d, owner %q; want 1 attempt by %q", d.ID, d.Attempts, d.Owner, got[d.ID])
		}
	}
	owners := make(map[string]bool)
	for _, o := range got {
		owners[o] = true
	}
	t.Logf("%d deliveries claimed by %d servers", len(got), len(owners))
}
