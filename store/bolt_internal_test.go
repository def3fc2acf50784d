package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

func TestGuard(t *testing.T) {
	sentinel := errors.New("plain")
	tests := []struct {
		name    string
		f       func() error
		corrupt bool
		want    string
	}{
		{"returns nil", func() error { return nil }, false, ""},
		{"returns an error", func() error { return sentinel }, false, "plain"},
		{"panics", func() error { panic("page 7 already freed") }, true, "database db is corrupt: page 7 already freed"},
		{"writes to a nil map", func() error {
			put := func(m map[string]int) { m["x"] = 1 }
			put(nil)
			return nil
		}, true, "database db is corrupt: assignment to entry in nil map"},
		{"reads unmapped memory", func() error {
			// Memory that was a map of a file: a fault, as when bbolt reads
			// past the end of a truncated database.
			data, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
			if err != nil {
				return err
			}
			p := &data[100]
			if err := syscall.Munmap(data); err != nil {
				return err
			}
			return fmt.Errorf("read %d", *p)
		}, true, "database db is corrupt: runtime error: invalid memory address or nil pointer dereference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := guard("db", tt.f)
			if got := errors.Is(err, ErrDatabaseCorrupt); got != tt.corrupt {
				t.Errorf("guard() = %v, wraps ErrDatabaseCorrupt: %t, want %t", err, got, tt.corrupt)
			}
			if got := fmt.Sprint(err); tt.want != "" && got != tt.want {
				t.Errorf("guard() = %q, want %q", got, tt.want)
			}
			if err == nil && tt.want != "" {
				t.Errorf("guard() = nil, want %q", tt.want)
			}
		})
	}
}

// TestBoltMigratesFormat1 writes executions, rewrites the database as
// format 1 kept it (each event under "id \x00 n" in bucket history, no
// history records) and opens it again: it is converted, and reads as it
// did.
func TestBoltMigratesFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		if err := b.Create(ctx, &engine.Execution{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 3; seq++ {
		for i, id := range ids[:2] { // c has no history
			doc := map[string]any{"id": id, "seq": fmt.Sprint(seq)}
			err := b.Commit(ctx, &engine.Commit{Execution: id, Seq: seq, Status: engine.StatusRunning, Events: []engine.Event{
				{ID: 2*seq - 1, Type: "TaskStateEntered", Timestamp: time.Unix(int64(i), seq), Input: doc, Document: doc},
				{ID: 2 * seq, Type: "TaskStateExited", Timestamp: time.Unix(int64(i), seq+1), Output: doc, Document: doc},
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// A rollback, so that some events are superseded.
	if err := b.Commit(ctx, &engine.Commit{Execution: "a", Seq: 4, Rollback: &engine.Rollback{ToEvent: 3}}); err != nil {
		t.Fatal(err)
	}
	want := make(map[string][]engine.Event)
	for _, id := range ids {
		if want[id], err = b.History(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := bbolt.Open(path, 0o600, boltOptions(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(t *bbolt.Tx) error {
		x, err := bucketsOf(t)
		if err != nil {
			return err
		}
		old, err := t.CreateBucket(bucketHistoryV1)
		if err != nil {
			return err
		}
		for _, id := range ids {
			h, err := x.head(id)
			if err != nil {
				return err
			}
			values, err := v1Values(x, id, h)
			if err != nil {
				return err
			}
			for i, v := range values {
				if err := old.Put(binaryKey(id, int64(i+1)), v); err != nil {
					return err
				}
			}
			h.LastRecord = 0
			if err := x.heads.Put([]byte(id), encodeHeadJSON(h)); err != nil {
				return err
			}
		}
		if err := t.DeleteBucket(bucketEvents); err != nil {
			return err
		}
		return t.Bucket(bucketMeta).Put(versionKey, []byte("1"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(format 1) = %v", err)
	}
	defer b.Close()
	for _, id := range ids {
		got, err := b.History(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want[id]) {
			t.Errorf("History(%s) after conversion = %+v, %v, want %+v", id, got, err, want[id])
		}
		if err := b.VerifyHistory(ctx, id); err != nil {
			t.Errorf("VerifyHistory(%s) after conversion = %v", id, err)
		}
	}
	// The converted histories go on.
	err = b.Commit(ctx, &engine.Commit{Execution: "b", Seq: 4, Events: []engine.Event{{ID: 7, Type: "TaskStateEntered", Timestamp: time.Unix(9, 9)}}})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := b.History(ctx, "b"); err != nil || len(h) != 7 {
		t.Errorf("History(b) after a commit = %d events, %v, want 7", len(h), err)
	}
	if err := b.VerifyHistory(ctx, "b"); err != nil {
		t.Errorf("VerifyHistory(b) after a commit = %v", err)
	}
	err = b.view(func(x *tx) error {
		if version := string(x.heads.Tx().Bucket(bucketMeta).Get(versionKey)); version != fmt.Sprint(formatVersion) {
			return fmt.Errorf("format version %s", version)
		}
		if x.heads.Tx().Bucket(bucketHistoryV1) != nil {
			return fmt.Errorf("bucket %s is still there", bucketHistoryV1)
		}
		return nil
	})
	if err != nil {
		t.Errorf("after conversion: %v, want format %d without bucket %s", err, formatVersion, bucketHistoryV1)
	}
}

// binaryKey is format 1's key of an execution's n-th event.
func binaryKey(id string, n int64) []byte {
	return append(idKey(id, ""), recordKey(uint64(n))...)
}

// TestCommitBatchRejects hands one batch requests that fail before they
// write (an unknown execution, a taken id) among requests that succeed:
// the failing ones get their errors, the others are committed.
func TestCommitBatchRejects(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "aslrun.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if err := b.Create(ctx, &engine.Execution{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	// request makes the request of a commit (or a create, when c is nil,
	// of execution id).
	request := func(id string, c *engine.Commit) *writeReq {
		r := &writeReq{ctx: context.Background(), done: make(chan error, 1)}
		if c == nil {
			ce, err := newExecution(&engine.Execution{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			r.apply = func(x *tx) error { return x.create(ce) }
			return r
		}
		p, err := prepareCommit(c, &b.codecs, b.codec, &b.docs)
		if err != nil {
			t.Fatal(err)
		}
		r.apply = func(x *tx) error { return x.apply(p) }
		return r
	}
	ev := func(id int64) []engine.Event { return []engine.Event{{ID: id, Type: "E", Timestamp: time.Unix(id, 0)}} }
	batch := []*writeReq{
		request("a", &engine.Commit{Execution: "a", Seq: 1, Events: ev(1)}),
		request("", &engine.Commit{Execution: "nobody", Seq: 1, Events: ev(1)}),
		request("b", nil),
		request("b", &engine.Commit{Execution: "b", Seq: 1, Events: ev(1)}),
		request("a", &engine.Commit{Execution: "a", Seq: 2, Events: ev(2)}),
	}
	wants := []error{nil, engine.ErrNotFound, engine.ErrExists, nil, nil}
	// The commit loop is idle: the test hands it the batch itself.
	b.commitBatch(batch)
	for i, r := range batch {
		if err := <-r.done; !errors.Is(err, wants[i]) || (err == nil) != (wants[i] == nil) {
			t.Errorf("request %d: %v, want %v", i, err, wants[i])
		}
	}
	for id, events := range map[string]int{"a": 2, "b": 1} {
		h, err := b.History(ctx, id)
		if err != nil || len(h) != events {
			t.Errorf("History(%s) = %d events, %v, want %d", id, len(h), err, events)
		}
		if err := b.VerifyHistory(ctx, id); err != nil {
			t.Errorf("VerifyHistory(%s) = %v", id, err)
		}
	}
}

// TestBoltMigratesFormats2And3 opens databases of format 2, which had no
// agent memory buckets, and 3, which had no namespaces bucket: the buckets
// are added, and memory can be written.
func TestBoltMigratesFormats2And3(t *testing.T) {
	for _, tc := range []struct {
		version string
		missing [][]byte
	}{
		{"2", [][]byte{bucketMemory, bucketMemExpiry, bucketNamespaces}},
		{"3", [][]byte{bucketNamespaces}},
	} {
		t.Run("format "+tc.version, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "aslrun.db")
			b, err := OpenBolt(path, BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if err := b.Create(ctx, &engine.Execution{ID: "a"}); err != nil {
				t.Fatal(err)
			}
			b.Close()
			db, err := bbolt.Open(path, 0o600, boltOptions(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(t *bbolt.Tx) error {
				if err := toFormat4(t); err != nil {
					return err
				}
				for _, name := range tc.missing {
					if err := t.DeleteBucket(name); err != nil {
						return err
					}
				}
				return t.Bucket(bucketMeta).Put(versionKey, []byte(tc.version))
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			b, err = OpenBolt(path, BoltOptions{})
			if err != nil {
				t.Fatalf("OpenBolt(format %s) = %v", tc.version, err)
			}
			defer b.Close()
			err = b.Commit(ctx, &engine.Commit{Execution: "a", Seq: 1, AddNamespaces: []string{"n"}, Memory: []engine.MemoryWrite{
				{Namespace: "n", Key: "k", Value: "v", At: time.Unix(1, 0), ExpiresAt: time.Unix(100, 0)},
			}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.ReadMemory(ctx, "n", []string{"k"}, time.Unix(2, 0))
			if err != nil || got["k"] == nil || got["k"].Value != "v" {
				t.Errorf("ReadMemory after conversion = %v, %v", got, err)
			}
			if e, err := b.Load(ctx, "a"); err != nil || len(e.Progress.Namespaces) != 1 {
				t.Errorf("Load after conversion: %v, namespaces %v", err, e.Progress.Namespaces)
			}
			if rep, err := b.GC(ctx, time.Unix(100, 0)); err != nil || rep.Memory != 1 {
				t.Errorf("GC = %+v, %v, want the entry expired", rep, err)
			}
		})
	}
}

// TestPresealStale commits two steps of one execution, both sealed
// against the same head before either was written: the second finds the
// head changed, is applied and sealed again in the commit loop, and the
// history verifies with every event in order.
func TestPresealStale(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	if err := b.Create(ctx, &engine.Execution{ID: "e", Definition: []byte(`{}`), StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	step := func(n int64) *engine.Commit {
		return &engine.Commit{
			Execution: "e", Seq: n, LastEvent: n, Status: engine.StatusRunning,
			Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: map[string]any{"n": n}}},
			Events: []engine.Event{{ID: n, Type: "PassStateEntered", State: "S", Timestamp: time.Now(), Input: map[string]any{"n": n}}},
		}
	}
	// A first commit puts the head in the loop's cache.
	if err := b.Commit(ctx, step(1)); err != nil {
		t.Fatal(err)
	}
	var ps []*prepared
	for _, n := range []int64{2, 3} {
		p, err := prepareCommit(step(n), &b.codecs, b.codec, &b.docs)
		if err != nil {
			t.Fatal(err)
		}
		b.preseal(p)
		if p.base == nil {
			t.Fatalf("commit %d was not presealed", n)
		}
		ps = append(ps, p)
	}
	if ps[0].base != ps[1].base {
		t.Fatal("the commits were sealed against different heads")
	}
	for _, p := range ps {
		if err := b.write(ctx, func(x *tx) error { return x.apply(p) }); err != nil {
			t.Fatal(err)
		}
		p.committed(&b.docs)
	}
	if err := b.VerifyHistory(ctx, "e"); err != nil {
		t.Errorf("VerifyHistory = %v", err)
	}
	events, err := b.History(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range events {
		ids = append(ids, e.ID)
	}
	if !reflect.DeepEqual(ids, []int64{1, 2, 3}) {
		t.Errorf("history event ids = %v, want [1 2 3]", ids)
	}
}
