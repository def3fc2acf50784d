package store

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// BoltWrites counts a Bolt's write transactions (for tests of package
// store_test).
func BoltWrites(b *Bolt) int64 { return b.batches.Load() }

// TestOutboxFormat7: a database of format 7 (no outbox buckets) is given
// them when opened for writing, its executions left as they were, and
// its commits then write outbox entries; opened read-only, it is refused
// until then.
func TestOutboxFormat7(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	ctx := t.Context()
	t0 := time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC)
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: t0, Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, LastEvent: 1,
		Events: []engine.Event{{ID: 1, Type: "PassStateEntered", Timestamp: t0, State: "A", Document: map[string]any{}}}}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var head []byte
	err = db.Update(func(t *bbolt.Tx) error {
		for _, name := range outboxBuckets {
			if err := t.DeleteBucket(name); err != nil {
				return err
			}
		}
		head = bytes.Clone(t.Bucket(bucketHeads).Get([]byte("e1")))
		return t.Bucket(bucketMeta).Put(versionKey, []byte("7"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBolt(path, BoltOptions{ReadOnly: true}); err == nil {
		t.Error("OpenBolt(format 7, read-only) = nil error, want a refusal")
	}
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(format 7) = %v", err)
	}
	defer b.Close()
	err = b.view(func(x *tx) error {
		meta := x.heads.Tx().Bucket(bucketMeta)
		if v := string(meta.Get(versionKey)); v != strconv.Itoa(formatVersion) {
			t.Errorf("format version after conversion = %s, want %d", v, formatVersion)
		}
		if got := x.heads.Get([]byte("e1")); !bytes.Equal(got, head) {
			t.Error("the conversion rewrote a head of format 7")
		}
		_, err := x.outbox()
		return err
	})
	if err != nil {
		t.Fatalf("after conversion: %v", err)
	}
	if err := b.VerifyHistory(ctx, "e1"); err != nil {
		t.Errorf("VerifyHistory after conversion = %v", err)
	}
	err = b.Commit(ctx, &engine.Commit{Execution: "e1", Seq: 2, Outbox: []engine.OutboxEntry{
		{ID: "ev-1", Channel: "c", URL: "https://example.com", Type: "t", Body: []byte(`{}`), CreatedAt: t0},
	}})
	if err != nil {
		t.Fatalf("commit with an outbox entry after conversion = %v", err)
	}
	if ds, err := b.ListDeliveries(ctx, engine.DeliveryFilter{}); err != nil || len(ds) != 1 {
		t.Errorf("ListDeliveries after conversion = %v, %v; want ev-1", ds, err)
	}
}

// TestOutboxExportLeavesItOut: Export yields no outbox item and is not
// disturbed by the outbox's buckets, and VerifyHistory ignores them.
func TestOutboxExportLeavesItOut(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "aslrun.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	t0 := time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC)
	if err := b.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: t0, Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	err = b.Commit(ctx, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, LastEvent: 1,
		Events: []engine.Event{{ID: 1, Type: "PassStateEntered", Timestamp: t0, State: "A", Document: map[string]any{}}},
		Outbox: []engine.OutboxEntry{{ID: "ev-1", Channel: "c", URL: "https://example.com", Type: "t", Body: []byte(`{}`), CreatedAt: t0}}})
	if err != nil {
		t.Fatal(err)
	}
	var execs int
	err = b.Export(ctx, func(it ExportItem) error {
		if it.Execution != nil {
			execs++
		}
		return nil
	})
	if err != nil || execs != 1 {
		t.Errorf("Export = %v with %d executions, want nil and 1", err, execs)
	}
	if err := b.VerifyHistory(ctx, "e1"); err != nil {
		t.Errorf("VerifyHistory = %v", err)
	}
}
