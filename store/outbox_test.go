package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestOutboxBoltReopen: pending deliveries (and a claim's lease) survive
// closing and reopening the database file.
func TestOutboxBoltReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	ctx := t.Context()
	t0 := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: t0, Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	c := &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, Outbox: []engine.OutboxEntry{
		{ID: "ev-1", Channel: "hooks", URL: "https://example.com/a", Type: "state.entered", Body: []byte(`{"a":1}`), CreatedAt: t0},
		{ID: "ev-2", Channel: "hooks", URL: "https://example.com/a", Type: "state.exited", Body: []byte(`{"a":2}`), CreatedAt: t0},
	}}
	if err := b.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ds, err := b.ClaimDeliveries(ctx, "server-a", 1, t0, time.Minute); err != nil || len(ds) != 1 {
		t.Fatalf("ClaimDeliveries = %v, %v; want ev-1", ds, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, path)
	ds, err := b.ListDeliveries(ctx, engine.DeliveryFilter{Status: engine.DeliveryPending})
	if err != nil || len(ds) != 2 {
		t.Fatalf("after reopening: %v, %v; want ev-1 and ev-2 pending", ds, err)
	}
	if ds[0].ID != "ev-1" || ds[0].Owner != "server-a" || !ds[0].LeaseUntil.Equal(t0.Add(time.Minute)) || string(ds[1].Body) != `{"a":2}` {
		t.Errorf("after reopening: %+v, want ev-1 leased to server-a and ev-2 as committed", ds)
	}
	// Another server takes over once the lease ran out.
	ds, err = b.ClaimDeliveries(ctx, "server-b", 10, t0.Add(time.Minute), time.Minute)
	if err != nil || len(ds) != 2 || ds[0].Attempts != 2 || ds[1].Attempts != 1 {
		t.Fatalf("claim after reopening = %+v, %v; want ev-1 (attempt 2) and ev-2 (attempt 1)", ds, err)
	}
	if err := b.FinishDelivery(ctx, "ev-1", "server-a", t0, "", time.Time{}, false); !errors.Is(err, engine.ErrDeliveryLease) {
		t.Errorf("the first server's finish = %v, want ErrDeliveryLease", err)
	}
}

// TestOutboxBoltIdleClaim: a claim with nothing to claim or prune writes
// nothing (it reads, and leaves the commit loop alone).
func TestOutboxBoltIdleClaim(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "aslrun.db"))
	before := store.BoltWrites(b)
	for range 10 {
		if ds, err := b.ClaimDeliveries(t.Context(), "a", 10, time.Now(), time.Minute); err != nil || len(ds) != 0 {
			t.Fatalf("ClaimDeliveries = %v, %v; want none", ds, err)
		}
	}
	if got := store.BoltWrites(b) - before; got != 0 {
		t.Errorf("idle claims made %d write transactions, want 0", got)
	}
}

// TestOutboxClosed: every outbox call on a closed store fails with
// ErrClosed.
func TestOutboxClosed(t *testing.T) {
	for name, o := range map[string]interface {
		engine.OutboxStore
		Close() error
	}{"memory": store.NewMemory(), "bolt": openBolt(t, filepath.Join(t.TempDir(), "aslrun.db"))} {
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		calls := map[string]error{}
		_, calls["claim"] = o.ClaimDeliveries(t.Context(), "a", 1, now, time.Minute)
		calls["finish"] = o.FinishDelivery(t.Context(), "x", "a", now, "", time.Time{}, false)
		calls["retry"] = o.RetryDelivery(t.Context(), "x", now)
		_, calls["list"] = o.ListDeliveries(t.Context(), engine.DeliveryFilter{})
		for call, err := range calls {
			if !errors.Is(err, store.ErrClosed) {
				t.Errorf("%s: %s after Close = %v, want ErrClosed", name, call, err)
			}
		}
	}
}

// FuzzCheckFinish: whatever error text a receiver's answer gives, the
// text kept is UTF-8 without NUL, at most MaxDeliveryError bytes, and a
// prefix of the text cleaned.
func FuzzCheckFinish(f *testing.F) {
	f.Add("503 Service Unavailable", false)
	f.Add("bad\x00\xff"+strings.Repeat("é", 2000), true)
	f.Fuzz(func(t *testing.T, errText string, park bool) {
		got, err := store.CheckFinish("ev-1", "a", errText, time.Unix(1, 0), park)
		if errText == "" && park {
			if err == nil {
				t.Fatal("park without an error accepted")
			}
			return
		}
		if err != nil {
			t.Fatalf("CheckFinish(%q) = %v", errText, err)
		}
		clean := strings.ToValidUTF8(strings.ReplaceAll(errText, "\x00", "\uFFFD"), "\uFFFD")
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0) || len(got) > store.MaxDeliveryError || !strings.HasPrefix(clean, got) {
			t.Fatalf("CheckFinish(%q) kept %q", errText, got)
		}
		if len(clean) <= store.MaxDeliveryError && got != clean {
			t.Fatalf("CheckFinish(%q) kept %q, want %q", errText, got, clean)
		}
	})
}

// BenchmarkOutboxCommit measures a durable Bolt commit with no outbox
// entry and with one.
func BenchmarkOutboxCommit(b *testing.B) {
	for _, n := range []int{0, 1} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s, err := store.OpenBolt(filepath.Join(b.TempDir(), "bench.db"), store.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if err := s.Create(ctx, &engine.Execution{ID: "bench", MachineName: "m", StartedAt: time.Now(), Input: map[string]any{}}); err != nil {
				b.Fatal(err)
			}
			seq := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				seq++
				c := &engine.Commit{Execution: "bench", Seq: seq, Status: engine.StatusRunning, LastEvent: seq,
					Events: []engine.Event{{ID: seq, Type: "PassStateEntered", Timestamp: time.Now(), State: "A", Document: map[string]any{"n": float64(seq)}}}}
				for i := range n {
					c.Outbox = append(c.Outbox, engine.OutboxEntry{ID: fmt.Sprintf("ev-%012d-%d", seq, i), Channel: "hooks", URL: "https://example.com/hook",
						Type: "state.entered", Body: []byte(`{"type":"state.entered","execution":"bench","state":"A"}`), CreatedAt: time.Now()})
				}
				if err := s.Commit(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Example_outbox: an execution's commit writes an event to its outbox;
// a server claims it, delivers it and records the outcome.
func Example_outbox() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()
	t0 := time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC)
	if err := s.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: t0, Input: map[string]any{}}); err != nil {
		panic(err)
	}
	err := s.Commit(ctx, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, Outbox: []engine.OutboxEntry{{
		ID: "0195939a-4a00-7000-8000-000000000001", Channel: "ops", URL: "https://hooks.example.com/aslrun",
		Type: "execution.started", Body: []byte(`{"execution":"e1"}`), CreatedAt: t0,
	}}})
	if err != nil {
		panic(err)
	}
	ds, err := s.ClaimDeliveries(ctx, "server-a", 10, t0.Add(time.Second), 30*time.Second)
	if err != nil {
		panic(err)
	}
	for _, d := range ds {
		fmt.Println(d.Type, d.URL, string(d.Body), "attempt", d.Attempts)
		// The receiver answered 503: try again in a minute.
		if err := s.FinishDelivery(ctx, d.ID, "server-a", t0.Add(2*time.Second), "503 Service Unavailable", t0.Add(time.Minute), false); err != nil {
			panic(err)
		}
	}
	pending, err := s.ListDeliveries(ctx, engine.DeliveryFilter{Status: engine.DeliveryPending})
	if err != nil {
		panic(err)
	}
	fmt.Println(pending[0].Status, pending[0].LastError, pending[0].NextAt.Format(time.TimeOnly))
	// Output:
	// execution.started https://hooks.example.com/aslrun {"execution":"e1"} attempt 1
	// PENDING 503 Service Unavailable 15:01:00
}
