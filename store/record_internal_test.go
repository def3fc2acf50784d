package store

import (
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// TestBoltLoadsRecordWithoutTrace: an execution record written before
// records had a trace context or a payload limit (format 6 without the
// optional "trace" and "maxPayload" fields) still loads, with neither.
func TestBoltLoadsRecordWithoutTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	e := &engine.Execution{ID: "old", MachineName: "m", StartedAt: time.Unix(1, 0), Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", MaxPayload: 2000}
	if err := b.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := bbolt.Open(path, 0o600, boltOptions(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	old := `{"machineName":"m","input":null,"startedAt":"1970-01-01T00:00:01Z"}`
	err = db.Update(func(t *bbolt.Tx) error {
		return t.Bucket(bucketExecutions).Put([]byte("old"), []byte(old))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if b, err = OpenBolt(path, BoltOptions{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.Load(ctx, "old")
	if err != nil {
		t.Fatalf("Load(old) = %v", err)
	}
	if got.Trace != "" || got.MaxPayload != 0 || got.MachineName != "m" {
		t.Errorf("Load(old) = trace %q, limit %d, machine %q; want no trace, limit 0, machine m", got.Trace, got.MaxPayload, got.MachineName)
	}
}
